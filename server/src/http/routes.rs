//! Every URL Porch serves, in one place.

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::routing::{delete, get, post, put};
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;

use crate::admin;
use crate::state::AppState;
use crate::widget;

use super::refusals::{is_api_path, refusal_bodies};
use super::unread_body::finish_request_body;
use super::{
    ApiError, api, api_audit, api_deliveries, api_integration_state, api_integrations, api_privacy,
    api_sites, health, metrics, slack_actions, slack_events, strict_query,
};

/// The least time an upload may take (a 10 MB file at 1 Mbit/s takes 80 s).
const UPLOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_mins(5);

/// An unknown URL: JSON with a code under the API's prefixes (scripts read it), an HTML page
/// elsewhere (people do).
async fn not_found(uri: axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse;
    if is_api_path(uri.path()) {
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
        .route("/widget/locales/{file}", get(widget::locale))
        .route(
            "/widget/export",
            post(widget::export_own_data).options(widget::preflight),
        )
        .route(
            "/widget/erase",
            post(widget::erase_own_data).options(widget::preflight),
        )
        .route(
            "/widget/attachments/{id}",
            get(widget::download_attachment).options(widget::preflight),
        )
        .route(
            "/widget/attachments/{id}/thumbnail",
            get(widget::attachment_thumbnail).options(widget::preflight),
        )
        .merge(api_routes())
        .merge(admin_routes())
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            admin::strict_transport,
        ))
        .layer(RequestBodyLimitLayer::new(app.config.body_limit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            app.config.request_timeout,
        ))
        // Outside the limit and the timeout, whose refusals it rewrites; inside compression,
        // so it reads the refusals' text before any encoding.
        .layer(axum::middleware::from_fn(refusal_bodies))
        // Outside the refusals' rewriting, so their pages get the top bar too.
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            admin::error_pages::with_navigation,
        ))
        .layer(CompressionLayer::new());
    let websocket = Router::new().route("/widget/ws", get(widget::upgrade));
    websocket
        .merge(uploads(&app))
        .merge(http)
        .layer(nosniff())
        .layer(axum::middleware::from_fn(finish_request_body))
        .with_state(app)
}

/// `X-Content-Type-Options: nosniff` on every answer, also the framework's own refusals and the
/// websocket route's: a browser must take a body only as the type it is sent with.
pub(super) fn nosniff() -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::if_not_present(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    )
}

/// Attachment uploads: out of the general body limit (each handler reads the body within its
/// site's limit, refusing early) and with a longer timeout, as a 25 MiB file on a slow line
/// takes a while (docs/widget.md, "Attachments").
fn uploads(app: &AppState) -> Router<AppState> {
    Router::new()
        .route(
            "/widget/attachments",
            post(widget::upload_attachment).options(widget::preflight),
        )
        .route(
            "/conversations/{id}/attachments",
            post(admin::attachments::upload),
        )
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            admin::strict_transport,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            app.config.request_timeout.max(UPLOAD_TIMEOUT),
        ))
}

/// The API's calls on one conversation (none takes a query string).
fn one_conversation_api() -> Router<AppState> {
    Router::new()
        .route("/api/v1/conversations/{id}", get(api::get_conversation))
        .route(
            "/api/v1/conversations/{id}/messages",
            get(api::list_messages).post(api::post_message),
        )
        .route(
            "/api/v1/conversations/{id}/attachments/{file}",
            get(api::download_attachment),
        )
        .route("/api/v1/conversations/{id}/typing", post(api::post_typing))
        .route(
            "/api/v1/conversations/{id}/close",
            post(api::close_conversation),
        )
        .route(
            "/api/v1/conversations/{id}/reopen",
            post(api::reopen_conversation),
        )
        .route(
            "/api/v1/conversations/{id}/assign",
            post(api::assign_conversation),
        )
        .route(
            "/api/v1/conversations/{id}/snooze",
            post(api::snooze_conversation),
        )
        .route(
            "/api/v1/conversations/{id}/unsnooze",
            post(api::unsnooze_conversation),
        )
        .route(
            "/api/v1/conversations/{id}/tags",
            post(api::tag_conversation),
        )
}

