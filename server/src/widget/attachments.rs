//! The widget's attachments over HTTP (docs/widget-protocol.md, "Attachments"): uploading a
//! file with the visitor token, reading one back, and the CORS preflight both need (the token
//! goes in an `Authorization` header, never in a URL). A `message` frame then names the upload.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::attachments::{self, MAX_PER_MESSAGE};
use crate::http::attachment::{
    attachment_response, declared_length, read_upload, upload_failed, uploaded,
};
use crate::http::{ApiError, ClientIp};
use crate::state::AppState;
use crate::store::{self, AttachmentPart, Uploader};
use crate::values::{Invalid, MessageBody};

use super::identity::verified_user_key;
use super::self_service::{Checked, IDENTITY_HEADER, allow, check_visitor, storage_failed};

/// Longest upload id a `message` frame may name.
const MAX_ID_LEN: usize = 64;

/// The body of a `message` frame naming `attachments`: it may be empty when there are some.
///
/// # Errors
/// Too many attachments, an id too long, or a body that is not valid.
pub(super) fn message_body(raw: &str, attachments: &[String]) -> Result<MessageBody, Invalid> {
    if attachments.len() > MAX_PER_MESSAGE {
        return Err(Invalid::from("A message may carry at most 10 attachments."));
    }
    if attachments.iter().any(|id| id.len() > MAX_ID_LEN) {
        return Err(Invalid::from(
            "An attachment id is at most 64 characters: the id an upload answered with.",
        ));
    }
    MessageBody::parse_beside_attachments(raw, !attachments.is_empty())
}

#[derive(Debug, Default, Deserialize)]
pub struct AttachmentQuery {
    #[serde(default)]
    site: String,
    /// The file's name on the visitor's device (sanitised before it is stored).
    #[serde(default)]
    name: String,
}

/// The visitor token from `Authorization: Bearer …`.
fn bearer(headers: &HeaderMap) -> &str {
    crate::http::auth::bearer(headers).unwrap_or("")
}

/// `POST /widget/attachments?site=KEY&name=NAME`, `Authorization: Bearer <visitor token>`, the
/// file as the body. Answers 201 with the upload's id for a `message` frame.
pub async fn upload(
    State(app): State<AppState>,
    Query(query): Query<AttachmentQuery>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Checked {
        origin,
        token_hash,
        site,
    } = match check_visitor(&app, &query.site, &headers, bearer(&headers)).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    let site_id = site.id;
    let limit = match app
        .readers
        .read(move |c| store::find_attachment_limit(c, site_id))
        .await
    {
        Ok(limit) => limit.min(attachments::HARD_CAP_BYTES),
        Err(err) => return storage_failed(&origin, err),
    };
    // The address's upload budget is charged the most this file may be (its declared length,
    // else the site's limit); what it did not use comes back below.
    let charged = declared_length(&headers).unwrap_or(limit).min(limit);
    if !store::upload_leaves_room(&app.config.data_dir, charged) {
        return allow(&origin, disk_nearly_full());
    }
    let uploads = &app.brakes.uploads;
    if let Err(wait) = uploads.admit(ip, charged, Instant::now()) {
        return allow(&origin, too_fast(wait));
    }
    // An upload also costs one message of the visitor's rate and counts on the site's flood
    // brake; given back with the rest when it is not stored.
    let visitor_key = u64::from_le_bytes(token_hash[..8].try_into().unwrap_or([0; 8]));
    let admitted =
        app.brakes
            .admit_message(site.id, site.limits, visitor_key, ip, false, Instant::now());
    let as_message = match admitted {
        Ok(as_message) => as_message,
        Err(refusal) => {
            uploads.give_back(ip, charged, true);
            return allow(&origin, too_fast(refusal.wait()));
        }
    };
    let data = match read_upload(&headers, body, limit).await {
        Ok(data) => data,
        Err(refused) => {
            uploads.give_back(ip, charged, true);
            return allow(&origin, refused);
        }
    };
    let size = u64::try_from(data.len()).unwrap_or(u64::MAX);
    uploads.give_back(ip, charged.saturating_sub(size), false);
    let uploader = Uploader::Visitor(token_hash);
    match attachments::store_upload(&app.writer, site.id, uploader, &query.name, data).await {
        Ok(meta) => {
            let url = format!("/widget/attachments/{}", meta.id);
            allow(&origin, uploaded(&meta, &url))
        }
        Err(err) => {
            // Not stored (a damaged image, a full disk): it costs nothing of the address's
            // budgets; the visitor's rate and the site's minute are given back only for the
            // server's own trouble (busy, a full disk: 503), not for what the file was.
            uploads.give_back(ip, size, true);
            if matches!(&err, attachments::Error::Store(e) if e.is_transient()) {
                app.brakes.give_back(as_message);
            }
            allow(&origin, upload_failed(err))
        }
    }
}

