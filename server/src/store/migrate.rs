//! Forward-only migrations embedded in the binary and applied at start-up, tracked by
//! `PRAGMA user_version`. Each runs in its own transaction.

use rusqlite::Connection;

use super::Error;

/// Every migration in order; the position (starting at 1) is its version.
const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/0001_core.sql"),
    include_str!("../../../migrations/0002_inbox.sql"),
    include_str!("../../../migrations/0003_job_message_index.sql"),
    include_str!("../../../migrations/0004_deliveries.sql"),
    include_str!("../../../migrations/0005_capacity.sql"),
    include_str!("../../../migrations/0006_jobs_integration_unfinished.sql"),
    include_str!("../../../migrations/0007_job_attempts_every_try.sql"),
    include_str!("../../../migrations/0008_slack_thread_starts.sql"),
    include_str!("../../../migrations/0009_api_token_scope.sql"),
    include_str!("../../../migrations/0010_audit.sql"),
    include_str!("../../../migrations/0011_inbox_waiting.sql"),
    include_str!("../../../migrations/0012_two_factor.sql"),
    include_str!("../../../migrations/0013_oidc_links.sql"),
    include_str!("../../../migrations/0014_privacy.sql"),
    include_str!("../../../migrations/0015_visitor_context.sql"),
    include_str!("../../../migrations/0016_reads_by_conversation.sql"),
    include_str!("../../../migrations/0017_mail_inbound.sql"),
    include_str!("../../../migrations/0018_known_visitors.sql"),
    include_str!("../../../migrations/0019_attachments.sql"),
    include_str!("../../../migrations/0020_attachment_thumbnails.sql"),
    include_str!("../../../migrations/0021_prechat_hours.sql"),
    include_str!("../../../migrations/0022_site_languages.sql"),
    include_str!("../../../migrations/0023_search.sql"),
    include_str!("../../../migrations/0024_canned_replies.sql"),
    include_str!("../../../migrations/0025_mail_outbound.sql"),
    include_str!("../../../migrations/0026_imap_mailbox.sql"),
    include_str!("../../../migrations/0027_slack_file_shares.sql"),
    include_str!("../../../migrations/0028_jobs_queued_by_rate_key.sql"),
    include_str!("../../../migrations/0029_ids_never_reused.sql"),
    include_str!("../../../migrations/0030_conversation_and_visitor_ids_never_reused.sql"),
    include_str!("../../../migrations/0031_jobs_retrying.sql"),
    include_str!("../../../migrations/0032_tests_never_blocked.sql"),
    include_str!("../../../migrations/0033_integration_and_canned_ids_never_reused.sql"),
    include_str!("../../../migrations/0034_audit_failures_by_detail.sql"),
    include_str!("../../../migrations/0035_mark_unread.sql"),
    include_str!("../../../migrations/0036_snooze.sql"),
    include_str!("../../../migrations/0037_jobs_from_elsewhere.sql"),
    include_str!("../../../migrations/0038_tags.sql"),
    include_str!("../../../migrations/0039_closed_through.sql"),
    include_str!("../../../migrations/0040_closed_from.sql"),
];

/// The schema version this binary expects.
#[allow(clippy::cast_possible_truncation)] // a handful of migrations, never 2^32
pub const LATEST: u32 = MIGRATIONS.len() as u32;

/// The schema version of the database (0 for an empty file).
pub fn schema_version(conn: &Connection) -> Result<u32, Error> {
    Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
}

/// A new in-memory database with every migration applied, for unit tests.
///
/// # Panics
/// If SQLite cannot open it or a migration fails: the test cannot go on.
#[cfg(test)]
pub fn migrated_in_memory() -> Connection {
    let mut conn = Connection::open_in_memory().expect("open an in-memory database");
    apply_migrations(&mut conn).expect("migrate");
    conn
}

/// [`migrated_in_memory`] with site 1, its visitor 1 and that visitor's conversations 1, 2, …,
/// one per `(status, last_message_at)`, for unit tests of what hangs off conversations.
///
/// # Panics
/// As [`migrated_in_memory`], or if the rows cannot be written.
#[cfg(test)]
pub fn migrated_with_conversations(conversations: &[(&str, i64)]) -> Connection {
    let conn = migrated_in_memory();
    conn.execute_batch(
        "INSERT INTO sites (key, name, created_at) VALUES ('s_x', 'X', 0); \
         INSERT INTO visitors (site_id, token_hash, first_seen_at, last_seen_at) \
             VALUES (1, randomblob(32), 0, 0);",
    )
    .expect("site and visitor");
    for (status, last) in conversations {
        conn.execute(
            "INSERT INTO conversations (site_id, visitor_id, status, created_at, last_message_at) \
             VALUES (1, 1, ?1, 0, ?2)",
            rusqlite::params![status, last],
        )
        .expect("conversation");
    }
    conn
}

