//! One widget websocket connection: `hello`, then visitor messages in, acks and pushed events
//! out. Writes are pipelined (up to [`MAX_IN_FLIGHT`] per connection) so one slow commit does not
//! hold back pings or pushed agent replies.

mod email_capture;

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use futures_util::stream::{FuturesUnordered, SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};

use crate::chat::{self, ClientId, HistoryPage, Site};
use crate::clock::now_ms;
use crate::hub::{VisitorEvent, VisitorSubscription};
use crate::state::AppState;
use crate::store::{
    self, MessageId, MessageRow, NewVisitorMessage, StoredVisitorMessage, VisitorDetails, VisitorId,
};
use crate::values::{Author, VisitorContext};

use super::brake::Refusal;
use super::identity::{IdentityClaim, resolve_identity, visitor_hash};
use super::protocol::{ClientFrame, ErrorCode, MessageFrame, ServerFrame, SiteInfo, VERSION};
use super::receipts;
use super::typing::VisitorTyping;
use super::wire::{
    Closed, client_id_of_bad_frame, close, close_code, on_read_error, send_error, send_text,
};

/// Time a client has to say `hello` after connecting.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Messages of one connection being written at once; beyond this the connection stops reading
/// until a write finishes (backpressure instead of unbounded memory).
const MAX_IN_FLIGHT: usize = 32;
/// How long a client should wait after `busy` (a full write queue drains in milliseconds).
const BUSY_RETRY: Duration = Duration::from_millis(250);
/// How long a client should wait after a storage failure.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(2);

/// The outcome of checking the upgrade request.
pub enum Admission {
    Allowed(Arc<Site>),
    Refused(ErrorCode),
}

/// Who is on the other end, from the upgrade request.
pub struct Peer {
    pub ip: IpAddr,
    pub user_agent: Option<String>,
}

/// A finished write: the message's client id, when its frame arrived, and the outcome.
type StoreResult = (ClientId, Instant, Result<StoredVisitorMessage, chat::Error>);
type PendingWrite = Pin<Box<dyn Future<Output = StoreResult> + Send>>;

struct Connection {
    app: AppState,
    site: Arc<Site>,
    sink: SplitSink<WebSocket, Message>,
    peer: Peer,
    /// What `hello` said about the browser; recorded with this connection's messages until one
    /// is stored.
    context: VisitorContext,
    context_stored: bool,
    token_hash: [u8; 32],
    /// Brake key of this visitor, derived from the token.
    visitor_key: u64,
    /// Known once the visitor has written (now or in an earlier visit).
    visitor_id: Option<VisitorId>,
    /// The visitor has (or is about to have) an open conversation, so a message does not count
    /// as a new conversation for the brakes.
    has_conversation: bool,
    /// Identifies this connection in the hub, so its own messages are not echoed to it.
    hub_id: u64,
    /// Where the visitor's typing goes, and how often.
    typing: VisitorTyping,
    subscription: Option<VisitorSubscription>,
    /// The highest message id this client has: from `hello.last_id`, then every message sent.
    /// A pushed message at or below it was already sent from the history, so it is dropped.
    sent_up_to: MessageId,
    /// Client ids this connection sent before the visitor existed (a few, until the first
    /// ack): the catch-up after that ack must not echo them, they get acks.
    sent_before_visitor: Vec<String>,
}

/// Runs a widget connection to its end.
pub async fn serve_connection(app: AppState, admission: Admission, peer: Peer, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let site = match admission {
        Admission::Allowed(site) => site,
        Admission::Refused(code) => {
            let _ = send_error(&mut sink, code, None, None).await;
            let _ = close(&mut sink, close_code::POLICY, code.message()).await;
            return;
        }
    };
    let Ok(Some((token, last_id, mut context, claim))) =
        await_hello(&app, &mut sink, &mut stream).await
    else {
        return;
    };
    context.identity = claim.and_then(|claim| resolve_identity(&claim, &site, &app.secret_key));
    let hub_id = app.chat.hub().new_connection_id();
    let _open = app.meters.open_widget();
    let mut conn = Connection {
        app,
        site,
        sink,
        peer,
        context,
        context_stored: false,
        // Set by `welcome` once the token is checked.
        token_hash: [0; 32],
        visitor_key: 0,
        visitor_id: None,
        has_conversation: false,
        hub_id,
        typing: VisitorTyping::default(),
        subscription: None,
        sent_up_to: last_id,
        sent_before_visitor: Vec::new(),
    };
    if conn.welcome(&token, last_id).await.is_ok() {
        conn.run(stream).await;
    }
}

