//! The inbox list: which conversations (status, assignee, site, tag, combinable), in which order
//! (newest activity or longest waiting), one keyset page at a time (never OFFSET), and how many
//! match. Both orders are served by indexes of `0011_inbox_waiting.sql`.

use rusqlite::{Connection, ToSql};

use super::inbox::{InboxItemRow, SELECT_ITEM, item_from_row};
use super::{ConversationId, Error, SiteId, TagId, UserId};

/// Named parameters of a query built from parts.
pub(super) type Bindings = Vec<(&'static str, Box<dyn ToSql>)>;

/// Open or closed conversations: the stored `conversations.status` (a snoozed conversation is
/// open).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InboxStatus {
    #[default]
    Open,
    Closed,
}

impl InboxStatus {
    /// The stored `conversations.status` value.
    pub(super) fn sql(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }
}

/// Which of the inbox list's three kinds of conversation: open (and not snoozed), snoozed (open,
/// but out of the Open list until the snooze ends), or closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InboxState {
    #[default]
    Open,
    Snoozed,
    Closed,
}

impl InboxState {
    /// The condition on `c` (the `conversations` row) that selects them.
    fn sql(self) -> &'static str {
        match self {
            Self::Open => "c.status = 'open' AND c.snoozed_until IS NULL",
            Self::Snoozed => "c.status = 'open' AND c.snoozed_until IS NOT NULL",
            Self::Closed => "c.status = 'closed'",
        }
    }

    /// Whether `item` is one of them (the same rule as [`Self::sql`]).
    fn matches(self, item: &InboxItemRow) -> bool {
        match self {
            Self::Open => item.is_active(),
            Self::Snoozed => item.status == "open" && item.snoozed_until.is_some(),
            Self::Closed => item.status == "closed",
        }
    }
}

/// Whose conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InboxAssignee {
    #[default]
    Anyone,
    /// Nobody is assigned.
    Unassigned,
    /// Assigned to this user.
    User(UserId),
}

/// The list's order; ties are broken by conversation id, so the order is total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InboxSort {
    /// Newest activity (`last_message_at`) first.
    #[default]
    Recent,
    /// Longest waiting first: conversations whose visitor waits for an answer, by
    /// `waiting_since` (oldest first); then answered ones, by last activity (oldest first).
    Waiting,
}

impl InboxSort {
    /// The sort key as SQL, the comparison that means "comes after", and the ORDER BY.
    fn sql(self) -> (&'static str, &'static str, &'static str) {
        match self {
            // The rank is always 0 here, so the key leaves it out: a constant in the row value
            // would stop SQLite from seeking the index with it.
            Self::Recent => (
                "(c.last_message_at, c.id)",
                "<",
                "c.last_message_at DESC, c.id DESC",
            ),
            Self::Waiting => (
                "(c.wait_rank, c.wait_at, c.id)",
                ">",
                "c.wait_rank, c.wait_at, c.id",
            ),
        }
    }
}

impl InboxSort {
    /// The cursor's row value, shaped like the sort key.
    fn cursor(self) -> &'static str {
        match self {
            Self::Recent => "(:at, :id)",
            Self::Waiting => "(:rank, :at, :id)",
        }
    }

    fn push_cursor(self, values: &mut Bindings, cursor: InboxCursor) {
        if self == Self::Waiting {
            values.push((":rank", Box::new(cursor.rank)));
        }
        values.push((":at", Box::new(cursor.at)));
        values.push((":id", Box::new(cursor.id)));
    }
}

/// A combination of filters and an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InboxQuery {
    pub status: InboxState,
    pub assignee: InboxAssignee,
    /// `None`: every site.
    pub site: Option<SiteId>,
    /// `None`: with or without tags.
    pub tag: Option<TagId>,
    pub sort: InboxSort,
}

impl InboxQuery {
    /// Whether the conversation belongs in this list (the live stream's test; the same rules as
    /// the SQL below).
    pub fn matches(&self, item: &InboxItemRow) -> bool {
        let assignee = match self.assignee {
            InboxAssignee::Anyone => true,
            InboxAssignee::Unassigned => item.assignee_id.is_none(),
            InboxAssignee::User(user) => item.assignee_id == Some(user),
        };
        self.status.matches(item)
            && assignee
            && self.site.is_none_or(|s| s == item.site_id)
            && self
                .tag
                .is_none_or(|t| item.tags.iter().any(|tag| tag.id == t))
    }

    /// The position of `item` in this query's order.
    pub fn cursor(&self, item: &InboxItemRow) -> InboxCursor {
        match self.sort {
            InboxSort::Recent => InboxCursor {
                rank: 0,
                at: item.last_message_at,
                id: item.id,
            },
            InboxSort::Waiting => InboxCursor {
                rank: i64::from(item.waiting_since.is_none()),
                at: item.waiting_since.unwrap_or(item.last_message_at),
                id: item.id,
            },
        }
    }

    /// The WHERE clause and its parameters (besides the reader's `:reader`).
    fn filter(&self) -> (String, Bindings) {
        let (narrower, values) = narrowing(self.assignee, self.site, self.tag);
        (format!("{}{narrower}", self.status.sql()), values)
    }
}

