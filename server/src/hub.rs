//! Live fan-out of events to open visitor connections (a visitor may have several tabs) and to
//! agents' inbox connections (messages, read marks and visitors' typing). Each subscriber has a
//! bounded queue; one that falls behind is dropped and told so (visitors: their connection
//! closes; inbox: a `Resync` signal), so the client resumes from its last message id rather than
//! silently missing events. An observer may follow the inbox's signals as they are published
//! (the live inbox's summaries, `chat/live_summaries.rs`): it sees them in publication order,
//! before any subscriber does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::mpsc;

use crate::store::{ConversationId, MessageId, MessageRow, SiteId, UserId, VisitorId};

mod newcomers;
pub use newcomers::NewcomerWait;

/// Events queued per subscriber before it counts as fallen behind.
const QUEUE: usize = 64;
/// Independent locks, so thousands of connections do not contend on one mutex.
const SHARDS: usize = 16;
/// Erasures queued per agent page; one that misses some (a burst of erasures) reads its counts
/// again, and shows the rest of what they took on its next load.
const ERASURES: usize = 16;

/// Something a visitor's open connections should show.
#[derive(Debug, Clone)]
pub enum VisitorEvent {
    Message(Arc<MessageRow>),
    Typing {
        agent_name: Arc<str>,
        active: bool,
    },
    /// The visitor's data was erased: their connections say so and close. `by_the_visitor`:
    /// they asked themselves (the widget's Delete my data), so each browser open as them also
    /// erases its own anonymous chats from before they signed in (docs/widget-protocol.md).
    Erased {
        by_the_visitor: bool,
    },
    /// An agent has now seen the visitor's messages up to this one (a read receipt).
    Read {
        up_to: MessageId,
    },
    /// An agent closed the visitor's conversation; `line` is the status line saying so.
    Closed {
        conversation: ConversationId,
        line: MessageId,
    },
    /// An agent reopened it; `line` is the status line saying so.
    Reopened {
        conversation: ConversationId,
        line: MessageId,
    },
}

/// A visitor whose data was erased (docs/privacy.md), for agents' open pages.
#[derive(Debug, Clone)]
pub struct Erasure {
    pub visitor: VisitorId,
    /// The conversations that went with them.
    pub conversations: Vec<ConversationId>,
    /// They asked for it themselves, from the widget.
    pub by_the_visitor: bool,
}

struct Subscriber {
    id: u64,
    tx: mpsc::Sender<VisitorEvent>,
}

type Shard = Mutex<HashMap<VisitorId, Vec<Subscriber>>>;

/// Follows what the inbox is told, as it is told: on the publishing thread, before any
/// subscriber sees it. Messages are published by the writer's commit hooks, so in commit order.
/// Keep it short: it runs on the writer thread.
pub trait InboxObserver: Send + Sync {
    /// A signal about to be queued for every inbox connection.
    fn signal(&self, signal: &InboxSignal);
    /// A visitor's data was erased.
    fn erased(&self, erasure: &Erasure);
}

/// The fan-out hub.
pub struct Hub {
    shards: Vec<Shard>,
    next_id: AtomicU64,
    /// Agents' inbox connections; every one sees every message (a small team, a few tabs each).
    inbox: Mutex<Vec<InboxSubscriber>>,
    /// Erasures, for agents' open conversation pages (rare, so one broadcast channel).
    erasures: tokio::sync::broadcast::Sender<Arc<Erasure>>,
    observer: Option<Arc<dyn InboxObserver>>,
    /// Connections whose visitor is not stored yet, by visitor hash (`newcomers.rs`).
    newcomers: newcomers::Waiting,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            next_id: AtomicU64::new(1),
            inbox: Mutex::default(),
            erasures: tokio::sync::broadcast::channel(ERASURES).0,
            observer: None,
            newcomers: Mutex::default(),
        }
    }
}

impl Hub {
    /// A hub whose inbox signals and erasures `observer` follows from the first one on.
    pub fn observed(observer: Arc<dyn InboxObserver>) -> Self {
        Self {
            observer: Some(observer),
            ..Self::default()
        }
    }
}

/// An open subscription; dropping it unsubscribes.
pub struct VisitorSubscription {
    hub: Arc<Hub>,
    visitor: VisitorId,
    id: u64,
    /// Closes (yields `None`) when this subscriber fell behind and was dropped.
    pub events: mpsc::Receiver<VisitorEvent>,
}