/// The database's schema version, or [`Error::NewerSchema`] when a newer Porch wrote it: this
/// binary knows neither its tables nor what they must hold.
///
/// # Errors
/// A newer schema, or a failed read.
pub fn refuse_newer_schema(conn: &Connection) -> Result<u32, Error> {
    let current = schema_version(conn)?;
    if current > LATEST {
        return Err(Error::NewerSchema {
            found: current,
            supported: LATEST,
        });
    }
    Ok(current)
}

/// Applies the migrations the database lacks and returns the resulting version.
///
/// # Errors
/// Fails if a migration fails (it is rolled back) or if the database is newer than this binary.
pub fn apply_migrations(conn: &mut Connection) -> Result<u32, Error> {
    apply_migrations_while(conn, &|| true)
}

/// Like [`apply_migrations`], but before each migration asks `go_on`, and stops (returning the
/// version reached) when it says no: a stop requested during an upgrade waits for the migration
/// under way, not for every one still to come.
///
/// # Errors
/// As [`apply_migrations`].
pub fn apply_migrations_while(
    conn: &mut Connection,
    go_on: &dyn Fn() -> bool,
) -> Result<u32, Error> {
    let current = refuse_newer_schema(conn)?;
    // Off while migrating, as SQLite's way of rebuilding a table asks: dropping a table that
    // others reference would otherwise delete their rows by cascade. A rebuild copies every row
    // with its id, so references hold (tested below). The pragma is a no-op inside a transaction.
    let enforced: bool = conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?;
    conn.pragma_update(None, "foreign_keys", false)?;
    let applied = apply_each(conn, current, go_on);
    conn.pragma_update(None, "foreign_keys", enforced)?;
    applied
}

