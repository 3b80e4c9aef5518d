//! Agents, written from `docs/api.md` and `docs/integrations/slack.md`: one answers through
//! the HTTP API, one from Slack, with signed Events API callbacks (Slack's v0 scheme) into the
//! thread the Slack mock received for the conversation, retried with the same `event_id` when
//! Porch does not answer 200, as Slack does. Every attempt and its answer go into a ledger.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use porch::loadtest::SlackMock;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use serde_json::{Value, json};
use sha2::Sha256;

pub const SIGNING_SECRET: &str = "exactly-once-signing-secret";
pub const CHANNEL: &str = "CCHECK";
pub const SLACK_USER: &str = "USAM";

/// How an agent reply was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    Api,
    /// Into this thread; `is_live` when visitor messages of the conversation are posted there.
    Slack {
        thread_ts: String,
        is_live: bool,
    },
}

/// One agent reply and whether Porch said it was stored.
#[derive(Debug, Clone)]
pub struct Reply {
    pub conversation: i64,
    /// Unique, so the reply is found again in the store and in the visitor's log.
    pub body: String,
    pub via: Via,
    pub is_confirmed: bool,
}

pub type Ledger = Arc<Mutex<Vec<Reply>>>;

/// An API client with an agent's token.
#[derive(Clone)]
pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Api {
    pub fn new(http: reqwest::Client, addr: SocketAddr, token: &str) -> Self {
        Self {
            http,
            base: format!("http://{addr}"),
            token: token.to_owned(),
        }
    }

    /// A JSON call; `None` when there is no answer (the server is down or was killed).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Option<(u16, Value)> {
        let method = method.parse().expect("method");
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(20));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.ok()?;
        let status = response.status().as_u16();
        let text = response.text().await.ok()?;
        Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// The ids of the open conversations an agent sees in the API.
    pub async fn conversations(&self) -> Vec<i64> {
        match self.call("GET", "/api/v1/conversations", None).await {
            Some((200, v)) => v["conversations"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["id"].as_i64())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Posts an agent reply; whether Porch answered 201.
    pub async fn reply(&self, conversation: i64, body: &str) -> bool {
        let path = format!("/api/v1/conversations/{conversation}/messages");
        matches!(
            self.call("POST", &path, Some(json!({"body": body}))).await,
            Some((201, _))
        )
    }
}

/// Replies through the API to random conversations until `until`.
pub async fn api_agent(api: Api, ledger: Ledger, mut rng: StdRng, until: Instant) {
    let mut n = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(rng.random_range(200..700))).await;
        let conversations = api.conversations().await;
        let Some(&conversation) = conversations.choose(&mut rng) else {
            continue;
        };
        n += 1;
        let body = format!("api reply {n} to conversation {conversation}");
        let is_confirmed = api.reply(conversation, &body).await;
        ledger.lock().unwrap().push(Reply {
            conversation,
            body,
            via: Via::Api,
            is_confirmed,
        });
    }
}

/// The conversation's thread roots, and the thread its visitor messages are posted in, as the
/// Slack mock recorded them.
pub fn threads(mock: &SlackMock) -> BTreeMap<i64, (Vec<String>, Option<String>)> {
    let mut threads: BTreeMap<i64, (Vec<String>, Option<String>)> = BTreeMap::new();
    let posts = mock.posts();
    let mut root_of = BTreeMap::new();
    for post in &posts {
        let meta = &post.body["metadata"];
        if meta["event_type"] == "porch_conversation"
            && let Some(c) = meta["event_payload"]["conversation_id"].as_i64()
        {
            threads.entry(c).or_default().0.push(post.ts.clone());
            root_of.insert(post.ts.clone(), c);
        }
    }
    for post in &posts {
        if post.body["metadata"]["event_payload"]["author"] == "visitor"
            && let Some(thread) = &post.thread_ts
            && let Some(c) = root_of.get(thread)
        {
            threads.entry(*c).or_default().1 = Some(thread.clone());
        }
    }
    threads
}

/// Slack's v0 request signature: `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`.
pub fn slack_signature(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// Replies from Slack threads to random conversations until `until`.
pub async fn slack_agent(
    http: reqwest::Client,
    (events_url, team_id): (String, String),
    mock: Arc<SlackMock>,
    ledger: Ledger,
    mut rng: StdRng,
    until: Instant,
) {
    let mut n = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(rng.random_range(300..900))).await;
        let threads = threads(&mock);
        let Some((&conversation, (roots, live))) =
            threads.iter().collect::<Vec<_>>().choose(&mut rng).copied()
        else {
            continue;
        };
        // Any thread the channel shows for the conversation: an agent cannot tell a duplicate
        // header from the real one.
        let Some(thread_ts) = roots.choose(&mut rng).cloned() else {
            continue;
        };
        n += 1;
        let body = format!("slack reply {n} to conversation {conversation}");
        let now = porch::clock::now_ms() / 1000;
        // A reply's ts must differ from its thread's, as in Slack (Porch ignores a message whose
        // ts is its thread_ts: that is the thread's root). The mock numbers its posts' ts from
        // .000000 up, so replies take theirs from .900000 up, out of that range.
        let ts = format!("{now}.{:06}", 900_000 + n % 100_000);
        let event = json!({
            "type": "event_callback",
            "team_id": team_id,
            "event_id": format!("EvCheck{n}"),
            "event_time": now,
            "event": {"type": "message", "channel": CHANNEL, "user": SLACK_USER, "text": body,
                      "ts": ts, "thread_ts": thread_ts},
        })
        .to_string();
        let is_live = live.as_ref() == Some(&thread_ts);
        let is_confirmed = deliver_event(&http, &events_url, &event, &mut rng).await;
        ledger.lock().unwrap().push(Reply {
            conversation,
            body,
            via: Via::Slack { thread_ts, is_live },
            is_confirmed,
        });
    }
}

/// Sends an event as Slack does: retried (same body, so same `event_id`) when the answer is not
/// 200, up to three retries; whether one attempt got 200.
async fn deliver_event(http: &reqwest::Client, url: &str, event: &str, rng: &mut StdRng) -> bool {
    for attempt in 0..4 {
        if attempt > 0 {
            // Slack waits minutes between retries; the run compresses that.
            tokio::time::sleep(Duration::from_millis(rng.random_range(200..1_500))).await;
        }
        let timestamp = porch::clock::now_ms() / 1000;
        let mut request = http
            .post(url)
            .header("Content-Type", "application/json")
            .header("X-Slack-Request-Timestamp", timestamp.to_string())
            .header(
                "X-Slack-Signature",
                slack_signature(SIGNING_SECRET, timestamp, event),
            )
            .timeout(Duration::from_secs(3))
            .body(event.to_owned());
        if attempt > 0 {
            request = request
                .header("X-Slack-Retry-Num", attempt.to_string())
                .header("X-Slack-Retry-Reason", "http_timeout");
        }
        if let Ok(r) = request.send().await
            && r.status() == 200
        {
            return true;
        }
    }
    false
}
