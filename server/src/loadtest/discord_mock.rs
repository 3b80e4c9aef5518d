//! A Discord webhook mock on loopback: `GET` and `POST /api/webhooks/{id}/{token}` as Discord
//! answers them. Forum webhooks insist on `thread_name` or `thread_id` like Discord does; a
//! `thread_name` creates a thread whose id comes back as the message's `channel_id`. Content
//! over 2,000 characters and usernames Discord refuses are refused. Failures can be injected
//! per webhook: 429 with a JSON `retry_after` (float seconds) and `X-RateLimit-*` headers, 5xx, or deletion (404). Every
//! accepted post is recorded with its query and body.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::served::{Served, lock};

/// A failure to inject for a webhook.
#[derive(Debug, Clone, PartialEq)]
pub enum DiscordFailure {
    /// The next `times` posts get 429 with `retry_after` seconds.
    RateLimited { times: u32, retry_after: f64 },
    /// The next `times` posts get HTTP 500.
    ServerError { times: u32 },
}

/// A recorded, accepted post.
#[derive(Debug, Clone)]
pub struct DiscordPost {
    pub webhook_id: String,
    /// The thread it went to (created by it, or named by `?thread_id=`).
    pub thread_id: Option<String>,
    pub query: HashMap<String, String>,
    pub body: Value,
    pub message_id: String,
    pub at: Instant,
    /// The `User-Agent` it came with.
    pub user_agent: Option<String>,
}

/// A 429 answered, and when.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub webhook_id: String,
    pub at: Instant,
}

struct Hook {
    token: String,
    is_forum: bool,
    is_deleted: bool,
    /// Answers after a post carry `X-RateLimit-Remaining: 0` and this `Reset-After`.
    exhausted_for: Option<f64>,
}

#[derive(Default)]
struct MockState {
    hooks: Mutex<HashMap<String, Hook>>,
    threads: Mutex<HashMap<String, String>>,
    posts: Mutex<Vec<DiscordPost>>,
    refusals: Mutex<Vec<Refusal>>,
    failures: Mutex<HashMap<String, DiscordFailure>>,
    counter: AtomicU64,
    changed: Notify,
}

/// A running mock.
pub struct DiscordMock {
    pub addr: SocketAddr,
    state: Arc<MockState>,
    /// Serves until the mock is dropped.
    _served: Served,
}

impl DiscordMock {
    /// Starts the mock on `addr` (port 0 for any).
    pub async fn start(addr: SocketAddr) -> std::io::Result<Self> {
        let state = Arc::new(MockState::default());
        let app = Router::new()
            .route("/api/webhooks/{id}/{token}", get(describe).post(execute))
            .with_state(Arc::clone(&state));
        let served = Served::start(addr, app).await?;
        Ok(Self {
            addr: served.addr,
            state,
            _served: served,
        })
    }

    /// The base URL to configure as `PORCH_DISCORD_API_URL`.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    /// Creates a webhook (in a forum channel or a text channel) and returns its URL.
    pub fn add_webhook(&self, id: &str, is_forum: bool) -> String {
        let token = format!("token-{id}");
        lock(&self.state.hooks).insert(
            id.to_owned(),
            Hook {
                token: token.clone(),
                is_forum,
                is_deleted: false,
                exhausted_for: None,
            },
        );
        format!("{}/webhooks/{id}/{token}", self.api_url())
    }

    /// Deletes a webhook: every call gets 404 from now on.
    pub fn delete_webhook(&self, id: &str) {
        if let Some(hook) = lock(&self.state.hooks).get_mut(id) {
            hook.is_deleted = true;
        }
    }

    /// Makes every accepted post answer `X-RateLimit-Remaining: 0` with this `Reset-After`.
    pub fn set_exhausted(&self, id: &str, reset_after: Option<f64>) {
        if let Some(hook) = lock(&self.state.hooks).get_mut(id) {
            hook.exhausted_for = reset_after;
        }
    }

    /// Injects (or with `None` clears) a failure for a webhook.
    pub fn set_failure(&self, id: &str, failure: Option<DiscordFailure>) {
        let mut failures = lock(&self.state.failures);
        match failure {
            Some(f) => failures.insert(id.to_owned(), f),
            None => failures.remove(id),
        };
    }

    pub fn posts(&self) -> Vec<DiscordPost> {
        lock(&self.state.posts).clone()
    }

    pub fn refusals(&self) -> Vec<Refusal> {
        lock(&self.state.refusals).clone()
    }

