//! The `audit_events` table: recording an event (inside the caller's transaction), folding
//! failed sign-ins into one row per email, address and minute, reading with filters and keyset
//! paging, and pruning by age.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::Error;
use super::ids::UserId;

/// An event to record. Plain strings: the codes and their meaning belong to `crate::audit`.
#[derive(Debug, Clone, Copy)]
pub struct NewAuditEvent<'a> {
    pub at: i64,
    pub actor_id: Option<UserId>,
    pub actor: &'a str,
    pub action: &'a str,
    /// What the action was done to: (type, id, label), each optional.
    pub target_type: Option<&'a str>,
    pub target_id: Option<&'a str>,
    pub target_label: Option<&'a str>,
    pub ip: &'a str,
    /// A JSON object; the caller guarantees it holds no secret.
    pub detail: &'a str,
}

/// A stored event, for the audit page and the API.
#[derive(Debug, Clone)]
pub struct AuditEventRow {
    pub id: i64,
    pub at: i64,
    pub actor_id: Option<UserId>,
    pub actor: String,
    pub action: String,
    pub target_type: Option<String>,
    pub target_id: Option<String>,
    pub target_label: Option<String>,
    pub ip: String,
    pub detail: String,
    /// How many attempts the row stands for (above 1 only for aggregated sign-in failures).
    pub count: i64,
    pub last_at: i64,
}

/// Which events to read: every field narrows; `before` is the keyset cursor (an event id).
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Part of the actor's label, any case.
    pub actor: Option<String>,
    /// An action code or a prefix of whole segments (`site` matches `site.created`).
    pub action: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub before: Option<i64>,
    pub limit: u32,
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<AuditEventRow> {
    Ok(AuditEventRow {
        id: r.get(0)?,
        at: r.get(1)?,
        actor_id: r.get(2)?,
        actor: r.get(3)?,
        action: r.get(4)?,
        target_type: r.get(5)?,
        target_id: r.get(6)?,
        target_label: r.get(7)?,
        ip: r.get(8)?,
        detail: r.get(9)?,
        count: r.get(10)?,
        last_at: r.get(11)?,
    })
}

/// Records one event.
pub fn insert_audit_event(conn: &Connection, event: &NewAuditEvent<'_>) -> Result<(), Error> {
    execute_with_event(
        conn,
        "INSERT INTO audit_events (at, actor_id, actor, action, target_type, target_id, \
         target_label, ip, detail, last_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?1)",
        event,
    )
}

/// Runs `sql` with the event's fields bound as ?1 to ?9 (at, actor id, actor, action, target
/// type, id and label, ip, detail).
fn execute_with_event(
    conn: &Connection,
    sql: &str,
    event: &NewAuditEvent<'_>,
) -> Result<(), Error> {
    conn.prepare_cached(sql)?.execute(params![
        event.at,
        event.actor_id,
        event.actor,
        event.action,
        event.target_type,
        event.target_id,
        event.target_label,
        event.ip,
        event.detail,
    ])?;
    Ok(())
}

/// Records an event that repeats: within one minute, the same action with the same detail by the
/// same actor from the same address adds to one row's `count` instead of adding a row.
pub fn upsert_audit_event_per_minute(
    conn: &Connection,
    event: &NewAuditEvent<'_>,
) -> Result<(), Error> {
    execute_with_event(
        conn,
        "INSERT INTO audit_events (at, actor_id, actor, action, target_type, target_id, \
         target_label, ip, detail, last_at, minute) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?1, ?1 / 60000) \
         ON CONFLICT (action, actor, ip, minute, detail) WHERE minute IS NOT NULL \
         DO UPDATE SET count = count + 1, last_at = excluded.last_at",
        event,
    )
}

/// Events matching `filter`, newest first.
pub fn list_audit_events(
    conn: &Connection,
    filter: &AuditFilter,
) -> Result<Vec<AuditEventRow>, Error> {
    // One statement for every combination: an absent filter is NULL and matches everything.
    let mut stmt = conn.prepare_cached(
        "SELECT id, at, actor_id, actor, action, target_type, target_id, target_label, ip, \
         detail, count, last_at FROM audit_events \
         WHERE (?1 IS NULL OR instr(lower(actor), lower(?1)) > 0) \
         AND (?2 IS NULL OR action = ?2 OR substr(action, 1, length(?2) + 1) = ?2 || '.') \
         AND (?3 IS NULL OR last_at >= ?3) AND (?4 IS NULL OR at < ?4) \
         AND (?5 IS NULL OR id < ?5) ORDER BY id DESC LIMIT ?6",
    )?;
    let rows = stmt.query_map(
        params![
            filter.actor,
            filter.action,
            filter.since,
            filter.until,
            filter.before,
            filter.limit
        ],
        from_row,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// When the API token `id` was revoked and by whom (`actor` as recorded), if the audit log still
/// holds it (within its retention): a revoked token's row is gone, so this is how "already
/// revoked" is told from "never existed".
pub fn find_token_revocation(conn: &Connection, id: i64) -> Result<Option<(i64, String)>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT at, actor FROM audit_events WHERE action = 'token.revoked' \
             AND target_type = 'token' AND target_id = ?1 ORDER BY id DESC LIMIT 1",
        )?
        .query_row([id.to_string()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The user a token was made for (the email `token.created` recorded), if its making is still in
/// the audit log: a token gone without a revocation went with its user's access.
pub fn find_token_owner(conn: &Connection, id: i64) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT json_extract(detail, '$.user') FROM audit_events WHERE action = \
             'token.created' AND target_type = 'token' AND target_id = ?1 ORDER BY id LIMIT 1",
        )?
        .query_row([id.to_string()], |r| r.get(0))
        .optional()?)
}

/// Deletes up to `limit` events whose last attempt is older than `before`; returns how many.
pub fn prune_audit_events(conn: &Connection, before: i64, limit: u32) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM audit_events WHERE id IN \
             (SELECT id FROM audit_events WHERE at < ?1 AND last_at < ?1 ORDER BY at LIMIT ?2)",
        )?
        .execute(params![before, limit])?)
}
