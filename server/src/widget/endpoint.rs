//! The HTTP side of the widget: the websocket upgrade (site and origin checks, buffer limits) and
//! the static assets.

use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::LazyLock;

use axum::Extension;
use axum::extract::rejection::QueryRejection;
use axum::extract::{ConnectInfo, Query, State, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use serde::Deserialize;

use crate::http::{ConnectionSlot, client_ip};
use crate::state::AppState;

use crate::values::SiteSettings;

use super::compact::{compact_css, compact_js};
use super::connection::{Admission, Peer, serve_connection};
use super::locales::{DEFAULT_LABEL, launcher_label};
use super::panel_source::panel_source;
use super::protocol::ErrorCode;

/// Read buffer per connection, kept for the socket's whole life: small, because idle widgets are
/// most of all sockets (128 KiB by default; shared/reference/performance.md §3c). A frame larger
/// than this is read in several passes, but from memory: the connection reads the socket ahead
/// in 4 KiB chunks (`http/read_ahead.rs`), so reads from the socket are as before.
const READ_BUFFER: usize = 512;
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
    // A query that does not parse (`site` given twice, say) names no site: the client still
    // gets the upgrade and the documented `site_not_found`, not a bare 400.
    query: Result<Query<WsQuery>, QueryRejection>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let site_key = query.map(|Query(q)| q.site).unwrap_or_default();
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Subscribed before the site is read, so no change saved after that read is missed.
    let changes = app.sites.subscribe();
    let admission = match app.sites.find(&site_key).await {
        Ok(Some(site)) if site.allows_origin(origin) => Admission::Allowed(site, changes),
        Ok(Some(site)) => {
            app.sites.note_refused_origin(&site, origin);
            Admission::Refused(ErrorCode::OriginNotAllowed)
        }
        Ok(None) => Admission::Refused(ErrorCode::SiteNotFound),
        Err(err) => {
            tracing::error!(error = %err, "site lookup failed");
            return crate::http::ApiError::unavailable().into_response();
        }
    };
    let peer = Peer {
        ip: client_ip(peer, &headers, &app.config.trusted_proxies),
        origin: origin.to_owned(),
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
            // A combinator rather than an async block, which would hold the connection's future
            // twice (once captured, once awaited). The slot counts this websocket against the
            // connection limit until it ends.
            let connection =
                serve_connection(app, admission, peer, socket).map(move |()| drop(slot));
            tracker.track_future(connection)
        })
}

/// The launcher as pasted into the site's pages: compacted like the panel, so no developer's
/// comment lands in every page of the site.
static LAUNCHER_JS: LazyLock<String> =
    LazyLock::new(|| compact_js(include_str!("../../assets/widget/launcher.js")));
/// The panel as served: its parts put together and compacted once, on first use (see
/// `panel_source.rs` and `compact.rs`).
static PANEL_JS: LazyLock<String> = LazyLock::new(|| compact_js(&panel_source()));
static PANEL_CSS: LazyLock<String> =
    LazyLock::new(|| compact_css(include_str!("../../assets/widget/panel.css")));

/// A static widget file with the headers every one of them gets.
pub(super) fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            // Short, so a Porch upgrade reaches visitors within minutes.
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
            // The panel is loaded by pages on other origins, cross-origin isolated ones too
            // (`Cross-Origin-Embedder-Policy: require-corp` loads no script or stylesheet of
            // another origin without this).
            (
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            ),
            (
                HeaderName::from_static("cross-origin-resource-policy"),
                HeaderValue::from_static("cross-origin"),
            ),
        ],
        body,
    )
        .into_response()
}

/// `GET /widget/panel.js`: the chat panel, loaded by the launcher on the visitor's click.
pub async fn panel_js() -> Response {
    asset("text/javascript; charset=utf-8", PANEL_JS.as_str())
}

/// `GET /widget/panel.css`.
pub async fn panel_css() -> Response {
    asset("text/css; charset=utf-8", PANEL_CSS.as_str())
}

/// The embed snippet for a site: the launcher inline, so the page makes no request to Porch
/// before the visitor clicks. A site with a fixed language gets it (`locale`) and the button's
/// label in it; otherwise the label is English (the launcher carries no translations).
pub fn snippet(public_url: &str, site_key: &str, settings: &SiteSettings) -> String {
    let mut config = serde_json::json!({
        "url": public_url,
        "site": site_key,
        "color": settings.color,
        "position": settings.position,
        "label": launcher_label(&settings.locale).unwrap_or(DEFAULT_LABEL),
    });
    if !settings.locale.is_empty() {
        config["locale"] = settings.locale.clone().into();
    }
    let launcher = LAUNCHER_JS.trim().trim_end_matches(';');
    format!(
        "<script>{launcher}({});</script>",
        script_safe(&config.to_string())
    )
}

/// JSON made safe to paste into any page: `<` escaped so no value can close the script element
/// early, and everything outside ASCII written as `\u` escapes (non-ASCII occurs only inside JSON
/// strings), so the snippet reads right whatever charset the host page has.
fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c == '<' || !c.is_ascii() {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_language_is_in_the_snippet_with_its_label_in_ascii() {
        let mut settings = SiteSettings::new("Acme".into(), vec!["https://a.example".into()]);
        let auto = snippet("https://chat.example", "s_1", &settings);
        assert!(auto.contains(r#""label":"Chat with us""#), "{auto}");
        // The settings name no language (the launcher's code reads `c.locale`, so the key is
        // looked for, not the word).
        assert!(!auto.contains(r#""locale":"#), "{auto}");
        settings.locale = "fr".into();
        let french = snippet("https://chat.example", "s_1", &settings);
        assert!(french.contains(r#""locale":"fr""#), "{french}");
        assert!(french.contains(r#""label":"Discutons""#), "{french}");
        settings.locale = "ja".into();
        let japanese = snippet("https://chat.example", "s_1", &settings);
        assert!(japanese.is_ascii());
        assert!(japanese.contains(r#""label":"\u30c1\u30e3"#), "{japanese}");
    }

    /// A new user found the launcher's comments ("The empty catches are on purpose…") in the
    /// snippet they paste into every page.
    #[test]
    fn the_snippet_carries_no_comment_of_the_source() {
        let settings = SiteSettings::new("Acme".into(), vec!["https://a.example".into()]);
        let pasted = snippet("https://chat.example", "s_1", &settings);
        assert!(!pasted.contains("on purpose"), "{pasted}");
        assert!(!pasted.contains("\n//"), "a comment line: {pasted}");
        assert!(!pasted.contains("\n "), "indentation: {pasted}");
    }

    #[test]
    fn script_safe_escapes_angle_brackets_and_astral_characters() {
        assert_eq!(
            script_safe(r#"{"a":"</script>"}"#),
            r#"{"a":"\u003c/script>"}"#
        );
        assert_eq!(script_safe("\u{1f600}"), r"\ud83d\ude00");
    }
}
