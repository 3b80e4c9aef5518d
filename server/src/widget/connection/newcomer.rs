//! Following the visitor of this browser, also when it is stored by another connection: a
//! visitor is stored with their first message, and a tab (or a verified user's other browser)
//! that connected before it must get every message from then on, live (`hub/newcomers.rs`).

use crate::store::VisitorRow;

use super::{Closed, Connection};

impl Connection {
    /// Follows this browser's visitor: their events when stored, else the news that another of
    /// their connections stored them. The wait is set before the lookup, so a first message
    /// stored meanwhile is found or heard of, never missed.
    pub(super) async fn follow_visitor(&mut self) -> Result<Option<VisitorRow>, Closed> {
        let hub = self.app.chat.hub();
        self.newcomer = Some(hub.await_visitor(self.token_hash, self.hub_id));
        let visitor = match self.app.chat.find_visitor(self.token_hash).await {
            Ok(visitor) => visitor,
            Err(err) => return Err(self.storage_failed(&err).await),
        };
        self.asks_prechat = self.prechat_pending_for(visitor.as_ref());
        if let Some(visitor) = &visitor {
            self.newcomer = None;
            self.visitor_id = Some(visitor.id);
            self.has_conversation = visitor.open_conversation_id.is_some();
            self.typing.conversation = visitor.open_conversation_id;
            self.subscribe(visitor.id);
        }
        Ok(visitor)
    }

    /// Another connection of this visitor stored their first message: follow the visitor, and
    /// send what was stored for them before the subscription (that message, a quick reply).
    pub(super) async fn on_visitor_stored(&mut self) -> Result<(), Closed> {
        self.newcomer = None;
        if self.visitor_id.is_some() {
            return Ok(());
        }
        match self.follow_visitor().await? {
            Some(visitor) => self.send_after(visitor.id).await,
            // Erased again at once: wait on (`follow_visitor` waits again).
            None => Ok(()),
        }
    }
}