impl Drop for VisitorSubscription {
    fn drop(&mut self) {
        let Ok(mut shard) = self.hub.shard(self.visitor).lock() else {
            return;
        };
        if let Some(subs) = shard.get_mut(&self.visitor) {
            subs.retain(|s| s.id != self.id);
            if subs.is_empty() {
                shard.remove(&self.visitor);
            }
        }
    }
}

impl Hub {
    fn shard(&self, visitor: VisitorId) -> &Shard {
        let index = usize::try_from(visitor.0.unsigned_abs()).unwrap_or(0) % SHARDS;
        &self.shards[index]
    }

    /// A new id for a connection; pass it when subscribing and when publishing what the
    /// connection itself sent, so it is not echoed back.
    pub fn new_connection_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Subscribes connection `id` to a visitor's events.
    pub fn subscribe_visitor(self: &Arc<Self>, visitor: VisitorId, id: u64) -> VisitorSubscription {
        let (tx, events) = mpsc::channel(QUEUE);
        if let Ok(mut shard) = self.shard(visitor).lock() {
            shard
                .entry(visitor)
                .or_default()
                .push(Subscriber { id, tx });
        }
        VisitorSubscription {
            hub: Arc::clone(self),
            visitor,
            id,
            events,
        }
    }

    /// Whether `visitor` has a widget open (email replies are for visitors who are away).
    pub fn is_visitor_connected(&self, visitor: VisitorId) -> bool {
        self.shard(visitor)
            .lock()
            .is_ok_and(|shard| shard.get(&visitor).is_some_and(|subs| !subs.is_empty()))
    }

    /// Queues `event` for every connection of `visitor` except `except`. A subscriber whose
    /// queue is full is dropped (its connection then closes and resumes).
    pub fn publish_to_visitor(
        &self,
        visitor: VisitorId,
        event: &VisitorEvent,
        except: Option<u64>,
    ) {
        let Ok(mut shard) = self.shard(visitor).lock() else {
            return;
        };
        let Some(subs) = shard.get_mut(&visitor) else {
            return;
        };
        subs.retain(|s| Some(s.id) == except || s.tx.try_send(event.clone()).is_ok());
        if subs.is_empty() {
            shard.remove(&visitor);
        }
    }
}

/// Events queued per inbox connection before it counts as fallen behind. A live page takes what
/// arrived in a short window at once (`admin/live.rs`), so this holds several windows of a busy
/// inbox: 0.8 s at 5,000 messages a second. Falling behind costs a catch-up from the database,
/// so a page must not be dropped for a moment's delay; the queue takes memory only while full.
pub const INBOX_QUEUE: usize = 4096;

/// A message (from a visitor, an agent, a note or a status line) for agents' inbox connections.
/// Carries the row itself, so publishing costs no database read. Published once and shared by
/// every subscriber.
#[derive(Debug)]
pub struct InboxEvent {
    pub site_id: SiteId,
    pub message: Arc<MessageRow>,
    /// The same write also changed the visitor's name or email (an identity or pre-chat
    /// answers that came with the message).
    pub visitor_changed: bool,
    /// The message opened its conversation.
    pub opened: bool,
    /// The visitor of a visitor's message: a page showing their older conversation learns
    /// that they started a newer one.
    pub visitor: Option<VisitorId>,
    /// Who wrote a status line (assigned, closed, reopened): the agents it concerns are alerted
    /// (`admin/tally.rs`), never its author.
    pub by: Option<UserId>,
    /// A status line saying that a snooze ran out: the agents the conversation is for are
    /// alerted (`admin/tally.rs`).
    pub woke: bool,
    /// What every agent's page is sent about this event when it is the same for all of them
    /// (the `alert` of `admin/tally.rs`), made by the first page that sends it: with a team
    /// watching, making it once per agent was a tenth of the server's time (docs/capacity.md).
    shared: OnceLock<String>,
}

impl InboxEvent {
    /// An event for `message` that neither opened its conversation nor changed its visitor.
    pub fn new(site_id: SiteId, message: Arc<MessageRow>) -> Self {
        Self {
            site_id,
            message,
            visitor_changed: false,
            opened: false,
            visitor: None,
            by: None,
            woke: false,
            shared: OnceLock::new(),
        }
    }