/// The conditions on `c` (the `conversations` row) for an assignee, a site and a tag, each
/// ` AND …`, and their parameters: the inbox list's and the API's (`store::conversations`).
pub(super) fn narrowing(
    assignee: InboxAssignee,
    site: Option<SiteId>,
    tag: Option<TagId>,
) -> (String, Bindings) {
    let mut sql = String::new();
    let mut values: Bindings = Vec::new();
    match assignee {
        InboxAssignee::Anyone => {}
        InboxAssignee::Unassigned => sql.push_str(" AND c.assignee_id IS NULL"),
        InboxAssignee::User(user) => {
            sql.push_str(" AND c.assignee_id = :assignee");
            values.push((":assignee", Box::new(user)));
        }
    }
    if let Some(site) = site {
        sql.push_str(" AND c.site_id = :site");
        values.push((":site", Box::new(site)));
    }
    if let Some(tag) = tag {
        // Read through the tag's index: a tag usually has few conversations of many.
        sql.push_str(
            " AND c.id IN (SELECT conversation_id FROM conversation_tags WHERE tag_id = :tag)",
        );
        values.push((":tag", Box::new(tag)));
    }
    (sql, values)
}

/// Where a page ends in its order: the last row's sort key and id. `rank` is 0 for conversations
/// waiting for an answer and 1 for answered ones in the waiting order, always 0 in the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxCursor {
    pub rank: i64,
    pub at: i64,
    pub id: ConversationId,
}

/// Counts stop here: a count reads every row it counts (about 30 ms for 500,000 open
/// conversations, docs/capacity.md "The agent's read paths"), so past this the list says "more
/// than" and a page costs the same however large the backlog grows.
pub const INBOX_COUNT_CAP: u64 = 10_000;

/// One page of the list.
#[derive(Debug, Clone)]
pub struct InboxPage {
    pub items: Vec<InboxItemRow>,
    /// How many conversations match the filters, on every page; exact up to
    /// [`INBOX_COUNT_CAP`], and `INBOX_COUNT_CAP + 1` for "more than that".
    pub total: u64,
    /// How many of them come before this page, capped the same way.
    pub before: u64,
    /// Where the next page starts (`None`: this is the last).
    pub next: Option<InboxCursor>,
}

pub(super) fn bind(values: &Bindings) -> Vec<(&'static str, &dyn ToSql)> {
    values.iter().map(|(k, v)| (*k, v.as_ref())).collect()
}

/// How many conversations match `condition`, counting no further than one past
/// [`INBOX_COUNT_CAP`].
fn count(conn: &Connection, condition: &str, values: &Bindings) -> Result<u64, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT 1 FROM conversations c WHERE {condition} LIMIT {})",
        INBOX_COUNT_CAP + 1
    ))?;
    let n: i64 = stmt.query_row(&bind(values)[..], |r| r.get(0))?;
    // count(*) is never negative.
    Ok(n.unsigned_abs())
}

/// How many conversations match `query` (`total`), and how many of them come before the page
/// after `after` (`before`), each capped as [`InboxPage`] says.
pub fn count_inbox(
    conn: &Connection,
    query: &InboxQuery,
    after: Option<InboxCursor>,
) -> Result<(u64, u64), Error> {
    let (condition, values) = query.filter();
    let total = count(conn, &condition, &values)?;
    let before = match after {
        Some(cursor) => {
            let (key, later, _) = query.sort.sql();
            let earlier = if later == "<" { ">=" } else { "<=" };
            let condition = format!("{condition} AND {key} {earlier} {}", query.sort.cursor());
            let mut values = values;
            query.sort.push_cursor(&mut values, cursor);
            count(conn, &condition, &values)?
        }
        None => 0,
    };
    Ok((total, before))
}

