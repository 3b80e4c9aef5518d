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

/// Applies the migrations the database lacks and returns the resulting version.
///
/// # Errors
/// Fails if a migration fails (it is rolled back) or if the database is newer than this binary.
pub fn apply_migrations(conn: &mut Connection) -> Result<u32, Error> {
    let current = schema_version(conn)?;
    if current > LATEST {
        return Err(Error::NewerSchema {
            found: current,
            supported: LATEST,
        });
    }
    for (version, sql) in (1..).zip(MIGRATIONS).skip(current as usize) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(sql)
            .map_err(|source| Error::Migration { version, source })?;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
        tracing::info!(version, "applied migration");
    }
    Ok(LATEST)
}
