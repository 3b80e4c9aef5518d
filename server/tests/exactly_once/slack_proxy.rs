//! A fault wrapper in front of `porch::loadtest::SlackMock` (which the checker may not edit): it
//! forwards every call at once, so the mock records a post as real Slack would, but can hold the
//! answer past Porch's 10 s Slack client timeout. It also notes which server process sent each
//! post and when it was answered, so duplicates can be told apart: a kill explains one, a
//! timed-out answer does not.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::process::Timeline;

/// Longer than Porch's Slack client timeout (10 s, `server/src/slack/api.rs`).
pub const HOLD: Duration = Duration::from_secs(11);

/// How long after a held post no kill may happen: the timeout (10 s), the first retry's backoff
/// (2 s + 20 % jitter) and some slack. A kill inside would make the duplicate an excused one.
const HOLD_QUIET: Duration = Duration::from_secs(15);

/// One `chat.postMessage` that reached the mock.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The `ts` the mock gave the post.
    pub ts: String,
    /// The server process that sent it.
    pub epoch: u64,
    /// When the answer left the proxy; `None` if it never did (held until Porch gave up).
    pub answered: Option<Instant>,
    pub held: bool,
}

struct ProxyState {
    upstream: String,
    http: reqwest::Client,
    timeline: Arc<Timeline>,
    hold_headers: AtomicU32,
    hold_replies: AtomicU32,
    quiet_until: Mutex<Option<Instant>>,
    exchanges: Mutex<Vec<Exchange>>,
}

pub struct SlackProxy {
    pub addr: SocketAddr,
    state: Arc<ProxyState>,
    task: tokio::task::JoinHandle<()>,
}

impl SlackProxy {
    pub async fn start(upstream: SocketAddr, timeline: Arc<Timeline>) -> Self {
        let state = Arc::new(ProxyState {
            upstream: format!("http://{upstream}"),
            http: reqwest::Client::new(),
            timeline,
            hold_headers: AtomicU32::new(0),
            hold_replies: AtomicU32::new(0),
            quiet_until: Mutex::new(None),
            exchanges: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .fallback(forward)
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, state, task }
    }

    /// The URL to give Porch as `--slack-api-url`.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    /// The next `n` thread headers (posts without `thread_ts`) are answered only after [`HOLD`].
    pub fn hold_next_headers(&self, n: u32) {
        self.state.hold_headers.store(n, Ordering::SeqCst);
    }

    /// The next `n` thread replies are answered only after [`HOLD`].
    pub fn hold_next_replies(&self, n: u32) {
        self.state.hold_replies.store(n, Ordering::SeqCst);
    }

    /// Whether a kill now would blur a timeout's effect into a kill's.
    pub fn kill_allowed(&self) -> bool {
        self.state.hold_headers.load(Ordering::SeqCst) == 0
            && self.state.hold_replies.load(Ordering::SeqCst) == 0
            && self
                .state
                .quiet_until
                .lock()
                .unwrap()
                .is_none_or(|t| Instant::now() >= t)
    }

    pub fn exchanges(&self) -> Vec<Exchange> {
        self.state.exchanges.lock().unwrap().clone()
    }
}

impl Drop for SlackProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Takes one from a hold budget, if any is left.
fn take(budget: &AtomicU32) -> bool {
    budget
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

async fn forward(
    State(state): State<Arc<ProxyState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrived = Instant::now();
    let epoch = state.timeline.epoch();
    let is_post = uri.path().ends_with("/chat.postMessage");
    let is_header = serde_json::from_slice::<Value>(&body)
        .ok()
        .is_some_and(|b| b.get("thread_ts").is_none_or(Value::is_null));
    let held = is_post
        && if is_header {
            take(&state.hold_headers)
        } else {
            take(&state.hold_replies)
        };
    if held {
        *state.quiet_until.lock().unwrap() = Some(arrived + HOLD_QUIET);
    }
    // A task of its own: if Porch hangs up, the post still reaches the mock, as with Slack.
    let request = state
        .http
        .request(method, format!("{}{}", state.upstream, uri))
        .headers(headers)
        .body(body);
    let answer = tokio::spawn(async move {
        let response = request.send().await.ok()?;
        let status = response.status();
        let retry_after = response.headers().get("retry-after").cloned();
        let bytes = response.bytes().await.ok()?;
        Some((status, retry_after, bytes))
    })
    .await
    .ok()
    .flatten();
    let Some((status, retry_after, bytes)) = answer else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let ts = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v["ts"].as_str().map(str::to_owned));
    // Only a post Slack accepted makes a timed-out answer matter: give a refused one's hold back.
    let held = if held && ts.is_none() {
        let budget = if is_header {
            &state.hold_headers
        } else {
            &state.hold_replies
        };
        budget.fetch_add(1, Ordering::SeqCst);
        false
    } else {
        held
    };
    let index = ts.map(|ts| {
        let mut exchanges = state.exchanges.lock().unwrap();
        exchanges.push(Exchange {
            ts,
            epoch,
            answered: None,
            held,
        });
        exchanges.len() - 1
    });
    if held {
        tokio::time::sleep_until((arrived + HOLD).into()).await;
    }
    if let Some(i) = index {
        state.exchanges.lock().unwrap()[i].answered = Some(Instant::now());
    }
    let mut response = (status, bytes).into_response();
    response.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    if let Some(value) = retry_after {
        response.headers_mut().insert("retry-after", value);
    }
    response
}
