//! The conversation page says what its agent has seen: a message that arrives live marks the
//! conversation read only while the page is visible, or once it becomes visible. Before, the
//! live stream marked it read as it sent it, so a conversation left in a background tab told
//! the visitor "Seen" and dropped off the agent's unread counts (docs/admin.md, Unread).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::state::AppState;
use crate::store::{ConversationId, MessageId};

use super::session::{Posted, is_script, reject};

#[derive(Debug, Deserialize)]
pub struct ReadForm {
    /// The newest message the agent has seen on the page.
    up_to: i64,
}

/// `POST /conversations/{id}/read` (`up_to`): `204`, or the usual error answer.
pub async fn mark_read(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, form }: Posted<ReadForm>,
) -> Response {
    match app
        .chat
        .mark_read(who.user.id, ConversationId(id), MessageId(form.up_to))
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(err) => reject(is_script(&headers), err.into()),
    }
}
