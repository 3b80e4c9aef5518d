//! The live inbox's read: one conversation's summary as no agent in particular sees it, plus
//! what decides each agent's unread state (the newest visitor message and every read marker).
//! One such read serves every agent watching, instead of one `find_inbox_item` per agent.

use rusqlite::{Connection, OptionalExtension, params};

use super::inbox::{SELECT_ITEM, find_newest_visitor_message, item_from_row};
use super::{ConversationId, Error, InboxItemRow, MessageId, UserId};

/// A conversation for the live inbox, with the facts each agent's unread state follows from.
#[derive(Debug, Clone)]
pub struct LiveInboxRow {
    /// The summary; its `is_unread` means "has any visitor message" (read as nobody).
    pub item: InboxItemRow,
    /// The newest visitor message (`None`: the visitor has not written).
    pub last_visitor_message: Option<MessageId>,
    /// The newest message of any kind: what this row is as of.
    pub newest: MessageId,
    /// How far each agent who ever opened the conversation has read it.
    pub reads: Vec<AgentRead>,
}

/// One agent's read state of a conversation (a `conversation_reads` row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentRead {
    pub user: UserId,
    /// The newest message they have seen.
    pub up_to: MessageId,
    /// They marked it unread since (their next read clears it).
    pub is_marked_unread: bool,
}

/// No user has id 0, so the summary's reader-specific part is computed for nobody.
const NOBODY: UserId = UserId(0);

/// The conversation as the live inbox needs it, or `None` if it is gone.
pub fn find_live_inbox_row(
    conn: &Connection,
    id: ConversationId,
) -> Result<Option<LiveInboxRow>, Error> {
    let Some(item) = conn
        .prepare_cached(&format!("{SELECT_ITEM} WHERE c.id = ?2"))?
        .query_row(params![NOBODY, id], item_from_row)
        .optional()?
    else {
        return Ok(None);
    };
    // Both found from the newest message back, not by aggregating all of them.
    let newest: Option<MessageId> = conn
        .prepare_cached("SELECT max(id) FROM messages WHERE conversation_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    let last_visitor_message = find_newest_visitor_message(conn, id)?;
    let reads = conn
        .prepare_cached(
            "SELECT user_id, last_read_id, is_marked_unread FROM conversation_reads \
             WHERE conversation_id = ?1",
        )?
        .query_map([id], |r| {
            Ok(AgentRead {
                user: r.get(0)?,
                up_to: r.get(1)?,
                is_marked_unread: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(Some(LiveInboxRow {
        item,
        last_visitor_message,
        newest: newest.unwrap_or(MessageId(0)),
        reads,
    }))
}

impl LiveInboxRow {
    /// The same rule as the inbox list's SQL: a visitor message newer than `user`'s marker, or
    /// one they marked unread.
    pub fn is_unread_for(&self, user: UserId) -> bool {
        let read = self.reads.iter().find(|read| read.user == user);
        self.last_visitor_message
            .is_some_and(|last| read.is_none_or(|read| read.is_marked_unread || last > read.up_to))
    }
}
