//! Inbox search over the FTS5 indexes of `0023_search.sql`: messages (visitor, agent, notes)
//! newest first with a marked snippet, and visitors by name and email; and the indexer's step,
//! which indexes the messages after the watermark. The caller builds the MATCH expression
//! (`chat::SearchTerms`); this module only binds it, never splices it.

use rusqlite::{Connection, Row, named_params};

use crate::values::Author;

use super::{ConversationId, Error, InboxStatus, MessageId, SiteId, VisitorId};

/// Starts a matched word in snippets and highlights. A control character (STX), which no
/// searched text can hold: message bodies refuse control characters but tab and line breaks
/// (`MessageBody`), and names are made one line. A character a visitor could type (a
/// private-use one was used before) let them show any words of theirs as a match.
pub const MARK_START: char = '\u{2}';
/// Ends a matched word in snippets and highlights (ETX).
pub const MARK_END: char = '\u{3}';

/// Matching messages are counted up to this many, the newest ones. It bounds a search for a
/// word found in half the database to the cost of this many rows (see
/// docs/capacity.md#search); it is also the deepest result one can page to.
pub const MESSAGE_WINDOW: u32 = 1000;
/// Visitors whose name or email matches are looked for among this many, the newest ones.
const VISITOR_WINDOW: u32 = 200;

/// What the results are limited to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchFilter {
    /// `None`: every site.
    pub site: Option<SiteId>,
    /// `None`: open and closed conversations.
    pub status: Option<InboxStatus>,
}

/// A matching message.
#[derive(Debug, Clone)]
pub struct MessageHitRow {
    pub message_id: MessageId,
    pub conversation_id: ConversationId,
    pub author: Author,
    pub author_name: Option<String>,
    pub created_at: i64,
    /// Up to 16 tokens around the matches, matches between [`MARK_START`] and [`MARK_END`].
    pub snippet: String,
    pub site_name: String,
    pub visitor_id: VisitorId,
    pub visitor_name: Option<String>,
    pub visitor_email: Option<String>,
    pub status: String,
}

/// A conversation whose visitor's name or email matches.
#[derive(Debug, Clone)]
pub struct VisitorHitRow {
    pub conversation_id: ConversationId,
    pub visitor_id: VisitorId,
    /// The name with matches marked, if the visitor gave one.
    pub name: Option<String>,
    /// The email with matches marked, if the visitor gave one.
    pub email: Option<String>,
    pub site_name: String,
    pub status: String,
    pub last_message_at: i64,
}

/// One page of message hits and how many matched (at most [`MESSAGE_WINDOW`]).
#[derive(Debug, Clone)]
pub struct MessageHits {
    pub hits: Vec<MessageHitRow>,
    pub total: u32,
}

/// The newest matches. CROSS JOIN keeps the index as the outer loop, walked in rowid order (no
/// sort), so the LIMIT stops the walk; a test pins the plan. No bm25: its IDF term counts every
/// row holding each word, a walk of the whole list for a common word (docs/capacity.md#search).
const NEWEST_MATCHES: &str = "SELECT f.rowid FROM message_search f \
    CROSS JOIN messages m ON m.id = f.rowid \
    CROSS JOIN conversations c ON c.id = m.conversation_id \
    WHERE message_search MATCH :expr \
      AND (:site IS NULL OR c.site_id = :site) \
      AND (:status IS NULL OR c.status = :status) \
    ORDER BY f.rowid DESC LIMIT :window";

fn status_sql(filter: &SearchFilter) -> Option<&'static str> {
    filter.status.map(InboxStatus::sql)
}

