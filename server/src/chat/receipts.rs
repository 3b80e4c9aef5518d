//! Read state: an agent's read marks and marks of unread (docs/admin.md, "Unread"), and what the
//! visitor's widget learns of them (docs/widget-protocol.md, `read` and `closed`): an agent
//! opening the conversation after the visitor's message becomes "Seen", and a closed
//! conversation a notice. Only moves of the mark are published, so agents re-reading a
//! conversation cost the visitor nothing.

use std::sync::Arc;

use crate::hub::{ReadMark, VisitorEvent};
use crate::store::{self, ConversationId, MessageId, UserId, VisitorId, VisitorReceipts};
use crate::values::Invalid;

use super::Error;
use super::conversation::Chat;

/// What recording a read mark did.
struct Marked {
    /// The mark as stored: the message asked for, or the conversation's newest if that is
    /// older (a mark past it would take the unread state from messages still to come), or the
    /// agent's earlier mark if that is further on (a mark never moves back).
    pub up_to: MessageId,
    /// The visitor and their newest message now seen, when newer than what agents had seen.
    pub seen: Option<(VisitorId, MessageId)>,
}

/// Records that `reader` has read conversation `id` up to `message`; `None` when there is no
/// such conversation.
fn mark_read_and_find_seen(
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
    /// Records that `reader` has seen the conversation up to `message`, and tells their other
    /// live pages (their unread counts drop it) and, when it is news, the visitor ("Seen").
    /// Published at the commit, in commit order: a read and a mark of unread do not commute, so
    /// pages must see them in the order the store took them.
    pub async fn mark_read(
        &self,
        reader: UserId,
        id: ConversationId,
        message: MessageId,
    ) -> Result<(), Error> {
        let hub = Arc::clone(&self.hub);
        self.writer
            .write_then(
                move |c| mark_read_and_find_seen(c, reader, id, message),
                move |marked: &Option<Marked>| {
                    let Some(marked) = marked else { return };
                    if let Some((visitor, up_to)) = marked.seen {
                        let event = VisitorEvent::Read { up_to };
                        hub.publish_to_visitor(visitor, &event, None);
                    }
                    hub.publish_read(ReadMark {
                        user: reader,
                        conversation: id,
                        up_to: marked.up_to,
                        is_unread: false,
                    });
                },
            )
            .await?
            .map(|_| ())
            .ok_or(Error::NotFound("conversation"))
    }

    /// Marks the conversation unread for `reader` until they next read it, and tells their
    /// live pages (its unread dot and counts come back). The visitor is told nothing: what
    /// they were shown as "Seen" stays so.
    pub async fn mark_unread(&self, reader: UserId, id: ConversationId) -> Result<(), Error> {
        let hub = Arc::clone(&self.hub);
        self.writer
            .write_then(
                move |c| {
                    store::find_conversation_newest_message(c, id)?
                        .map(|_| store::mark_conversation_unread(c, reader, id))
                        .transpose()
                },
                // At the commit, in commit order with reads (see `mark_read`).
                move |marked: &Option<Option<MessageId>>| {
                    if let Some(Some(visitor_message)) = marked {
                        hub.publish_read(ReadMark {
                            user: reader,
                            conversation: id,
                            up_to: *visitor_message,
                            is_unread: true,
                        });
                    }
                },
            )
            .await?
            .ok_or(Error::NotFound("conversation"))?
            .map(|_| ())
            .ok_or_else(|| {
                Invalid::from("This conversation has no visitor message to mark unread.").into()
            })
    }

    /// The read receipt and closed state of the visitor's newest conversation, for a widget
    /// that (re)connects.
    pub async fn visitor_receipts(&self, visitor: VisitorId) -> Result<VisitorReceipts, Error> {
        Ok(self
            .readers
            .read(move |c| store::find_visitor_receipts(c, visitor))
            .await?)
    }
}
