//! One widget websocket connection: `hello`, then visitor messages in, acks and pushed events
//! out. Writes are pipelined (up to [`MAX_IN_FLIGHT`] per connection) so one slow commit does not
//! hold back pings or pushed agent replies.

mod email_capture;
mod erased;
mod event_loop;
mod hello;
mod message;
mod newcomer;
mod prechat;
mod site_change;
mod welcome;

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use futures_util::stream::{FuturesUnordered, SplitSink, SplitStream};
use futures_util::{FutureExt, StreamExt};
use tokio::sync::broadcast;

use crate::chat::{self, ClientId, HistoryPage, Site, SiteChange};
use crate::hub::{NewcomerWait, Typist, VisitorEvent, VisitorSubscription};
use crate::state::AppState;
use crate::store::{MessageId, MessageRow, StoredVisitorMessage, VisitorId};
use crate::values::{Author, VisitorContext};

use super::identity::resolve_identity;
use super::protocol::{BadFrame, ClientFrame, ErrorCode, MessageFrame, ServerFrame};
use super::receipts;
use super::typing::VisitorTyping;
use super::wire::{
    Closed, answer_close, client_id_of_bad_frame, close, close_code, on_read_error,
    refuse_bad_frame, send_error, send_invalid, send_text,
};

/// Messages of one connection being written at once; beyond this the connection stops reading
/// until a write finishes (backpressure instead of unbounded memory).
const MAX_IN_FLIGHT: usize = 32;
/// How long a client should wait after a storage failure.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(2);

/// The outcome of checking the upgrade request.
pub enum Admission {
    /// The site, and the news of its changes from before it was read.
    Allowed(Arc<Site>, broadcast::Receiver<Arc<SiteChange>>),
    Refused(ErrorCode),
}

/// Who is on the other end, from the upgrade request.
pub struct Peer {
    pub ip: IpAddr,
    /// The page's `Origin`, checked again when the site's allowed origins change.
    pub origin: String,
    pub user_agent: Option<String>,
}

/// A finished write: the message's client id, when its frame arrived, and the outcome.
type StoreResult = (ClientId, Instant, Result<StoredVisitorMessage, chat::Error>);
type PendingWrite = Pin<Box<dyn Future<Output = StoreResult> + Send>>;

struct Connection {
    /// Counts this connection as an open widget while it lives.
    _open: crate::metrics::OpenConnection,
    app: AppState,
    site: Arc<Site>,
    /// Sites saved or deleted since the connection opened: its own site's news is taken at once.
    site_changes: broadcast::Receiver<Arc<SiteChange>>,
    sink: SplitSink<WebSocket, Message>,
    peer: Peer,
    /// What `hello` said about the browser; recorded with this connection's messages until one
    /// is stored.
    context: VisitorContext,
    context_stored: bool,
    /// The site's pre-chat form is still to be answered by this visitor.
    asks_prechat: bool,
    token_hash: [u8; 32],
    /// What this browser's uploads are stored under (see `NewVisitorMessage::upload_hash`).
    upload_hash: [u8; 32],
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
    /// Until the visitor is stored: the wait to hear another connection stored them.
    newcomer: Option<NewcomerWait>,
    /// The highest message id this client has: from `hello.last_id`, then every message sent.
    /// A pushed message at or below it was already sent from the history, so it is dropped.
    sent_up_to: MessageId,
    /// Client ids this connection sent before the visitor existed (a few, until the first
    /// ack): the catch-up after that ack must not echo them, they get acks.
    sent_before_visitor: Vec<String>,
    /// The client ids of this connection's messages being written (up to [`MAX_IN_FLIGHT`]), as
    /// [`written_key`]s: a resend of one of them gets its `ack` too, even while the brakes
    /// refuse new messages.
    writing: Vec<u64>,
    /// Ids of messages another connection of the visitor stored that this one acked as its own
    /// (the same `client_id` sent from two tabs at once), newest last, at most
    /// [`MAX_IN_FLIGHT`]: the other's push of it is not echoed here, where its ack went.
    acked_copies: Vec<MessageId>,
    /// `bad_frame` answers since the welcome (see `wire::MAX_BAD_FRAMES`).
    bad_frames: u32,
    /// An `email` frame that came while messages sent before it were being written: it is
    /// taken once they are answered, and no frame after it is read until then, so the answers
    /// keep the frames' order without holding up pings, pushes or a shutdown meanwhile.
    held_email: Option<String>,
}