    /// Waits until at least `n` posts arrived (or `timeout` passed); returns the posts.
    pub async fn wait_for_posts(&self, n: usize, timeout: Duration) -> Vec<DiscordPost> {
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
}

fn error(status: StatusCode, code: u32, message: &str) -> Response {
    (status, Json(json!({"code": code, "message": message}))).into_response()
}

/// Looks the webhook up: `None` when unknown, deleted or the token is wrong (Discord's 404).
fn known(state: &MockState, id: &str, token: &str) -> Option<(bool, Option<f64>)> {
    match lock(&state.hooks).get(id) {
        Some(hook) if hook.token == token && !hook.is_deleted => {
            Some((hook.is_forum, hook.exhausted_for))
        }
        _ => None,
    }
}

fn unknown_webhook() -> Response {
    error(StatusCode::NOT_FOUND, 10015, "Unknown Webhook")
}

async fn describe(
    State(state): State<Arc<MockState>>,
    Path((id, token)): Path<(String, String)>,
) -> Response {
    match known(&state, &id, &token) {
        Some(_) => {
            Json(json!({"id": id, "type": 1, "channel_id": "C-1", "name": "Porch"})).into_response()
        }
        None => unknown_webhook(),
    }
}

/// Discord answers 400 to empty content, content over 2,000 characters, or a refused username.
fn is_refused_body(body: &Value) -> bool {
    let content = body["content"].as_str().unwrap_or_default();
    content.is_empty()
        || content.chars().count() > 2000
        || body["username"].as_str().is_some_and(refused_username)
}

/// Discord's rules for a webhook's `username`: 1 to 80 characters, no `discord` or `clyde` in
/// any case, and not `everyone`, `here` or `system message`.
fn refused_username(name: &str) -> bool {
    let lower = name.to_lowercase();
    let length = name.trim().chars().count();
    length == 0
        || length > 80
        || lower.contains("discord")
        || lower.contains("clyde")
        || ["everyone", "here", "system message"].contains(&lower.trim())
}

fn user_agent(headers: &axum::http::HeaderMap) -> Option<String> {
    let value = headers.get(axum::http::header::USER_AGENT)?;
    value.to_str().ok().map(str::to_owned)
}

async fn execute(
    State(state): State<Arc<MockState>>,
    Path((id, token)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let Some((is_forum, exhausted_for)) = known(&state, &id, &token) else {
        return unknown_webhook();
    };
    let injected = {
        let mut failures = lock(&state.failures);
        match failures.get_mut(&id) {
            Some(DiscordFailure::RateLimited { times, retry_after }) if *times > 0 => {
                *times -= 1;
                Some(Some(*retry_after))
            }
            Some(DiscordFailure::ServerError { times }) if *times > 0 => {
                *times -= 1;
                Some(None)
            }
            _ => None,
        }
    };
    match injected {
        Some(Some(retry_after)) => {
            lock(&state.refusals).push(Refusal {
                webhook_id: id,
                at: Instant::now(),
            });
            let mut response = (
                StatusCode::TOO_MANY_REQUESTS,
                Json(json!({"message": "You are being rate limited.", "retry_after": retry_after, "global": false})),
            )
                .into_response();
            for (name, value) in [
                ("x-ratelimit-limit", "5".to_owned()),
                ("x-ratelimit-remaining", "0".to_owned()),
                ("x-ratelimit-reset-after", retry_after.to_string()),
                ("x-ratelimit-scope", "user".to_owned()),
            ] {
                if let Ok(value) = value.parse() {
                    response.headers_mut().insert(name, value);
                }
            }
            return response;
        }
        Some(None) => return (StatusCode::INTERNAL_SERVER_ERROR, "upstream error").into_response(),
        None => {}
    }
    if is_refused_body(&body) {
        return error(StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
    }
    let message_id = state.counter.fetch_add(1, Ordering::Relaxed).to_string();
    let thread_id = match (query.get("thread_id"), body["thread_name"].as_str()) {
        (Some(thread), _) => {
            if !lock(&state.threads).contains_key(thread) {
                return error(StatusCode::BAD_REQUEST, 10003, "Unknown Channel");
            }
            Some(thread.clone())
        }
        (None, Some(name)) if is_forum => {
            let thread = format!("T{message_id}");
            lock(&state.threads).insert(thread.clone(), name.to_owned());
            Some(thread)
        }
        (None, _) if is_forum => {
            return error(
                StatusCode::BAD_REQUEST,
                220_001,
                "Webhooks posted to forum channels must have a thread_name or thread_id",
            );
        }
        (None, _) => None,
    };
    let channel_id = thread_id.clone().unwrap_or_else(|| "C-1".to_owned());
    lock(&state.posts).push(DiscordPost {
        webhook_id: id,
        thread_id,
        query,
        body: body.clone(),
        message_id: message_id.clone(),
        at: Instant::now(),
        user_agent: user_agent(&headers),
    });
    state.changed.notify_waiters();
    let mut response = Json(json!({
        "id": message_id,
        "channel_id": channel_id,
        "content": body["content"],
        "flags": body["flags"],
    }))
    .into_response();
    if let Some(reset_after) = exhausted_for {
        for (name, value) in [
            ("x-ratelimit-remaining", "0".to_owned()),
            ("x-ratelimit-reset-after", reset_after.to_string()),
        ] {
            if let Ok(value) = value.parse() {
                response.headers_mut().insert(name, value);
            }
        }
    }
    response
}
