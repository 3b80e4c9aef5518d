//! The `visitors` table.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error, SiteId, VisitorId};

/// A visitor as stored, with the id of their open conversation if they have one.
#[derive(Debug, Clone)]
pub struct VisitorRow {
    pub id: VisitorId,
    pub site_id: SiteId,
    pub open_conversation_id: Option<ConversationId>,
}

/// The visitor whose token hashes to `token_hash`, if they ever wrote.
pub fn find_visitor_by_token_hash(
    conn: &Connection,
    token_hash: &[u8],
) -> Result<Option<VisitorRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT v.id, v.site_id, c.id FROM visitors v \
         LEFT JOIN conversations c ON c.visitor_id = v.id AND c.status = 'open' \
         WHERE v.token_hash = ?1",
    )?;
    Ok(stmt
        .query_row([token_hash], |r| {
            Ok(VisitorRow {
                id: r.get(0)?,
                site_id: r.get(1)?,
                open_conversation_id: r.get(2)?,
            })
        })
        .optional()?)
}

/// Details recorded with a visitor's first message.
#[derive(Debug, Clone, Default)]
pub struct VisitorDetails {
    pub page: Option<String>,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
}

/// Creates the visitor on their first message, or refreshes `last_seen_at`; returns the id.
pub(super) fn upsert_visitor(
    conn: &Connection,
    site_id: SiteId,
    token_hash: &[u8],
    details: &VisitorDetails,
    now: i64,
) -> Result<VisitorId, Error> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO visitors (site_id, token_hash, first_page, last_page, user_agent, ip, \
                               first_seen_at, last_seen_at) \
         VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?6) \
         ON CONFLICT (token_hash) DO UPDATE SET last_seen_at = excluded.last_seen_at, \
             last_page = coalesce(excluded.last_page, last_page) \
         RETURNING id",
    )?;
    Ok(stmt.query_row(
        params![
            site_id,
            token_hash,
            details.page,
            details.user_agent,
            details.ip,
            now
        ],
        |r| r.get(0),
    )?)
}
