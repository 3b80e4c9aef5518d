//! The `conversations` table.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::values::Author;

use super::inbox_list::{Bindings, bind, narrowing};
use super::tags::tags_of_c;
use super::{ConversationId, Error, InboxAssignee, InboxStatus, SiteId, TagId, UserId, VisitorId};

/// A conversation as the API lists it.
#[derive(Debug, Clone)]
pub struct ConversationRow {
    pub id: ConversationId,
    pub site_id: SiteId,
    pub site_key: String,
    pub visitor_id: VisitorId,
    pub status: String,
    pub created_at: i64,
    pub last_message_at: i64,
    /// When it was closed; `None` while it is open.
    pub closed_at: Option<i64>,
    /// Who has it: `(id, name, email)`, `None` while nobody does.
    pub assignee: Option<(UserId, String, String)>,
    /// Snoozed until then (Unix ms); `None` while it is not.
    pub snoozed_until: Option<i64>,
    /// Its tags' names, in order.
    pub tags: Vec<String>,
}

const SELECT: &str = concat!(
    "SELECT c.id, c.site_id, s.key, c.visitor_id, c.status, c.created_at, \
    c.last_message_at, c.closed_at, c.assignee_id, u.name, u.email, c.snoozed_until, ",
    tags_of_c!(),
    " \
    FROM conversations c JOIN sites s ON s.id = c.site_id LEFT JOIN users u ON u.id = c.assignee_id"
);

fn from_row(row: &Row<'_>) -> rusqlite::Result<ConversationRow> {
    let assignee = match row.get::<_, Option<UserId>>(8)? {
        Some(id) => Some((id, row.get(9)?, row.get(10)?)),
        None => None,
    };
    Ok(ConversationRow {
        id: row.get(0)?,
        site_id: row.get(1)?,
        site_key: row.get(2)?,
        visitor_id: row.get(3)?,
        status: row.get(4)?,
        created_at: row.get(5)?,
        last_message_at: row.get(6)?,
        closed_at: row.get(7)?,
        assignee,
        snoozed_until: row.get(11)?,
        tags: super::tags::tags_from_json(row, 12)?
            .into_iter()
            .map(|t| t.name)
            .collect(),
    })
}

/// Which conversations the API lists: each field that is set narrows the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConversationFilter {
    /// Open or closed ones (a snoozed conversation is open).
    pub status: Option<InboxStatus>,
    /// Snoozed ones (`true`) or the others (`false`).
    pub snoozed: Option<bool>,
    pub assignee: InboxAssignee,
    pub site: Option<SiteId>,
    pub tag: Option<TagId>,
}

/// Conversations by last activity, newest first (ties by id), `limit` of them, after the one
/// whose `(last_message_at, id)` is `before` (keyset paging: no conversation is repeated or
/// skipped between pages, except one that becomes active meanwhile, which moves to the front);
/// only those `filter` lets through.
pub fn list_conversations(
    conn: &Connection,
    filter: &ConversationFilter,
    before: Option<(i64, ConversationId)>,
    limit: u32,
) -> Result<Vec<ConversationRow>, Error> {
    let (ids, values) = page_ids(filter, before, limit);
    // The page's ids first, then their columns: the columns' subqueries (the tags) run for the
    // page's rows only, never for every row a tag's filter sorts.
    let sql = format!(
        "{SELECT} WHERE c.id IN ({ids}) ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    Ok(stmt
        .query_map(&bind(&values)[..], from_row)?
        .collect::<Result<_, _>>()?)
}

/// The query for the ids of a page of [`list_conversations`], with its values (`:limit` among
/// them).
fn page_ids(
    filter: &ConversationFilter,
    before: Option<(i64, ConversationId)>,
    limit: u32,
) -> (String, Bindings) {
    let (at, id) = before.unwrap_or((i64::MAX, ConversationId(i64::MAX)));
    // One page per status, merged: each walks `conversations_inbox_recent (status,
    // last_message_at, id)` and stops after `limit` rows, where one query over every status has
    // no index in that order and sorts the whole table for each page (45 ms at 500,000
    // conversations, docs/capacity.md "The agent's read paths"). `InboxStatus` has every value
    // the table's CHECK allows (`migrations/0001_core.sql`).
    let (mut narrower, mut values) = narrowing(filter.assignee, filter.site, filter.tag);
    match filter.snoozed {
        Some(true) => narrower.push_str(" AND c.snoozed_until IS NOT NULL"),
        Some(false) => narrower.push_str(" AND c.snoozed_until IS NULL"),
        None => {}
    }
    let page = |status: InboxStatus| {
        format!(
            "SELECT * FROM (SELECT c.id FROM conversations c WHERE c.status = '{}' \
             AND (c.last_message_at, c.id) < (:at, :id){narrower} \
             ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit)",
            status.sql()
        )
    };
    let ids = match filter.status {
        Some(status) => page(status),
        None => format!(
            "{} UNION ALL {}",
            page(InboxStatus::Open),
            page(InboxStatus::Closed)
        ),
    };
    values.push((":at", Box::new(at)));
    values.push((":id", Box::new(id)));
    values.push((":limit", Box::new(limit)));
    (ids, values)
}