/// A client id as [`Connection::writing`] keeps it: a hash, so that tracking a write costs no
/// allocation on the hot path. Two ids of one connection's few writes in flight sharing one
/// (odds of about 2^-64) would let that resend skip the brakes (it is still stored once), or
/// hide the other tab's message of the other id from this tab until its next resume.
fn written_key(client_id: &str) -> u64 {
    use std::hash::BuildHasher as _;
    rustc_hash::FxBuildHasher.hash_one(client_id)
}

/// Runs a widget connection to its end.
///
/// Every open widget holds this future for as long as it is open, so it is kept to what the
/// loop waits with (issue #19 item 7): the socket is split before the future is made, opening
/// (`hello`, `welcome`) runs once in a box of its own that is freed when the loop starts, and the
/// loop boxes each wake-up's handling. Async fns are avoided at the joins because an async fn
/// keeps its arguments for its whole life beside the locals they move into.
pub fn serve_connection(
    app: AppState,
    admission: Admission,
    peer: Peer,
    socket: WebSocket,
) -> impl Future<Output = ()> + Send {
    let (sink, stream) = socket.split();
    Box::pin(open(app, admission, peer, sink, stream)).then(|opened| {
        futures_util::future::OptionFuture::from(
            opened.map(|(conn, stream)| conn.run_to_end(stream)),
        )
        .map(|_| ())
    })
}

/// Everything before the loop: the refusal of a site or origin, `hello`, `welcome`. `None` when
/// the connection ended on the way.
async fn open(
    app: AppState,
    admission: Admission,
    peer: Peer,
    mut sink: SplitSink<WebSocket, Message>,
    mut stream: SplitStream<WebSocket>,
) -> Option<(Connection, SplitStream<WebSocket>)> {
    let (site, site_changes) = match admission {
        Admission::Allowed(site, changes) => (site, changes),
        Admission::Refused(code) => {
            let _ = send_error(&app.meters, &mut sink, code, None, None).await;
            let _ = close(&mut sink, close_code::POLICY, code.message()).await;
            return None;
        }
    };
    let Ok(Some((token, last_id, mut context, claim))) =
        hello::await_hello(&app, &mut sink, &mut stream).await
    else {
        return None;
    };
    context.identity = claim.and_then(|claim| resolve_identity(&claim, &site, &app.secret_key));
    let hub_id = app.chat.hub().new_connection_id();
    let mut conn = Connection {
        _open: app.meters.open_widget(),
        app,
        site,
        site_changes,
        sink,
        peer,
        context,
        context_stored: false,
        asks_prechat: false,
        // Set by `welcome` once the token is checked.
        token_hash: [0; 32],
        upload_hash: [0; 32],
        visitor_key: 0,
        visitor_id: None,
        has_conversation: false,
        hub_id,
        typing: VisitorTyping::default(),
        subscription: None,
        newcomer: None,
        sent_up_to: last_id,
        sent_before_visitor: Vec::new(),
        writing: Vec::new(),
        acked_copies: Vec::new(),
        bad_frames: 0,
        held_email: None,
    };
    conn.welcome(&token, last_id).await.ok()?;
    Some((conn, stream))
}

