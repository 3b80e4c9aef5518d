//! What a visitor's widget is told about the agents' side of their conversation: the newest of
//! their messages an agent has seen (read receipts, from `conversation_reads`) and whether their
//! latest conversation was closed. Reads only; the marks themselves are `inbox.rs`'s.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error, MessageId, VisitorId};

/// How far any agent has read `conversation` (0 when nobody has opened it).
pub fn find_agents_read_up_to(conn: &Connection, id: ConversationId) -> Result<MessageId, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT coalesce(max(last_read_id), 0) FROM conversation_reads WHERE conversation_id = ?1",
        )?
        .query_row([id], |r| r.get(0))?)
}

/// The id of the conversation's newest message (0 when it has none), or `None` when there is no
/// such conversation: how far a read mark can go.
pub fn find_conversation_newest_message(
    conn: &Connection,
    id: ConversationId,
) -> Result<Option<MessageId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT (SELECT coalesce(max(m.id), 0) FROM messages m WHERE m.conversation_id = c.id) \
             FROM conversations c WHERE c.id = ?1",
        )?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// The conversation's visitor and their newest message with an id at most `up_to`, if any:
/// what a read mark at `up_to` lets the visitor see as "Seen".
pub fn find_seen_visitor_message(
    conn: &Connection,
    id: ConversationId,
    up_to: MessageId,
) -> Result<Option<(VisitorId, MessageId)>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT visitor_id, max(id) FROM messages \
             WHERE conversation_id = ?1 AND author = 'visitor' AND id <= ?2",
        )?
        .query_row(params![id, up_to], |r| {
            Ok(r.get::<_, Option<VisitorId>>(0)?
                .zip(r.get::<_, Option<MessageId>>(1)?))
        })?)
}

/// What a reconnecting widget is told after `welcome`, about the visitor's newest conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VisitorReceipts {
    /// The visitor's newest message in it that an agent has seen.
    pub seen_up_to: Option<MessageId>,
    /// Set when it is closed: its id and the status line that closed it.
    pub closed: Option<(ConversationId, MessageId)>,
}

/// The read receipt and closed state of the visitor's newest conversation.
pub fn find_visitor_receipts(
    conn: &Connection,
    visitor: VisitorId,
) -> Result<VisitorReceipts, Error> {
    let newest = conn
        .prepare_cached(
            // The status line that closed it, where the live `closed` frame placed the notice
            // (an agent reply after the close stays after it), and the same id on every resume:
            // the first status line written at or after `closed_at` (the close's line is timed
            // after it, in the same write; later lines, a tag say, come after it). The newest
            // status line if none is (a clock stepped back).
            "SELECT c.id, c.status = 'closed', \
                    coalesce((SELECT min(m.id) FROM messages m WHERE m.conversation_id = c.id \
                               AND m.author = 'system' AND m.created_at >= c.closed_at), \
                             (SELECT max(m.id) FROM messages m \
                              WHERE m.conversation_id = c.id AND m.author = 'system')) \
             FROM conversations c WHERE c.visitor_id = ?1 ORDER BY c.id DESC LIMIT 1",
        )?
        .query_row([visitor], |r| {
            Ok((
                r.get::<_, ConversationId>(0)?,
                r.get::<_, bool>(1)?,
                r.get::<_, Option<MessageId>>(2)?,
            ))
        })
        .optional()?;
    let Some((id, is_closed, last)) = newest else {
        return Ok(VisitorReceipts::default());
    };
    let read = find_agents_read_up_to(conn, id)?;
    Ok(VisitorReceipts {
        seen_up_to: find_seen_visitor_message(conn, id, read)?.map(|(_, m)| m),
        closed: last.filter(|_| is_closed).map(|m| (id, m)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_is_the_newest_visitor_message_at_or_below_the_mark() {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 's_1', 'Shop', 0);
             INSERT INTO visitors (id, site_id, token_hash, first_seen_at, last_seen_at)
               VALUES (1, 1, x'01', 0, 0);
             INSERT INTO conversations (id, site_id, visitor_id, status, created_at, last_message_at)
               VALUES (1, 1, 1, 'closed', 0, 0), (2, 1, 1, 'open', 0, 0);
             INSERT INTO messages (id, conversation_id, visitor_id, author, client_id, body, created_at)
               VALUES (10, 1, 1, 'visitor', 'a', 'x', 0), (11, 2, 1, 'visitor', 'b', 'y', 0),
                      (12, 2, NULL, 'agent', NULL, 'z', 0), (13, 2, 1, 'visitor', 'c', 'w', 0);
             INSERT INTO users (id, email, name, role, created_at) VALUES (1, 'a@x.example', 'Ana', 'admin', 0);
             INSERT INTO conversation_reads (user_id, conversation_id, last_read_id) VALUES (1, 2, 12);",
        )
        .expect("seed");
        let visitor = VisitorId(1);
        assert_eq!(
            find_seen_visitor_message(&conn, ConversationId(2), MessageId(12)).expect("query"),
            Some((visitor, MessageId(11)))
        );
        assert_eq!(
            find_seen_visitor_message(&conn, ConversationId(2), MessageId(10)).expect("query"),
            None
        );
        assert_eq!(
            find_visitor_receipts(&conn, visitor).expect("query"),
            VisitorReceipts {
                seen_up_to: Some(MessageId(11)),
                closed: None
            }
        );
    }
}
