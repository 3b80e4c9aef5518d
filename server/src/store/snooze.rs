//! Snoozed conversations (docs/admin.md, "Snooze"): an open conversation out of the Open list
//! and the unread counts until `snoozed_until`, or until the visitor writes (which clears it in
//! the message's own write, `conversations::touch_conversation`). Closing clears it too.

use rusqlite::{Connection, OptionalExtension as _, params};

use super::{ConversationId, Error, SiteId};

/// What snoozing a conversation that is snoozed already does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resnooze {
    /// Its snooze ends at the new time instead (the API).
    Move,
    /// Its snooze is left as it is (a bulk snooze, which a row snoozed meanwhile must not move).
    Keep,
}

/// Snoozes an open conversation until `until` (Unix ms); false when it is not open, already
/// snoozed until then, or snoozed at all with [`Resnooze::Keep`]. The test is in the write, so
/// two agents snoozing at once change it once.
pub fn snooze_conversation(
    conn: &Connection,
    id: ConversationId,
    until: i64,
    again: Resnooze,
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE conversations SET snoozed_until = ?2 \
             WHERE id = ?1 AND status = 'open' AND snoozed_until IS NOT ?2 \
               AND (snoozed_until IS NULL OR ?3)",
        )?
        .execute(params![id, until, again == Resnooze::Move])?
        == 1)
}

/// Ends a snooze early; false when the conversation is not snoozed.
pub fn unsnooze_conversation(conn: &Connection, id: ConversationId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE conversations SET snoozed_until = NULL \
             WHERE id = ?1 AND snoozed_until IS NOT NULL",
        )?
        .execute([id])?
        == 1)
}

/// When the next snooze ends (Unix ms), if any conversation is snoozed.
pub fn next_snooze_end(conn: &Connection) -> Result<Option<i64>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT snoozed_until FROM conversations WHERE snoozed_until IS NOT NULL \
             ORDER BY snoozed_until LIMIT 1",
        )?
        .query_row([], |r| r.get(0))
        .optional()?)
}

