//! The Slack endpoints for what agents ask from Slack, one URL each per integration:
//! `POST /integrations/slack/{id}/commands` (the `/porch` slash command) and
//! `POST /integrations/slack/{id}/interactive` (message shortcuts and the note modal). Signatures
//! are checked as for events; the request is acknowledged with an empty 200 at once (Slack
//! allows 3 s) and done in its own task, which answers with an ephemeral message. A note modal
//! submitted with a note that cannot be stored is answered with the reason instead, and stays
//! open.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::integrations::slack::{
    Request, handle_request, parse_command, parse_interaction, refused_submission,
};
use crate::state::AppState;
use crate::store::IntegrationId;

use super::ApiError;
use super::slack_events::verified;

/// Receives one slash command (a form).
pub async fn receive_command(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let id = IntegrationId(id);
    let slack = verified(&app, id, &headers, &body).await?;
    let fields = form(&body)?;
    let request = parse_command(&Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    ));
    start(&app, id, slack, request);
    Ok(StatusCode::OK)
}

/// Receives one interactivity request (a form whose `payload` field is JSON).
pub async fn receive_interaction(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = IntegrationId(id);
    let slack = verified(&app, id, &headers, &body).await?;
    let payload = form(&body)?
        .remove("payload")
        .and_then(|raw| serde_json::from_str::<Value>(&raw).ok())
        .ok_or_else(|| bad_request("The form has no JSON payload."))?;
    if let Some(refusal) = refused_submission(&payload, &slack.config.team_id) {
        return Ok(Json(refusal).into_response());
    }
    start(&app, id, slack, parse_interaction(&payload));
    Ok(StatusCode::OK.into_response())
}

/// Does the request after the acknowledgement; something Porch does not handle (another
/// interaction) is acknowledged and ignored.
fn start(
    app: &AppState,
    id: IntegrationId,
    slack: crate::integrations::slack::SlackIntegration,
    request: Option<Request>,
) {
    if let Some(request) = request {
        tokio::spawn(handle_request(Arc::clone(&app.slack), id, slack, request));
    }
}

fn form(body: &[u8]) -> Result<HashMap<String, String>, ApiError> {
    serde_urlencoded::from_bytes(body).map_err(|_| bad_request("The body is not a form."))
}

fn bad_request(message: &'static str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
}