/// A person's data (admin tokens, docs/api.md): finding takes a query string, the others none.
fn privacy_api_routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/visitors/{id}/export",
            get(api_privacy::export_visitor),
        )
        .route(
            "/api/v1/visitors/{id}/erase",
            post(api_privacy::erase_visitor),
        )
        .route_layer(axum::middleware::from_fn(strict_query::refuse_query))
        .route("/api/v1/visitors", get(api_privacy::find_visitors))
}

/// The JSON API (bearer tokens) and Slack's Events API endpoint.
fn api_routes() -> Router<AppState> {
    // The calls that take a query string read it with `StrictQuery`; every other one refuses any.
    let without_query = Router::new()
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
            "/api/v1/integrations/{id}",
            delete(api_integration_state::delete),
        )
        .route(
            "/api/v1/integrations/{id}/turn-off",
            post(api_integration_state::turn_off),
        )
        .route(
            "/api/v1/integrations/{id}/turn-on",
            post(api_integration_state::turn_on),
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
        .merge(one_conversation_api())
        .route(
            "/api/v1/sites/{key}/integrations/slack",
            post(api_integrations::create_slack),
        )
        .route(
            "/api/v1/integrations/{id}/slack",
            put(api_integrations::update_slack),
        )
        .route("/api/v1/sites", get(api_sites::list_sites))
        .route("/api/v1/sites/{key}", get(api_sites::get_site))
        .route(
            "/api/v1/sites/{key}/retention",
            get(api_sites::get_retention).put(api_sites::put_retention),
        )
        .route(
            "/api/v1/sites/{key}/attachments",
            get(api_sites::get_attachment_limit).put(api_sites::put_attachment_limit),
        )
        .route("/api/v1/jobs/retry", post(api_integrations::retry_all_jobs))
        .route("/api/v1/jobs/{id}/retry", post(api_integrations::retry_job))
        .route(
            "/api/v1/jobs/dismiss",
            post(api_integrations::dismiss_failed_jobs),
        )
        .route("/api/v1/jobs/{id}", delete(api_integrations::dismiss_job))
        .route_layer(axum::middleware::from_fn(strict_query::refuse_query));
    Router::new()
        .route("/api/v1/conversations", get(api::list_conversations))
        .route("/api/v1/audit", get(api_audit::list_audit))
        .route("/api/v1/jobs", get(api_integrations::list_jobs))
        .merge(without_query)
        .merge(privacy_api_routes())
        .route(
            "/integrations/slack/{id}/events",
            post(slack_events::receive),
        )
        .route(
            "/integrations/slack/{id}/commands",
            post(slack_actions::receive_command),
        )
        .route(
            "/integrations/slack/{id}/interactive",
            post(slack_actions::receive_interaction),
        )
}

/// The admin UI (server/src/admin): pages, form posts, live streams.
fn admin_routes() -> Router<AppState> {
    Router::new()
        .route("/assets/admin.css", get(admin::assets::admin_css))
        .route("/assets/time.js", get(admin::assets::time_js))
        .route("/assets/streams.js", get(admin::assets::streams_js))
        .route("/assets/inbox.js", get(admin::assets::inbox_js))
        .route("/assets/reply.js", get(admin::assets::reply_js))
        .route("/assets/notify.js", get(admin::assets::notify_js))
        .route("/assets/keys.js", get(admin::assets::keys_js))
        .route("/assets/confirm.js", get(admin::assets::confirm_js))
        .route("/assets/favicon.svg", get(admin::assets::favicon))
        .route("/assets/canned.js", get(admin::assets::canned_js))
        .route("/assets/bulk.js", get(admin::assets::bulk_js))
        .merge(account_routes())
        .merge(conversation_routes())
        .merge(site_routes())
        .merge(destination_routes())
        .route("/deliveries", get(admin::deliveries::deliveries_page))
        .route(
            "/deliveries/retry",
            post(admin::deliveries::retry_all_deliveries),
        )
        .route(
            "/deliveries/dismiss",
            post(admin::deliveries::dismiss_all_deliveries),
        )
        .route(
            "/deliveries/{id}/retry",
            post(admin::deliveries::retry_delivery),
        )
        .route(
            "/deliveries/{id}/dismiss",
            post(admin::deliveries::dismiss_delivery),
        )
        .route("/audit", get(admin::audit::audit_page))
        .route("/privacy", get(admin::privacy::privacy_page))
        .route(
            "/privacy/visitors/{id}/export",
            post(admin::privacy::export),
        )
        .route(
            "/privacy/visitors/{id}/erase",
            get(admin::privacy::erase_page).post(admin::privacy::erase),
        )
        .route("/capacity", get(admin::capacity::capacity_page))
        .route("/capacity/graphs", get(admin::capacity::capacity_graphs))
        .route("/capacity/runs/{id}", get(admin::capacity::run_page))
        .route("/team", get(admin::team::team_page))
        .route(
            "/team/invite",
            get(admin::team::back_to_team).post(admin::team::invite),
        )
        .route("/team/{id}/role", post(admin::team::change_role))
        .route("/team/{id}/name", post(admin::team::rename))
        .route(
            "/team/{id}/link",
            get(admin::team::back_to_team).post(admin::team::create_link),
        )
        .route("/team/{id}/disable", post(admin::team::disable))
        .route("/team/{id}/enable", post(admin::team::enable))
        .route("/team/two-factor", post(admin::team::require_two_factor))
        .route(
            "/team/{id}/two-factor/reset",
            post(admin::team::reset_two_factor),
        )
}

