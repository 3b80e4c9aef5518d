//! The admin UI's stylesheet, scripts and icon, embedded in the binary.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const ADMIN_CSS: &str = include_str!("../../assets/admin/admin.css");
const TIME_JS: &str = include_str!("../../assets/admin/time.js");
const STREAMS_JS: &str = include_str!("../../assets/admin/streams.js");
const INBOX_JS: &str = include_str!("../../assets/admin/inbox.js");
const REPLY_JS: &str = include_str!("../../assets/admin/reply.js");
const NOTIFY_JS: &str = include_str!("../../assets/admin/notify.js");
const KEYS_JS: &str = include_str!("../../assets/admin/keys.js");
const CONFIRM_JS: &str = include_str!("../../assets/admin/confirm.js");
const FAVICON: &str = include_str!("../../assets/admin/favicon.svg");
const CANNED_JS: &str = include_str!("../../assets/admin/canned.js");
const BULK_JS: &str = include_str!("../../assets/admin/bulk.js");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            // Short, so an upgrade reaches open admin tabs within minutes.
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
        ],
        body,
    )
        .into_response()
}

/// `GET /assets/admin.css`.
pub async fn admin_css() -> Response {
    asset("text/css; charset=utf-8", ADMIN_CSS)
}

/// `GET /assets/time.js`: times in the reader's time zone, on every signed-in page.
pub async fn time_js() -> Response {
    asset("text/javascript; charset=utf-8", TIME_JS)
}

/// `GET /assets/streams.js`: the pages' live streams closed in background tabs, on every
/// signed-in page.
pub async fn streams_js() -> Response {
    asset("text/javascript; charset=utf-8", STREAMS_JS)
}

/// `GET /assets/inbox.js`.
pub async fn inbox_js() -> Response {
    asset("text/javascript; charset=utf-8", INBOX_JS)
}

/// `GET /assets/reply.js`: the reply box of a conversation page (sending, files, typing).
pub async fn reply_js() -> Response {
    asset("text/javascript; charset=utf-8", REPLY_JS)
}

/// `GET /assets/notify.js`: unread counts, favicon badge, sound and desktop notifications.
pub async fn notify_js() -> Response {
    asset("text/javascript; charset=utf-8", NOTIFY_JS)
}

/// `GET /assets/keys.js`: keyboard shortcuts and their help dialog.
pub async fn keys_js() -> Response {
    asset("text/javascript; charset=utf-8", KEYS_JS)
}

/// `GET /assets/confirm.js`: a question before a form marked `data-confirm` posts.
pub async fn confirm_js() -> Response {
    asset("text/javascript; charset=utf-8", CONFIRM_JS)
}

/// `GET /assets/favicon.svg`.
pub async fn favicon() -> Response {
    asset("image/svg+xml", FAVICON)
}

/// `GET /assets/canned.js`: the canned-reply picker of the reply box.
pub async fn canned_js() -> Response {
    asset("text/javascript; charset=utf-8", CANNED_JS)
}

/// `GET /assets/bulk.js`: choosing rows of the inbox list for one action.
pub async fn bulk_js() -> Response {
    asset("text/javascript; charset=utf-8", BULK_JS)
}
