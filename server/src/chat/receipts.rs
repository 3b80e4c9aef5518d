//! What the visitor's widget learns about the agents' side (docs/widget-protocol.md, `read` and
//! `closed`): an agent opening the conversation after the visitor's message becomes "Seen", and a
//! closed conversation a notice. Only moves of the mark are published, so agents re-reading a
//! conversation cost the visitor nothing.

use crate::store::{self, ConversationId, MessageId, UserId, VisitorId, VisitorReceipts};

use super::Error;
use super::conversation::Chat;

/// What recording a read mark did.
pub(super) struct Marked {
    /// The mark as stored: the message asked for, or the conversation's newest if that is
    /// older (a mark past it would take the unread state from messages still to come), or the
    /// agent's earlier mark if that is further on (a mark never moves back).
    pub up_to: MessageId,
    /// The visitor and their newest message now seen, when newer than what agents had seen.
    pub seen: Option<(VisitorId, MessageId)>,
}

/// Records that `reader` has read conversation `id` up to `message`; `None` when there is no
/// such conversation.
pub(super) fn mark_read_and_find_seen(
    c: &rusqlite::Connection,
    reader: UserId,
    id: ConversationId,
    message: MessageId,
) -> Result<Option<Marked>, store::Error> {
    let Some(newest) = store::find_conversation_newest_message(c, id)? else {
        return Ok(None);
    };
    let up_to = message.min(newest);
    let before = store::find_agents_read_up_to(c, id)?;
    let stored = store::upsert_conversation_read(c, reader, id, up_to)?;
    if up_to <= before {
        return Ok(Some(Marked {
            up_to: stored,
            seen: None,
        }));
    }
    let was = store::find_seen_visitor_message(c, id, before)?;
    let now = store::find_seen_visitor_message(c, id, up_to)?;
    let seen = now.filter(|&(_, seen)| was.is_none_or(|(_, old)| old < seen));
    Ok(Some(Marked {
        up_to: stored,
        seen,
    }))
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