    /// What every page is sent about this event: `make`'s result, made once.
    pub fn shared(&self, make: impl FnOnce(&Self) -> String) -> &str {
        self.shared.get_or_init(|| make(self))
    }
}

/// An agent has seen a conversation up to a message (on any page, in any tab): their other
/// pages' unread counts drop it. Or, `is_unread`, they marked it unread again: `up_to` is then
/// its newest visitor message, which counts as unread until their next read.
#[derive(Debug, Clone, Copy)]
pub struct ReadMark {
    pub user: UserId,
    pub conversation: ConversationId,
    pub up_to: MessageId,
    pub is_unread: bool,
}

/// Who is typing in a conversation: its visitor, or an agent writing a reply (shown to the
/// colleagues who have the conversation open, so two do not answer at once unknowingly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typist {
    Visitor,
    Agent { user: UserId, name: Arc<str> },
}

/// What an inbox subscriber receives next.
#[derive(Debug, Clone)]
pub enum InboxSignal {
    Event(Arc<InboxEvent>),
    Read(ReadMark),
    /// Someone in a conversation started (`true`) or stopped typing; never stored.
    Typing {
        conversation: ConversationId,
        by: Typist,
        active: bool,
    },
    /// Events were lost because this subscriber fell behind: reload from the last message id it
    /// handled, then subscribe again.
    Resync,
}

struct InboxSubscriber {
    id: u64,
    /// Never carries `Resync`: that is what a dropped sender means.
    tx: mpsc::Sender<InboxSignal>,
    lagged: Arc<AtomicBool>,
}

/// An open inbox subscription; dropping it unsubscribes.
pub struct InboxSubscription {
    hub: Arc<Hub>,
    id: u64,
    events: mpsc::Receiver<InboxSignal>,
    lagged: Arc<AtomicBool>,
}

impl InboxSubscription {
    /// The next event, or `Resync` once the queue overflowed (every event queued before the
    /// overflow is still delivered first). After `Resync` the subscription is spent.
    pub async fn recv(&mut self) -> InboxSignal {
        match self.events.recv().await {
            Some(signal) => signal,
            // The hub dropped our sender: either we lagged, or the hub is gone; both mean
            // "what you have may be incomplete".
            None => InboxSignal::Resync,
        }
    }

    /// The next signal if one is already queued, without waiting: what [`Self::recv`] would
    /// return, or `None`.
    pub fn try_recv(&mut self) -> Option<InboxSignal> {
        match self.events.try_recv() {
            Ok(signal) => Some(signal),
            Err(mpsc::error::TryRecvError::Empty) => None,
            Err(mpsc::error::TryRecvError::Disconnected) => Some(InboxSignal::Resync),
        }
    }

    /// True if this subscriber fell behind (its stream ends with `Resync`).
    pub fn has_lagged(&self) -> bool {
        self.lagged.load(Ordering::Relaxed)
    }
}

impl Drop for InboxSubscription {
    fn drop(&mut self) {
        if let Ok(mut subs) = self.hub.inbox.lock() {
            subs.retain(|s| s.id != self.id);
        }
    }
}

impl Hub {
    /// True while at least one agent has a live admin page open (every signed-in page follows
    /// the hub): "someone is here to answer".
    pub fn has_inbox_subscribers(&self) -> bool {
        self.inbox.lock().is_ok_and(|subs| !subs.is_empty())
    }

    /// Open admin streams (agents' live pages), for the capacity sampler.
    pub fn inbox_subscribers(&self) -> usize {
        self.inbox.lock().map_or(0, |subs| subs.len())
    }

    /// Tells the visitor's open connections and agents' open pages that a visitor was erased.
    pub fn publish_erasure(&self, erasure: Erasure) {
        if let Some(observer) = &self.observer {
            observer.erased(&erasure);
        }
        let event = VisitorEvent::Erased {
            by_the_visitor: erasure.by_the_visitor,
        };
        self.publish_to_visitor(erasure.visitor, &event, None);
        // No receiver (no agent page open) is not an error.
        let _ = self.erasures.send(Arc::new(erasure));
    }

    /// Erasures from now on, for an agent's open page.
    pub fn subscribe_erasures(&self) -> tokio::sync::broadcast::Receiver<Arc<Erasure>> {
        self.erasures.subscribe()
    }

