//! A Slack mock on loopback: `chat.postMessage` answers with a `ts` after a set delay and records
//! every post; failures can be injected per channel (429 with `Retry-After`, 5xx, Slack error
//! codes), a per-channel rate limit like Slack's can be set (`limit.rs`), and thread headers can
//! be held: recorded at once, answered late (past a client's timeout). `conversations.history`
//! lists the channel's top-level posts with their metadata; `auth.test`, `users.info` and
//! `apps.connections.open` answer; `chat.update` (applied to the post's text, and able to answer
//! 429s), `chat.postEphemeral` and `views.open` are recorded;
//! and it speaks enough Socket Mode (hello, `events_api`, `slash_commands` and `interactive`
//! envelopes, acks) to test that path. Tokens starting with `xoxb-` are valid unless revoked;
//! app tokens start with `xapp-`. Files (external uploads, `url_private_download`) are in
//! `files.rs`.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

use super::files::{self, FileState};
use super::limit::{ChannelLimit, ChannelLimits};
use super::socket;
use crate::loadtest::served::{Served, lock};

/// Team and bot identity the mock reports.
pub const TEAM_ID: &str = "T0MOCK";
pub const BOT_USER_ID: &str = "UBOT";
pub const BOT_ID: &str = "BBOT";

/// A failure to inject for a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The next `times` posts get HTTP 429 with `Retry-After: retry_after_secs`.
    RateLimited { times: u32, retry_after_secs: u64 },
    /// The next `times` posts get Slack's older form of a rate limit: HTTP 200 with
    /// `{"ok": false, "error": "ratelimited"}` and `Retry-After: retry_after_secs`.
    RateLimitedIn200 { times: u32, retry_after_secs: u64 },
    /// The next `times` posts get HTTP 500.
    ServerError { times: u32 },
    /// Every post gets `{"ok": false, "error": …}` until cleared.
    SlackError(String),
}

/// A recorded `chat.postMessage` call.
#[derive(Debug, Clone)]
pub struct Post {
    pub channel: String,
    pub thread_ts: Option<String>,
    pub text: String,
    pub username: Option<String>,
    pub ts: String,
    pub body: Value,
    /// The request's `Content-Type`, so a test can check the charset Slack asks for.
    pub content_type: Option<String>,
    /// When the request arrived (before the delay), for the load test's job lag (ack → post).
    pub received_at: std::time::Instant,
}

#[derive(Default)]
pub(super) struct MockState {
    delay: Mutex<Duration>,
    posts: Mutex<Vec<Post>>,
    failures: Mutex<HashMap<String, Failure>>,
    /// Slack's per-channel limit on posts, off unless set.
    channel_limits: Mutex<ChannelLimits>,
    pub(super) revoked: Mutex<HashSet<String>>,
    users: Mutex<HashMap<String, (String, Option<String>)>>,
    pub(super) sockets: Mutex<Vec<mpsc::UnboundedSender<String>>>,
    /// The `User-Agent` of each Socket Mode connection, in order.
    pub(super) socket_agents: Mutex<Vec<String>>,
    /// Each ack's envelope id and its payload (`Null` without one).
    pub(super) acks: Mutex<Vec<(String, Value)>>,
    counter: AtomicU64,
    pub(super) changed: Notify,
    pub(super) rate_limited: AtomicU64,
    /// Thread headers still to hold, and for how long each one's answer waits.
    held_headers: Mutex<(u32, Duration)>,
    /// History calls still to refuse, and with which Slack error.
    history_failure: Mutex<(u32, String)>,
    history_calls: AtomicU64,
    /// `chat.update`, `chat.postEphemeral` and `views.open` calls: method and body.
    calls: Mutex<Vec<(&'static str, Value)>>,
    /// `chat.update` calls still to answer with 429 (`Retry-After: 1`).
    updates_rate_limited: Mutex<u32>,
    /// External uploads, shared files and files served for download.
    pub(super) files: Mutex<FileState>,
}

/// A running mock.
pub struct SlackMock {
    pub addr: SocketAddr,
    pub(super) state: Arc<MockState>,
    /// Serves until the mock is dropped.
    _served: Served,
}

impl SlackMock {
    /// Starts the mock on `addr` (use port 0 for any) with a delay per post.
    pub async fn start(addr: SocketAddr, delay: Duration) -> std::io::Result<Self> {
        let state = Arc::new(MockState::default());
        *lock(&state.delay) = delay;
        let app = Router::new()
            .route("/api/chat.postMessage", post(post_message))
            .route("/api/conversations.history", get(history))
            .route("/api/auth.test", post(auth_test))
            // A read method: `GET` with query arguments only, as Slack takes no JSON body for it.
            .route("/api/users.info", get(users_info))
            .route("/api/apps.connections.open", post(open_connection))
            .route("/api/chat.update", post(chat_update))
            .route("/api/chat.postEphemeral", post(post_ephemeral))
            .route("/api/views.open", post(views_open))
            .route("/mock/users", post(add_user))
            .route("/socket", get(socket::socket))
            .merge(files::routes())
            .with_state(Arc::clone(&state));
        let served = Served::start(addr, app).await?;
        lock(&state.files).base = format!("http://{}", served.addr);
        Ok(Self {
            addr: served.addr,
            state,
            _served: served,
        })
    }

