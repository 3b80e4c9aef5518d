//! Liveness and readiness for Docker, orchestrators and load balancers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::state::AppState;

/// `GET /healthz`: the process is up and serving HTTP.
pub async fn live() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// `GET /readyz`: 200 while the server takes traffic; 503 from SIGTERM on (through the drain,
/// while everything else is still served), when the disk is full, or `corrupt` when the
/// background integrity check found the database file damaged (serving from it risks losing
/// acknowledged messages; see `store::integrity`). While migrating at start-up, `http::boot`
/// answers 503 `migrating` instead.
pub async fn ready(State(app): State<AppState>) -> Response {
    let corrupt = || app.meters.integrity.is_corrupt().then_some("corrupt");
    match app.not_ready_reason().or_else(corrupt) {
        None => Json(json!({"status": "ready"})).into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "not_ready", "reason": reason})),
        )
            .into_response(),
    }
}