    /// Subscribes an agent's connection to every inbox event.
    pub fn subscribe_inbox(self: &Arc<Self>) -> InboxSubscription {
        let (tx, events) = mpsc::channel(INBOX_QUEUE);
        let id = self.new_connection_id();
        let lagged = Arc::new(AtomicBool::new(false));
        if let Ok(mut subs) = self.inbox.lock() {
            subs.push(InboxSubscriber {
                id,
                tx,
                lagged: Arc::clone(&lagged),
            });
        }
        InboxSubscription {
            hub: Arc::clone(self),
            id,
            events,
            lagged,
        }
    }

    /// Queues `event` for every inbox connection.
    pub fn publish_to_inbox(&self, event: InboxEvent) {
        self.broadcast(&InboxSignal::Event(Arc::new(event)));
    }

    /// Tells every inbox connection that an agent read a conversation up to a message.
    pub fn publish_read(&self, mark: ReadMark) {
        self.broadcast(&InboxSignal::Read(mark));
    }

    /// Tells every inbox connection that someone in a conversation is (or stopped) typing.
    pub fn publish_typing(&self, conversation: ConversationId, by: Typist, active: bool) {
        self.broadcast(&InboxSignal::Typing {
            conversation,
            by,
            active,
        });
    }

    /// Queues `signal` for every inbox connection. One whose queue is full is dropped and marked
    /// lagged, so it receives `Resync` instead of silently missing the signal.
    fn broadcast(&self, signal: &InboxSignal) {
        if let Some(observer) = &self.observer {
            observer.signal(signal);
        }
        let Ok(mut subs) = self.inbox.lock() else {
            return;
        };
        subs.retain(|s| match s.tx.try_send(signal.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                s.lagged.store(true, Ordering::Relaxed);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_is_dropped_and_sees_its_stream_end() {
        let hub = Arc::new(Hub::default());
        let mut slow = hub.subscribe_visitor(VisitorId(1), hub.new_connection_id());
        let event = VisitorEvent::Typing {
            agent_name: "Ana".into(),
            active: true,
        };
        for _ in 0..=QUEUE {
            hub.publish_to_visitor(VisitorId(1), &event, None);
        }
        let mut received = 0;
        while slow.events.recv().await.is_some() {
            received += 1;
        }
        assert_eq!(received, QUEUE);
    }

    #[tokio::test]
    async fn the_sending_connection_is_skipped() {
        let hub = Arc::new(Hub::default());
        let sender_id = hub.new_connection_id();
        let mut sender = hub.subscribe_visitor(VisitorId(2), sender_id);
        let mut other_tab = hub.subscribe_visitor(VisitorId(2), hub.new_connection_id());
        let event = VisitorEvent::Typing {
            agent_name: "Ana".into(),
            active: false,
        };
        hub.publish_to_visitor(VisitorId(2), &event, Some(sender_id));
        assert!(other_tab.events.try_recv().is_ok());
        assert!(sender.events.try_recv().is_err());
    }

    fn inbox_event(id: i64) -> InboxEvent {
        InboxEvent::new(
            SiteId(1),
            Arc::new(MessageRow {
                id: crate::store::MessageId(id),
                conversation_id: crate::store::ConversationId(1),
                author: crate::values::Author::Visitor,
                author_name: None,
                client_id: None,
                body: "hi".into(),
                created_at: 0,
                attachments: Vec::new(),
            }),
        )
    }

    #[tokio::test]
    async fn an_inbox_subscriber_that_falls_behind_gets_everything_queued_then_resync() {
        let hub = Arc::new(Hub::default());
        let mut slow = hub.subscribe_inbox();
        let mut fast = hub.subscribe_inbox();
        for id in 1..=i64::try_from(INBOX_QUEUE).expect("small") + 1 {
            hub.publish_to_inbox(inbox_event(id));
            if let InboxSignal::Event(e) = fast.recv().await {
                assert_eq!(e.message.id.0, id);
            } else {
                panic!("the fast subscriber lagged");
            }
        }
        let mut received = 0;
        while let InboxSignal::Event(_) = slow.recv().await {
            received += 1;
        }
        assert_eq!(received, INBOX_QUEUE);
        assert!(slow.has_lagged());
        assert!(!fast.has_lagged());
    }
}
