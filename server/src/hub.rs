//! Live fan-out of events to open visitor connections (a visitor may have several tabs). Each
//! subscriber has a bounded queue; one that falls behind is dropped, and its connection closes
//! so the client reconnects and resumes from its last message id, rather than silently missing
//! events.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::store::{MessageRow, VisitorId};

/// Events queued per subscriber before it counts as fallen behind.
const QUEUE: usize = 64;
/// Independent locks, so thousands of connections do not contend on one mutex.
const SHARDS: usize = 16;

/// Something a visitor's open connections should show.
#[derive(Debug, Clone)]
pub enum VisitorEvent {
    Message(Arc<MessageRow>),
    Typing { agent_name: Arc<str>, active: bool },
}

struct Subscriber {
    id: u64,
    tx: mpsc::Sender<VisitorEvent>,
}

type Shard = Mutex<HashMap<VisitorId, Vec<Subscriber>>>;

/// The fan-out hub.
pub struct Hub {
    shards: Vec<Shard>,
    next_id: AtomicU64,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            next_id: AtomicU64::new(1),
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
}