/// The inbox, search, canned replies and conversation pages (agents and admins).
fn conversation_routes() -> Router<AppState> {
    Router::new()
        .route("/inbox", get(admin::inbox::inbox_page))
        .route("/inbox/events", get(admin::live::inbox_events))
        .route("/inbox/summary", get(admin::inbox::inbox_summary))
        .route("/inbox/counts", get(admin::live::count_events))
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
        .route(
            "/conversations/{id}/attachments/{file}",
            get(admin::attachments::download),
        )
        .route(
            "/conversations/{id}/attachments/{file}/thumbnail",
            get(admin::attachments::thumbnail),
        )
        .route("/conversations/{id}/assign", post(admin::actions::assign))
        .route("/conversations/{id}/close", post(admin::actions::close))
        .route(
            "/conversations/{id}/unread",
            post(admin::actions::mark_unread),
        )
        .route("/conversations/{id}/reopen", post(admin::actions::reopen))
        .route("/conversations/{id}/snooze", post(admin::snooze::snooze))
        .route("/conversations/{id}/tags", post(admin::actions::tags))
        .route("/inbox/bulk", post(admin::bulk::bulk))
        .route(
            "/conversations/{id}/unsnooze",
            post(admin::snooze::unsnooze),
        )
        .route(
            "/conversations/{id}/email",
            post(admin::visitor_mail::email_visitor),
        )
        .route(
            "/conversations/{id}/visitor",
            post(admin::visitor_contact::set_visitor_contact),
        )
        .route(
            "/conversations/{id}/typing",
            post(admin::typing::agent_typing),
        )
        .route(
            "/conversations/{id}/read",
            post(admin::read_mark::mark_read),
        )
}

/// Sites and their own pages (hours, pre-chat form, known visitors; admins).
fn site_routes() -> Router<AppState> {
    Router::new()
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
            "/sites/{key}/hours",
            get(admin::site_hours::hours_page).post(admin::site_hours::save_hours),
        )
        .route(
            "/sites/{key}/hours/remove",
            post(admin::site_hours::remove_hours),
        )
        .route(
            "/sites/{key}/prechat",
            get(admin::site_prechat::prechat_page).post(admin::site_prechat::save_prechat),
        )
        .route(
            "/sites/{key}/identity",
            get(admin::site_identity::identity_page),
        )
        .route(
            "/sites/{key}/identity/rotate",
            post(admin::site_identity::rotate_identity),
        )
        .route(
            "/sites/{key}/identity/remove",
            post(admin::site_identity::remove_identity),
        )
}