impl Connection {
    async fn send(&mut self, text: String) -> Result<(), Closed> {
        send_text(&mut self.sink, text).await
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
        let _ = self
            .send_error(ErrorCode::Unavailable, Some(UNAVAILABLE_RETRY), None)
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

    /// Waits for the messages being written and answers each (its `ack` or `error`), in the
    /// order they finish.
    async fn answer_writes(
        &mut self,
        in_flight: &mut FuturesUnordered<PendingWrite>,
    ) -> Result<(), Closed> {
        while let Some((client_id, received, result)) = in_flight.next().await {
            self.on_stored(&client_id, received, result).await?;
        }
        Ok(())
    }

    async fn on_text(
        &mut self,
        text: &str,
        in_flight: &mut FuturesUnordered<PendingWrite>,
    ) -> Result<(), Closed> {
        let received = Instant::now();
        match ClientFrame::parse(text) {
            Ok(ClientFrame::Message {
                client_id,
                body,
                attachments: files,
                prechat,
            }) => {
                if !self.take_prechat(&client_id, prechat).await? {
                    return Ok(());
                }
                self.accept_message(&client_id, &body, files, received, in_flight)
                    .await
            }
            Ok(ClientFrame::Email { email }) => {
                // Answered in frame order: the messages sent before it are answered first (their
                // `ack` or `error`), as the protocol says; for a first message that write is
                // also what stores the visitor the address belongs to. Held until then
                // (`held_email`), not awaited here, which would stop the connection's loop.
                if in_flight.is_empty() {
                    self.accept_email(&email).await
                } else {
                    self.held_email = Some(email);
                    Ok(())
                }
            }
            Ok(ClientFrame::Typing { active }) => {
                if let Some(conversation) = self.typing.admit(active, received) {
                    let hub = self.app.chat.hub();
                    hub.publish_typing(conversation, Typist::Visitor, active);
                }
                Ok(())
            }
            Ok(ClientFrame::Ping {}) => self.send(ServerFrame::Pong.to_json()).await,
            Ok(ClientFrame::Hello { .. }) => {
                self.refuse_bad_frame(&BadFrame::second_hello(), None).await
            }
            Err(why) => {
                let client_id = client_id_of_bad_frame(text);
                self.refuse_bad_frame(&why, client_id.as_deref()).await
            }
        }
    }

    /// Sends an error frame on this connection (counted in `/metrics`).
    async fn send_error(
        &mut self,
        code: ErrorCode,
        retry_after: Option<Duration>,
        client_id: Option<&str>,
    ) -> Result<(), Closed> {
        send_error(
            &self.app.meters,
            &mut self.sink,
            code,
            retry_after,
            client_id,
        )
        .await
    }

    /// Sends an `invalid_message` error saying which rule was broken.
    async fn send_invalid(&mut self, message: &str, client_id: Option<&str>) -> Result<(), Closed> {
        send_invalid(&self.app.meters, &mut self.sink, message, client_id).await
    }

    /// Answers a frame that does not fit, saying `why`; the `wire::MAX_BAD_FRAMES`th closes the
    /// connection.
    async fn refuse_bad_frame(
        &mut self,
        why: &BadFrame,
        client_id: Option<&str>,
    ) -> Result<(), Closed> {
        let meters = &self.app.meters;
        let frame = (why, client_id);
        refuse_bad_frame(meters, &mut self.sink, frame, &mut self.bad_frames).await
    }

    async fn push(&mut self, event: &VisitorEvent) -> Result<(), Closed> {
        let text = match event {
            VisitorEvent::Message(row) => {
                // The visitor wrote from another tab: that conversation is open and theirs, so
                // this tab's next message joins it (after a close, it does not start another).
                if row.author == Author::Visitor {
                    self.has_conversation = true;
                    self.typing.conversation = Some(row.conversation_id);
                }
                // Pushes come in id order (published at commit); what the history already
                // sent is not sent again, nor what this connection gets (or got) an ack for.
                if row.id <= self.sent_up_to {
                    return Ok(());
                }
                self.sent_up_to = row.id;
                if self.is_acked_here(row) {
                    return Ok(());
                }
                MessageFrame::from(row.as_ref() as &MessageRow).to_json()
            }
            VisitorEvent::Typing { agent_name, active } => ServerFrame::Typing {
                agent_name,
                active: *active,
            }
            .to_json(),
            VisitorEvent::Erased { by_the_visitor } => return self.erased(*by_the_visitor).await,
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
}

impl Connection {
    /// Whether `row` is a message whose `ack` this connection sends or sent: the same
    /// `client_id` came from another connection too, whose copy was stored first. A connection
    /// never gets its own messages back as `message` frames.
    fn is_acked_here(&mut self, row: &MessageRow) -> bool {
        if row.author != Author::Visitor {
            return false;
        }
        let acked = self.acked_copies.contains(&row.id);
        // Pushes come in id order: an older copy can no longer arrive.
        self.acked_copies.retain(|&id| id > row.id);
        acked
            || row
                .client_id
                .as_deref()
                .is_some_and(|id| self.writing.contains(&written_key(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future an async function of four arguments returns, without calling it.
    fn future_size<A, B, C, D, F: Future>(_: fn(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn an_open_connection_holds_little_more_than_its_own_state() {
        // Every open widget holds this future (issue #19 item 7). With opening and the handling
        // of each wake-up inline it was 3,104 bytes in a debug build (Connection: 576); what is
        // left is the connection, its timer and the loop's select. An inline await that grows
        // it by more than a few hundred bytes fails here: box it, as `run` does.
        let size = future_size(serve_connection);
        let bound = std::mem::size_of::<Connection>() + 640;
        assert!(size <= bound, "{size} bytes, more than {bound}");
    }
}