/// Waits for `hello`; returns the token to use, `last_id` and the browser's context, or `None`
/// if the connection ended first.
async fn await_hello(
    app: &AppState,
    sink: &mut SplitSink<WebSocket, Message>,
    stream: &mut SplitStream<WebSocket>,
) -> Result<Option<(String, MessageId, VisitorContext, Option<IdentityClaim>)>, Closed> {
    let deadline = tokio::time::sleep(HELLO_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        let frame = tokio::select! {
            () = app.shutdown.cancelled() => {
                close(sink, close_code::RESTARTING, "server restarting").await?;
                return Ok(None);
            }
            () = &mut deadline => {
                send_error(sink, ErrorCode::HelloTimeout, None, None).await?;
                close(sink, close_code::POLICY, ErrorCode::HelloTimeout.message()).await?;
                return Ok(None);
            }
            frame = stream.next() => frame,
        };
        let text = match frame {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Binary(_))) => {
                send_error(sink, ErrorCode::BadFrame, None, None).await?;
                continue;
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | None => return Ok(None),
            Some(Err(err)) => {
                on_read_error(sink, &err).await;
                return Ok(None);
            }
        };
        match ClientFrame::parse(&text) {
            Some(ClientFrame::Hello {
                v,
                token,
                last_id,
                page,
                referrer,
                language,
                time_zone,
                identity,
            }) => {
                if v != VERSION {
                    send_error(sink, ErrorCode::UnsupportedVersion, None, None).await?;
                    close(
                        sink,
                        close_code::POLICY,
                        ErrorCode::UnsupportedVersion.message(),
                    )
                    .await?;
                    return Ok(None);
                }
                return Ok(Some((
                    token.unwrap_or_default(),
                    MessageId(last_id.unwrap_or(0).max(0)),
                    VisitorContext::from_hello(page, referrer, language, time_zone),
                    identity,
                )));
            }
            Some(ClientFrame::Message { client_id, .. }) => {
                let echoed: String = client_id.chars().take(64).collect();
                send_error(sink, ErrorCode::HelloRequired, None, Some(&echoed)).await?;
            }
            Some(ClientFrame::Email { .. } | ClientFrame::Typing { .. }) => {
                send_error(sink, ErrorCode::HelloRequired, None, None).await?;
            }
            None => {
                let client_id = client_id_of_bad_frame(&text);
                send_error(sink, ErrorCode::BadFrame, None, client_id.as_deref()).await?;
            }
        }
    }
}

async fn next_event(subscription: &mut Option<VisitorSubscription>) -> Option<VisitorEvent> {
    match subscription {
        Some(sub) => sub.events.recv().await,
        None => std::future::pending().await,
    }
}

impl Connection {
    async fn send(&mut self, text: String) -> Result<(), Closed> {
        send_text(&mut self.sink, text).await
    }

