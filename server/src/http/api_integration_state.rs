//! Turning an integration off and on, and deleting it, through the API (docs/api.md, "Other
//! integrations"): what the destination pages' buttons do, with the same audit records.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::audit::Actor;
use crate::integrations::{delete_integration, turn_off_integration, turn_on_integration};
use crate::state::AppState;

use super::ApiError;
use super::api_deliveries::integration_of_kind;
use super::auth::ApiAdmin;
use super::client_ip::ClientIp;
use super::strict_json::NoBody;

/// `POST /api/v1/integrations/{id}/turn-off`: nothing more is sent; new deliveries wait, blocked,
/// until it is turned on.
pub async fn turn_off(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, None).await?;
    turn_off_integration((&app.writer, &app.jobs), &Actor::user(&admin, ip), &row).await?;
    // A Socket Mode integration's connection closes.
    app.slack.rescan.notify_one();
    Ok(Json(json!({"id": row.id, "is_enabled": false})).into_response())
}

/// `POST /api/v1/integrations/{id}/turn-on`: its blocked deliveries are sent, in order.
pub async fn turn_on(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, None).await?;
    let resumed =
        turn_on_integration((&app.writer, &app.jobs), &Actor::user(&admin, ip), &row).await?;
    app.slack.rescan.notify_one();
    let answer = json!({"id": row.id, "is_enabled": true, "resumed_jobs": resumed});
    Ok(Json(answer).into_response())
}

/// `DELETE /api/v1/integrations/{id}`: the integration, its unfinished deliveries and its log.
pub async fn delete(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, None).await?;
    delete_integration(&app.writer, &Actor::user(&admin, ip), &row).await?;
    app.slack.rescan.notify_one();
    Ok(Json(json!({"id": row.id, "deleted": true})).into_response())
}