    /// The base URL to configure as `PORCH_SLACK_API_URL`.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.state.delay) = delay;
    }

    /// The next `times` thread headers (posts without `thread_ts`) are recorded, and visible in
    /// `conversations.history`, as soon as they arrive, but answered only after `delay`: a client
    /// with a shorter timeout sees no answer although Slack has the post.
    pub fn hold_headers(&self, times: u32, delay: Duration) {
        *lock(&self.state.held_headers) = (times, delay);
    }

    /// The next `times` `conversations.history` calls answer `{"ok": false, "error": error}`
    /// (for example `missing_scope`, as for an app without `channels:history`).
    pub fn fail_history(&self, times: u32, error: &str) {
        *lock(&self.state.history_failure) = (times, error.to_owned());
    }

    /// How many `conversations.history` calls arrived.
    pub fn history_calls(&self) -> u64 {
        self.state.history_calls.load(Ordering::Relaxed)
    }

    /// Injects (or with `None` clears) a failure for posts to `channel`.
    pub fn set_failure(&self, channel: &str, failure: Option<Failure>) {
        let mut failures = lock(&self.state.failures);
        match failure {
            Some(f) => failures.insert(channel.to_owned(), f),
            None => failures.remove(channel),
        };
    }

    /// Limits posts per channel the way Slack does (or with `None` stops limiting): a post
    /// beyond the limit gets HTTP 429 `ratelimited` with `Retry-After`, counted in
    /// [`Self::rate_limited_count`].
    pub fn set_channel_limit(&self, limit: Option<ChannelLimit>) {
        lock(&self.state.channel_limits).set(limit);
    }

    /// Makes a bot or app-level token invalid (`invalid_auth`), as if it had been revoked.
    pub fn revoke_token(&self, token: &str) {
        lock(&self.state.revoked).insert(token.to_owned());
    }

    /// A user `users.info` knows.
    pub fn add_user(&self, id: &str, name: &str, email: Option<&str>) {
        lock(&self.state.users).insert(id.to_owned(), (name.to_owned(), email.map(str::to_owned)));
    }

    /// Every successful post so far.
    pub fn posts(&self) -> Vec<Post> {
        lock(&self.state.posts).clone()
    }

    /// How many posts and updates were answered with 429 (injected or over the channel limit).
    pub fn rate_limited_count(&self) -> u64 {
        self.state.rate_limited.load(Ordering::Relaxed)
    }

