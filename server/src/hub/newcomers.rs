//! Connections whose visitor is not stored yet. A visitor is stored with their first message,
//! so until then a connection has no visitor to follow; but its other tabs (or, for a verified
//! user, their other browsers) share its visitor hash, and when one of them stores the first
//! message the others must follow the visitor from then on (docs/widget-protocol.md, "every
//! connection of the visitor"). They wait here, by hash, and are told once it is stored.
//!
//! A one-shot per waiting connection, not an event queue: most widgets never send a message,
//! and an idle one should cost little.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::Hub;

/// Waiting connections by visitor hash: (connection id, its one-shot).
pub(super) type Waiting = Mutex<HashMap<[u8; 32], Vec<(u64, oneshot::Sender<()>)>>>;

/// A connection waiting for its visitor to be stored; dropping it stops the wait.
pub struct NewcomerWait {
    hub: Arc<Hub>,
    hash: [u8; 32],
    id: u64,
    /// Resolves once another connection stored the visitor (or errs if the hub went away).
    pub stored: oneshot::Receiver<()>,
}

impl Drop for NewcomerWait {
    fn drop(&mut self) {
        let Ok(mut waiting) = self.hub.newcomers.lock() else {
            return;
        };
        if let Some(list) = waiting.get_mut(&self.hash) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                waiting.remove(&self.hash);
            }
        }
    }
}

impl Hub {
    /// Connection `id`, whose visitor (by `hash`) is not stored yet, waits to hear that it is.
    /// Wait first, then look the visitor up: stored meanwhile, it is found or heard of.
    pub fn await_visitor(self: &Arc<Self>, hash: [u8; 32], id: u64) -> NewcomerWait {
        let (tx, stored) = oneshot::channel();
        if let Ok(mut waiting) = self.newcomers.lock() {
            waiting.entry(hash).or_default().push((id, tx));
        }
        NewcomerWait {
            hub: Arc::clone(self),
            hash,
            id,
            stored,
        }
    }

    /// The visitor of `hash` was just stored (their first message committed): every connection
    /// still waiting for them hears it.
    pub fn visitor_stored(&self, hash: &[u8; 32]) {
        let list = self
            .newcomers
            .lock()
            .ok()
            .and_then(|mut waiting| waiting.remove(hash));
        for (_, tx) in list.into_iter().flatten() {
            // A connection that stopped waiting meanwhile has nothing to hear.
            let _ = tx.send(());
        }
    }

    /// Connections waiting for their visitor to be stored (for tests).
    #[cfg(test)]
    fn waiting_newcomers(&self) -> usize {
        self.newcomers
            .lock()
            .map_or(0, |w| w.values().map(Vec::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_waiting_tab_of_the_visitor_hears_it_once_and_no_other_visitors_tab() {
        let hub = Arc::new(Hub::default());
        let (ana, ben) = ([1; 32], [2; 32]);
        let mut first = hub.await_visitor(ana, hub.new_connection_id());
        let mut second = hub.await_visitor(ana, hub.new_connection_id());
        let mut other = hub.await_visitor(ben, hub.new_connection_id());
        let gone = hub.await_visitor(ana, hub.new_connection_id());
        drop(gone);
        assert_eq!(hub.waiting_newcomers(), 3);

        hub.visitor_stored(&ana);
        assert!(first.stored.try_recv().is_ok());
        assert!(second.stored.try_recv().is_ok());
        assert!(
            other.stored.try_recv().is_err(),
            "another visitor's tab waits on"
        );
        assert_eq!(hub.waiting_newcomers(), 1);
        drop(other);
        assert_eq!(hub.waiting_newcomers(), 0);
    }
}