/// Snoozed conversations whose time is up at `now`, the earliest first, at most `limit`.
pub fn list_snoozes_ended(
    conn: &Connection,
    now: i64,
    limit: u32,
) -> Result<Vec<(ConversationId, SiteId)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, site_id FROM conversations \
         WHERE snoozed_until IS NOT NULL AND snoozed_until <= ?1 \
         ORDER BY snoozed_until, id LIMIT ?2",
    )?;
    Ok(stmt
        .query_map(params![now, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// Ends a snooze whose time is up at `now`: the conversation comes to the top of the
/// newest-activity order and is unread again, as *Mark unread* leaves it, for the agents it is
/// for (its assignee, or everyone while nobody has it), so that it is back in their counts
/// until they open it, not only in an alert they may have missed. False when it is no longer
/// snoozed, or was snoozed again for later meanwhile.
pub fn end_snooze(conn: &Connection, id: ConversationId, now: i64) -> Result<bool, Error> {
    let ended = conn
        .prepare_cached(
            "UPDATE conversations SET snoozed_until = NULL, \
                 last_message_at = max(last_message_at, ?2) \
             WHERE id = ?1 AND snoozed_until IS NOT NULL AND snoozed_until <= ?2",
        )?
        .execute(params![id, now])?
        == 1;
    if ended {
        // An agent without a read row has never read it: it is unread for them already.
        conn.prepare_cached(
            "UPDATE conversation_reads SET is_marked_unread = 1 WHERE conversation_id = ?1 \
               AND coalesce(user_id = (SELECT assignee_id FROM conversations WHERE id = ?1), 1)",
        )?
        .execute([id])?;
    }
    Ok(ended)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::migrate::migrated_with_conversations;

    /// One site, one visitor, one open conversation (id 1) last active at 100.
    fn conversation() -> Connection {
        migrated_with_conversations(&[("open", 100)])
    }

    fn snoozed_until(conn: &Connection) -> Option<i64> {
        conn.query_row(
            "SELECT snoozed_until FROM conversations WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .expect("row")
    }

    #[test]
    fn a_snooze_ends_at_its_time_and_not_before() {
        let conn = conversation();
        let id = ConversationId(1);
        assert!(snooze_conversation(&conn, id, 5_000, Resnooze::Move).expect("snooze"));
        assert!(
            !snooze_conversation(&conn, id, 5_000, Resnooze::Move).expect("again"),
            "no change"
        );
        // A bulk snooze leaves a snooze as it is; the API moves it.
        assert!(!snooze_conversation(&conn, id, 6_000, Resnooze::Keep).expect("kept"));
        assert_eq!(next_snooze_end(&conn).expect("next"), Some(5_000));
        assert!(snooze_conversation(&conn, id, 6_000, Resnooze::Move).expect("moved"));
        assert!(snooze_conversation(&conn, id, 5_000, Resnooze::Move).expect("back"));
        assert_eq!(next_snooze_end(&conn).expect("next"), Some(5_000));
        assert!(
            list_snoozes_ended(&conn, 4_999, 10)
                .expect("list")
                .is_empty()
        );
        assert!(!end_snooze(&conn, id, 4_999).expect("early"), "not yet");
        assert_eq!(
            list_snoozes_ended(&conn, 5_000, 10).expect("list"),
            vec![(id, SiteId(1))]
        );
        assert!(end_snooze(&conn, id, 5_000).expect("end"));
        assert_eq!(snoozed_until(&conn), None);
        assert_eq!(next_snooze_end(&conn).expect("next"), None);
        let at: i64 = conn
            .query_row(
                "SELECT last_message_at FROM conversations WHERE id = 1",
                [],
                |r| r.get(0),
            )
            .expect("row");
        assert_eq!(at, 5_000, "back at the top of the newest-activity order");
    }

    #[test]
    fn an_ended_snooze_is_unread_again_for_the_agents_it_is_for() {
        let conn = conversation();
        let id = ConversationId(1);
        conn.execute_batch(
            "INSERT INTO users (id, email, name, role, created_at) VALUES \
                 (1, 'a@x', 'A', 'agent', 0), (2, 'b@x', 'B', 'agent', 0); \
             INSERT INTO conversation_reads (user_id, conversation_id, last_read_id) \
                 VALUES (1, 1, 9), (2, 1, 9);",
        )
        .expect("seed");
        let marked = |conn: &Connection| -> Vec<i64> {
            let mut stmt = conn
                .prepare("SELECT user_id FROM conversation_reads WHERE is_marked_unread ORDER BY 1")
                .expect("prepare");
            stmt.query_map([], |r| r.get(0))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows")
        };
        // Assigned: its assignee's alone.
        conn.execute("UPDATE conversations SET assignee_id = 2", [])
            .expect("assign");
        assert!(snooze_conversation(&conn, id, 10, Resnooze::Move).expect("snooze"));
        assert!(end_snooze(&conn, id, 10).expect("end"));
        assert_eq!(marked(&conn), [2]);
        // Nobody's: everyone's.
        conn.execute_batch(
            "UPDATE conversations SET assignee_id = NULL; \
             UPDATE conversation_reads SET is_marked_unread = 0;",
        )
        .expect("unassign");
        assert!(snooze_conversation(&conn, id, 20, Resnooze::Move).expect("snooze"));
        assert!(end_snooze(&conn, id, 20).expect("end"));
        assert_eq!(marked(&conn), [1, 2]);
        // Unsnoozed by hand: nothing is marked.
        conn.execute("UPDATE conversation_reads SET is_marked_unread = 0", [])
            .expect("clear");
        assert!(snooze_conversation(&conn, id, 30, Resnooze::Move).expect("snooze"));
        assert!(unsnooze_conversation(&conn, id).expect("unsnooze"));
        assert!(marked(&conn).is_empty());
    }

    #[test]
    fn only_open_conversations_are_snoozed_and_closing_or_unsnoozing_ends_it() {
        let conn = conversation();
        let id = ConversationId(1);
        assert!(snooze_conversation(&conn, id, 5_000, Resnooze::Move).expect("snooze"));
        assert!(unsnooze_conversation(&conn, id).expect("unsnooze"));
        assert!(
            !unsnooze_conversation(&conn, id).expect("again"),
            "not snoozed"
        );
        assert!(snooze_conversation(&conn, id, 5_000, Resnooze::Move).expect("snooze"));
        assert!(crate::store::close_conversation(&conn, id, 200).expect("close"));
        assert_eq!(snoozed_until(&conn), None, "closing ends the snooze");
        assert!(
            !snooze_conversation(&conn, id, 9_000, Resnooze::Move).expect("closed"),
            "closed"
        );
        assert_eq!(snoozed_until(&conn), None);
    }
}
