//! The framework's own refusals get Porch's bodies. Under the API's prefixes every error is
//! `{"error": {"code", "message"}}` (docs/api.md, "Errors"), also those the framework and its
//! layers answer by themselves in plain text or with no body: a body that is not JSON or not of
//! the expected shape, a path id that is not a number, a wrong method, a missing
//! `Content-Type`, an oversize body, a timeout. A script reading the code must never meet a text
//! it cannot parse. On the admin UI's pages the same refusals (a wrong method when a form's
//! address is opened, a path id that is not a number) get an HTML page instead.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::admin::refused_page;

/// The most of a plain-text rejection kept as the message; the framework's are a line.
const MAX_MESSAGE: usize = 4096;

/// True for the prefixes whose answers are JSON: the API, and Slack's endpoints.
pub fn is_api_path(path: &str) -> bool {
    path.starts_with("/api/") || path.starts_with("/integrations/")
}

/// The framework's texts that name its own parts (`Cannot parse … to a i64`), said
/// as what the caller sent; any other text is kept as it is.
fn plain_words(text: &str) -> String {
    if let Some(rest) = text.strip_prefix("Invalid URL: Cannot parse ") {
        // `abc` to a `i64`, or for a path of several parts, value at index 1 with value `abc`
        // to a `i64` (or `key` with value …).
        let value = rest
            .split_once("with value ")
            .map_or(rest, |(_, value)| value);
        let value = value
            .rsplit_once(" to a `")
            .map_or(value, |(value, _)| value);
        return format!("The URL has {value} where a number belongs (docs/api.md).");
    }
    if let Some(rest) = text.strip_prefix("Failed to parse the request body as JSON: ") {
        // serde's words after the path it reached (`[0][0]…: `), which for a body nested too
        // deep is the whole 128-level path. Its syntax messages hold no ": " of their own.
        let words = rest.rsplit_once(": ").map_or(rest, |(_, words)| words);
        if words.starts_with("recursion limit exceeded") {
            return "The JSON is nested more than 127 levels deep (docs/api.md).".to_owned();
        }
        return format!("The body is not JSON: {words} (docs/api.md).");
    }
    if let Some(rest) = text.strip_prefix("Failed to deserialize query string: ") {
        return format!("The query string cannot be read: {rest} (docs/api.md).");
    }
    text.to_owned()
}

/// Rewrites a client error that is not JSON into the API's error shape, or one on a page that
/// is neither JSON (the inbox script's) nor HTML into an HTML page, keeping its status and
/// headers (`Allow`, HSTS); every other answer passes untouched. A refusal this does not know
/// (none today) gets the code `refused`.
pub async fn refusal_bodies(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let (is_api, is_page) = (is_api_path(path), !path.starts_with("/widget/"));
    let method = request.method().clone();
    let response = next.run(request).await;
    let status = response.status();
    if !status.is_client_error() || is_of_type(response.headers(), "application/json") {
        return response;
    }
    if !is_api && is_page && !is_of_type(response.headers(), "text/html") {
        return with_headers_of(response, refused_page(status, &method));
    }
    if !is_api {
        return response;
    }
    let (code, fallback) = match status {
        StatusCode::BAD_REQUEST => ("bad_request", "The request could not be read.".to_owned()),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method_not_allowed",
            format!("This URL does not take {method}; the Allow header lists what it takes."),
        ),
        StatusCode::REQUEST_TIMEOUT => (
            "timeout",
            "The request took longer than the server allows.".to_owned(),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            "too_large",
            "The body is larger than the server accepts.".to_owned(),
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "unsupported_media_type",
            "The body must be JSON, sent with Content-Type: application/json.".to_owned(),
        ),
        StatusCode::UNPROCESSABLE_ENTITY => ("invalid", "The body is not valid.".to_owned()),
        _ => ("refused", "The request was refused.".to_owned()),
    };
    let (parts, body) = response.into_parts();
    // A body some layer encoded is not text to quote; the fallback then says what happened.
    let text = if parts.headers.contains_key(header::CONTENT_ENCODING) {
        String::new()
    } else {
        axum::body::to_bytes(body, MAX_MESSAGE)
            .await
            .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
            .unwrap_or_default()
    };
    let message = if text.is_empty() || status == StatusCode::PAYLOAD_TOO_LARGE {
        fallback
    } else {
        plain_words(&text)
    };
    let rewritten = ApiError::new(status, code, message).into_response();
    with_headers_of(Response::from_parts(parts, Body::empty()), rewritten)
}

/// `rewritten`, with every header of `refused` that the layers within set (Allow, Retry-After,
/// HSTS…) except those of its old body.
fn with_headers_of(refused: Response, mut rewritten: Response) -> Response {
    let mut kept = refused.into_parts().0.headers;
    for name in [
        header::CONTENT_TYPE,
        header::CONTENT_LENGTH,
        header::CONTENT_ENCODING,
    ] {
        kept.remove(name);
    }
    rewritten.headers_mut().extend(kept);
    rewritten
}

fn is_of_type(headers: &HeaderMap, kind: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with(kind))
}