    /// Checks the token and sends `welcome` with the first page of what the visitor missed,
    /// then the rest as `message` frames, oldest first. The subscription comes before the
    /// read: a message committed meanwhile is in the read, in the subscription, or in both
    /// (then `sent_up_to` drops the repeat), never in neither.
    async fn welcome(&mut self, token: &str, last_id: MessageId) -> Result<(), Closed> {
        let token = if self.app.tokens.verify(&self.site.key, token) {
            token.to_owned()
        } else {
            self.app.tokens.issue(&self.site.key)
        };
        self.token_hash = visitor_hash(&self.site.key, self.context.identity.as_ref(), &token);
        self.visitor_key = u64::from_le_bytes(self.token_hash[..8].try_into().unwrap_or([0; 8]));
        let visitor = match self.app.chat.find_visitor(self.token_hash).await {
            Ok(visitor) => visitor,
            Err(err) => return Err(self.storage_failed(&err).await),
        };
        let first = match visitor {
            Some(visitor) => {
                self.visitor_id = Some(visitor.id);
                self.has_conversation = visitor.open_conversation_id.is_some();
                self.typing.conversation = visitor.open_conversation_id;
                self.subscribe(visitor.id);
                self.history_page(visitor.id, last_id).await?
            }
            None => HistoryPage {
                messages: Vec::new(),
                has_more: false,
            },
        };
        let site = &self.site;
        let frame = ServerFrame::Welcome {
            v: VERSION,
            token: &token,
            site: SiteInfo {
                name: &site.name,
                greeting: &site.greeting,
                greetings: &site.greetings,
                color: &site.color,
                position: &site.position,
                agents_online: self.app.chat.hub().has_inbox_subscribers(),
            },
            messages: first.messages.iter().map(MessageFrame::from).collect(),
            more: first.has_more,
        };
        let text = frame.to_json();
        self.send(text).await?;
        if let Some(last) = first.messages.last() {
            self.sent_up_to = self.sent_up_to.max(last.id);
        }
        if let Some(visitor) = self.visitor_id.filter(|_| first.has_more) {
            self.send_after(visitor).await?;
        }
        for text in receipts::on_resume(&self.app.chat, self.visitor_id).await {
            self.send(text).await?;
        }
        Ok(())
    }

    fn subscribe(&mut self, visitor: VisitorId) {
        self.subscription = Some(self.app.chat.hub().subscribe_visitor(visitor, self.hub_id));
    }

    async fn history_page(
        &mut self,
        visitor: VisitorId,
        after: MessageId,
    ) -> Result<HistoryPage, Closed> {
        match self.app.chat.visitor_messages_after(visitor, after).await {
            Ok(page) => Ok(page),
            Err(err) => Err(self.storage_failed(&err).await),
        }
    }

    /// The history could not be read: say so and close; the client resumes from its `last_id`.
    async fn storage_failed(&mut self, err: &chat::Error) -> Closed {
        tracing::error!(error = %err, "could not load visitor history");
        let _ = send_error(
            &mut self.sink,
            ErrorCode::Unavailable,
            Some(UNAVAILABLE_RETRY),
            None,
        )
        .await;
        let _ = close(&mut self.sink, close_code::INTERNAL, "storage unavailable").await;
        Closed
    }

    /// Sends as `message` frames, page by page, every message of `visitor` committed after
    /// `sent_up_to`, except this connection's own messages (answered by their acks).
    async fn send_after(&mut self, visitor: VisitorId) -> Result<(), Closed> {
        loop {
            let page = self.history_page(visitor, self.sent_up_to).await?;
            for row in &page.messages {
                let is_own = row.author == Author::Visitor
                    && row
                        .client_id
                        .as_ref()
                        .is_some_and(|id| self.sent_before_visitor.contains(id));
                if !is_own {
                    self.send(MessageFrame::from(row).to_json()).await?;
                }
            }
            if let Some(last) = page.messages.last() {
                self.sent_up_to = last.id;
            }
            if !page.has_more {
                return Ok(());
            }
        }
    }

