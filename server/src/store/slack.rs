//! Slack bookkeeping: the thread of each conversation per (team, channel), the header posts Porch
//! set out to make, every other thread root known to belong to a conversation, and inbound event
//! ids already handled.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error, IntegrationId};

/// The `ts` of the conversation's thread in this channel, if one was started.
pub fn find_slack_thread(
    conn: &Connection,
    conversation_id: ConversationId,
    team_id: &str,
    channel_id: &str,
) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT thread_ts FROM slack_threads \
             WHERE conversation_id = ?1 AND team_id = ?2 AND channel_id = ?3",
        )?
        .query_row(params![conversation_id, team_id, channel_id], |r| r.get(0))
        .optional()?)
}

/// Remembers the thread a conversation's first post started.
pub fn insert_slack_thread(
    conn: &Connection,
    conversation_id: ConversationId,
    team_id: &str,
    channel_id: &str,
    thread_ts: &str,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO slack_threads (conversation_id, team_id, channel_id, thread_ts) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
    )?
    .execute(params![conversation_id, team_id, channel_id, thread_ts])?;
    Ok(())
}

/// The conversation whose thread this is, if it is one of ours: the thread Porch posts into, or
/// another root recorded for the conversation.
pub fn find_conversation_by_slack_thread(
    conn: &Connection,
    team_id: &str,
    channel_id: &str,
    thread_ts: &str,
) -> Result<Option<ConversationId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT conversation_id FROM slack_threads \
             WHERE team_id = ?1 AND channel_id = ?2 AND thread_ts = ?3 \
             UNION ALL \
             SELECT conversation_id FROM slack_thread_roots \
             WHERE team_id = ?1 AND channel_id = ?2 AND thread_ts = ?3 \
             LIMIT 1",
        )?
        .query_row(params![team_id, channel_id, thread_ts], |r| r.get(0))
        .optional()?)
}

/// When the conversation's header was first attempted in this channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadStart {
    /// Milliseconds since the epoch, Porch's clock, before the first post left.
    pub attempted_at: i64,
    /// True if no attempt was recorded before this one, so none can have reached Slack.
    pub is_first: bool,
}

/// Records that a header post for the conversation is about to leave (committed before the post),
/// keeping the first attempt's time.
pub fn begin_slack_thread(
    conn: &Connection,
    conversation_id: ConversationId,
    team_id: &str,
    channel_id: &str,
    now: i64,
) -> Result<ThreadStart, Error> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO slack_thread_starts (conversation_id, team_id, channel_id, attempted_at) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        )?
        .execute(params![conversation_id, team_id, channel_id, now])?;
    let attempted_at = conn
        .prepare_cached(
            "SELECT attempted_at FROM slack_thread_starts \
             WHERE conversation_id = ?1 AND team_id = ?2 AND channel_id = ?3",
        )?
        .query_row(params![conversation_id, team_id, channel_id], |r| r.get(0))?;
    Ok(ThreadStart {
        attempted_at,
        is_first: inserted == 1,
    })
}

/// Forgets that a header post for the conversation was attempted in this channel: the attempt
/// was refused in a way that proves nothing was posted, so the next one need not search the
/// channel's history for it.
pub fn forget_slack_thread_start(
    conn: &Connection,
    conversation_id: ConversationId,
    team_id: &str,
    channel_id: &str,
) -> Result<(), Error> {
    conn.prepare_cached(
        "DELETE FROM slack_thread_starts \
         WHERE conversation_id = ?1 AND team_id = ?2 AND channel_id = ?3",
    )?
    .execute(params![conversation_id, team_id, channel_id])?;
    Ok(())
}

/// Records another thread root of a conversation; false if the conversation no longer exists.
/// A root already recorded (here or as the conversation's thread) counts as recorded.
pub fn insert_slack_thread_root(
    conn: &Connection,
    conversation_id: ConversationId,
    team_id: &str,
    channel_id: &str,
    thread_ts: &str,
) -> Result<bool, Error> {
    if find_conversation_by_slack_thread(conn, team_id, channel_id, thread_ts)?.is_some() {
        return Ok(true);
    }
    let inserted = conn
        .prepare_cached(
            "INSERT INTO slack_thread_roots (team_id, channel_id, thread_ts, conversation_id) \
             SELECT ?1, ?2, ?3, id FROM conversations WHERE id = ?4 \
             ON CONFLICT DO NOTHING",
        )?
        .execute(params![team_id, channel_id, thread_ts, conversation_id])?;
    Ok(inserted == 1)
}

