//! Every URL Porch serves, in one place.

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

use crate::admin;
use crate::state::AppState;
use crate::widget;

use super::{
    ApiError, api, api_audit, api_deliveries, api_integrations, health, metrics, slack_events,
};

/// An unknown URL: JSON with a code under the API's prefixes (scripts read it), an HTML page
/// elsewhere (people do).
async fn not_found(uri: axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse;
    let path = uri.path();
    if path.starts_with("/api/") || path.starts_with("/integrations/") {
        ApiError::not_found("page").into_response()
    } else {
        admin::not_found_page().await
    }
}

/// The route table. The websocket route is kept out of the HTTP timeout and compression layers:
/// an upgraded connection outlives its handler.
pub fn router(app: AppState) -> Router {
    let http = Router::new()
        .route("/", get(admin::auth::home))
        .route("/healthz", get(health::live))
        .route("/readyz", get(health::ready))
        .route("/metrics", get(metrics::metrics))
        .route("/widget/panel.js", get(widget::panel_js))
        .route("/widget/panel.css", get(widget::panel_css))
        .merge(api_routes())
        .merge(admin_routes())
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            admin::strict_transport,
        ))
        .layer(CompressionLayer::new())
        .layer(RequestBodyLimitLayer::new(app.config.body_limit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            app.config.request_timeout,
        ));
    let websocket = Router::new().route("/widget/ws", get(widget::upgrade));
    websocket.merge(http).with_state(app)
}

/// The JSON API (bearer tokens) and Slack's Events API endpoint.
fn api_routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/sites/{key}/integrations/discord",
            post(api_deliveries::create_discord),
        )
        .route(
            "/api/v1/integrations/{id}/discord",
            put(api_deliveries::update_discord),
        )
        .route(
            "/api/v1/sites/{key}/integrations/webhooks",
            post(api_deliveries::create_webhook),
        )
        .route(
            "/api/v1/integrations/{id}/webhook",
            put(api_deliveries::update_webhook),
        )
        .route(
            "/api/v1/integrations/{id}/webhook/rotate",
            post(api_deliveries::rotate_webhook_secret),
        )
        .route(
            "/api/v1/integrations/{id}/deliveries",
            get(api_deliveries::list_deliveries),
        )
        .route(
            "/api/v1/sites/{key}/integrations/email",
            post(api_deliveries::create_email),
        )
        .route(
            "/api/v1/sites/{key}/integrations",
            get(api_deliveries::list_integrations),
        )
        .route("/api/v1/email/test", post(api_deliveries::test_email))
        .route(
            "/api/v1/integrations/{id}/deliveries/{job}/replay",
            post(api_deliveries::replay_delivery),
        )
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
        .route("/api/v1/audit", get(api_audit::list_audit))
        .route("/api/v1/jobs", get(api_integrations::list_jobs))
        .route("/api/v1/jobs/retry", post(api_integrations::retry_all_jobs))
        .route("/api/v1/jobs/{id}/retry", post(api_integrations::retry_job))
        .route(
            "/integrations/slack/{id}/events",
            post(slack_events::receive),
        )
}

/// The admin UI (server/src/admin): pages, form posts, live streams.
fn admin_routes() -> Router<AppState> {
    Router::new()
        .route("/assets/admin.css", get(admin::assets::admin_css))
        .route("/assets/inbox.js", get(admin::assets::inbox_js))
        .route("/assets/canned.js", get(admin::assets::canned_js))
        .route(
            "/setup",
            get(admin::auth::setup_page).post(admin::auth::setup),
        )
        .route(
            "/login",
            get(admin::auth::login_page).post(admin::auth::login),
        )
        .route("/logout", post(admin::auth::logout))
        .route(
            "/invitations/{token}",
            get(admin::auth::invitation_page).post(admin::auth::complete_invitation),
        )
        .route(
            "/password-resets/{token}",
            get(admin::auth::reset_page).post(admin::auth::complete_reset),
        )
        .route("/account", get(admin::auth::account_page))
        .route("/account/password", post(admin::auth::change_password))
        .route("/inbox", get(admin::inbox::inbox_page))
        .route("/inbox/events", get(admin::live::inbox_events))
        .route("/search", get(admin::search::search_page))
        .route(
            "/canned",
            get(admin::canned::canned_page).post(admin::canned::create),
        )
        .route("/canned/{id}", post(admin::canned::update))
        .route("/canned/{id}/delete", post(admin::canned::delete))
        .route(
            "/conversations/{id}/canned",
            get(admin::canned::conversation_replies),
        )
        .route("/conversations/{id}", get(admin::inbox::conversation_page))
        .route(
            "/conversations/{id}/events",
            get(admin::live::conversation_events),
        )
        .route("/conversations/{id}/reply", post(admin::inbox::reply))
        .route("/conversations/{id}/assign", post(admin::inbox::assign))
        .route("/conversations/{id}/close", post(admin::inbox::close))
        .route("/conversations/{id}/reopen", post(admin::inbox::reopen))
        .route(
            "/sites",
            get(admin::sites::sites_page).post(admin::sites::create_site),
        )
        .route("/sites/new", get(admin::sites::new_site_page))
        .route(
            "/sites/{key}",
            get(admin::sites::site_page).post(admin::sites::update_site),
        )
        .route(
            "/sites/{key}/delete",
            get(admin::sites::delete_site_page).post(admin::sites::delete_site),
        )
        .route(
            "/sites/{key}/slack",
            get(admin::integrations::slack_page).post(admin::integrations::save_slack),
        )
        .route(
            "/sites/{key}/slack/check",
            post(admin::integrations::check_slack),
        )
        .route("/deliveries", get(admin::deliveries::deliveries_page))
        .route(
            "/deliveries/retry",
            post(admin::deliveries::retry_all_deliveries),
        )
        .route(
            "/deliveries/{id}/retry",
            post(admin::deliveries::retry_delivery),
        )
        .route("/audit", get(admin::audit::audit_page))
        .route("/capacity", get(admin::capacity::capacity_page))
        .route("/capacity/graphs", get(admin::capacity::capacity_graphs))
        .route("/capacity/runs/{id}", get(admin::capacity::run_page))
        .route("/team", get(admin::team::team_page))
        .route("/team/invite", post(admin::team::invite))
        .route("/team/{id}/role", post(admin::team::change_role))
        .route("/team/{id}/link", post(admin::team::create_link))
        .route("/team/{id}/disable", post(admin::team::disable))
        .route("/team/{id}/enable", post(admin::team::enable))
}