    async fn run(&mut self, mut stream: SplitStream<WebSocket>) {
        let config = Arc::clone(&self.app.config);
        let idle = tokio::time::sleep(config.ws_idle_timeout);
        tokio::pin!(idle);
        let first_ping = tokio::time::Instant::now() + config.ws_ping_interval;
        let mut ping = tokio::time::interval_at(first_ping, config.ws_ping_interval);
        let mut in_flight: FuturesUnordered<PendingWrite> = FuturesUnordered::new();
        let shutdown = self.app.shutdown.clone();
        let mut is_draining = false;
        loop {
            let step = tokio::select! {
                () = shutdown.cancelled(), if !is_draining => {
                    // Stop reading; answer the writes already accepted, then say goodbye.
                    is_draining = true;
                    Ok(())
                }
                Some((client_id, received, result)) = in_flight.next(), if !in_flight.is_empty() => {
                    self.on_stored(&client_id, received, result).await
                }
                event = next_event(&mut self.subscription) => match event {
                    Some(event) => self.push(&event).await,
                    None => {
                        let _ = close(&mut self.sink, close_code::FELL_BEHIND, "fell behind, resume").await;
                        Err(Closed)
                    }
                },
                frame = stream.next(), if !is_draining && in_flight.len() < MAX_IN_FLIGHT => {
                    idle.as_mut().reset(tokio::time::Instant::now() + config.ws_idle_timeout);
                    match frame {
                        Some(Ok(Message::Text(text))) => self.on_text(&text, &mut in_flight).await,
                        Some(Ok(Message::Binary(_))) => {
                            send_error(&mut self.sink, ErrorCode::BadFrame, None, None).await
                        }
                        Some(Ok(Message::Ping(_) | Message::Pong(_))) => Ok(()),
                        Some(Ok(Message::Close(_))) | None => Err(Closed),
                        Some(Err(err)) => {
                            on_read_error(&mut self.sink, &err).await;
                            Err(Closed)
                        }
                    }
                }
                () = &mut idle, if !is_draining => {
                    let _ = close(&mut self.sink, close_code::NORMAL, "idle timeout").await;
                    Err(Closed)
                }
                _ = ping.tick(), if !is_draining => {
                    self.sink.send(Message::Ping(Vec::new().into())).await.map_err(|_| Closed)
                }
            };
            if step.is_err() {
                break;
            }
            if is_draining && in_flight.is_empty() {
                let _ = close(&mut self.sink, close_code::RESTARTING, "server restarting").await;
                break;
            }
        }
        // Writes still in flight complete on their own (the writer owns them); their acks are
        // lost with the connection, and the client's resend finds them by client_id.
    }

    async fn on_text(
        &mut self,
        text: &str,
        in_flight: &mut FuturesUnordered<PendingWrite>,
    ) -> Result<(), Closed> {
        let received = Instant::now();
        match ClientFrame::parse(text) {
            Some(ClientFrame::Message {
                client_id,
                body,
                attachments: files,
            }) => {
                self.accept_message(&client_id, &body, files, received, in_flight)
                    .await
            }
            Some(ClientFrame::Email { email }) => self.accept_email(&email).await,
            Some(ClientFrame::Typing { active }) => {
                if let Some(conversation) = self.typing.admit(active, received) {
                    let hub = self.app.chat.hub();
                    hub.publish_visitor_typing(conversation, active);
                }
                Ok(())
            }
            Some(ClientFrame::Hello { .. }) => {
                send_error(&mut self.sink, ErrorCode::BadFrame, None, None).await
            }
            None => {
                let client_id = client_id_of_bad_frame(text);
                send_error(
                    &mut self.sink,
                    ErrorCode::BadFrame,
                    None,
                    client_id.as_deref(),
                )
                .await
            }
        }
    }

    /// Validates a visitor message, asks the brakes, and hands it to the writer.
    async fn accept_message(
        &mut self,
        raw_client_id: &str,
        raw_body: &str,
        attachments: Vec<String>,
        received: Instant,
        in_flight: &mut FuturesUnordered<PendingWrite>,
    ) -> Result<(), Closed> {
        let Ok(client_id) = ClientId::parse(raw_client_id) else {
            let echoed: String = raw_client_id.chars().take(64).collect();
            let code = ErrorCode::InvalidMessage;
            return send_error(&mut self.sink, code, None, Some(&echoed)).await;
        };
        let Ok(body) = super::attachments::message_body(raw_body, &attachments) else {
            return send_error(
                &mut self.sink,
                ErrorCode::InvalidMessage,
                None,
                Some(client_id.as_str()),
            )
            .await;
        };
        let site = &self.site;
        let starts_conversation = !self.has_conversation;
        let admitted = self.app.brakes.admit_message(
            site.id,
            site.limits,
            self.visitor_key,
            self.peer.ip,
            starts_conversation,
            Instant::now(),
        );
        if let Err(refusal) = admitted {
            let (code, wait) = match refusal {
                Refusal::RateLimited(wait) => (ErrorCode::RateLimited, wait),
                Refusal::TooManyConversations(wait) => (ErrorCode::TooManyConversations, wait),
                Refusal::SiteBusy(wait) => (ErrorCode::SiteBusy, wait),
            };
            return send_error(&mut self.sink, code, Some(wait), Some(client_id.as_str())).await;
        }
        self.has_conversation = true;
        if self.visitor_id.is_none() {
            // Bounded: past the cap (only reachable through refused writes) an own message may be
            // echoed, which the protocol allows (the client matches it by client_id).
            if self.sent_before_visitor.len() < 2 * MAX_IN_FLIGHT {
                self.sent_before_visitor.push(client_id.as_str().to_owned());
            }
        }
        // Until one message is stored, each carries the context: a new visitor is created with
        // it, a returning one gets their current page, language and time zone.
        let details = if self.context_stored {
            VisitorDetails::default()
        } else {
            VisitorDetails {
                context: self.context.clone(),
                user_agent: self.peer.user_agent.clone(),
                ip: Some(self.peer.ip.to_string()),
            }
        };
        let new = NewVisitorMessage {
            site_id: site.id,
            visitor_id: self.visitor_id,
            token_hash: self.token_hash,
            details,
            client_id: client_id.clone(),
            body,
            attachments,
            now: now_ms(),
        };
        let chat = self.app.chat.clone();
        let from = Some(self.hub_id);
        in_flight.push(Box::pin(async move {
            let result = chat.post_visitor_message(new, from).await;
            (client_id, received, result)
        }));
        Ok(())
    }

