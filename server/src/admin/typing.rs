//! The agent's typing, from the inbox script's reply box: shown to the visitor as the widget
//! protocol's `typing` frame. Nothing is stored; the script sends it debounced (docs/admin.md).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::chat::Agent;
use crate::state::AppState;
use crate::store::ConversationId;

use super::page::PageError;
use super::session::{Posted, is_script, reject};

#[derive(Debug, Deserialize)]
pub struct TypingForm {
    /// `true` while typing, `false` once stopped.
    #[serde(default)]
    active: String,
}

/// `POST /conversations/{id}/typing` (`active=true|false`): `204`, or the usual error answer.
pub async fn agent_typing(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, form }: Posted<TypingForm>,
) -> Response {
    let active = match form.active.as_str() {
        "true" => true,
        "false" => false,
        _ => {
            let refused = PageError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Not understood",
                "`active` is `true` or `false`.",
            );
            return reject(is_script(&headers), refused);
        }
    };
    let agent = Agent {
        user_id: Some(who.user.id),
        name: who.user.name.clone(),
    };
    match app
        .chat
        .set_agent_typing(ConversationId(id), &agent, active)
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(err) => reject(is_script(&headers), err.into()),
    }
}