    /// Waits until at least `n` posts arrived (or `timeout` passed); returns the posts.
    pub async fn wait_for_posts(&self, n: usize, timeout: Duration) -> Vec<Post> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.state.changed.notified();
            let posts = self.posts();
            if posts.len() >= n || tokio::time::Instant::now() >= deadline {
                return posts;
            }
            let _ = tokio::time::timeout_at(deadline, changed).await;
        }
    }

    /// The bodies of the successful calls of `method` (`chat.update`, `chat.postEphemeral`,
    /// `views.open`) so far.
    pub fn calls(&self, method: &str) -> Vec<Value> {
        lock(&self.state.calls)
            .iter()
            .filter(|(m, _)| *m == method)
            .map(|(_, body)| body.clone())
            .collect()
    }

    /// Waits until at least `n` calls of `method` succeeded (or `timeout` passed); returns them.
    pub async fn wait_for_calls(&self, method: &str, n: usize, timeout: Duration) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.state.changed.notified();
            let calls = self.calls(method);
            if calls.len() >= n || tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.calls(method);
            }
        }
    }

    /// The next `times` `chat.update` calls get HTTP 429 with `Retry-After: 1`.
    pub fn rate_limit_updates(&self, times: u32) {
        *lock(&self.state.updates_rate_limited) = times;
    }

    /// Sends an `events_api` envelope to every connected Socket Mode client; returns its
    /// envelope id, or `None` if no client is connected.
    pub fn send_socket_event(&self, payload: &Value) -> Option<String> {
        self.send_socket_envelope("events_api", payload)
    }

    /// Sends an envelope of `kind` (`events_api`, `slash_commands`, `interactive`) to every
    /// connected Socket Mode client; returns its envelope id, or `None` if none is connected.
    pub fn send_socket_envelope(&self, kind: &str, payload: &Value) -> Option<String> {
        let id = format!("env-{}", self.state.counter.fetch_add(1, Ordering::Relaxed));
        let envelope = json!({
            "envelope_id": id,
            "type": kind,
            "accepts_response_payload": false,
            "retry_attempt": 0,
            "payload": payload,
        })
        .to_string();
        let mut sockets = lock(&self.state.sockets);
        sockets.retain(|s| s.send(envelope.clone()).is_ok());
        (!sockets.is_empty()).then_some(id)
    }

    /// Waits until a Socket Mode client is connected.
    pub async fn wait_for_socket(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while tokio::time::Instant::now() < deadline {
            if lock(&self.state.sockets).iter().any(|s| !s.is_closed()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Waits until the envelope was acknowledged.
    pub async fn wait_for_ack(&self, envelope_id: &str, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.state.changed.notified();
            if lock(&self.state.acks).iter().any(|(a, _)| a == envelope_id) {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return false;
            }
        }
    }
}

pub(super) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

pub(super) fn slack_error(error: &str) -> Response {
    Json(json!({"ok": false, "error": error})).into_response()
}

pub(super) fn bot_token_ok(state: &MockState, headers: &HeaderMap) -> bool {
    bearer(headers).is_some_and(|t| t.starts_with("xoxb-") && !lock(&state.revoked).contains(t))
}

async fn post_message(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let received_at = std::time::Instant::now();
    if !bot_token_ok(&state, &headers) {
        return slack_error("invalid_auth");
    }
    let Some(channel) = body["channel"].as_str().map(str::to_owned) else {
        return slack_error("channel_not_found");
    };
    let injected = {
        let mut failures = lock(&state.failures);
        match failures.get_mut(&channel) {
            Some(Failure::RateLimited {
                times,
                retry_after_secs,
            }) if *times > 0 => {
                *times -= 1;
                Some((StatusCode::TOO_MANY_REQUESTS, Some(*retry_after_secs), None))
            }
            Some(Failure::RateLimitedIn200 {
                times,
                retry_after_secs,
            }) if *times > 0 => {
                *times -= 1;
                Some((StatusCode::OK, Some(*retry_after_secs), None))
            }
            Some(Failure::ServerError { times }) if *times > 0 => {
                *times -= 1;
                Some((StatusCode::INTERNAL_SERVER_ERROR, None, None))
            }
            Some(Failure::SlackError(error)) => Some((StatusCode::OK, None, Some(error.clone()))),
            _ => None,
        }
    };
    match injected {
        Some((StatusCode::TOO_MANY_REQUESTS, retry_after, _)) => {
            return rate_limited(&state, retry_after.unwrap_or(1));
        }
        Some((StatusCode::OK, Some(retry_after), None)) => {
            return rate_limited_as(&state, StatusCode::OK, retry_after);
        }
        Some((_, _, Some(error))) => return slack_error(&error),
        Some((status, _, None)) => return (status, "upstream error").into_response(),
        None => {}
    }
    // Checked on arrival, like Slack: a refused post never waits for the delay.
    if let Err(retry_after) = lock(&state.channel_limits).admit(&channel, received_at) {
        return rate_limited(&state, retry_after);
    }
    let is_header = body["thread_ts"].as_str().is_none();
    let held = {
        let mut held = lock(&state.held_headers);
        (is_header && held.0 > 0).then(|| {
            held.0 -= 1;
            held.1
        })
    };
    let delay = *lock(&state.delay);
    if held.is_none() && !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let n = state.counter.fetch_add(1, Ordering::Relaxed);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let ts = format!("{secs}.{n:06}");
    lock(&state.posts).push(Post {
        channel: channel.clone(),
        thread_ts: body["thread_ts"].as_str().map(str::to_owned),
        text: body["text"].as_str().unwrap_or_default().to_owned(),
        username: body["username"].as_str().map(str::to_owned),
        ts: ts.clone(),
        body,
        content_type: headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        received_at,
    });
    state.changed.notify_waiters();
    if let Some(hold) = held {
        // Recorded already: the post exists whether or not the client is still waiting.
        tokio::time::sleep(hold).await;
    }
    Json(json!({"ok": true, "channel": channel, "ts": ts})).into_response()
}

/// Slack's answer past a rate limit: HTTP 429, `ratelimited`, `Retry-After` in whole seconds.
fn rate_limited(state: &MockState, retry_after_secs: u64) -> Response {
    rate_limited_as(state, StatusCode::TOO_MANY_REQUESTS, retry_after_secs)
}

/// A rate limit answered with `status` (Slack's older API answered 200).
fn rate_limited_as(state: &MockState, status: StatusCode, retry_after_secs: u64) -> Response {
    state.rate_limited.fetch_add(1, Ordering::Relaxed);
    (
        status,
        [(header::RETRY_AFTER, retry_after_secs.to_string())],
        Json(json!({"ok": false, "error": "ratelimited"})),
    )
        .into_response()
}

/// Most messages one history page holds (Slack's documented maximum).
const HISTORY_LIMIT_MAX: usize = 999;

#[derive(serde::Deserialize)]
struct HistoryQuery {
    channel: String,
    oldest: Option<String>,
    latest: Option<String>,
    inclusive: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
    include_all_metadata: Option<String>,
}

/// `conversations.history`: the channel's top-level posts (thread replies are not in a
/// channel's history), newest first, paged by an opaque cursor; metadata only when asked for.
async fn history(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Query(query): Query<HistoryQuery>,
) -> Response {
    state.history_calls.fetch_add(1, Ordering::Relaxed);
    if !bot_token_ok(&state, &headers) {
        return slack_error("invalid_auth");
    }
    {
        let mut failure = lock(&state.history_failure);
        if failure.0 > 0 {
            failure.0 -= 1;
            return slack_error(&failure.1.clone());
        }
    }
    let number = |ts: &str| ts.parse::<f64>().ok();
    let inclusive = matches!(query.inclusive.as_deref(), Some("true" | "1"));
    let oldest = query.oldest.as_deref().and_then(number);
    let latest = query.latest.as_deref().and_then(number);
    let in_range = |ts: f64| {
        let after = oldest.is_none_or(|o| if inclusive { ts >= o } else { ts > o });
        let before = latest.is_none_or(|l| if inclusive { ts <= l } else { ts < l });
        after && before
    };
    let with_metadata = matches!(query.include_all_metadata.as_deref(), Some("true" | "1"));
    let mut messages: Vec<(f64, Value)> = lock(&state.posts)
        .iter()
        .filter(|p| p.channel == query.channel && p.thread_ts.is_none())
        .filter_map(|p| Some((number(&p.ts)?, p)))
        .filter(|(ts, _)| in_range(*ts))
        .map(|(ts, p)| {
            let mut message = json!({
                "type": "message", "ts": p.ts, "text": p.text,
                "user": BOT_USER_ID, "bot_id": BOT_ID, "app_id": "AMOCK",
            });
            if with_metadata && !p.body["metadata"].is_null() {
                message["metadata"] = p.body["metadata"].clone();
            }
            (ts, message)
        })
        .collect();
    messages.sort_by(|a, b| b.0.total_cmp(&a.0));
    let start = query
        .cursor
        .as_deref()
        .and_then(|c| c.strip_prefix("next:"))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let limit = query.limit.unwrap_or(100).clamp(1, HISTORY_LIMIT_MAX);
    let page: Vec<Value> = messages
        .into_iter()
        .skip(start)
        .take(limit + 1)
        .map(|(_, m)| m)
        .collect();
    let has_more = page.len() > limit;
    let page: Vec<Value> = page.into_iter().take(limit).collect();
    let next_cursor = if has_more {
        format!("next:{}", start + limit)
    } else {
        String::new()
    };
    Json(json!({
        "ok": true,
        "messages": page,
        "has_more": has_more,
        "response_metadata": {"next_cursor": next_cursor},
    }))
    .into_response()
}

/// A recorded method: answers `ok` (or a 429 for `chat.update` when asked to) and records it.
fn recorded(state: &MockState, headers: &HeaderMap, body: Value, method: &'static str) -> Response {
    if !bot_token_ok(state, headers) {
        return slack_error("invalid_auth");
    }
    if method == "chat.update" {
        let mut left = lock(&state.updates_rate_limited);
        if *left > 0 {
            *left -= 1;
            return rate_limited(state, 1);
        }
    }
    if method == "chat.update" {
        // Like Slack, the history shows the new text from now on.
        let mut posts = lock(&state.posts);
        if let Some(post) = posts
            .iter_mut()
            .find(|p| p.ts == body["ts"].as_str().unwrap_or(""))
        {
            body["text"]
                .as_str()
                .unwrap_or_default()
                .clone_into(&mut post.text);
        }
    }
    lock(&state.calls).push((method, body));
    state.changed.notify_waiters();
    Json(json!({"ok": true})).into_response()
}

async fn chat_update(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    recorded(&state, &headers, body, "chat.update")
}

async fn post_ephemeral(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    recorded(&state, &headers, body, "chat.postEphemeral")
}

async fn views_open(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    recorded(&state, &headers, body, "views.open")
}

/// `POST /mock/users {"id", "name", "email"}`: [`SlackMock::add_user`] for a mock in another
/// process (`porch slack-mock`, used by the browser tests).
async fn add_user(State(state): State<Arc<MockState>>, Json(body): Json<Value>) -> StatusCode {
    let Some(id) = body["id"].as_str() else {
        return StatusCode::BAD_REQUEST;
    };
    let name = body["name"].as_str().unwrap_or(id).to_owned();
    let email = body["email"].as_str().map(str::to_owned);
    lock(&state.users).insert(id.to_owned(), (name, email));
    StatusCode::NO_CONTENT
}

async fn auth_test(State(state): State<Arc<MockState>>, headers: HeaderMap) -> Response {
    if !bot_token_ok(&state, &headers) {
        return slack_error("invalid_auth");
    }
    Json(json!({"ok": true, "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID}))
        .into_response()
}

async fn users_info(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !bot_token_ok(&state, &headers) {
        return slack_error("invalid_auth");
    }
    let id = query.get("user").map_or("", String::as_str);
    match lock(&state.users).get(id) {
        Some((name, email)) => Json(json!({
            "ok": true,
            "user": {"id": id, "name": name, "profile": {"display_name": name, "email": email}},
        }))
        .into_response(),
        None => slack_error("user_not_found"),
    }
}

async fn open_connection(State(state): State<Arc<MockState>>, headers: HeaderMap) -> Response {
    if !bearer(&headers)
        .is_some_and(|t| t.starts_with("xapp-") && !lock(&state.revoked).contains(t))
    {
        return slack_error("invalid_auth");
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    Json(json!({"ok": true, "url": format!("ws://{host}/socket")})).into_response()
}