/// Records an inbound event id; false if it was handled before (a retry or a replay).
pub fn insert_slack_event(conn: &Connection, event_id: &str, now: i64) -> Result<bool, Error> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO slack_events (event_id, received_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        )?
        .execute(params![event_id, now])?;
    Ok(inserted == 1)
}

/// Forgets event ids older than `before` (Slack stops retrying after minutes).
pub fn prune_slack_events(conn: &Connection, before: i64) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM slack_events WHERE received_at < ?1")?
        .execute([before])?)
}

/// Parks every Slack integration that is on and belongs to one app in one workspace (the app's
/// bot user there): marked broken with `reason`, its waiting deliveries blocked. One already
/// broken for this reason is left as it is. Returns the ids parked.
pub fn park_slack_app(
    conn: &Connection,
    (team_id, bot_user_id): (&str, &str),
    reason: &str,
    now: i64,
) -> Result<Vec<IntegrationId>, Error> {
    let ids: Vec<IntegrationId> = conn
        .prepare_cached(
            "SELECT id FROM integrations WHERE kind = 'slack' AND is_enabled = 1 \
               AND json_extract(config, '$.team_id') = ?1 \
               AND json_extract(config, '$.bot_user_id') = ?2 \
               AND (status <> 'broken' OR last_error IS NOT ?3) ORDER BY id",
        )?
        .query_map(params![team_id, bot_user_id, reason], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for id in &ids {
        super::mark_integration_broken(conn, *id, reason, now)?;
        super::block_integration_jobs(conn, *id, reason, now)?;
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        // A conversation without a site or visitor: only the Slack tables are under test.
        conn.pragma_update(None, "foreign_keys", "OFF")
            .expect("pragma");
        conn.execute(
            "INSERT INTO conversations (id, site_id, visitor_id, created_at, last_message_at) \
             VALUES (7, 1, 1, 0, 0)",
            [],
        )
        .expect("conversation");
        conn
    }

    #[test]
    fn the_first_header_attempt_is_kept_and_later_ones_are_told_so() {
        let conn = database();
        let c = ConversationId(7);
        let first = begin_slack_thread(&conn, c, "T1", "C1", 1_000).expect("begin");
        assert_eq!(
            first,
            ThreadStart {
                attempted_at: 1_000,
                is_first: true
            }
        );
        let again = begin_slack_thread(&conn, c, "T1", "C1", 5_000).expect("begin");
        assert_eq!(
            again,
            ThreadStart {
                attempted_at: 1_000,
                is_first: false
            }
        );
        let other_channel = begin_slack_thread(&conn, c, "T1", "C2", 5_000).expect("begin");
        assert!(other_channel.is_first);
    }

    #[test]
    fn every_recorded_root_leads_to_its_conversation() {
        let conn = database();
        let c = ConversationId(7);
        insert_slack_thread(&conn, c, "T1", "C1", "1.000001").expect("thread");
        assert!(insert_slack_thread_root(&conn, c, "T1", "C1", "1.000002").expect("root"));
        assert!(
            insert_slack_thread_root(&conn, c, "T1", "C1", "1.000001").expect("root"),
            "the thread itself counts as recorded"
        );
        for ts in ["1.000001", "1.000002"] {
            assert_eq!(
                find_conversation_by_slack_thread(&conn, "T1", "C1", ts).expect("find"),
                Some(c)
            );
        }
        assert_eq!(
            find_slack_thread(&conn, c, "T1", "C1").expect("find"),
            Some("1.000001".into()),
            "Porch keeps posting into one thread"
        );
        assert!(
            !insert_slack_thread_root(&conn, ConversationId(8), "T1", "C1", "1.000003")
                .expect("root"),
            "no such conversation"
        );
    }
}