/// Setting up, signing in (with its second step) and out, asking for a reset link, invitation
/// and reset links, and the account page.
fn account_routes() -> Router<AppState> {
    Router::new()
        .route(
            "/setup",
            get(admin::auth::setup_page).post(admin::auth::setup),
        )
        .route(
            "/login",
            get(admin::auth::login_page).post(admin::auth::login),
        )
        .route("/login/sso", get(admin::sso::start))
        .route("/login/sso/callback", get(admin::sso::callback))
        .route(
            "/login/two-factor",
            get(admin::two_factor::second_step_page).post(admin::two_factor::second_step),
        )
        .route(
            "/login/two-factor/setup",
            get(admin::two_factor::enrol_page).post(admin::two_factor::enrol),
        )
        .route("/logout", post(admin::auth::logout))
        .route(
            "/invitations/{token}",
            get(admin::account_links::invitation_page)
                .post(admin::account_links::complete_invitation),
        )
        .route(
            "/password-resets",
            get(admin::forgot_password::forgot_page).post(admin::forgot_password::request_link),
        )
        .route(
            "/password-resets/{token}",
            get(admin::account_links::reset_page).post(admin::account_links::complete_reset),
        )
        .route("/docs", get(admin::docs::docs_index))
        .route("/docs/{*path}", get(admin::docs::doc_page))
        .route("/account", get(admin::auth::account_page))
        .route("/account/password", post(admin::auth::change_password))
        .route("/account/name", post(admin::account_name::change_name))
        .route(
            "/account/sessions/sign-out-others",
            post(admin::auth::sign_out_elsewhere),
        )
        .route("/account/tokens", post(admin::tokens::create_token))
        .route(
            "/account/tokens/{id}/revoke",
            get(admin::tokens::confirm_revoke).post(admin::tokens::revoke),
        )
        .route("/account/two-factor", get(admin::two_factor::setup_page))
        .route("/account/two-factor/setup", post(admin::two_factor::begin))
        .route(
            "/account/two-factor/confirm",
            post(admin::two_factor::confirm),
        )
        .route(
            "/account/two-factor/recovery-codes",
            post(admin::two_factor::regenerate),
        )
        .route(
            "/account/two-factor/disable",
            post(admin::two_factor::disable),
        )
}

/// A site's destination pages (Slack, Discord, webhooks, email) and what they share.
fn destination_routes() -> Router<AppState> {
    Router::new()
        .route(
            "/sites/{key}/slack",
            get(admin::integrations::slack_page).post(admin::integrations::save_slack),
        )
        .route(
            "/sites/{key}/slack/check",
            post(admin::integrations::check_slack),
        )
        .route(
            "/sites/{key}/discord",
            get(admin::discord::discord_page).post(admin::discord::save_discord),
        )
        .route(
            "/sites/{key}/discord/test",
            post(admin::discord::test_discord),
        )
        .route(
            "/sites/{key}/webhooks",
            get(admin::webhooks::webhooks_page).post(admin::webhooks::add_webhook),
        )
        .route(
            "/sites/{key}/webhooks/{id}",
            get(admin::webhooks::webhook_page).post(admin::webhooks::save_webhook),
        )
        .route(
            "/sites/{key}/webhooks/{id}/rotate",
            post(admin::webhooks::rotate_webhook),
        )
        .route(
            "/sites/{key}/webhooks/{id}/deliveries/{job}/replay",
            post(admin::webhooks::replay_webhook_delivery),
        )
        .route(
            "/sites/{key}/email",
            get(admin::email::email_page).post(admin::email::save_email),
        )
        .route("/sites/{key}/email/test", post(admin::email::test_email))
        .route(
            "/sites/{key}/email/check",
            post(admin::email_inbound::check_mailbox),
        )
        .route(
            "/sites/{key}/email/imap",
            post(admin::email_inbound::save_page_mailbox),
        )
        .route(
            "/sites/{key}/email/imap/test",
            post(admin::email_inbound::test_page_mailbox),
        )
        .route(
            "/sites/{key}/email/imap/delete",
            post(admin::email_inbound::remove_page_mailbox),
        )
        .route(
            "/sites/{key}/integrations/{id}/disable",
            post(admin::destinations::disable_integration),
        )
        .route(
            "/sites/{key}/integrations/{id}/enable",
            post(admin::destinations::enable_integration),
        )
        .route(
            "/sites/{key}/integrations/{id}/delete",
            post(admin::destinations::remove_integration),
        )
}
