//! The HTTP side of the widget: the websocket upgrade (site and origin checks, buffer limits) and
//! the static assets.

use std::net::SocketAddr;

use axum::Extension;
use axum::extract::{ConnectInfo, Query, State, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::http::{ConnectionSlot, client_ip};
use crate::state::AppState;

use super::connection::{Admission, Peer, serve_connection};
use super::protocol::ErrorCode;

/// Read buffer per connection: small, because idle widgets are most of all sockets and each
/// buffer costs memory (128 KiB by default; see shared/reference/performance.md §3c).
const READ_BUFFER: usize = 4 * 1024;
/// Bytes queued for a client that does not read before the connection is dropped.
const MAX_WRITE_BUFFER: usize = 256 * 1024;

#[derive(Debug, Deserialize)]
pub struct WsQuery {
    #[serde(default)]
    site: String,
}

/// `GET /widget/ws?site=KEY`: upgrades to the widget protocol.
pub async fn upgrade(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Extension(slot): Extension<ConnectionSlot>,
    Query(query): Query<WsQuery>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let admission = match app.sites.find(&query.site).await {
        Ok(Some(site)) if site.allows_origin(origin) => Admission::Allowed(site),
        Ok(Some(_)) => Admission::Refused(ErrorCode::OriginNotAllowed),
        Ok(None) => Admission::Refused(ErrorCode::SiteNotFound),
        Err(err) => {
            tracing::error!(error = %err, "site lookup failed");
            return crate::http::ApiError::unavailable().into_response();
        }
    };
    let peer = Peer {
        ip: client_ip(peer, &headers, &app.config.trusted_proxies),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.chars().take(512).collect()),
    };
    let max_message = app.config.ws_max_message;
    let tracker = app.connections.clone();
    ws.read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_write_buffer_size(MAX_WRITE_BUFFER)
        .max_message_size(max_message)
        .max_frame_size(max_message)
        .on_upgrade(move |socket| {
            tracker.track_future(async move {
                serve_connection(app, admission, peer, socket).await;
                // The slot counts this websocket against the connection limit until here.
                drop(slot);
            })
        })
}

const LAUNCHER_JS: &str = include_str!("../../assets/widget/launcher.js");
const PANEL_JS: &str = include_str!("../../assets/widget/panel.js");
const PANEL_CSS: &str = include_str!("../../assets/widget/panel.css");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            // Short, so a Porch upgrade reaches visitors within minutes.
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
            // A browser must run these only as what they say they are.
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            // The panel is loaded by pages on other origins.
            (
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            ),
        ],
        body,
    )
        .into_response()
}

/// `GET /widget/panel.js`: the chat panel, loaded by the launcher on the visitor's click.
pub async fn panel_js() -> Response {
    asset("text/javascript; charset=utf-8", PANEL_JS)
}

/// `GET /widget/panel.css`.
pub async fn panel_css() -> Response {
    asset("text/css; charset=utf-8", PANEL_CSS)
}

/// The embed snippet for a site: the launcher inline, so the page makes no request to Porch
/// before the visitor clicks.
pub fn snippet(public_url: &str, site_key: &str, color: &str, position: &str) -> String {
    let config = serde_json::json!({
        "url": public_url,
        "site": site_key,
        "color": color,
        "position": position,
        "label": "Chat with us",
    });
    // `<` escaped so no value can close the script element early.
    let config = config.to_string().replace('<', "\\u003c");
    let launcher = LAUNCHER_JS.trim().trim_end_matches(';');
    format!("<script>{launcher}({config});</script>")
}
