//! A webhook receiver on loopback: records every request (path, Standard Webhooks headers, raw
//! body) and answers 200, or the statuses queued for a path (a 500 to test retries, a 410 to
//! test disabling, a 302 to test that redirects are not followed). It does not verify
//! signatures: the tests hand what it recorded to an independent verifier.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::sync::Notify;

use super::served::{Served, lock};

/// A recorded request.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
    /// The status it was answered with.
    pub status: u16,
    pub at: Instant,
}

/// A status to answer with, and a `Retry-After` value or none.
type Answer = (u16, Option<String>);

#[derive(Default)]
struct MockState {
    received: Mutex<Vec<Received>>,
    /// Per path, the answers to give next.
    answers: Mutex<HashMap<String, VecDeque<Answer>>>,
    changed: Notify,
}

/// A running receiver.
pub struct WebhookMock {
    pub addr: SocketAddr,
    state: Arc<MockState>,
    /// Serves until the mock is dropped.
    _served: Served,
}

impl WebhookMock {
    /// Starts the receiver on `addr` (port 0 for any).
    pub async fn start(addr: SocketAddr) -> std::io::Result<Self> {
        let state = Arc::new(MockState::default());
        let app = Router::new()
            .fallback(receive)
            .with_state(Arc::clone(&state));
        let served = Served::start(addr, app).await?;
        Ok(Self {
            addr: served.addr,
            state,
            _served: served,
        })
    }

    /// The URL of `path` on this receiver.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The next requests to `path` are answered with these statuses, in order; then 200.
    pub fn answer(&self, path: &str, statuses: &[u16]) {
        lock(&self.state.answers)
            .entry(path.to_owned())
            .or_default()
            .extend(statuses.iter().map(|&status| (status, None)));
    }

    /// The next request to `path` is answered with `status` and this `Retry-After` header
    /// (whatever it says: a receiver can send anything).
    pub fn answer_with_retry_after(&self, path: &str, status: u16, retry_after: &str) {
        lock(&self.state.answers)
            .entry(path.to_owned())
            .or_default()
            .push_back((status, Some(retry_after.to_owned())));
    }

    pub fn received(&self) -> Vec<Received> {
        lock(&self.state.received).clone()
    }

    /// Waits until at least `n` requests arrived (or `timeout` passed); returns them.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.state.changed.notified();
            let received = self.received();
            if received.len() >= n || tokio::time::Instant::now() >= deadline {
                return received;
            }
            let _ = tokio::time::timeout_at(deadline, changed).await;
        }
    }
}

async fn receive(
    State(state): State<Arc<MockState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let (status, retry_after) = lock(&state.answers)
        .get_mut(&path)
        .and_then(VecDeque::pop_front)
        .unwrap_or((200, None));
    let headers = headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    lock(&state.received).push(Received {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        status,
        at: Instant::now(),
    });
    state.changed.notify_waiters();
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut response = (status, "x".repeat(10_000)).into_response();
    if status.is_redirection()
        && let Ok(location) = "http://127.0.0.1:9/elsewhere".parse()
    {
        response.headers_mut().insert("location", location);
    }
    if let Some(value) = retry_after.and_then(|v| v.parse().ok()) {
        response.headers_mut().insert("retry-after", value);
    }
    response
}
