//! Deleting conversations with everything hanging off them, a bounded chunk per call, for the
//! retention purge and for erasure (docs/privacy.md). Rows go with plain `DELETE`s, so foreign-key
//! cascades (Slack and Discord threads, reads, alerts, job attempts) and any triggers on
//! `messages` follow. Callers run one chunk per writer transaction so the widget never waits
//! behind a long delete.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error, SiteId, VisitorId};

/// What one chunk deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deleted {
    pub messages: usize,
    pub conversations: usize,
    pub visitors: usize,
}

impl Deleted {
    /// Rows of messages, conversations and visitors together.
    pub fn rows(&self) -> usize {
        self.messages + self.conversations + self.visitors
    }

    /// Adds another chunk's counts.
    pub fn add(&mut self, other: Deleted) {
        self.messages += other.messages;
        self.conversations += other.conversations;
        self.visitors += other.visitors;
    }
}

/// Sites with a retention period, with it in days.
pub fn list_retention_sites(conn: &Connection) -> Result<Vec<(SiteId, u32)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, retention_days FROM sites WHERE retention_days IS NOT NULL ORDER BY id",
    )?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// Deletes up to `budget` messages of `site`'s conversations last active (last message, or
/// closing if later) at or before `cutoff`, and each such conversation once it has no message
/// left, with its jobs and its visitor if no other conversation is theirs. Returns what went;
/// nothing deleted means nothing is due.
pub fn purge_due_conversations(
    conn: &Connection,
    site: SiteId,
    cutoff: i64,
    budget: usize,
) -> Result<Deleted, Error> {
    // The same expression as the index `conversations_last_active` (0014_privacy.sql).
    let mut due = conn.prepare_cached(
        "SELECT id, visitor_id FROM conversations \
          WHERE site_id = ?1 AND max(last_message_at, coalesce(closed_at, 0)) <= ?2 LIMIT 1",
    )?;
    let mut deleted = Deleted::default();
    while deleted.rows() < budget {
        let Some((conversation, visitor)) = due
            .query_row(params![site, cutoff], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
        else {
            break;
        };
        deleted.add(delete_conversation_chunk(
            conn,
            conversation,
            visitor,
            budget - deleted.rows(),
        )?);
    }
    Ok(deleted)
}

/// Deletes up to `budget` messages of `visitor`'s conversations, each conversation once it is
/// empty, and the visitor row once they have no conversation left. Returns what went and
/// whether the visitor is gone.
pub fn erase_visitor_chunk(
    conn: &Connection,
    visitor: VisitorId,
    budget: usize,
) -> Result<(Deleted, bool), Error> {
    let mut next = conn
        .prepare_cached("SELECT id FROM conversations WHERE visitor_id = ?1 ORDER BY id LIMIT 1")?;
    // Records of mails from their address that reached no conversation (refused, skipped), while
    // the visitor row still says which address that is: the last conversation takes the row.
    conn.prepare_cached(
        "DELETE FROM mail_inbound WHERE lower(sender) = \
           (SELECT lower(email) FROM visitors WHERE id = ?1)",
    )?
    .execute([visitor])?;
    // Uploads no message took yet, likewise while the row says whose token they came with (the
    // last conversation's chunk deletes it); those a message took go with it, by cascade.
    conn.prepare_cached(
        "DELETE FROM attachments WHERE message_id IS NULL \
           AND token_hash = (SELECT token_hash FROM visitors WHERE id = ?1)",
    )?
    .execute([visitor])?;
    let mut deleted = Deleted::default();
    while deleted.rows() < budget {
        let Some(conversation) = next.query_row([visitor], |r| r.get(0)).optional()? else {
            deleted.visitors += conn
                .prepare_cached("DELETE FROM visitors WHERE id = ?1")?
                .execute([visitor])?;
            return Ok((deleted, true));
        };
        deleted.add(delete_conversation_chunk(
            conn,
            conversation,
            visitor,
            budget - deleted.rows(),
        )?);
    }
    Ok((deleted, false))
}

/// Deletes the oldest `budget` messages of a conversation with the jobs that name them; when
/// none is left, the conversation (its jobs, and by cascade its threads, reads and alerts) and
/// the visitor if this was their last conversation.
fn delete_conversation_chunk(
    conn: &Connection,
    conversation: ConversationId,
    visitor: VisitorId,
    budget: usize,
) -> Result<Deleted, Error> {
    let limit = i64::try_from(budget).unwrap_or(i64::MAX);
    // Jobs first: they name messages only inside `args`, so nothing cascades to them.
    conn.prepare_cached(
        "DELETE FROM jobs WHERE json_extract(args, '$.message_id') IN \
           (SELECT id FROM messages WHERE conversation_id = ?1 ORDER BY id LIMIT ?2)",
    )?
    .execute(params![conversation, limit])?;
    let messages = conn
        .prepare_cached(
            "DELETE FROM messages WHERE id IN \
               (SELECT id FROM messages WHERE conversation_id = ?1 ORDER BY id LIMIT ?2)",
        )?
        .execute(params![conversation, limit])?;
    let mut deleted = Deleted {
        messages,
        ..Deleted::default()
    };
    if messages == budget {
        return Ok(deleted);
    }
    conn.prepare_cached("DELETE FROM jobs WHERE json_extract(args, '$.conversation_id') = ?1")?
        .execute([conversation])?;
    // The record of a mail reply names its sender; the schema would only unlink it.
    conn.prepare_cached("DELETE FROM mail_inbound WHERE conversation_id = ?1")?
        .execute([conversation])?;
    let tags: Vec<_> = super::list_conversation_tags(conn, conversation)?
        .into_iter()
        .map(|tag| tag.id)
        .collect();
    deleted.conversations = conn
        .prepare_cached("DELETE FROM conversations WHERE id = ?1")?
        .execute([conversation])?;
    super::delete_tags_if_unused(conn, &tags)?;
    deleted.visitors = conn
        .prepare_cached(
            "DELETE FROM visitors WHERE id = ?1 \
               AND NOT EXISTS (SELECT 1 FROM conversations WHERE visitor_id = ?1)",
        )?
        .execute([visitor])?;
    Ok(deleted)
}

/// `PRAGMA auto_vacuum` of a file whose free pages can be given back in steps.
const INCREMENTAL: i64 = 2;

/// Gives up to `pages` free pages back to the file system when the database is in
/// `auto_vacuum = INCREMENTAL` mode, and returns how many free pages are left to give back (0
/// in any other mode: `porch vacuum` converts an older file).
pub fn reclaim_free_pages(conn: &Connection, pages: u32) -> Result<u32, Error> {
    let mode: i64 = conn.pragma_query_value(None, "auto_vacuum", |r| r.get(0))?;
    if mode != INCREMENTAL {
        return Ok(0);
    }
    // The pragma answers one row per page freed; it must be stepped to the end to do its work.
    let mut stmt = conn.prepare(&format!("PRAGMA incremental_vacuum({pages})"))?;
    let mut rows = stmt.query([])?;
    while rows.next()?.is_some() {}
    Ok(conn.pragma_query_value(None, "freelist_count", |r| r.get(0))?)
}

/// Rewrites the whole file in `auto_vacuum = INCREMENTAL` mode (`porch vacuum`, with the
/// server stopped): the one-off conversion of a database created before that mode was the
/// default, which also gives back every free page at once.
pub fn vacuum_into_incremental_mode(conn: &Connection) -> Result<(), Error> {
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    conn.execute_batch("VACUUM")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 's_1', 'Shop', 0);
             INSERT INTO visitors (id, site_id, token_hash, first_seen_at, last_seen_at)
                  VALUES (1, 1, x'01', 0, 0), (2, 1, x'02', 0, 0);
             INSERT INTO conversations (id, site_id, visitor_id, status, created_at, last_message_at)
                  VALUES (1, 1, 1, 'open', 0, 100), (2, 1, 2, 'closed', 0, 100),
                         (3, 1, 2, 'open', 0, 5000);",
        )
        .expect("seed");
        for (conversation, visitor) in [(1, 1), (2, 2), (3, 2)] {
            for n in 0..3 {
                conn.execute(
                    "INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, \
                     created_at) VALUES (?1, 'visitor', ?2, ?3, 'hi', 100)",
                    params![conversation, visitor, format!("{conversation}-{n}")],
                )
                .expect("message");
            }
        }
        conn
    }

    fn count(conn: &Connection, table: &str) -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    }

    #[test]
    fn erasure_takes_the_records_of_the_visitors_mail_replies_and_no_one_elses() {
        let conn = db();
        conn.execute_batch(
            "UPDATE visitors SET email = 'Ann@Example.org' WHERE id = 2;
             INSERT INTO mail_inbound (mail_id, sender, subject, conversation_id, outcome, reason,
                                       received_at)
                  VALUES ('<a@x>', 'ann@example.org', 'Re: chat', 2, 'posted', '', 0),
                         ('<b@x>', 'ANN@example.org', 'Re: chat', NULL, 'refused', 'x', 0),
                         ('<c@x>', 'bob@example.org', 'Re: chat', 1, 'posted', '', 0),
                         ('<d@x>', 'eve@example.org', 'Re: chat', NULL, 'refused', 'x', 0);",
        )
        .expect("mail records");
        let (_, is_done) = erase_visitor_chunk(&conn, VisitorId(2), 1000).expect("erase");
        assert!(is_done);
        let left: Vec<String> = conn
            .prepare("SELECT mail_id FROM mail_inbound ORDER BY mail_id")
            .expect("query")
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert_eq!(left, ["<c@x>", "<d@x>"]);
    }

    #[test]
    fn a_purge_goes_in_chunks_and_keeps_visitors_with_a_conversation_left() {
        let conn = db();
        let first = purge_due_conversations(&conn, SiteId(1), 1000, 2).expect("purge");
        assert_eq!(first.messages, 2);
        let mut total = first;
        loop {
            let step = purge_due_conversations(&conn, SiteId(1), 1000, 2).expect("purge");
            if step.rows() == 0 {
                break;
            }
            total.add(step);
        }
        assert_eq!(
            total,
            Deleted {
                messages: 6,
                conversations: 2,
                visitors: 1
            }
        );
        assert_eq!(count(&conn, "conversations"), 1);
        assert_eq!(count(&conn, "visitors"), 1);
        assert_eq!(count(&conn, "messages"), 3);
    }

    #[test]
    fn erasing_a_visitor_removes_every_conversation_then_the_visitor() {
        let conn = db();
        // An upload of theirs no message took, and one of the other visitor's.
        conn.execute_batch(
            "INSERT INTO attachments (public_id, site_id, token_hash, name, content_type, size,
                                      is_complete, created_at)
                  VALUES ('att_a', 1, x'02', 'a.txt', 'text/plain', 1, 1, 0),
                         ('att_b', 1, x'01', 'b.txt', 'text/plain', 1, 1, 0);",
        )
        .expect("uploads");
        let mut done = false;
        while !done {
            (_, done) = erase_visitor_chunk(&conn, VisitorId(2), 2).expect("erase");
        }
        assert_eq!(count(&conn, "visitors"), 1);
        assert_eq!(count(&conn, "conversations"), 1);
        assert_eq!(count(&conn, "messages"), 3);
        let left: String = conn
            .query_row("SELECT group_concat(public_id) FROM attachments", [], |r| {
                r.get(0)
            })
            .expect("uploads");
        assert_eq!(left, "att_b");
    }
}
