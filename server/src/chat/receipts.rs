//! What the visitor's widget learns about the agents' side (docs/widget-protocol.md, `read` and
//! `closed`): an agent opening the conversation after the visitor's message becomes "Seen", and a
//! closed conversation a notice. Only moves of the mark are published, so agents re-reading a
//! conversation cost the visitor nothing.

use crate::store::{self, ConversationId, MessageId, UserId, VisitorId, VisitorReceipts};

use super::Error;
use super::conversation::Chat;

/// Records that `reader` has read conversation `id` up to `message`; returns the visitor and
/// their newest message now seen when that is newer than what agents had seen before.
pub(super) fn mark_read_and_find_seen(
    c: &rusqlite::Connection,
    reader: UserId,
    id: ConversationId,
    message: MessageId,
) -> Result<Option<(VisitorId, MessageId)>, store::Error> {
    let before = store::find_agents_read_up_to(c, id)?;
    store::upsert_conversation_read(c, reader, id, message)?;
    if message <= before {
        return Ok(None);
    }
    let was = store::find_seen_visitor_message(c, id, before)?;
    let now = store::find_seen_visitor_message(c, id, message)?;
    Ok(now.filter(|&(_, seen)| was.is_none_or(|(_, old)| old < seen)))
}

impl Chat {
    /// The read receipt and closed state of the visitor's newest conversation, for a widget
    /// that (re)connects.
    pub async fn visitor_receipts(&self, visitor: VisitorId) -> Result<VisitorReceipts, Error> {
        Ok(self
            .readers
            .read(move |c| store::find_visitor_receipts(c, visitor))
            .await?)
    }
}
