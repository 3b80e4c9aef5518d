//! Slack bookkeeping: the thread of each conversation per (team, channel), and inbound event ids
//! already handled.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error};

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

/// The conversation whose thread this is, if it is one of ours.
pub fn find_conversation_by_slack_thread(
    conn: &Connection,
    team_id: &str,
    channel_id: &str,
    thread_ts: &str,
) -> Result<Option<ConversationId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT conversation_id FROM slack_threads \
             WHERE team_id = ?1 AND channel_id = ?2 AND thread_ts = ?3",
        )?
        .query_row(params![team_id, channel_id, thread_ts], |r| r.get(0))
        .optional()?)
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
