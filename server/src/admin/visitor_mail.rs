//! `POST /conversations/{id}/email`: an agent mails the conversation's visitor from the
//! conversation page (docs/integrations/email.md#emailing-a-visitor). A plain form post
//! answered with a redirect to the new message; a refusal is a 422 page saying why.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use crate::chat::{Agent, MailSubject, MessageBody};
use crate::state::AppState;
use crate::store::ConversationId;
use crate::values::ClientId;

use super::page::{PageError, see_other};
use super::session::Posted;

#[derive(Debug, Deserialize)]
pub struct VisitorMailForm {
    #[serde(default)]
    subject: String,
    #[serde(default)]
    body: String,
    /// The page's id for this mail, so that the form sent twice (a double click) mails once.
    #[serde(default)]
    client_id: String,
}

/// Stores the mail as the agent's message and queues its `email.agent` job.
pub async fn email_visitor(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    Posted { who, form }: Posted<VisitorMailForm>,
) -> Result<Response, PageError> {
    let refused = |invalid: crate::chat::Invalid| {
        PageError::new(StatusCode::UNPROCESSABLE_ENTITY, "Mail not sent", invalid.0)
    };
    let subject = MailSubject::parse(&form.subject).map_err(refused)?;
    let body = MessageBody::parse(&form.body).map_err(refused)?;
    let conversation = ConversationId(id);
    let agent = Agent {
        user_id: Some(who.user.id),
        name: who.user.name.clone(),
    };
    let client_id = match form.client_id.as_str() {
        "" => None,
        raw => Some(ClientId::parse(raw).map_err(refused)?),
    };
    let row = app
        .chat
        .email_visitor(conversation, &agent, subject, body, client_id)
        .await?
        .row;
    // One's own message is read by definition.
    app.chat
        .mark_read(who.user.id, conversation, row.id)
        .await?;
    Ok(see_other(&format!(
        "/conversations/{id}?notice=mail-queued#message-{}",
        row.id
    )))
}
