//! `POST /conversations/{id}/visitor`: an agent sets the visitor's name and email from the
//! conversation page (docs/admin.md, "The visitor's name and email"). A plain form post answered
//! with a redirect back to the conversation and a notice; a refused value is the conversation's
//! page again (422), saying why.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use porch_app::conversation::Refused;
use porch_app::visitor_contact::TypedContact;
use serde::Deserialize;

use crate::chat::{ContactSaved, RefusedContact, VisitorContact};
use crate::state::AppState;
use crate::store::ConversationId;

use super::actions::Answer;
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

/// Saves the visitor's name and email. A refused value comes back on the conversation's page,
/// the form open with what was typed and the refused field marked and focused.
pub async fn set_visitor_contact(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, form }: Posted<VisitorContactForm>,
) -> Result<Response, PageError> {
    let contact = match VisitorContact::parse(&form.name, &form.email, &form.shown_email) {
        Ok(contact) => contact,
        Err(RefusedContact { field, reason }) => {
            let err = PageError::new(StatusCode::UNPROCESSABLE_ENTITY, "Not saved", reason.0);
            let typed = TypedContact {
                name: form.name,
                email: form.email,
                field,
            };
            let kept = (field, Some(Refused::Contact(typed)));
            let answer = Answer::new(&headers, id);
            return Ok(answer.refused_on_page(&app, &who, err, kept).await);
        }
    };
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