/// The page of message hits for `expr` at `offset`, newest first.
///
/// The newest [`MESSAGE_WINDOW`] matches are read in rowid order, which FTS5 walks without
/// sorting; snippets are made for the page's rows only, since each one re-reads and
/// re-tokenizes its message.
pub fn search_messages(
    conn: &Connection,
    expr: &str,
    filter: &SearchFilter,
    offset: u32,
    limit: u32,
) -> Result<MessageHits, Error> {
    let newest = conn
        .prepare_cached(NEWEST_MATCHES)?
        .query_map(
            named_params! {
                ":expr": expr,
                ":site": filter.site,
                ":status": status_sql(filter),
                ":window": MESSAGE_WINDOW,
            },
            |r| r.get::<_, MessageId>(0),
        )?
        .collect::<Result<Vec<_>, _>>()?;
    let total = u32::try_from(newest.len()).unwrap_or(MESSAGE_WINDOW);
    let mut detail = conn.prepare_cached(
        "SELECT m.id, m.conversation_id, m.author, m.author_name, m.created_at, \
             snippet(message_search, 0, :start, :end, '…', 16), \
             s.name, c.visitor_id, v.name, v.email, c.status \
         FROM message_search f \
         CROSS JOIN messages m ON m.id = f.rowid \
         JOIN conversations c ON c.id = m.conversation_id \
         JOIN sites s ON s.id = c.site_id \
         JOIN visitors v ON v.id = c.visitor_id \
         WHERE message_search MATCH :expr AND f.rowid = :id",
    )?;
    let mut hits = Vec::new();
    for id in newest.iter().skip(offset as usize).take(limit as usize) {
        let mut rows = detail.query_map(
            named_params! {
                ":expr": expr,
                ":id": id,
                ":start": MARK_START.to_string(),
                ":end": MARK_END.to_string(),
            },
            message_hit,
        )?;
        if let Some(hit) = rows.next() {
            hits.push(hit?);
        }
    }
    Ok(MessageHits { hits, total })
}

fn message_hit(r: &Row<'_>) -> rusqlite::Result<MessageHitRow> {
    Ok(MessageHitRow {
        message_id: r.get(0)?,
        conversation_id: r.get(1)?,
        author: r.get(2)?,
        author_name: r.get(3)?,
        created_at: r.get(4)?,
        snippet: r.get(5)?,
        site_name: r.get(6)?,
        visitor_id: r.get(7)?,
        visitor_name: r.get(8)?,
        visitor_email: r.get(9)?,
        status: r.get(10)?,
    })
}

/// Conversations of visitors whose name or email matches `expr`, most recently active first,
/// at most `limit`.
pub fn search_visitors(
    conn: &Connection,
    expr: &str,
    filter: &SearchFilter,
    limit: u32,
) -> Result<Vec<VisitorHitRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, v.id, w.name, w.email, s.name, c.status, c.last_message_at \
         FROM (SELECT f.rowid AS id, \
                   highlight(visitor_search, 0, :start, :end) AS name, \
                   highlight(visitor_search, 1, :start, :end) AS email \
               FROM visitor_search f WHERE visitor_search MATCH :expr \
               ORDER BY f.rowid DESC LIMIT :window) w \
         JOIN visitors v ON v.id = w.id \
         JOIN conversations c ON c.visitor_id = v.id \
         JOIN sites s ON s.id = c.site_id \
         WHERE (:site IS NULL OR c.site_id = :site) AND (:status IS NULL OR c.status = :status) \
         ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit",
    )?;
    let rows = stmt.query_map(
        named_params! {
            ":expr": expr,
            ":start": MARK_START.to_string(),
            ":end": MARK_END.to_string(),
            ":window": VISITOR_WINDOW,
            ":site": filter.site,
            ":status": status_sql(filter),
            ":limit": limit,
        },
        visitor_hit_from_row,
    )?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

fn visitor_hit_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<VisitorHitRow> {
    Ok(VisitorHitRow {
        conversation_id: r.get(0)?,
        visitor_id: r.get(1)?,
        name: r.get(2)?,
        email: r.get(3)?,
        site_name: r.get(4)?,
        status: r.get(5)?,
        last_message_at: r.get(6)?,
    })
}

/// The conversations of visitor `visitor` within `filter`, newest activity first, as visitor
/// hits (nothing marked): what a search for the inbox's label of an anonymous visitor,
/// "Visitor #9", finds.
pub fn find_visitor_hits(
    conn: &Connection,
    visitor: i64,
    filter: &SearchFilter,
    limit: u32,
) -> Result<Vec<VisitorHitRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, v.id, v.name, v.email, s.name, c.status, c.last_message_at \
         FROM visitors v JOIN conversations c ON c.visitor_id = v.id \
         JOIN sites s ON s.id = c.site_id \
         WHERE v.id = :visitor AND (:site IS NULL OR c.site_id = :site) \
           AND (:status IS NULL OR c.status = :status) \
         ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit",
    )?;
    let rows = stmt.query_map(
        named_params! {
            ":visitor": visitor,
            ":site": filter.site,
            ":status": status_sql(filter),
            ":limit": limit,
        },
        visitor_hit_from_row,
    )?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// What one indexer step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexStep {
    /// Messages the watermark moved past (status lines included, which are not indexed).
    pub messages: u32,
    /// The watermark after the step.
    pub watermark: i64,
}

