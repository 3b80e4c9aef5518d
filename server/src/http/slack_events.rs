//! The Events API endpoint, one URL per integration: `POST /integrations/slack/{id}/events`.
//! Every request's signature is checked; with no signing secret configured the endpoint refuses
//! everything rather than skip the check. The event is committed before the 200; a reply whose
//! thread cannot be traced now is answered 503, so Slack sends it again.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::integrations::slack::{Handled, SlackIntegration, handle_event_callback, verify};
use crate::state::AppState;
use crate::store::{self, IntegrationId};

use super::ApiError;

/// Receives one Events API request.
pub async fn receive(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = IntegrationId(id);
    let slack = verified(&app, id, &headers, &body).await?;
    let envelope: Value = serde_json::from_slice(&body).map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "The body is not JSON.",
        )
    })?;
    match envelope["type"].as_str() {
        Some("url_verification") => Ok(Json(
            json!({"challenge": envelope["challenge"].as_str().unwrap_or_default()}),
        )
        .into_response()),
        Some("event_callback") => {
            // An error (for example a full disk) answers 503 so Slack delivers the event again.
            match handle_event_callback(&app.slack, id, &slack, &envelope).await? {
                // Not acknowledged, so Slack sends the event again (it retries non-2xx answers).
                Handled::Later => Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "The reply's thread could not be traced now; send the event again.",
                )),
                _ => Ok(StatusCode::OK.into_response()),
            }
        }
        _ => Ok(StatusCode::OK.into_response()),
    }
}

/// The enabled Slack integration `id`, if the request carries its signature (checked over the
/// raw body, within five minutes); every Slack endpoint checks this way, none ever skips it.
pub(super) async fn verified(
    app: &AppState,
    id: IntegrationId,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<SlackIntegration, ApiError> {
    let row = app
        .readers
        .read(move |c| store::find_integration(c, id))
        .await?;
    let Some(row) = row.filter(|r| r.kind == "slack" && r.is_enabled) else {
        return Err(ApiError::not_found("integration"));
    };
    let Some(slack) = SlackIntegration::open(&app.secret_key, &row) else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_configured",
            "This Slack integration is incomplete.",
        ));
    };
    let Some(secret) = slack.secrets.signing_secret.as_deref() else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_configured",
            "No signing secret is configured, so no request can be verified.",
        ));
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(err) = verify(
        secret,
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
        body,
        now_ms() / 1000,
    ) {
        tracing::warn!(integration = %id, error = %err, "refused a Slack request");
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "bad_signature",
            err.to_string(),
        ));
    }
    Ok(slack)
}
