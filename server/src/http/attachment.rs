//! What the widget's and the inbox's attachment routes share: reading an upload's body within
//! the site's limit (refused early on its `Content-Length`, or as soon as a streamed body passes
//! the limit), the answers to an upload, and the one way an attachment's bytes are served.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::json;

use crate::attachments::{self, Kind, content_disposition};
use crate::state::AppState;
use crate::store::{self, AttachmentMeta, AttachmentPart, ConversationId, UserId};

use super::{ApiError, Failure};

/// The refusal of a body over `limit` bytes.
fn too_large(limit: u64) -> Response {
    let body = json!({"error": {
        "code": "too_large",
        "message": format!("Files may be at most {limit} bytes here."),
        "max_bytes": limit,
    }});
    (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response()
}

/// The body's length as its `Content-Length` declares it, if it does.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Reads an upload's bytes, at most `limit` of them. A `Content-Length` over the limit is
/// refused before any byte is read; a body without one is cut off once it passes the limit.
///
/// # Errors
/// The answer to send: 413 `too_large`, 403 `attachments_off` for a limit of 0, or 400 when
/// the body broke off or was empty.
pub async fn read_upload(headers: &HeaderMap, body: Body, limit: u64) -> Result<Vec<u8>, Response> {
    if limit == 0 {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "attachments_off",
            "This site does not accept files.",
        )
        .into_response());
    }
    let declared = declared_length(headers);
    if declared.is_some_and(|length| length > limit) {
        return Err(too_large(limit));
    }
    let capacity = usize::try_from(declared.unwrap_or(0).min(limit)).unwrap_or(0);
    let mut data = Vec::with_capacity(capacity);
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "incomplete_upload",
                "The upload broke off.",
            )
            .into_response());
        };
        if u64::try_from(data.len() + chunk.len()).unwrap_or(u64::MAX) > limit {
            return Err(too_large(limit));
        }
        data.extend_from_slice(&chunk);
    }
    if data.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "empty_upload",
            "The file is empty.",
        )
        .into_response());
    }
    Ok(data)
}

/// The answer to a stored upload: 201 with what a message will show of it.
pub fn uploaded(meta: &AttachmentMeta, url: &str) -> Response {
    let body = json!({
        "id": meta.id,
        "name": meta.name,
        "type": meta.content_type,
        "size": meta.size,
        "url": url,
    });
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

/// The answer to an upload that was not stored.
pub fn upload_failed(err: attachments::Error) -> Response {
    match err {
        attachments::Error::Unsupported => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_type",
            "Only images (PNG, JPEG, GIF, WebP), PDF and plain text files can be sent.",
        ),
        attachments::Error::Malformed(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "damaged_image",
            "This image is damaged and cannot be sent.",
        ),
        attachments::Error::TooLarge(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "image_too_large",
            "Images can be at most 50 megapixels, and 20,000 pixels a side.",
        ),
        attachments::Error::Store(err) => ApiError::from(Failure::from(err)),
        attachments::Error::Interrupted => ApiError::from(Failure::Internal),
    }
    .into_response()
}

/// An attachment's bytes with the stored type: images inline, everything else as a download,
/// never sniffed by the browser and sandboxed should a browser render it anyway.
pub fn attachment_response(meta: &AttachmentMeta, data: Vec<u8>) -> Response {
    let is_image = Kind::from_content_type(&meta.content_type).is_some_and(Kind::is_image);
    let mut response = data.into_response();
    let out = response.headers_mut();
    let content_type = HeaderValue::from_str(&meta.content_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    out.insert(header::CONTENT_TYPE, content_type);
    if let Ok(value) = HeaderValue::from_str(&content_disposition(&meta.name, is_image)) {
        out.insert(header::CONTENT_DISPOSITION, value);
    }
    out.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    out.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    response
}

/// A file of conversation `id` (or, named by `own_upload`, that user's upload no message took
/// yet: an agent's reply box shows it before sending): its bytes or thumbnail as
/// [`attachment_response`] serves them, or [`Failure::NotFound`] for anything else. The inbox's
/// routes and the API's read files this one way, and each answers a failure in its own shape
/// (a page, JSON).
pub async fn conversation_file(
    app: &AppState,
    id: i64,
    file: String,
    part: AttachmentPart,
    own_upload: Option<UserId>,
) -> Result<Response, Failure> {
    let found = app
        .readers
        .read(move |c| {
            let Some(stored) = store::find_attachment(c, &file)? else {
                return Ok(None);
            };
            let is_here = stored.conversation_id == Some(ConversationId(id));
            let is_mine = stored.conversation_id.is_none()
                && own_upload.is_some_and(|me| stored.user_id == Some(me));
            if !(is_here || is_mine) {
                return Ok(None);
            }
            store::read_attachment_part(c, stored, part)
        })
        .await;
    match found {
        Ok(Some((meta, data))) => Ok(attachment_response(&meta, data)),
        Ok(None) => Err(Failure::NotFound("attachment")),
        Err(err) => Err(Failure::from(err)),
    }
}
