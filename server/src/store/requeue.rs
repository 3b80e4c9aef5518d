//! Jobs queued again in bulk, a page at a time: an admin's "retry all" of failed and blocked
//! jobs, and the blocked backlog of an integration an admin fixed. The pages are walks of an
//! index in id order that stop at their limit, so each is a short write however large the
//! backlog (docs/jobs.md).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::jobs::{COLUMNS, NOT_A_TEST, UNFINISHED_JOBS_OF_INTEGRATION, from_row};
use super::{Error, IntegrationId, JobId, JobRow};

/// Jobs queued again in bulk: how many, and from which id on each rate key has them. The runner
/// reads them from SQLite a window at a time, so a backlog of any size is never one list.
#[derive(Debug)]
pub struct Requeued {
    pub count: usize,
    /// Per rate key (`None`: jobs without one), its oldest job queued again.
    pub oldest: Vec<(Option<String>, JobId)>,
}

impl Requeued {
    /// Jobs queued again, given as (rate key, id) in any order.
    pub fn of(jobs: impl IntoIterator<Item = (Option<String>, JobId)>) -> Self {
        let mut count = 0;
        let mut oldest: HashMap<Option<String>, JobId> = HashMap::new();
        for (rate_key, id) in jobs {
            count += 1;
            oldest
                .entry(rate_key)
                .and_modify(|known| *known = (*known).min(id))
                .or_insert(id);
        }
        Self {
            count,
            oldest: oldest.into_iter().collect(),
        }
    }
}

/// Queues the oldest `limit` of an integration's blocked jobs with ids above `after` again at
/// `now`; returns their rate keys and ids. The page is a walk of `jobs_integration_unfinished`
/// in id order that stops at `limit`: the index is named and its condition repeated, because
/// SQLite would otherwise pick `jobs_integration_recent` (`integration_id, id`) and pass over
/// every finished job of the integration above `after`.
pub fn requeue_blocked_jobs_of_integration(
    conn: &Connection,
    integration_id: IntegrationId,
    after: JobId,
    limit: u32,
    now: i64,
) -> Result<Vec<(Option<String>, JobId)>, Error> {
    Ok(conn
        .prepare_cached(&blocked_page_sql())?
        .query_map(params![integration_id, after, now, limit], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?)
}

fn blocked_page_sql() -> String {
    format!(
        "UPDATE jobs SET state = 'queued', run_at = ?3 WHERE id IN \
           (SELECT id FROM jobs INDEXED BY jobs_integration_unfinished \
             WHERE {UNFINISHED_JOBS_OF_INTEGRATION} AND state = 'blocked' AND id > ?2 \
             ORDER BY id LIMIT ?4) \
         RETURNING rate_key, id"
    )
}

/// The states a manual retry takes jobs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retryable {
    Failed,
    Blocked,
}

impl Retryable {
    pub const ALL: [Retryable; 2] = [Self::Failed, Self::Blocked];

    fn as_str(self) -> &'static str {
        match self {
            Self::Failed => "failed",
            Self::Blocked => "blocked",
        }
    }
}

/// Job `id` if it is failed or blocked.
pub fn find_retryable_job(conn: &Connection, id: JobId) -> Result<Option<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE id = ?1 AND state IN ('failed', 'blocked')"
    ))?;
    Ok(stmt.query_row([id], from_row).optional()?)
}

/// A page of the jobs in `state`, test messages left out (a test is sent anew from its page):
/// the oldest `limit` with ids above `after`. The state is
/// written into the SQL (one statement per state, never user input), the partial index
/// `jobs_unfinished` is named and its condition repeated (SQLite matches it literally), so that
/// SQLite walks it in id order and stops at `limit`: a parameter would not match the index's
/// condition, `state IN (…)` would sort every match for each page, and a walk of every job by
/// id would pass over all the finished ones.
pub fn list_retryable_jobs(
    conn: &Connection,
    state: Retryable,
    after: JobId,
    limit: u32,
) -> Result<Vec<JobRow>, Error> {
    Ok(conn
        .prepare_cached(&retryable_page_sql(state))?
        .query_map(params![after, limit], from_row)?
        .collect::<Result<_, _>>()?)
}

fn retryable_page_sql(state: Retryable) -> String {
    format!(
        "SELECT {COLUMNS} FROM jobs AS j INDEXED BY jobs_unfinished \
          WHERE state IN ('running', 'failed', 'blocked') AND state = '{}' AND id > ?1 \
            AND {NOT_A_TEST} \
          ORDER BY id LIMIT ?2",
        state.as_str()
    )
}

/// Gives a job a fresh set of attempts and the given deadline, queued at `now`, or blocked when
/// `waits` (its integration is broken or off: the fix queues it, in order with the others).
pub fn requeue_job(
    conn: &Connection,
    id: JobId,
    now: i64,
    deadline_at: Option<i64>,
    waits: bool,
) -> Result<JobRow, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "UPDATE jobs SET state = iif(?4, 'blocked', 'queued'), run_at = ?2, attempt = 0, \
                finished_at = NULL, deadline_at = ?3 \
          WHERE id = ?1 RETURNING {COLUMNS}"
    ))?;
    Ok(stmt.query_row(params![id, now, deadline_at, waits], from_row)?)
}

/// Whether integration `id` has a blocked job left (for a resume's last page: one a retry
/// blocked below where the resume had come to).
pub fn has_blocked_jobs_of_integration(
    conn: &Connection,
    id: IntegrationId,
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT 1 FROM jobs INDEXED BY jobs_integration_unfinished \
              WHERE {UNFINISHED_JOBS_OF_INTEGRATION} AND state = 'blocked' LIMIT 1"
        ))?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Whether integration `id` takes deliveries now: on and healthy (not broken, not resuming,
/// whose resume queues its blocked jobs in order).
pub fn integration_takes_deliveries(conn: &Connection, id: IntegrationId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM integrations WHERE id = ?1 AND is_enabled = 1 AND status = 'ok'",
        )?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> String {
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("plan")
            .query_map(params, |r| r.get(3))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("plan rows");
        plan.join("; ")
    }

    /// A page of "retry all" is a walk of the partial index in id order that stops at its limit,
    /// not a sort of every failed job for each page.
    #[test]
    fn a_retry_page_walks_the_unfinished_jobs_index_without_sorting() {
        let conn = crate::store::migrated_in_memory();
        for state in Retryable::ALL {
            let plan = plan_of(&conn, &retryable_page_sql(state), params![0, 10]);
            assert!(plan.contains("jobs_unfinished"), "{plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        }
    }

    /// A page of a fixed integration's blocked jobs walks that integration's unfinished jobs in
    /// id order from the cursor, not every job it ever had, and sorts nothing.
    #[test]
    fn a_resume_page_walks_the_integrations_blocked_jobs_without_sorting() {
        let conn = crate::store::migrated_in_memory();
        let plan = plan_of(&conn, &blocked_page_sql(), params![1, 0, 0, 10]);
        assert!(
            plan.contains("jobs_integration_unfinished (integration_id=? AND rowid>?)"),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }

    #[test]
    fn requeued_counts_every_job_and_names_each_keys_oldest() {
        let requeued = Requeued::of([
            (Some("a".to_owned()), JobId(7)),
            (None, JobId(9)),
            (Some("a".to_owned()), JobId(3)),
            (None, JobId(4)),
        ]);
        let mut oldest = requeued.oldest;
        oldest.sort();
        assert_eq!(requeued.count, 4);
        assert_eq!(oldest, [(None, JobId(4)), (Some("a".to_owned()), JobId(3))]);
    }
}