fn apply_each(conn: &mut Connection, current: u32, go_on: &dyn Fn() -> bool) -> Result<u32, Error> {
    let mut reached = current;
    for (version, sql) in (1..).zip(MIGRATIONS).skip(current as usize) {
        if !go_on() {
            tracing::info!(version = reached, "migrating stopped between migrations");
            break;
        }
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(sql)
            .map_err(|cause| Error::Migration { version, cause })?;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
        tracing::info!(version, "applied migration");
        reached = version;
    }
    Ok(reached)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).expect("count")
    }

    #[test]
    fn a_failed_migration_says_why_without_quoting_its_sql() {
        let mut conn = Connection::open_in_memory().expect("open");
        for sql in &MIGRATIONS[..22] {
            conn.execute_batch(sql).expect("migrate");
        }
        conn.pragma_update(None, "user_version", 22)
            .expect("version");
        // Something in the way of migration 23 (an operator's own view, say).
        conn.execute_batch("CREATE VIEW message_search_content AS SELECT 1")
            .expect("view");
        let err = apply_migrations(&mut conn).expect_err("23 fails");
        let said = err.to_string();
        assert!(said.starts_with("migration 23 failed: "), "{said}");
        assert!(said.contains("already exists"), "{said}");
        assert!(
            !said.contains("Forward-only") && !said.contains('\n'),
            "{said}"
        );
    }

    #[test]
    fn rebuilt_tables_keep_their_rows_and_references_and_never_give_an_id_twice() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", true).expect("fk");
        for sql in &MIGRATIONS[..28] {
            conn.execute_batch(sql).expect("migrate");
        }
        conn.pragma_update(None, "user_version", 28)
            .expect("version");
        conn.execute_batch(
            "INSERT INTO users (id, email, name, role, created_at) VALUES (1, 'a@x', 'A', 'admin', 0);
             INSERT INTO api_tokens (user_id, name, token_hash, created_at, scope)
                  VALUES (1, 'one', x'01', 0, 'read'), (1, 'two', x'02', 0, 'read-write');
             INSERT INTO jobs (lane, kind, args, max_attempts, run_at, created_at)
                  VALUES ('webhook', 'webhook', '{}', 8, 0, 0), ('webhook', 'webhook', '{}', 8, 0, 0);
             INSERT INTO job_attempts (job_id, seq, attempt, started_at, finished_at, outcome)
                  VALUES (2, 1, 1, 0, 0, 'retry');",
        )
        .expect("seed");

        assert_eq!(apply_migrations(&mut conn).expect("migrate"), LATEST);
        let enforced: bool = conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .expect("pragma");
        assert!(enforced, "enforcement is back on");
        assert_eq!(
            count(&conn, "SELECT count(*) FROM job_attempts WHERE job_id = 2"),
            1
        );
        assert_eq!(
            count(&conn, "SELECT count(*) FROM pragma_foreign_key_check"),
            0
        );
        assert_eq!(
            count(
                &conn,
                "SELECT count(*) FROM api_tokens WHERE id = 1 AND scope = 'read'"
            ),
            1
        );

        // The newest rows go (the attempt with its job, by cascade); new ones get new ids.
        conn.execute_batch("DELETE FROM jobs WHERE id = 2; DELETE FROM api_tokens WHERE id = 2;")
            .expect("delete");
        assert_eq!(count(&conn, "SELECT count(*) FROM job_attempts"), 0);
        conn.execute_batch(
            "INSERT INTO jobs (lane, kind, args, max_attempts, run_at, created_at)
                  VALUES ('webhook', 'webhook', '{}', 8, 0, 0);
             INSERT INTO api_tokens (user_id, name, token_hash, created_at)
                  VALUES (1, 'three', x'03', 0);",
        )
        .expect("insert");
        assert_eq!(count(&conn, "SELECT max(id) FROM jobs"), 3);
        assert_eq!(count(&conn, "SELECT max(id) FROM api_tokens"), 3);
    }

    #[test]
    fn conversation_and_visitor_ids_are_never_given_twice_even_ones_erased_before() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", true).expect("fk");
        for sql in &MIGRATIONS[..29] {
            conn.execute_batch(sql).expect("migrate");
        }
        conn.pragma_update(None, "user_version", 29)
            .expect("version");
        // Two people; a third (visitor 3, conversation 3) was erased, which only the audit log
        // and a job still name.
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 'k', 'Shop', 0);
             INSERT INTO visitors (site_id, token_hash, name, first_seen_at, last_seen_at)
                  VALUES (1, x'01', 'Ada Lovelace', 0, 0), (1, x'02', 'Bo', 0, 0);
             INSERT INTO conversations (site_id, visitor_id, created_at, last_message_at, waiting_since)
                  VALUES (1, 1, 0, 5, 4), (1, 2, 0, 7, NULL);
             INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, created_at)
                  VALUES (1, 'visitor', 1, 'c1', 'hello', 4);
             INSERT INTO audit_events (at, actor, action, target_type, target_id, ip, last_at)
                  VALUES (0, 'cli', 'privacy.erased', 'visitor', '3', 'cli', 0);
             INSERT INTO jobs (lane, kind, args, max_attempts, run_at, created_at)
                  VALUES ('webhook', 'webhook', '{\"conversation_id\": 3}', 8, 0, 0);",
        )
        .expect("seed");

        assert_eq!(apply_migrations(&mut conn).expect("migrate"), LATEST);
        assert_eq!(
            count(&conn, "SELECT count(*) FROM pragma_foreign_key_check"),
            0
        );
        assert_eq!(
            count(
                &conn,
                "SELECT count(*) FROM messages WHERE conversation_id = 1"
            ),
            1
        );
        // The generated columns and the name search survive the rebuild.
        assert_eq!(
            count(&conn, "SELECT wait_at FROM conversations WHERE id = 1"),
            4
        );
        assert_eq!(
            count(&conn, "SELECT wait_rank FROM conversations WHERE id = 2"),
            1
        );
        assert_eq!(
            count(
                &conn,
                "SELECT rowid FROM visitor_search WHERE visitor_search MATCH 'lovelace'"
            ),
            1
        );

        conn.execute_batch(
            "INSERT INTO visitors (site_id, token_hash, name, first_seen_at, last_seen_at)
                  VALUES (1, x'04', 'Cy', 0, 0);
             INSERT INTO conversations (site_id, visitor_id, created_at, last_message_at)
                  VALUES (1, 4, 0, 0);",
        )
        .expect("insert");
        assert_eq!(
            count(&conn, "SELECT max(id) FROM visitors"),
            4,
            "above erased 3"
        );
        assert_eq!(
            count(&conn, "SELECT max(id) FROM conversations"),
            4,
            "above erased 3"
        );
        assert_eq!(
            count(
                &conn,
                "SELECT rowid FROM visitor_search WHERE visitor_search MATCH 'cy'"
            ),
            4
        );
        // The newest go; the next get new ids.
        conn.execute_batch(
            "DELETE FROM visitors WHERE id = 4;
             INSERT INTO visitors (site_id, token_hash, first_seen_at, last_seen_at)
                  VALUES (1, x'05', 0, 0);
             INSERT INTO conversations (site_id, visitor_id, created_at, last_message_at)
                  VALUES (1, 5, 0, 0);",
        )
        .expect("again");
        assert_eq!(count(&conn, "SELECT max(id) FROM visitors"), 5);
        assert_eq!(count(&conn, "SELECT max(id) FROM conversations"), 5);
    }

    #[test]
    fn integration_and_canned_reply_ids_are_never_given_twice_even_ones_deleted_before() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", true).expect("fk");
        for sql in &MIGRATIONS[..32] {
            conn.execute_batch(sql).expect("migrate");
        }
        conn.pragma_update(None, "user_version", 32)
            .expect("version");
        // Integration 3 and canned reply 3 were deleted before: only the audit log names them.
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 'k', 'Shop', 0);
             INSERT INTO users (id, email, name, role, created_at) VALUES (1, 'a@x', 'A', 'admin', 0);
             INSERT INTO integrations (site_id, kind, created_at, updated_at)
                  VALUES (1, 'slack', 0, 0), (1, 'webhook', 0, 0);
             INSERT INTO jobs (lane, kind, args, max_attempts, run_at, created_at, integration_id)
                  VALUES ('webhook', 'webhook', '{}', 8, 0, 0, 2);
             INSERT INTO canned_replies (owner_id, shortcut, body, created_at, updated_at)
                  VALUES (NULL, 'hi', 'Hello', 0, 0), (1, 'bye', 'Bye', 0, 0);
             INSERT INTO audit_events (at, actor, action, target_type, target_id, ip, last_at)
                  VALUES (0, 'cli', 'integration.deleted', 'integration', '3', 'cli', 0),
                         (0, 'cli', 'canned_reply.deleted', 'canned_reply', '3', 'cli', 0);",
        )
        .expect("seed");

        assert_eq!(apply_migrations(&mut conn).expect("migrate"), LATEST);
        assert_eq!(
            count(&conn, "SELECT count(*) FROM pragma_foreign_key_check"),
            0
        );
        assert_eq!(
            count(&conn, "SELECT integration_id FROM jobs"),
            2,
            "the job keeps its integration"
        );
        // The newest go (the job with its integration, by cascade); new ones get new ids.
        conn.execute_batch(
            "DELETE FROM integrations WHERE id = 2; DELETE FROM canned_replies WHERE id = 2;",
        )
        .expect("delete");
        assert_eq!(count(&conn, "SELECT count(*) FROM jobs"), 0);
        conn.execute_batch(
            "INSERT INTO integrations (site_id, kind, created_at, updated_at)
                  VALUES (1, 'webhook', 0, 0);
             INSERT INTO canned_replies (owner_id, shortcut, body, created_at, updated_at)
                  VALUES (NULL, 'thanks', 'Thanks', 0, 0);",
        )
        .expect("insert");
        assert_eq!(
            count(&conn, "SELECT max(id) FROM integrations"),
            4,
            "above deleted 3"
        );
        assert_eq!(
            count(&conn, "SELECT max(id) FROM canned_replies"),
            4,
            "above deleted 3"
        );
    }

    /// docs/privacy.md's "What Porch stores" is a site owner's answer to "what do you keep":
    /// a table a migration adds must be in it (an FTS index's shadow tables go with the index).
    #[test]
    fn the_privacy_docs_name_every_table() {
        let docs = include_str!("../../../docs/privacy.md");
        // The first cells of the rows of "What Porch stores", where a table is said to be kept.
        let section = docs
            .split("\n## What Porch stores")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("the section");
        let named: Vec<&str> = section
            .lines()
            .filter_map(|line| line.strip_prefix('|')?.split('|').next())
            .collect();
        let mut conn = Connection::open_in_memory().expect("open");
        apply_migrations(&mut conn).expect("migrate");
        let mut statement = conn
            .prepare(
                "SELECT name, sql LIKE 'CREATE VIRTUAL TABLE%' FROM sqlite_schema \
                  WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            )
            .expect("prepare");
        let tables: Vec<(String, bool)> = statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("tables")
            .collect::<Result<_, _>>()
            .expect("rows");
        let indexes: Vec<&str> = tables
            .iter()
            .filter(|(_, virtual_table)| *virtual_table)
            .map(|(name, _)| name.as_str())
            .collect();
        for (name, _) in &tables {
            let shadow = indexes.iter().any(|index| {
                name.strip_prefix(index)
                    .is_some_and(|rest| rest.starts_with('_'))
            });
            let cell = format!("`{name}`");
            assert!(
                shadow || named.iter().any(|first| first.contains(&cell)),
                "docs/privacy.md's \"What Porch stores\" does not say what `{name}` holds"
            );
        }
    }
}