/// 503 `unavailable`: the disk is nearly full, and what room is left is for messages.
fn disk_nearly_full() -> Response {
    let mut refused = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "Files cannot be stored right now. Please send your message without it.",
    )
    .into_response();
    refused
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
    refused
}

/// 429 `rate_limited`, with how long to wait.
fn too_fast(wait: std::time::Duration) -> Response {
    let body = json!({"error": {
        "code": "rate_limited",
        "message": "You are sending files too fast.",
        "retry_after_ms": super::wire::retry_after_ms(wait),
    }});
    (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response()
}

/// `GET /widget/attachments/{id}?site=KEY`, `Authorization: Bearer <visitor token>` (and, for
/// a known visitor, `X-Porch-Identity`): the bytes, for the browser that uploaded them until a
/// message takes them, and the visitor whose conversation holds them (an agent's file on a
/// private note never); anyone else gets 404, as for an id that does not exist.
pub async fn download(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<AttachmentQuery>,
    headers: HeaderMap,
) -> Response {
    serve(&app, id, &query, &headers, AttachmentPart::File).await
}

/// `GET /widget/attachments/{id}/thumbnail?site=KEY`: an image's thumbnail, to the same
/// visitors as [`download`] and with the same headers; 404 for other files.
pub async fn thumbnail(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<AttachmentQuery>,
    headers: HeaderMap,
) -> Response {
    serve(&app, id, &query, &headers, AttachmentPart::Thumbnail).await
}

async fn serve(
    app: &AppState,
    id: String,
    query: &AttachmentQuery,
    headers: &HeaderMap,
    part: AttachmentPart,
) -> Response {
    let Checked {
        origin,
        token_hash,
        site,
    } = match check_visitor(app, &query.site, headers, bearer(headers)).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    // A verified user's conversation is stored under the user, not this browser's token.
    let user_key = verified_user_key(headers.get(IDENTITY_HEADER), &site, &app.secret_key);
    let found = app
        .readers
        .read(move |c| {
            let Some(stored) = store::find_attachment(c, &id)? else {
                return Ok(None);
            };
            // The uploading browser's until a message takes it; from then on the conversation's,
            // which is the user's for a verified user: the same browser after the user logged
            // out (a shared computer) no longer reads it.
            let is_own = stored.conversation_id.is_none()
                && stored.uploader_token_hash.as_deref() == Some(&token_hash[..]);
            let is_to_them = stored
                .conversation_token_hash
                .as_deref()
                .is_some_and(|hash| {
                    hash == token_hash || user_key.is_some_and(|user| hash == user)
                })
                && !stored.is_on_note;
            if stored.site_id != site.id || !(is_own || is_to_them) {
                return Ok(None);
            }
            store::read_attachment_part(c, stored, part)
        })
        .await;
    match found {
        Ok(Some((meta, data))) => allow(&origin, attachment_response(&meta, data)),
        Ok(None) => allow(&origin, ApiError::not_found("attachment").into_response()),
        Err(err) => storage_failed(&origin, err),
    }
}