    /// Answers a finished write: `ack` after commit, or an error the client can act on. An ack is
    /// counted with its latency from the frame's arrival.
    async fn on_stored(
        &mut self,
        client_id: &ClientId,
        received: Instant,
        result: Result<StoredVisitorMessage, chat::Error>,
    ) -> Result<(), Closed> {
        let stored = match result {
            Ok(stored) => stored,
            Err(err) => {
                let (code, wait) = match &err {
                    chat::Error::Store(store::Error::Busy) => (ErrorCode::Busy, Some(BUSY_RETRY)),
                    chat::Error::Store(store::Error::UnknownAttachment) => {
                        (ErrorCode::UnknownAttachment, None)
                    }
                    _ => {
                        tracing::warn!(error = %err, "a visitor message was not stored");
                        (ErrorCode::Unavailable, Some(UNAVAILABLE_RETRY))
                    }
                };
                return send_error(&mut self.sink, code, wait, Some(client_id.as_str())).await;
            }
        };
        let ack = ServerFrame::Ack {
            client_id: client_id.as_str(),
            id: stored.id,
            at: stored.created_at,
        };
        self.send(ack.to_json()).await?;
        self.app.meters.record_ack(received.elapsed());
        self.typing.conversation = Some(stored.conversation_id);
        self.context_stored = true;
        if self.visitor_id.is_none() {
            // The visitor exists from this message on: subscribe, then send what was committed
            // for them before the subscription (an agent answering within milliseconds).
            self.visitor_id = Some(stored.visitor_id);
            self.subscribe(stored.visitor_id);
            self.send_after(stored.visitor_id).await?;
            self.sent_before_visitor = Vec::new();
        }
        Ok(())
    }

    async fn push(&mut self, event: &VisitorEvent) -> Result<(), Closed> {
        let text = match event {
            VisitorEvent::Message(row) => {
                // Pushes come in id order (published at commit); what the history already
                // sent is not sent again.
                if row.id <= self.sent_up_to {
                    return Ok(());
                }
                self.sent_up_to = row.id;
                MessageFrame::from(row.as_ref() as &MessageRow).to_json()
            }
            VisitorEvent::Typing { agent_name, active } => ServerFrame::Typing {
                agent_name,
                active: *active,
            }
            .to_json(),
            VisitorEvent::Erased => return self.erased().await,
            other => {
                let typing = &mut self.typing;
                match receipts::frame(other, typing, &mut self.has_conversation) {
                    Some(text) => text,
                    None => return Ok(()),
                }
            }
        };
        self.send(text).await
    }

    /// The visitor's data was erased: this connection's visitor no longer exists, so it says so
    /// and closes; the widget starts again as a new visitor (docs/widget-protocol.md).
    async fn erased(&mut self) -> Result<(), Closed> {
        self.send(ServerFrame::Erased.to_json()).await?;
        close(&mut self.sink, close_code::NORMAL, "visitor data erased").await?;
        Err(Closed)
    }
}
