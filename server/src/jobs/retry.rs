//! Retrying deliveries an admin asks for: failed or blocked jobs go back to the queue with a
//! fresh budget (attempts from zero, a new deadline from now).
//!
//! "Retry all" works a page at a time, each page its own write: after a long outage the failed
//! jobs may number a million, and one statement over all of them would hold the writer (and so
//! every visitor's acknowledgement) for seconds, and listing them would hold them all in memory.
//! Each page is handed to the runner as "queued jobs from this id on" per rate key, which it
//! reads from SQLite a window at a time, as it does a fixed integration's blocked backlog.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::clock::{millis, now_ms};
use crate::store::{self, JobId, JobRow, Requeued, Retryable, Writer};

use super::{JobKind, JobQueue};

/// Jobs queued again per write by "retry all" (not timed: small against a backlog of millions).
const RETRY_PAGE: u32 = 1000;

/// Queues job `id` again if it is failed or blocked; `false` when it is neither.
pub async fn retry_job(writer: &Writer, queue: &JobQueue, id: JobId) -> Result<bool, store::Error> {
    let job = writer
        .write(move |c| {
            store::find_retryable_job(c, id)?
                .map(|job| requeue(c, &job, now_ms()))
                .transpose()
        })
        .await?;
    let found = job.is_some();
    queue.submit(job.into_iter().collect());
    Ok(found)
}

/// Queues every failed and blocked job again, oldest first; returns how many. A failed job that
/// fails again while later pages are written waits for the next retry (the walk has passed it).
pub async fn retry_all_jobs(writer: &Writer, queue: &JobQueue) -> Result<usize, store::Error> {
    let mut count = 0;
    for state in Retryable::ALL {
        let mut after = JobId(0);
        loop {
            let (page, last) = writer
                .write(move |c| retry_page(c, state, after, RETRY_PAGE, now_ms()))
                .await?;
            count += page.count;
            queue.requeued(page);
            match last {
                Some(last) => after = last,
                None => break,
            }
        }
    }
    Ok(count)
}

/// Queues the next page of jobs in `state` above `after` again. Returns them as [`Requeued`]
/// and the id to continue after (`None` once the page was the last).
pub(super) fn retry_page(
    conn: &Connection,
    state: Retryable,
    after: JobId,
    limit: u32,
    now: i64,
) -> Result<(Requeued, Option<JobId>), store::Error> {
    let jobs = store::list_retryable_jobs(conn, state, after, limit)?;
    let mut oldest: HashMap<Option<String>, JobId> = HashMap::new();
    for job in &jobs {
        requeue(conn, job, now)?;
        // Pages are in id order: the first job of a key is its oldest.
        oldest.entry(job.rate_key.clone()).or_insert(job.id);
    }
    let is_full = u32::try_from(jobs.len()).is_ok_and(|n| n == limit);
    let last = jobs.last().map(|job| job.id).filter(|_| is_full);
    let requeued = Requeued {
        count: jobs.len(),
        oldest: oldest.into_iter().collect(),
    };
    Ok((requeued, last))
}

/// Queues `job` again at `now`; a job that had a deadline gets its kind's from now.
fn requeue(conn: &Connection, job: &JobRow, now: i64) -> Result<JobRow, store::Error> {
    let deadline =
        JobKind::parse(&job.kind).map_or(super::kind::DEFAULT_DEADLINE, JobKind::deadline);
    let deadline_at = job.deadline_at.map(|_| now + millis(deadline));
    store::requeue_job(conn, job.id, now, deadline_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        store::apply_migrations(&mut conn).expect("migrate");
        conn
    }

    fn job_in(conn: &Connection, state: &str, rate_key: Option<&str>) -> JobId {
        conn.execute(
            "INSERT INTO jobs (lane, kind, args, state, rate_key, max_attempts, run_at, \
                               deadline_at, finished_at, created_at) \
             VALUES ('chat', 'slack.post', '{}', ?1, ?2, 5, 0, 10, 20, 0)",
            rusqlite::params![state, rate_key],
        )
        .expect("insert");
        JobId(conn.last_insert_rowid())
    }

    fn state_of(conn: &Connection, id: JobId) -> (String, i64, Option<i64>) {
        conn.query_row(
            "SELECT state, run_at, deadline_at FROM jobs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("job")
    }

    /// Pages walk one state in id order, name each rate key's oldest job, and stop at the
    /// first page that is not full; other states are left alone.
    #[test]
    fn pages_take_one_state_in_id_order_and_end_at_a_short_page() {
        let conn = db();
        let a1 = job_in(&conn, "failed", Some("slack:A"));
        let blocked = job_in(&conn, "blocked", Some("slack:A"));
        let b1 = job_in(&conn, "failed", Some("slack:B"));
        let done = job_in(&conn, "done", Some("slack:A"));
        let a2 = job_in(&conn, "failed", Some("slack:A"));
        let none = job_in(&conn, "failed", None);

        let (first, last) = retry_page(&conn, Retryable::Failed, JobId(0), 2, 1000).expect("page");
        assert_eq!(first.count, 2);
        assert_eq!(last, Some(b1), "a full page continues after its last job");
        let mut oldest = first.oldest;
        oldest.sort();
        assert_eq!(
            oldest,
            [
                (Some("slack:A".to_owned()), a1),
                (Some("slack:B".to_owned()), b1)
            ]
        );

        let (second, last) = retry_page(&conn, Retryable::Failed, b1, 2, 1000).expect("page");
        assert_eq!((second.count, last), (2, Some(none)));
        let (third, last) = retry_page(&conn, Retryable::Failed, none, 2, 1000).expect("page");
        assert_eq!(
            (third.count, last),
            (0, None),
            "an empty page ends the walk"
        );

        for id in [a1, b1, a2, none] {
            let (state, run_at, deadline_at) = state_of(&conn, id);
            assert_eq!((state.as_str(), run_at), ("queued", 1000));
            let fresh = 1000 + millis(JobKind::SlackPost.deadline());
            assert_eq!(deadline_at, Some(fresh), "a new deadline from now");
        }
        assert_eq!(state_of(&conn, blocked).0, "blocked");
        assert_eq!(state_of(&conn, done).0, "done");
    }
}