/// Indexes up to `batch` messages after the watermark (status lines are skipped) and moves the
/// watermark past them, in the caller's transaction: the index then holds exactly the
/// messages up to the watermark, which is what the delete and update triggers rely on.
pub fn index_messages(conn: &Connection, batch: u32) -> Result<IndexStep, Error> {
    let from = search_watermark(conn)?;
    let (messages, upto): (u32, Option<i64>) = conn
        .prepare_cached(
            "SELECT count(*), max(id) FROM \
             (SELECT id FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2)",
        )?
        .query_row(rusqlite::params![from, batch], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let Some(upto) = upto else {
        return Ok(IndexStep {
            messages: 0,
            watermark: from,
        });
    };
    conn.prepare_cached(
        "INSERT INTO message_search (rowid, body) \
         SELECT id, body FROM messages WHERE id > ?1 AND id <= ?2 AND author <> 'system'",
    )?
    .execute([from, upto])?;
    conn.prepare_cached("UPDATE search_watermark SET last_message_id = ?1 WHERE id = 1")?
        .execute([upto])?;
    Ok(IndexStep {
        messages,
        watermark: upto,
    })
}

/// The id of the last message the indexer has passed.
pub fn search_watermark(conn: &Connection) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached("SELECT last_message_id FROM search_watermark WHERE id = 1")?
        .query_row([], |r| r.get(0))?)
}

/// Messages not indexed yet, counted up to `cap` (a bulk import may leave a million).
pub fn count_unindexed(conn: &Connection, cap: u32) -> Result<u32, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM messages \
             WHERE id > (SELECT last_message_id FROM search_watermark WHERE id = 1) LIMIT ?1)",
        )?
        .query_row([cap], |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_matches_are_walked_in_index_order_without_a_sort() {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {NEWEST_MATCHES}"))
            .expect("prepare");
        let plan: Vec<String> = stmt
            .query_map(
                named_params! {":expr": "\"x\"", ":site": 1, ":status": "open", ":window": 10},
                |r| r.get(3),
            )
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert!(plan[0].starts_with("SCAN f VIRTUAL TABLE"), "{plan:?}");
        assert!(
            !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }

    #[test]
    fn the_indexer_moves_the_watermark_and_deletes_only_touch_indexed_rows() {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        conn.execute_batch(
            "INSERT INTO sites (key, name, created_at) VALUES ('s_x', 'X', 0); \
             INSERT INTO visitors (site_id, token_hash, first_seen_at, last_seen_at) \
                 VALUES (1, randomblob(32), 0, 0); \
             INSERT INTO conversations (site_id, visitor_id, status, created_at, last_message_at) \
                 VALUES (1, 1, 'open', 0, 0); \
             INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, created_at) \
                 VALUES (1, 'visitor', 1, 'a', 'heron one', 0), (1, 'system', NULL, NULL, 'heron closed', 0), \
                        (1, 'visitor', 1, 'b', 'heron two', 0);",
        )
        .expect("seed");
        let count = |c: &Connection| -> i64 {
            c.query_row(
                "SELECT count(*) FROM message_search WHERE message_search MATCH 'heron'",
                [],
                |r| r.get(0),
            )
            .expect("count")
        };
        assert_eq!(count(&conn), 0, "nothing is indexed on insert");
        assert_eq!(count_unindexed(&conn, 10).expect("backlog"), 3);
        let step = index_messages(&conn, 2).expect("step");
        assert_eq!((step.messages, step.watermark), (2, 2));
        assert_eq!(count(&conn), 1, "the status line is passed but not indexed");
        // Deleting a message the indexer has not reached must not touch the index (an
        // external-content index told to forget a row it lacks is corrupted).
        conn.execute("DELETE FROM messages WHERE id = 3", [])
            .expect("delete unindexed");
        conn.execute("UPDATE messages SET body = 'gone' WHERE id = 1", [])
            .expect("edit indexed");
        assert_eq!(count(&conn), 0);
        assert_eq!(index_messages(&conn, 2).expect("step").messages, 0);
        conn.execute_batch(
            "INSERT INTO message_search (message_search, rank) VALUES ('integrity-check', 1)",
        )
        .expect("the index matches its content");
    }
}
