//! The admin UI's stylesheet and scripts, embedded in the binary.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const ADMIN_CSS: &str = include_str!("../../assets/admin/admin.css");
const INBOX_JS: &str = include_str!("../../assets/admin/inbox.js");
const CANNED_JS: &str = include_str!("../../assets/admin/canned.js");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            // Short, so an upgrade reaches open admin tabs within minutes.
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
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

/// `GET /assets/inbox.js`.
pub async fn inbox_js() -> Response {
    asset("text/javascript; charset=utf-8", INBOX_JS)
}

/// `GET /assets/canned.js`: the canned-reply picker of the reply box.
pub async fn canned_js() -> Response {
    asset("text/javascript; charset=utf-8", CANNED_JS)
}
