//! Every URL Porch serves, in one place.

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

use crate::state::AppState;
use crate::widget;

use super::{ApiError, api, api_integrations, health, pages};

/// The route table. The websocket route is kept out of the HTTP timeout and compression layers:
/// an upgraded connection outlives its handler.
pub fn router(app: AppState) -> Router {
    let http = Router::new()
        .route("/", get(pages::home))
        .route("/healthz", get(health::live))
        .route("/readyz", get(health::ready))
        .route("/widget/panel.js", get(widget::panel_js))
        .route("/widget/panel.css", get(widget::panel_css))
        .route("/api/v1/conversations", get(api::list_conversations))
        .route(
            "/api/v1/conversations/{id}/messages",
            get(api::list_messages).post(api::post_message),
        )
        .route("/api/v1/conversations/{id}/typing", post(api::post_typing))
        .route(
            "/api/v1/sites/{key}/integrations/slack",
            post(api_integrations::create_slack),
        )
        .route(
            "/api/v1/integrations/{id}/slack",
            put(api_integrations::update_slack),
        )
        .route("/api/v1/jobs", get(api_integrations::list_jobs))
        .route("/api/v1/jobs/retry", post(api_integrations::retry_all_jobs))
        .route("/api/v1/jobs/{id}/retry", post(api_integrations::retry_job))
        .route(
            "/integrations/slack/{id}/events",
            post(crate::slack::receive_events),
        )
        .fallback(|| async { ApiError::not_found("page") })
        .layer(CompressionLayer::new())
        .layer(RequestBodyLimitLayer::new(app.config.body_limit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            app.config.request_timeout,
        ));
    let websocket = Router::new().route("/widget/ws", get(widget::upgrade));
    websocket.merge(http).with_state(app)
}