/// The page of at most `limit` conversations matching `query` that comes after `after` (the
/// first page when `None`), as `reader` sees them, with the counts.
pub fn list_inbox_page(
    conn: &Connection,
    reader: UserId,
    query: &InboxQuery,
    after: Option<InboxCursor>,
    limit: u32,
) -> Result<InboxPage, Error> {
    let (total, before) = count_inbox(conn, query, after)?;
    let (mut condition, mut values) = query.filter();
    let (key, later, order) = query.sort.sql();
    if let Some(cursor) = after {
        condition = format!("{condition} AND {key} {later} {}", query.sort.cursor());
        query.sort.push_cursor(&mut values, cursor);
    }
    values.push((":reader", Box::new(reader)));
    // One row more than asked tells whether a next page exists, without another count.
    values.push((":limit", Box::new(i64::from(limit) + 1)));
    // The page's ids first, then their columns: the columns' subqueries (unread state, preview,
    // tags) run for the page's rows only, never for every row a tag's filter sorts.
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT_ITEM} WHERE c.id IN (SELECT c.id FROM conversations c WHERE {condition} \
         ORDER BY {order} LIMIT :limit) ORDER BY {order}"
    ))?;
    let mut items = stmt
        .query_map(&bind(&values)[..], item_from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    let next = if items.len() > limit as usize {
        items.truncate(limit as usize);
        items.last().map(|last| query.cursor(last))
    } else {
        None
    };
    Ok(InboxPage {
        items,
        total,
        before,
        next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        conn
    }

    /// SQLite's plan for the page query of `query` (after a cursor when `paged`).
    fn plan(conn: &Connection, query: &InboxQuery, paged: bool) -> String {
        let (mut condition, _) = query.filter();
        let (key, later, order) = query.sort.sql();
        if paged {
            let cursor = query
                .sort
                .cursor()
                .replace(":rank", "0")
                .replace(":at", "0");
            condition = format!(
                "{condition} AND {key} {later} {}",
                cursor.replace(":id", "0")
            );
        }
        let sql = format!(
            "EXPLAIN QUERY PLAN SELECT c.id FROM conversations c WHERE {condition} \
             ORDER BY {order} LIMIT 201"
        );
        let mut stmt = conn.prepare(&sql).expect("prepare");
        let mut params: Vec<(&str, &dyn ToSql)> = Vec::new();
        if sql.contains(":assignee") {
            params.push((":assignee", &1));
        }
        if sql.contains(":site") {
            params.push((":site", &1));
        }
        if sql.contains(":tag") {
            params.push((":tag", &1));
        }
        stmt.query_map(&params[..], |r| r.get::<_, String>(3))
            .expect("plan")
            .collect::<Result<Vec<_>, _>>()
            .expect("rows")
            .join("\n")
    }

    #[test]
    fn counts_stop_one_past_the_cap() {
        let conn = database();
        let extra = 5;
        conn.execute_batch(&format!(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 'k', 'Shop', 0); \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {}) \
             INSERT INTO visitors (id, site_id, token_hash, first_seen_at, last_seen_at) \
                 SELECT i, 1, randomblob(32), i, i FROM n; \
             INSERT INTO conversations (site_id, visitor_id, created_at, last_message_at) \
                 SELECT 1, id, first_seen_at, first_seen_at FROM visitors;",
            INBOX_COUNT_CAP + extra
        ))
        .expect("conversations");
        let query = InboxQuery::default();
        let first = list_inbox_page(&conn, UserId(1), &query, None, 200).expect("page");
        assert_eq!((first.total, first.before), (INBOX_COUNT_CAP + 1, 0));
        // After conversation 2 comes only 1; the 10,004 from 2 up come before, counted to the cap.
        let after_two = InboxCursor {
            rank: 0,
            at: 2,
            id: ConversationId(2),
        };
        let last = list_inbox_page(&conn, UserId(1), &query, Some(after_two), 200).expect("page");
        assert_eq!(last.items.len(), 1);
        assert_eq!(
            (last.total, last.before),
            (INBOX_COUNT_CAP + 1, INBOX_COUNT_CAP + 1)
        );
        // Below the cap the counts are exact.
        conn.execute_batch("DELETE FROM conversations WHERE id > 300")
            .expect("delete");
        let small = list_inbox_page(&conn, UserId(1), &query, Some(after_two), 200).expect("page");
        assert_eq!((small.total, small.before), (300, 299));
    }

    #[test]
    fn the_page_query_walks_an_index_in_order_for_the_common_filters() {
        let conn = database();
        let user = InboxAssignee::User(UserId(1));
        for sort in [InboxSort::Recent, InboxSort::Waiting] {
            let index = match sort {
                InboxSort::Recent => "conversations_inbox_recent",
                InboxSort::Waiting => "conversations_inbox_waiting",
            };
            for assignee in [InboxAssignee::Anyone, InboxAssignee::Unassigned, user] {
                for paged in [false, true] {
                    let query = InboxQuery {
                        assignee,
                        sort,
                        ..InboxQuery::default()
                    };
                    let plan = plan(&conn, &query, paged);
                    assert!(plan.contains(index), "{query:?} paged {paged}: {plan}");
                    assert!(!plan.contains("TEMP B-TREE"), "{query:?}: sorts: {plan}");
                    // A later page seeks to its cursor instead of walking past earlier pages.
                    assert_eq!(plan.contains("(status=? AND "), paged, "{query:?}: {plan}");
                }
            }
            // With a site, any index narrowing the scan will do; never a full scan.
            let query = InboxQuery {
                site: Some(SiteId(1)),
                sort,
                ..InboxQuery::default()
            };
            let plan = plan(&conn, &query, true);
            assert!(plan.contains("USING"), "{plan}");
            assert!(!plan.contains("SCAN c\n") && plan != "SCAN c", "{plan}");
            // With a tag, its conversations are found through the tag's index, not by walking
            // every conversation of the status for the few that have it.
            let query = InboxQuery {
                tag: Some(TagId(1)),
                sort,
                ..InboxQuery::default()
            };
            let tagged = self::plan(&conn, &query, true);
            assert!(tagged.contains("conversation_tags_tag"), "{tagged}");
        }
    }
}
