//! Test messages (`discord.test`, `email.test`) among the jobs: an admin's "does it work now?",
//! so never left waiting blocked, and the latest one shown on its destination's page.

use rusqlite::{Connection, OptionalExtension, params};

use super::jobs::{COLUMNS, NOT_A_TEST, UNFINISHED_JOBS_OF_INTEGRATION, from_row};
use super::{Error, IntegrationId, JobRow};

/// The latest test message of `kind` through `integration` (`None`: one without, the server's
/// test mail). Read through `jobs_tests`, which holds only tests, so however many deliveries an
/// integration made since its last test, this is one step.
pub fn latest_test_job(
    conn: &Connection,
    kind: &str,
    integration: Option<IntegrationId>,
) -> Result<Option<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM jobs INDEXED BY jobs_tests \
          WHERE kind LIKE '%.test' AND kind = ?1 AND integration_id IS ?2 \
          ORDER BY id DESC LIMIT 1"
    ))?;
    Ok(stmt
        .query_row(params![kind, integration], from_row)
        .optional()?)
}

/// Deletes the finished test messages of `kind` through `integration` (`None`: the server's
/// test mail), before a new one is queued: the page shows only the latest, so one row of each
/// is kept, however old (finished deliveries are pruned after a day; a test is not, or the page
/// would show an older test as the latest).
pub fn forget_earlier_tests(
    conn: &Connection,
    kind: &str,
    integration: Option<IntegrationId>,
) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM jobs INDEXED BY jobs_tests \
              WHERE kind LIKE '%.test' AND kind = ?1 AND integration_id IS ?2 \
                AND state IN ('done', 'failed')",
        )?
        .execute(params![kind, integration])?)
}

/// Fails an integration's queued test messages with `error`, the reason it is being blocked or
/// turned off: a test answers "does it work now?", so it never waits blocked to go out at the
/// fix. (A running one records its own outcome; one a crash cut short is tried again at the
/// start, as every running job is.)
pub(super) fn fail_waiting_tests(
    conn: &Connection,
    integration_id: IntegrationId,
    error: &str,
    now: i64,
) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "UPDATE jobs AS j SET state = 'failed', last_error = ?2, finished_at = ?3 \
              WHERE {UNFINISHED_JOBS_OF_INTEGRATION} AND state = 'queued' AND NOT ({NOT_A_TEST})"
        ))?
        .execute(params![integration_id, error, now])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{JobId, block_integration_jobs, prune_done_jobs};

    /// The latest test stays on record past the deliveries' pruning, and only the latest.
    #[test]
    fn a_new_test_replaces_the_finished_ones_and_pruning_leaves_it() {
        let conn = crate::store::migrated_in_memory();
        let test = |state: &str| {
            conn.execute(
                "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, finished_at, \
                                   created_at) \
                 VALUES ('email', 'email.test', '{}', ?1, 1, 0, 0, 0)",
                [state],
            )
            .expect("insert");
            JobId(conn.last_insert_rowid())
        };
        let (failed, sent) = (test("failed"), test("done"));
        assert_eq!(prune_done_jobs(&conn, i64::MAX, 100).expect("prune"), 0);
        let latest = latest_test_job(&conn, "email.test", None).expect("read");
        assert_eq!(latest.map(|j| j.id), Some(sent));
        assert_eq!(
            forget_earlier_tests(&conn, "email.test", None).expect("forget"),
            2
        );
        let queued = test("queued");
        let latest = latest_test_job(&conn, "email.test", None).expect("read");
        assert_eq!(latest.map(|j| j.id), Some(queued));
        assert_ne!(queued, failed);
    }

    /// A refused delivery blocks its integration's queued posts, and turning it off does too;
    /// a queued test fails with the reason instead, so it is not sent at the fix.
    #[test]
    fn blocking_or_turning_off_fails_queued_tests_and_blocks_the_rest() {
        let conn = crate::store::migrated_in_memory();
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 's_1', 'Shop', 0); \
             INSERT INTO integrations (id, site_id, kind, name, config, created_at, updated_at) \
             VALUES (1, 1, 'discord', 'a', '{}', 0, 0), (2, 1, 'discord', 'b', '{}', 0, 0);",
        )
        .expect("integrations");
        let job = |integration: i64, kind: &str| {
            conn.execute(
                "INSERT INTO jobs (lane, kind, args, integration_id, state, max_attempts, \
                                   run_at, created_at) \
                 VALUES ('chat', ?1, '{}', ?2, 'queued', 3, 0, 0)",
                params![kind, integration],
            )
            .expect("insert");
            JobId(conn.last_insert_rowid())
        };
        let state = |id: JobId| -> (String, Option<String>, Option<i64>) {
            conn.query_row(
                "SELECT state, last_error, finished_at FROM jobs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("job")
        };
        let (post, test) = (job(1, "discord.post"), job(1, "discord.test"));
        let running = job(1, "discord.test");
        conn.execute("UPDATE jobs SET state = 'running' WHERE id = ?1", [running])
            .expect("running");
        let blocked =
            block_integration_jobs(&conn, IntegrationId(1), "HTTP 404", 50).expect("block");
        assert_eq!(blocked, [post]);
        assert_eq!(state(running).0, "running", "it records its own outcome");
        assert_eq!(state(post).0, "blocked");
        assert_eq!(
            state(test),
            ("failed".into(), Some("HTTP 404".into()), Some(50))
        );

        let (post, test) = (job(2, "discord.post"), job(2, "discord.test"));
        crate::store::disable_integration(&conn, IntegrationId(2), "turned off", 60)
            .expect("turn off");
        assert_eq!(state(post).0, "blocked");
        assert_eq!(
            state(test),
            ("failed".into(), Some("turned off".into()), Some(60))
        );
    }
}
