//! The `visitors` table.

use rusqlite::{Connection, OptionalExtension, params};

use crate::values::VisitorContext;

use super::{ConversationId, Error, SiteId, VisitorId};

/// A visitor as stored, with the id of their open conversation if they have one.
#[derive(Debug, Clone)]
pub struct VisitorRow {
    pub id: VisitorId,
    pub site_id: SiteId,
    pub open_conversation_id: Option<ConversationId>,
    /// The visitor answered the pre-chat form: the widget does not ask again.
    pub has_prechat: bool,
}

/// The visitor whose token hashes to `token_hash`, if they ever wrote.
pub fn find_visitor_by_token_hash(
    conn: &Connection,
    token_hash: &[u8],
) -> Result<Option<VisitorRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT v.id, v.site_id, c.id, v.prechat_at IS NOT NULL FROM visitors v \
         LEFT JOIN conversations c ON c.visitor_id = v.id AND c.status = 'open' \
         WHERE v.token_hash = ?1",
    )?;
    Ok(stmt
        .query_row([token_hash], |r| {
            Ok(VisitorRow {
                id: r.get(0)?,
                site_id: r.get(1)?,
                open_conversation_id: r.get(2)?,
                has_prechat: r.get(3)?,
            })
        })
        .optional()?)
}

/// Details recorded with a visitor's first message (and, for the context, refreshed by the
/// first message of each later connection).
#[derive(Debug, Clone, Default)]
pub struct VisitorDetails {
    pub context: VisitorContext,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
}

impl VisitorDetails {
    /// True when there is nothing to record (a later message of the same connection).
    pub fn is_empty(&self) -> bool {
        self.context == VisitorContext::default() && self.user_agent.is_none() && self.ip.is_none()
    }
}

/// Creates the visitor on their first message, or refreshes `last_seen_at`; returns the id.
/// The referrer, user agent and address are the first visit's; page, language and time zone
/// follow the visitor.
pub(super) fn upsert_visitor(
    conn: &Connection,
    site_id: SiteId,
    token_hash: &[u8],
    details: &VisitorDetails,
    now: i64,
) -> Result<VisitorId, Error> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO visitors (site_id, token_hash, first_page, last_page, user_agent, ip, \
                               referrer, language, time_zone, first_seen_at, last_seen_at) \
         VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9) \
         ON CONFLICT (token_hash) DO UPDATE SET last_seen_at = excluded.last_seen_at, \
             last_page = coalesce(excluded.last_page, last_page), \
             language = coalesce(excluded.language, language), \
             time_zone = coalesce(excluded.time_zone, time_zone) \
         RETURNING id",
    )?;
    let context = &details.context;
    Ok(stmt.query_row(
        params![
            site_id,
            token_hash,
            context.page,
            details.user_agent,
            details.ip,
            context.referrer,
            context.language,
            context.time_zone,
            now
        ],
        |r| r.get(0),
    )?)
}

/// A known visitor is back (a new connection's first message): their current page, language
/// and time zone replace the old ones where given.
pub(super) fn refresh_visitor(
    conn: &Connection,
    id: VisitorId,
    context: &VisitorContext,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE visitors SET last_seen_at = max(last_seen_at, ?2), \
             last_page = coalesce(?3, last_page), language = coalesce(?4, language), \
             time_zone = coalesce(?5, time_zone) \
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        now,
        context.page,
        context.language,
        context.time_zone
    ])?;
    Ok(())
}

/// A visitor's name and email as an agent sets them; `None` clears one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contact<'a> {
    pub name: Option<&'a str>,
    pub email: Option<&'a str>,
}

/// Sets visitor `id`'s name and email to `after` if they are still `before` (what the agent's
/// form showed); true if it did. False when they changed meanwhile or the visitor is gone.
pub fn set_visitor_contact(
    conn: &Connection,
    id: VisitorId,
    before: Contact<'_>,
    after: Contact<'_>,
) -> Result<bool, Error> {
    let changed = conn
        .prepare_cached(
            "UPDATE visitors SET name = ?4, email = ?5 \
             WHERE id = ?1 AND name IS ?2 AND email IS ?3",
        )?
        .execute(params![
            id,
            before.name,
            before.email,
            after.name,
            after.email
        ])?;
    Ok(changed == 1)
}
