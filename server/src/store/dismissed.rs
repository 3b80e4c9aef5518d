//! Failed deliveries an admin dismisses: deleted with their attempt log (docs/jobs.md,
//! "Dismissing"), as the retention deletes delivered ones. Only `failed` jobs: a blocked one waits
//! for its integration's fix, and deleting the integration deletes its deliveries.

use rusqlite::{Connection, OptionalExtension, params};

use super::jobs::{COLUMNS, NOT_A_TEST, from_row};
use super::{Error, JobId, JobRow};

/// Deletes job `id` if it is a failed delivery (not a test message: each destination's page
/// shows its latest test); returns it as it was.
pub fn dismiss_failed_job(conn: &Connection, id: JobId) -> Result<Option<JobRow>, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "DELETE FROM jobs AS j WHERE id = ?1 AND state = 'failed' AND {NOT_A_TEST} \
             RETURNING {COLUMNS}"
        ))?
        .query_row([id], from_row)
        .optional()?)
}

/// The newest failed job's id: where a dismissal of them all stops, so deliveries failing while
/// it runs are left for the admin to see.
pub fn newest_failed_job(conn: &Connection) -> Result<Option<JobId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT max(id) FROM jobs INDEXED BY jobs_unfinished \
             WHERE state IN ('running', 'failed', 'blocked') AND state = 'failed'",
        )?
        .query_row([], |r| r.get(0))?)
}

/// Deletes the oldest `limit` failed jobs up to `last`, test messages left out; returns how
/// many. A walk of `jobs_unfinished` (its condition repeated, as SQLite matches it literally)
/// that stops at `limit`, so each page is a short write.
pub fn dismiss_failed_jobs_page(
    conn: &Connection,
    last: JobId,
    limit: u32,
) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "DELETE FROM jobs WHERE id IN \
               (SELECT id FROM jobs AS j INDEXED BY jobs_unfinished \
                 WHERE state IN ('running', 'failed', 'blocked') AND state = 'failed' \
                   AND id <= ?1 AND {NOT_A_TEST} \
                 ORDER BY id LIMIT ?2)"
        ))?
        .execute(params![last, limit])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store;

    fn job(conn: &Connection, kind: &str, state: &str) -> JobId {
        conn.execute(
            "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) \
             VALUES ('webhook', ?1, '{}', ?2, 8, 0, 0)",
            params![kind, state],
        )
        .expect("job");
        JobId(conn.last_insert_rowid())
    }

    #[test]
    fn only_failed_jobs_go_and_a_page_leaves_tests_and_the_rest() {
        let conn = store::migrated_in_memory();
        let failed = job(&conn, "webhook.deliver", "failed");
        let blocked = job(&conn, "webhook.deliver", "blocked");
        let test = job(&conn, "discord.test", "failed");
        for _ in 0..3 {
            job(&conn, "webhook.deliver", "failed");
        }
        let none = |id| dismiss_failed_job(&conn, id).expect("dismiss").is_none();
        assert!(none(blocked), "blocked: it waits for its fix");
        assert!(none(test), "a test message");
        let gone = dismiss_failed_job(&conn, failed).expect("dismiss");
        assert_eq!(gone.map(|j| j.id), Some(failed));
        assert!(none(failed), "once");
        let last = newest_failed_job(&conn).expect("read").expect("one");
        let later = job(&conn, "webhook.deliver", "failed");
        let page = || dismiss_failed_jobs_page(&conn, last, 2).expect("page");
        assert_eq!((page(), page(), page()), (2, 1, 0));
        let left: Vec<i64> = conn
            .prepare("SELECT id FROM jobs ORDER BY id")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("ids");
        assert_eq!(
            left,
            [blocked.0, test.0, later.0],
            "one failed since the start stays"
        );
    }
}