/// One conversation by id.
pub fn find_conversation(
    conn: &Connection,
    id: ConversationId,
) -> Result<Option<ConversationRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT} WHERE c.id = ?1"))?;
    Ok(stmt.query_row([id], from_row).optional()?)
}

/// The visitor's open conversation, if any (a visitor has one at most).
pub fn find_open_conversation_of(
    conn: &Connection,
    visitor_id: VisitorId,
) -> Result<Option<ConversationId>, Error> {
    Ok(conn
        .prepare_cached("SELECT id FROM conversations WHERE visitor_id = ?1 AND status = 'open'")?
        .query_row([visitor_id], |r| r.get(0))
        .optional()?)
}

/// The visitor's open conversation, creating one if there is none. Returns `(id, created)`.
pub(super) fn open_conversation(
    conn: &Connection,
    site_id: SiteId,
    visitor_id: VisitorId,
    now: i64,
) -> Result<(ConversationId, bool), Error> {
    if let Some(id) = find_open_conversation_of(conn, visitor_id)? {
        return Ok((id, false));
    }
    conn.prepare_cached(
        // Opened by a visitor's message, so the visitor waits from now.
        "INSERT INTO conversations (site_id, visitor_id, created_at, last_message_at, waiting_since) \
         VALUES (?1, ?2, ?3, ?3, ?3)",
    )?
    .execute(params![site_id, visitor_id, now])?;
    Ok((ConversationId(conn.last_insert_rowid()), true))
}

/// Records that the conversation just had a message by `author`: a visitor's starts the wait
/// (unless one is already running) and ends any snooze; an agent's reply ends the wait; a note
/// or status line leaves both.
pub(super) fn touch_conversation(
    conn: &Connection,
    id: ConversationId,
    author: Author,
    now: i64,
) -> Result<(), Error> {
    let sql = match author {
        Author::Visitor => {
            // A visitor's message ends a snooze (docs/admin.md, "Snooze").
            "UPDATE conversations SET last_message_at = ?2, \
             waiting_since = coalesce(waiting_since, ?2), snoozed_until = NULL WHERE id = ?1"
        }
        Author::Agent => {
            "UPDATE conversations SET last_message_at = ?2, waiting_since = NULL WHERE id = ?1"
        }
        Author::Note | Author::System => {
            "UPDATE conversations SET last_message_at = ?2 WHERE id = ?1"
        }
    };
    conn.prepare_cached(sql)?.execute(params![id, now])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API's list filters walk the status index in order, as the inbox's do: no sort of
    /// every matching conversation for each page, however many there are.
    #[test]
    fn each_filter_walks_the_status_index_in_order() {
        let conn = super::super::migrate::migrated_with_conversations(&[]);
        let filters = [
            ConversationFilter::default(),
            ConversationFilter {
                status: Some(InboxStatus::Open),
                snoozed: Some(false),
                assignee: InboxAssignee::User(UserId(1)),
                ..ConversationFilter::default()
            },
            ConversationFilter {
                snoozed: Some(true),
                assignee: InboxAssignee::Unassigned,
                ..ConversationFilter::default()
            },
            ConversationFilter {
                status: Some(InboxStatus::Closed),
                site: Some(SiteId(1)),
                ..ConversationFilter::default()
            },
        ];
        for filter in filters {
            for before in [None, Some((5, ConversationId(5)))] {
                let (ids, values) = page_ids(&filter, before, 50);
                let mut stmt = conn
                    .prepare(&format!("EXPLAIN QUERY PLAN {ids}"))
                    .expect("prepare");
                let plan = stmt
                    .query_map(&bind(&values)[..], |r| r.get::<_, String>(3))
                    .expect("plan")
                    .collect::<Result<Vec<_>, _>>()
                    .expect("rows")
                    .join("\n");
                assert!(
                    plan.contains("conversations_inbox_recent"),
                    "{filter:?}: {plan}"
                );
                assert!(!plan.contains("TEMP B-TREE"), "{filter:?} sorts: {plan}");
            }
        }
    }
}
