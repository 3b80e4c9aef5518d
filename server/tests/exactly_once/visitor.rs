//! A widget-protocol v1 client written from `docs/widget-protocol.md`: it keeps its token and
//! `last_id` (the highest id received in `welcome.messages` or a pushed `message`, never an ack
//! id), resends every unacknowledged message with the same `client_id` after a reconnect, and
//! drops its connection at random. It records everything it was sent, for the checks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub const ORIGIN: &str = "http://shop.test";

/// A message the visitor has sent and has no ack for yet.
#[derive(Debug, Clone)]
struct Pending {
    client_id: String,
    body: String,
    /// Sent on the current connection (reset on reconnect, and by a refusal).
    is_sent: bool,
    not_before: Instant,
}

/// What one visitor saw; read by the checks after the run.
#[derive(Debug, Clone, Default)]
pub struct VisitorLog {
    pub name: String,
    token: Option<String>,
    pub last_id: i64,
    pending: Vec<Pending>,
    /// `client_id` → message id, from an `ack` or from the visitor's own message in a welcome.
    pub acked: BTreeMap<String, i64>,
    /// Every agent message received: id → (conversation, body, times received).
    pub agent_messages: BTreeMap<i64, (i64, String, u32)>,
    /// Broken promises seen on the wire (ids re-sent below `last_id`, out of order, acks that
    /// changed their id).
    pub violations: Vec<String>,
    pub connections: u32,
    sent: u32,
    /// Writes on the site connected to Slack (check 2 looks only at those).
    pub is_on_slack_site: bool,
    /// Parked visitors stay offline until woken (for the long-absence scenario).
    pub is_parked: bool,
}

pub type SharedLog = Arc<Mutex<VisitorLog>>;

/// How a visitor behaves.
pub struct Visitor {
    pub log: SharedLog,
    pub ws_url: String,
    pub rng: StdRng,
    /// Set: after its first ack the visitor goes offline until this is notified.
    pub park: Option<Arc<Notify>>,
    /// The `last_id` sent in this connection's hello: nothing at or below it may come again.
    hello_last_id: i64,
    /// The highest id received on this connection: ids must grow on a connection.
    highest_on_connection: i64,
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

impl Visitor {
    pub fn new(name: &str, ws_url: String, rng: StdRng) -> Self {
        let log = VisitorLog {
            name: name.to_owned(),
            ..VisitorLog::default()
        };
        Self {
            log: Arc::new(Mutex::new(log)),
            ws_url,
            rng,
            park: None,
            hello_last_id: 0,
            highest_on_connection: 0,
        }
    }

    /// Picks up a visitor's log again (its token, `last_id` and unacked messages) after the run.
    pub fn attach(log: SharedLog, ws_url: String, rng: StdRng) -> Self {
        Self {
            log,
            ws_url,
            rng,
            park: None,
            hello_last_id: 0,
            highest_on_connection: 0,
        }
    }

    /// Chats until `until`, reconnecting whenever the connection drops or the server dies.
    pub async fn run(mut self, until: Instant) {
        while Instant::now() < until {
            let Some(ws) = self.session_start().await else {
                // The server is down or restarting: retry soon, as the widget does with backoff.
                tokio::time::sleep(Duration::from_millis(self.rng.random_range(50..250))).await;
                continue;
            };
            self.chat(ws, until).await;
            let has_ack = !self.log.lock().unwrap().acked.is_empty();
            if has_ack && let Some(park) = self.park.take() {
                self.log.lock().unwrap().is_parked = true;
                let _ = tokio::time::timeout_at(until.into(), park.notified()).await;
                self.log.lock().unwrap().is_parked = false;
            }
        }
    }

    /// After the run: reconnects until every pending message is acked and every id in
    /// `expected` was received, or the deadline passes.
    pub async fn settle(&mut self, expected: &[i64], deadline: Instant) {
        while Instant::now() < deadline {
            let Some(mut ws) = self.session_start().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            loop {
                let done = {
                    let log = self.log.lock().unwrap();
                    log.pending.is_empty()
                        && expected
                            .iter()
                            .all(|id| log.agent_messages.contains_key(id))
                };
                if done {
                    return;
                }
                self.send_due(&mut ws).await;
                let left = deadline.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left.min(Duration::from_millis(500)), ws.next()).await {
                    Ok(Some(Ok(Message::Text(text)))) => self.on_frame(&text),
                    Ok(Some(Ok(_))) | Err(_) => {}
                    Ok(Some(Err(_)) | None) => break,
                }
                if Instant::now() >= deadline {
                    return;
                }
            }
        }
    }

