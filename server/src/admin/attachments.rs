//! Agents' attachments in the inbox: uploading a file for a reply (signed in, with the
//! session's CSRF token in the `x-porch-csrf` header, as the body is the file), and reading
//! the files of a conversation. The reply form then names the uploads.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::attachments::{self, HARD_CAP_BYTES};
use crate::http::attachment::{conversation_file, read_upload, upload_failed, uploaded};
use crate::http::{ApiError, Failure};
use crate::state::AppState;
use crate::store::{self, AttachmentPart, ConversationId, Uploader};

use super::page::PageError;
use super::session::{SignedIn, tokens_match};

/// The header carrying the session's CSRF token on an upload.
const CSRF_HEADER: &str = "x-porch-csrf";

#[derive(Debug, Default, Deserialize)]
pub struct NameQuery {
    /// The file's name on the agent's computer (sanitised before it is stored).
    #[serde(default)]
    name: String,
}

/// `POST /conversations/{id}/attachments?name=NAME`: stores an agent's file for a reply in
/// this conversation; 201 with its id, which the reply form's `attachments` field then names.
pub async fn upload(
    State(app): State<AppState>,
    who: SignedIn,
    Path(id): Path<i64>,
    Query(query): Query<NameQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let given = headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !tokens_match(given, &who.csrf) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "bad_csrf",
            "The page is out of date. Reload it and try again.",
        )
        .into_response();
    }
    let conversation = match app.chat.find_conversation(ConversationId(id)).await {
        Ok(conversation) => conversation,
        Err(err) => return ApiError::from(Failure::from(err)).into_response(),
    };
    let site = conversation.site_id;
    let limit = match app
        .readers
        .read(move |c| store::find_attachment_limit(c, site))
        .await
    {
        Ok(limit) => limit.min(HARD_CAP_BYTES),
        Err(err) => return ApiError::from(Failure::from(err)).into_response(),
    };
    let data = match read_upload(&headers, body, limit).await {
        Ok(data) => data,
        Err(refused) => return refused,
    };
    let uploader = Uploader::Agent(who.user.id);
    match attachments::store_upload(&app.writer, site, uploader, &query.name, data).await {
        Ok(meta) => uploaded(
            &meta,
            &format!("/conversations/{id}/attachments/{}", meta.id),
        ),
        Err(err) => upload_failed(err),
    }
}

/// `GET /conversations/{id}/attachments/{file}`: a file of this conversation's messages, or
/// the signed-in agent's own upload; 404 for anything else.
pub async fn download(
    State(app): State<AppState>,
    who: SignedIn,
    Path((id, file)): Path<(i64, String)>,
) -> Response {
    serve(&app, &who, id, file, AttachmentPart::File).await
}

/// `GET /conversations/{id}/attachments/{file}/thumbnail`: an image's thumbnail, to the same
/// agents as [`download`] and with the same headers; 404 for other files.
pub async fn thumbnail(
    State(app): State<AppState>,
    who: SignedIn,
    Path((id, file)): Path<(i64, String)>,
) -> Response {
    serve(&app, &who, id, file, AttachmentPart::Thumbnail).await
}

async fn serve(
    app: &AppState,
    who: &SignedIn,
    id: i64,
    file: String,
    part: AttachmentPart,
) -> Response {
    // Opened in a tab, or an <img> of the page: a missing file gets the page people can read.
    conversation_file(app, id, file, part, Some(who.user.id))
        .await
        .unwrap_or_else(|failure| PageError::from(failure).into_response())
}
