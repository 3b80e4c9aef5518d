//! Files in the Slack mock: the external upload flow (`files.getUploadURLExternal`, the upload
//! URL, `files.completeUploadExternal`, which records what was shared in which thread, and can
//! answer injected failures) and files served for `url_private_download` with bearer auth.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde_json::{Value, json};

use super::server::{Failure, MockState, SlackMock, bot_token_ok, slack_error};
use crate::loadtest::served::lock;

/// A file `files.completeUploadExternal` shared.
#[derive(Debug, Clone)]
pub struct SharedFile {
    pub file_id: String,
    pub title: String,
    /// The name given to `files.getUploadURLExternal`.
    pub filename: String,
    pub channel_id: String,
    pub thread_ts: Option<String>,
    /// The bytes posted to the upload URL.
    pub data: Vec<u8>,
}

/// An upload URL handed out: the name and length announced, and the bytes once posted.
struct Upload {
    filename: String,
    length: usize,
    data: Option<Vec<u8>>,
}

#[derive(Default)]
pub(super) struct FileState {
    /// `http://addr` of the mock, for the URLs it hands out.
    pub(super) base: String,
    uploads: HashMap<String, Upload>,
    shared: Vec<SharedFile>,
    /// Files served for download, by path segment: name and bytes.
    served: HashMap<String, Vec<u8>>,
    /// Failures to answer, by method (`files.getUploadURLExternal`, …).
    failures: HashMap<String, Failure>,
    /// Downloads asked for (with a valid token or not).
    downloads: u64,
    next: u64,
}

pub(super) fn routes() -> Router<Arc<MockState>> {
    Router::new()
        .route("/api/files.getUploadURLExternal", post(get_upload_url))
        .route("/api/files.completeUploadExternal", post(complete_upload))
        .route("/upload/{id}", post(upload))
        .route("/files/{id}", get(download))
}

impl SlackMock {
    /// Every file shared so far.
    pub fn shared_files(&self) -> Vec<SharedFile> {
        lock(&self.state.files).shared.clone()
    }

    /// Waits until at least `n` files were shared (or `timeout` passed); returns them.
    pub async fn wait_for_shared_files(&self, n: usize, timeout: Duration) -> Vec<SharedFile> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.state.changed.notified();
            let shared = self.shared_files();
            if shared.len() >= n || tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.shared_files();
            }
        }
    }

    /// Injects (or with `None` clears) a failure for calls of a files `method`.
    pub fn set_files_failure(&self, method: &str, failure: Option<Failure>) {
        let mut files = lock(&self.state.files);
        match failure {
            Some(f) => files.failures.insert(method.to_owned(), f),
            None => files.failures.remove(method),
        };
    }

    /// Serves `data` for download with a valid bot token; returns its `url_private_download`.
    pub fn serve_file(&self, name: &str, data: &[u8]) -> String {
        let mut files = lock(&self.state.files);
        files.next += 1;
        let id = format!("F{}-{name}", files.next);
        files.served.insert(id.clone(), data.to_vec());
        format!("{}/files/{id}", files.base)
    }

    /// How many downloads were asked for.
    pub fn download_count(&self) -> u64 {
        lock(&self.state.files).downloads
    }
}

/// Why a call to the token-checked `method` is refused, if it is: a wrong bot token, or an
/// injected failure that is due.
fn refusal(state: &MockState, headers: &HeaderMap, method: &str) -> Option<Response> {
    if !bot_token_ok(state, headers) {
        return Some(slack_error("invalid_auth"));
    }
    injected(state, method)
}

/// The injected failure's answer for `method`, if one is due.
fn injected(state: &MockState, method: &str) -> Option<Response> {
    let mut files = lock(&state.files);
    match files.failures.get_mut(method)? {
        Failure::RateLimited {
            times,
            retry_after_secs,
        } if *times > 0 => {
            *times -= 1;
            state.rate_limited.fetch_add(1, Ordering::Relaxed);
            let after = retry_after_secs.to_string();
            Some(
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, after)],
                    Json(json!({"ok": false, "error": "ratelimited"})),
                )
                    .into_response(),
            )
        }
        Failure::ServerError { times } if *times > 0 => {
            *times -= 1;
            Some((StatusCode::INTERNAL_SERVER_ERROR, "upstream error").into_response())
        }
        Failure::SlackError(error) => Some(slack_error(error)),
        _ => None,
    }
}

async fn get_upload_url(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, "files.getUploadURLExternal") {
        return refused;
    }
    let (Some(filename), Some(length)) = (
        form.get("filename").cloned(),
        form.get("length").and_then(|l| l.parse::<usize>().ok()),
    ) else {
        return slack_error("invalid_arguments");
    };
    let mut files = lock(&state.files);
    files.next += 1;
    let id = format!("FMOCK{}", files.next);
    let url = format!("{}/upload/{id}", files.base);
    files.uploads.insert(
        id.clone(),
        Upload {
            filename,
            length,
            data: None,
        },
    );
    Json(json!({"ok": true, "upload_url": url, "file_id": id})).into_response()
}

/// The upload URL: takes the bytes (no token, as at Slack) if the length is the one announced.
async fn upload(
    State(state): State<Arc<MockState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let mut files = lock(&state.files);
    match files.uploads.get_mut(&id) {
        Some(upload) if upload.length == body.len() => {
            upload.data = Some(body.to_vec());
            (StatusCode::OK, format!("OK - {}", body.len())).into_response()
        }
        Some(_) => (StatusCode::BAD_REQUEST, "length mismatch").into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn complete_upload(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, "files.completeUploadExternal") {
        return refused;
    }
    let listed: Vec<Value> = form
        .get("files")
        .and_then(|f| serde_json::from_str(f).ok())
        .unwrap_or_default();
    let Some(channel_id) = form.get("channel_id").cloned() else {
        return slack_error("invalid_arguments");
    };
    let mut files = lock(&state.files);
    let mut shared = Vec::new();
    for entry in &listed {
        let id = entry["id"].as_str().unwrap_or_default();
        // An upload is completed once; its bytes must have arrived.
        let Some(Upload {
            filename,
            data: Some(data),
            ..
        }) = files.uploads.remove(id)
        else {
            return slack_error("file_not_found");
        };
        shared.push(SharedFile {
            file_id: id.to_owned(),
            title: entry["title"].as_str().unwrap_or(&filename).to_owned(),
            filename,
            channel_id: channel_id.clone(),
            thread_ts: form.get("thread_ts").cloned(),
            data,
        });
    }
    let answer: Vec<Value> = shared
        .iter()
        .map(|f| json!({"id": f.file_id, "title": f.title}))
        .collect();
    files.shared.extend(shared);
    drop(files);
    state.changed.notify_waiters();
    Json(json!({"ok": true, "files": answer})).into_response()
}

/// `url_private_download`: the bytes to a valid bot token, else (as Slack does) a 404 page.
async fn download(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let is_authorised = bot_token_ok(&state, &headers);
    let mut files = lock(&state.files);
    files.downloads += 1;
    match files.served.get(&id) {
        Some(data) if is_authorised => data.clone().into_response(),
        _ => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}