    /// Connects and says hello; handles the welcome. `None` if any step fails.
    async fn session_start(&mut self) -> Option<Ws> {
        let mut request = self.ws_url.as_str().into_client_request().ok()?;
        request
            .headers_mut()
            .insert("origin", ORIGIN.parse().expect("origin"));
        let (mut ws, _) = tokio::time::timeout(
            Duration::from_secs(5),
            tokio_tungstenite::connect_async(request),
        )
        .await
        .ok()?
        .ok()?;
        let hello = {
            let mut log = self.log.lock().unwrap();
            log.connections += 1;
            for p in &mut log.pending {
                p.is_sent = false;
            }
            // A new page per connection: the visitor browses, and webhook payloads that are
            // rebuilt on a retry would show it.
            let page = format!("{ORIGIN}/page-{}", log.connections);
            json!({"type": "hello", "v": 1, "token": log.token, "last_id": log.last_id, "page": page})
        };
        ws.send(Message::text(hello.to_string())).await.ok()?;
        let hello_last_id = hello["last_id"].as_i64().unwrap_or(0);
        let welcome = loop {
            match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => {
                    let frame: Value = serde_json::from_str(&text).ok()?;
                    if frame["type"] == "welcome" {
                        break frame;
                    }
                    return None;
                }
                Ok(Some(Ok(_))) => {}
                _ => return None,
            }
        };
        let mut log = self.log.lock().unwrap();
        log.token = welcome["token"].as_str().map(str::to_owned);
        let mut highest = hello_last_id;
        for m in welcome["messages"].as_array().into_iter().flatten() {
            record_message(&mut log, m, hello_last_id, &mut highest, "welcome");
        }
        drop(log);
        self.highest_on_connection = highest;
        self.hello_last_id = hello_last_id;
        Some(ws)
    }
}

impl Visitor {
    /// One connection's life: new messages now and then, every frame recorded, and a random
    /// drop (or the server's death) to end it.
    async fn chat(&mut self, mut ws: Ws, until: Instant) {
        let lifetime = Duration::from_millis(self.rng.random_range(500..6_000));
        let ends = (Instant::now() + lifetime).min(until);
        let mut next_say = Instant::now() + self.think();
        loop {
            let now = Instant::now();
            if now >= ends {
                // An abrupt drop half the time (a closed laptop), a clean close otherwise.
                if self.rng.random_bool(0.5) {
                    let _ = ws.close(None).await;
                }
                return;
            }
            if now >= next_say && self.park_waits_for_ack() {
                self.say();
                next_say = now + self.think();
                // Now and then a (new) address: webhook payloads show it, so a payload rebuilt
                // for a retry or a replay would differ from the first.
                if self.rng.random_bool(0.3) && !self.log.lock().unwrap().acked.is_empty() {
                    let email = {
                        let log = self.log.lock().unwrap();
                        format!("{}.{}@example.org", log.name, log.sent)
                    };
                    let frame = json!({"type": "email", "email": email});
                    if ws.send(Message::text(frame.to_string())).await.is_err() {
                        return;
                    }
                }
            }
            self.send_due(&mut ws).await;
            let wake = ends.min(next_say).max(now + Duration::from_millis(5));
            match tokio::time::timeout_at(wake.into(), ws.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => self.on_frame(&text),
                Ok(Some(Ok(_))) | Err(_) => {}
                Ok(Some(Err(_)) | None) => return,
            }
            if self.park.is_some() && !self.log.lock().unwrap().acked.is_empty() {
                return;
            }
        }
    }

    /// A parked visitor sends one message only, then waits for its ack.
    fn park_waits_for_ack(&self) -> bool {
        let log = self.log.lock().unwrap();
        self.park.is_none() || (log.sent == 0 && log.pending.is_empty())
    }

