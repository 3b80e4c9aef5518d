//! `POST /conversations/{id}/visitor`: an agent sets the visitor's name and email from the
//! conversation page (docs/admin.md, "The visitor's name and email"). A plain form post answered
//! with a redirect back to the conversation and a notice; a refused value is a 422 page saying
//! why.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use crate::chat::{ContactSaved, RefusedContact, VisitorContact};
use crate::state::AppState;
use crate::store::ConversationId;

use super::page::{PageError, see_other};
use super::session::Posted;

/// Both fields are required: a request that leaves one out is refused, not taken as clearing
/// it (the form always sends both, an empty one to clear).
#[derive(Debug, Deserialize)]
pub struct VisitorContactForm {
    name: String,
    email: String,
    /// The name and email the page showed, so a change made meanwhile is not overwritten.
    #[serde(default)]
    shown_name: String,
    #[serde(default)]
    shown_email: String,
}

/// A stored value as the page's hidden field carried it back: empty is none, and a line break
/// as stored (a browser sends each as CR LF) so it still matches the stored value.
fn shown(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.replace("\r\n", "\n"))
}

/// Saves the visitor's name and email.
pub async fn set_visitor_contact(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    Posted { who, form }: Posted<VisitorContactForm>,
) -> Result<Response, PageError> {
    let refused = |r: RefusedContact| {
        PageError::new(StatusCode::UNPROCESSABLE_ENTITY, "Not saved", r.reason.0)
    };
    let contact =
        VisitorContact::parse(&form.name, &form.email, &form.shown_email).map_err(refused)?;
    let before = VisitorContact {
        name: shown(&form.shown_name),
        email: shown(&form.shown_email),
    };
    let saved = app
        .chat
        .set_visitor_contact(ConversationId(id), &who.user, before, contact)
        .await?;
    let notice = match saved {
        ContactSaved::Saved => "visitor-saved",
        ContactSaved::Unchanged => "visitor-unchanged",
        ContactSaved::ChangedMeanwhile => "visitor-changed-meanwhile",
    };
    Ok(see_other(&format!("/conversations/{id}?notice={notice}")))
}