    fn think(&mut self) -> Duration {
        // About 30 messages a minute at most: the site's default rate for one visitor.
        Duration::from_millis(self.rng.random_range(1_500..4_000))
    }

    fn say(&mut self) {
        let mut log = self.log.lock().unwrap();
        if log.pending.len() >= 3 {
            return;
        }
        log.sent += 1;
        let client_id = format!("{}-{}", log.name, log.sent);
        let body = format!("{} asks question {}", log.name, log.sent);
        log.pending.push(Pending {
            client_id,
            body,
            is_sent: false,
            not_before: Instant::now(),
        });
    }

    /// Sends every pending message not yet sent on this connection whose wait is over.
    async fn send_due(&mut self, ws: &mut Ws) {
        let due: Vec<(String, String)> = {
            let mut log = self.log.lock().unwrap();
            let now = Instant::now();
            log.pending
                .iter_mut()
                .filter(|p| !p.is_sent && p.not_before <= now)
                .map(|p| {
                    p.is_sent = true;
                    (p.client_id.clone(), p.body.clone())
                })
                .collect()
        };
        for (client_id, body) in due {
            let frame = json!({"type": "message", "client_id": client_id, "body": body});
            if ws.send(Message::text(frame.to_string())).await.is_err() {
                return;
            }
        }
    }

    fn on_frame(&mut self, text: &str) {
        let Ok(frame) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let mut log = self.log.lock().unwrap();
        match frame["type"].as_str() {
            Some("ack") => {
                let (Some(client_id), Some(id)) =
                    (frame["client_id"].as_str(), frame["id"].as_i64())
                else {
                    return;
                };
                log.pending.retain(|p| p.client_id != client_id);
                note_stored(&mut log, client_id, id, "ack");
            }
            Some("error") => {
                let Some(client_id) = frame["client_id"].as_str() else {
                    return;
                };
                // Not stored: resend the same message after the advised wait.
                let wait = Duration::from_millis(frame["retry_after_ms"].as_u64().unwrap_or(500));
                if let Some(p) = log.pending.iter_mut().find(|p| p.client_id == client_id) {
                    p.is_sent = false;
                    p.not_before = Instant::now() + wait;
                }
            }
            Some("message") => {
                let (hello, mut highest) = (self.hello_last_id, self.highest_on_connection);
                record_message(&mut log, &frame, hello, &mut highest, "push");
                self.highest_on_connection = highest;
            }
            _ => {}
        }
    }
}

/// A message id confirmed for `client_id`; the same `client_id` must always get the same id.
fn note_stored(log: &mut VisitorLog, client_id: &str, id: i64, how: &str) {
    let name = log.name.clone();
    if let Some(&earlier) = log.acked.get(client_id)
        && earlier != id
    {
        log.violations.push(format!(
            "{name}: {client_id} confirmed as id {earlier} and again as id {id} ({how})"
        ));
    }
    log.acked.insert(client_id.to_owned(), id);
}

/// Records a `message` (in a welcome or pushed) and checks the resume and order rules.
fn record_message(
    log: &mut VisitorLog,
    m: &Value,
    hello_last_id: i64,
    highest: &mut i64,
    how: &str,
) {
    let Some(id) = m["id"].as_i64() else {
        return;
    };
    let name = log.name.clone();
    if id <= hello_last_id {
        log.violations.push(format!(
            "{name}: id {id} sent again ({how}) after hello with last_id {hello_last_id}"
        ));
    } else if id <= *highest {
        log.violations.push(format!(
            "{name}: id {id} ({how}) after id {highest} on the same connection"
        ));
    }
    *highest = (*highest).max(id);
    log.last_id = log.last_id.max(id);
    if m["author"] == "agent" {
        let conversation = m["conversation_id"].as_i64().unwrap_or_default();
        let body = m["body"].as_str().unwrap_or_default().to_owned();
        log.agent_messages
            .entry(id)
            .or_insert((conversation, body, 0))
            .2 += 1;
    } else if let Some(client_id) = m["client_id"].as_str() {
        // Our own message: stored, even if its ack was lost with a connection.
        let client_id = client_id.to_owned();
        log.pending.retain(|p| p.client_id != client_id);
        note_stored(log, &client_id, id, how);
    }
}
