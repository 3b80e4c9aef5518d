//! Queuing deliveries again when an admin asks: a failed or blocked job retried with a fresh
//! budget (attempts from zero, a new deadline from now), and a fixed integration's blocked
//! backlog resumed (at start-up too, when a stop interrupted it).
//!
//! Bulk requeues work a page at a time, each page its own write: after a long outage the jobs
//! may number a million, and one statement over all of them would hold the writer (and so every
//! visitor's acknowledgement) for seconds (5 s for a million blocked jobs, docs/capacity.md),
//! and listing them would hold them all in memory. Each page is handed to the
//! runner as "queued jobs from this id on" per rate key when its write commits, and the runner
//! reads them from SQLite a window at a time.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use crate::clock::{millis, now_ms};
use crate::store::{self, IntegrationId, JobId, JobRow, Readers, Requeued, Retryable, Writer};

use super::{JobKind, JobQueue};

/// Jobs queued again per write (a median of 6–7 ms of the writer in a probe, docs/capacity.md).
const PAGE: u32 = 1000;

/// How often, and how far apart, a page refused for a passing reason is tried again (about 10 s
/// in all); then the caller gets the error (a resume goes on at the next start or fix).
const PAGE_REFUSALS: u32 = 40;
const PAGE_RETRY: Duration = Duration::from_millis(250);

/// A page written: its jobs, and the id to continue after (`None` once it was the last).
type Page = (Requeued, Option<JobId>);

/// What a retry of one job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retried {
    /// Queued again with a fresh budget.
    Queued,
    /// Its integration is broken or turned off (or resuming): it waits, blocked, with a fresh
    /// budget, and the integration's fix queues it in order with the others.
    Waits,
    /// No such job, or it is neither failed nor blocked.
    NotRetryable,
}

/// Retries job `id` if it is failed or blocked.
pub async fn retry_job(
    writer: &Writer,
    queue: &JobQueue,
    id: JobId,
) -> Result<Retried, store::Error> {
    let job = writer
        .write(move |c| {
            store::find_retryable_job(c, id)?
                .map(|job| retry(c, &job, now_ms()))
                .transpose()
        })
        .await?;
    Ok(match job {
        None => Retried::NotRetryable,
        Some(job) if job.state == "queued" => {
            queue.submit(vec![job]);
            Retried::Queued
        }
        Some(_) => Retried::Waits,
    })
}

/// Queues every failed and blocked delivery (test messages left out) again, oldest first;
/// returns how many were queued. A
/// job whose integration is broken or off is not: it waits for the fix (see [`Retried::Waits`]),
/// as running it could only fail or block it again, or post past a turned-off integration or
/// ahead of a resume's older jobs. A failed job that fails again while later pages are written
/// waits for the next retry (the walk has passed it).
pub async fn retry_all_jobs(writer: &Writer, queue: &JobQueue) -> Result<usize, store::Error> {
    let mut count = 0;
    for state in Retryable::ALL {
        count += write_pages(writer, queue, move |c, after| {
            retry_page(c, state, after, PAGE, now_ms())
        })
        .await?;
    }
    Ok(count)
}

/// Resumes integration `id` after an admin fixed it or turned it on (that change, which marked
/// it as resuming, already committed): queues its blocked jobs again, oldest first, and marks it
/// healthy with the last page; returns how many. Until then it stays broken, so its new jobs
/// start blocked and join the pages behind the older ones: no conversation's new message is
/// posted before its earlier ones. A page finds the mark gone when the integration was blocked
/// again, turned off or deleted meanwhile; the resume then stops there, and its other jobs wait
/// for the next fix.
///
/// The pages are written by a task of their own, so a client that goes away does not stop them.
pub async fn resume_integration(
    writer: &Arc<Writer>,
    queue: &JobQueue,
    id: IntegrationId,
) -> Result<usize, store::Error> {
    let (writer, queue) = (Arc::clone(writer), queue.clone());
    let pages = tokio::spawn(async move {
        write_pages(&writer, &queue, move |c, after| {
            resume_page(c, id, after, PAGE, now_ms())
        })
        .await
    });
    pages.await.unwrap_or(Err(store::Error::Stopped))
}

/// Goes on with the resumes a stop interrupted (integrations still marked as resuming), in the
/// background; called at start-up, once the runner takes jobs. `with_smtp`: SMTP is configured,
/// so blocked email integrations are resumed too (see [`store::start_resuming_email`]).
pub fn spawn_interrupted_resumes(
    writer: Arc<Writer>,
    readers: Arc<Readers>,
    queue: JobQueue,
    with_smtp: bool,
) {
    tokio::spawn(async move {
        if with_smtp {
            let marked = writer
                .write(|c| store::start_resuming_email(c, now_ms()))
                .await;
            if let Err(err) = marked {
                tracing::error!(%err, "could not resume the blocked email integrations");
            }
        }
        let ids = match readers.read(store::list_resuming_integrations).await {
            Ok(ids) => ids,
            Err(err) => return tracing::error!(%err, "could not list interrupted resumes"),
        };
        for id in ids {
            match resume_integration(&writer, &queue, id).await {
                Ok(jobs) => tracing::info!(integration = %id, jobs, "interrupted resume finished"),
                Err(err) => tracing::error!(integration = %id, %err, "interrupted resume failed"),
            }
        }
    });
}

/// Writes `page(after)` from the start until a page is the last; each page reaches the runner
/// from its write's commit hook, ahead of any job committed after it. A page refused for a
/// passing reason (a full queue or disk) is tried again for a while.
async fn write_pages<P>(writer: &Writer, queue: &JobQueue, page: P) -> Result<usize, store::Error>
where
    P: Fn(&Connection, JobId) -> Result<Page, store::Error> + Clone + Send + 'static,
{
    let (mut count, mut after, mut refusals) = (0, Some(JobId(0)), 0);
    while let Some(from) = after {
        let (page, queue) = (page.clone(), queue.clone());
        let written = writer
            .write_then(
                move |c| page(c, from),
                move |(requeued, _): &Page| queue.requeued(requeued),
            )
            .await;
        match written {
            Ok((requeued, next)) => {
                count += requeued.count;
                after = next;
            }
            Err(err) if err.is_transient() && refusals < PAGE_REFUSALS => {
                refusals += 1;
                tokio::time::sleep(PAGE_RETRY).await;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(count)
}

/// Queues the next page of jobs in `state` above `after` again.
pub(super) fn retry_page(
    conn: &Connection,
    state: Retryable,
    after: JobId,
    limit: u32,
    now: i64,
) -> Result<Page, store::Error> {
    let jobs = store::list_retryable_jobs(conn, state, after, limit)?;
    let next = continue_after(jobs.iter().map(|job| job.id), limit);
    let mut queued = Vec::new();
    for job in &jobs {
        let row = retry(conn, job, now)?;
        if row.state == "queued" {
            queued.push((row.rate_key, row.id));
        }
    }
    Ok((Requeued::of(queued), next))
}

/// Queues the next page of integration `id`'s blocked jobs above `after` again while it is
/// marked as resuming; the last page marks it healthy in the same write.
pub(super) fn resume_page(
    conn: &Connection,
    id: IntegrationId,
    after: JobId,
    limit: u32,
    now: i64,
) -> Result<Page, store::Error> {
    if !store::is_integration_resuming(conn, id)? {
        return Ok((Requeued::of([]), None));
    }
    let jobs = store::requeue_blocked_jobs_of_integration(conn, id, after, limit, now)?;
    let mut next = continue_after(jobs.iter().map(|(_, id)| *id), limit);
    if next.is_none() {
        // A retry meanwhile blocks its job to wait for this resume (see `retry`); one below
        // where the walk had come to is found by walking again from the start.
        if store::has_blocked_jobs_of_integration(conn, id)? {
            next = Some(JobId(0));
        } else {
            store::mark_integration_healthy(conn, id, now)?;
        }
    }
    Ok((Requeued::of(jobs), next))
}

/// Where to continue after a page that listed `ids` with `limit`: after its highest id when
/// it was full, nowhere when it was the last.
fn continue_after(ids: impl ExactSizeIterator<Item = JobId>, limit: u32) -> Option<JobId> {
    let is_full = u32::try_from(ids.len()).is_ok_and(|n| n == limit);
    ids.max().filter(|_| is_full)
}

/// Gives `job` a fresh budget at `now` (a job that had a deadline gets its kind's from now):
/// queued, or blocked while its integration does not take deliveries.
fn retry(conn: &Connection, job: &JobRow, now: i64) -> Result<JobRow, store::Error> {
    let deadline =
        JobKind::parse(&job.kind).map_or(super::kind::DEFAULT_DEADLINE, JobKind::deadline);
    let deadline_at = job.deadline_at.map(|_| now + millis(deadline));
    let waits = match job.integration_id {
        Some(integration) => !store::integration_takes_deliveries(conn, integration)?,
        None => false,
    };
    store::requeue_job(conn, job.id, now, deadline_at, waits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_in(conn: &Connection, state: &str, rate_key: Option<&str>) -> JobId {
        job_of(conn, None, state, rate_key)
    }

    fn job_of(
        conn: &Connection,
        integration: Option<IntegrationId>,
        state: &str,
        rate_key: Option<&str>,
    ) -> JobId {
        conn.execute(
            "INSERT INTO jobs (lane, kind, args, integration_id, state, rate_key, max_attempts, \
                               run_at, deadline_at, finished_at, created_at) \
             VALUES ('chat', 'slack.post', '{}', ?1, ?2, ?3, 5, 0, 10, 20, 0)",
            rusqlite::params![integration, state, rate_key],
        )
        .expect("insert");
        JobId(conn.last_insert_rowid())
    }

    /// Two broken Slack integrations of one site; an admin has just fixed the first.
    fn broken_integrations(conn: &Connection) -> (IntegrationId, IntegrationId) {
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 's_1', 'Shop', 0); \
             INSERT INTO integrations (id, site_id, kind, name, config, status, last_error, \
                                       created_at, updated_at) \
             VALUES (1, 1, 'slack', 'a', '{}', 'broken', 'token_revoked', 0, 0), \
                    (2, 1, 'slack', 'b', '{}', 'broken', 'token_revoked', 0, 0);",
        )
        .expect("integrations");
        store::start_resuming_integration(conn, IntegrationId(1), 0).expect("fix");
        (IntegrationId(1), IntegrationId(2))
    }

    fn status_of(conn: &Connection, id: IntegrationId) -> (String, Option<String>) {
        conn.query_row(
            "SELECT status, last_error FROM integrations WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("integration")
    }

    /// A fixed integration's blocked jobs are queued a page at a time in id order; it stays
    /// broken (so its new jobs start blocked and join a later page) until the last page, which
    /// marks it healthy. Other integrations' jobs and its jobs in other states are left alone.
    #[test]
    fn resume_pages_queue_the_blocked_jobs_and_the_last_marks_the_integration_healthy() {
        let conn = store::migrated_in_memory();
        let (fixed, other) = broken_integrations(&conn);
        let a1 = job_of(&conn, Some(fixed), "blocked", Some("slack:A"));
        let theirs = job_of(&conn, Some(other), "blocked", Some("slack:A"));
        let b1 = job_of(&conn, Some(fixed), "blocked", Some("slack:B"));
        let failed = job_of(&conn, Some(fixed), "failed", Some("slack:A"));
        let a2 = job_of(&conn, Some(fixed), "blocked", Some("slack:A"));

        let (first, next) = resume_page(&conn, fixed, JobId(0), 2, 1000).expect("page");
        assert_eq!(next, Some(b1), "a full page continues after its last job");
        let mut oldest = first.oldest;
        oldest.sort();
        let keys = [
            (Some("slack:A".to_owned()), a1),
            (Some("slack:B".to_owned()), b1),
        ];
        assert_eq!((first.count, oldest), (2, keys.to_vec()));
        let resuming = ("broken".to_owned(), Some(store::RESUMING.to_owned()));
        assert_eq!(status_of(&conn, fixed), resuming, "not yet: a2 waits");

        // A new message's job, written while the integration is still broken.
        let newer = job_of(&conn, Some(fixed), "blocked", Some("slack:A"));
        let (second, next) = resume_page(&conn, fixed, b1, 2, 1000).expect("page");
        assert_eq!((second.count, next), (2, Some(newer)));
        assert_eq!(second.oldest, [(Some("slack:A".to_owned()), a2)]);
        let (last, next) = resume_page(&conn, fixed, newer, 2, 1000).expect("page");
        assert_eq!((last.count, next), (0, None), "a short page is the last");
        assert_eq!(status_of(&conn, fixed), ("ok".to_owned(), None));

        for id in [a1, b1, a2, newer] {
            assert_eq!(state_of(&conn, id).0, "queued");
            assert_eq!(state_of(&conn, id).1, 1000, "due now");
        }
        assert_eq!(state_of(&conn, failed).0, "failed");
        assert_eq!(state_of(&conn, theirs).0, "blocked");
        assert_eq!(status_of(&conn, other).0, "broken");
    }

    fn state_of(conn: &Connection, id: JobId) -> (String, i64, Option<i64>) {
        conn.query_row(
            "SELECT state, run_at, deadline_at FROM jobs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("job")
    }

    /// "Retry all" sends deliveries again, not test messages: a failed test answered "does it
    /// work now?" when it was sent, and posting it later would only puzzle the channel.
    #[test]
    fn pages_leave_test_messages_alone() {
        let conn = store::migrated_in_memory();
        let post = job_in(&conn, "failed", Some("discord:1"));
        let test = job_in(&conn, "failed", Some("discord:1"));
        conn.execute(
            "UPDATE jobs SET kind = 'discord.test' WHERE id = ?1",
            [test],
        )
        .expect("kind");
        let (page, last) = retry_page(&conn, Retryable::Failed, JobId(0), 10, 1000).expect("page");
        assert_eq!((page.count, last), (1, None));
        assert_eq!(state_of(&conn, post).0, "queued");
        assert_eq!(state_of(&conn, test).0, "failed");
    }

    /// Pages walk one state in id order, name each rate key's oldest job, and stop at the
    /// first page that is not full; other states are left alone.
    #[test]
    fn pages_take_one_state_in_id_order_and_end_at_a_short_page() {
        let conn = store::migrated_in_memory();
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

    /// A runner that blocks the integration again, or an admin who turns it off, between two
    /// pages ends the resume: the next page queues nothing, the integration keeps that state and
    /// error, and the jobs still blocked wait for the next fix.
    #[test]
    fn a_resume_stops_when_the_integration_is_blocked_again_or_turned_off() {
        let again = |conn: &Connection, id| {
            store::mark_integration_broken(conn, id, "not_in_channel", 5).expect("block");
            store::block_integration_jobs(conn, id, "not_in_channel", 0).expect("block jobs");
        };
        let off = |conn: &Connection, id| {
            store::disable_integration(conn, id, "turned off", 5).expect("turn off");
        };
        for (change, error) in [
            (
                &again as &dyn Fn(&Connection, IntegrationId),
                "not_in_channel",
            ),
            (&off, "turned off"),
        ] {
            let conn = store::migrated_in_memory();
            let (fixed, _) = broken_integrations(&conn);
            let first = job_of(&conn, Some(fixed), "blocked", Some("slack:A"));
            let later = job_of(&conn, Some(fixed), "blocked", Some("slack:A"));
            let (_, next) = resume_page(&conn, fixed, JobId(0), 1, 1000).expect("page");
            assert_eq!(next, Some(first));
            change(&conn, fixed);
            let (page, next) = resume_page(&conn, fixed, first, 1, 1000).expect("page");
            assert_eq!((page.count, next), (0, None), "{error}: the resume stops");
            let status = ("broken".to_owned(), Some(error.to_owned()));
            assert_eq!(
                status_of(&conn, fixed),
                status,
                "{error}: not marked healthy"
            );
            assert_eq!(state_of(&conn, later).0, "blocked", "{error}: waits");
        }
    }

    /// Retrying the jobs of an integration that does not take deliveries (broken, turned off,
    /// or resuming, whose pages take its blocked jobs in order) queues none of them: each waits,
    /// blocked, with a fresh budget, for the fix. A healthy integration's jobs are queued.
    #[test]
    fn a_retry_leaves_the_jobs_of_a_broken_off_or_resuming_integration_waiting() {
        let conn = store::migrated_in_memory();
        let (resuming, broken) = broken_integrations(&conn);
        conn.execute_batch(
            "INSERT INTO integrations (id, site_id, kind, name, config, is_enabled, status, \
                                       created_at, updated_at) \
             VALUES (3, 1, 'webhook', 'off', '{}', 0, 'broken', 0, 0), \
                    (4, 1, 'slack', 'ok', '{}', 1, 'ok', 0, 0);",
        )
        .expect("integrations");
        let (off, healthy) = (IntegrationId(3), IntegrationId(4));
        let waiting: Vec<JobId> = [resuming, broken, off]
            .into_iter()
            .flat_map(|i| {
                [
                    job_of(&conn, Some(i), "failed", None),
                    job_of(&conn, Some(i), "blocked", None),
                ]
            })
            .collect();
        let sent = job_of(&conn, Some(healthy), "failed", Some("slack:A"));

        let mut queued = 0;
        for state in Retryable::ALL {
            let (page, next) = retry_page(&conn, state, JobId(0), 100, 1000).expect("page");
            assert_eq!(next, None);
            queued += page.count;
        }
        assert_eq!(queued, 1, "only the healthy integration's job");
        assert_eq!(state_of(&conn, sent).0, "queued");
        let fresh = Some(1000 + millis(JobKind::SlackPost.deadline()));
        for id in waiting {
            assert_eq!(state_of(&conn, id).0, "blocked", "{id:?} waits for the fix");
            assert_eq!(state_of(&conn, id).2, fresh, "{id:?} has a fresh deadline");
        }
        // The fix then takes them, as any blocked job.
        let (page, _) = resume_page(&conn, resuming, JobId(0), 100, 1000).expect("resume");
        assert_eq!(page.count, 2);
    }

    /// Pages continue after every job they listed, queued or not: a page of jobs that all wait
    /// does not end the walk before a later job that can go.
    #[test]
    fn a_page_of_waiting_jobs_does_not_end_the_walk() {
        let conn = store::migrated_in_memory();
        let (_, broken) = broken_integrations(&conn);
        for _ in 0..3 {
            job_of(&conn, Some(broken), "failed", None);
        }
        let sent = job_in(&conn, "failed", Some("slack:A"));
        let (mut after, mut queued) = (Some(JobId(0)), 0);
        while let Some(from) = after {
            let (page, next) = retry_page(&conn, Retryable::Failed, from, 2, 1000).expect("page");
            queued += page.count;
            after = next;
        }
        assert_eq!(queued, 1);
        assert_eq!(state_of(&conn, sent).0, "queued");
    }

    /// A failed job retried while its integration resumes waits, blocked, behind the resume's
    /// walk; the last page finds it and walks again rather than leave it blocked under a
    /// healthy integration.
    #[test]
    fn a_job_retried_behind_a_resume_is_resumed_too() {
        let conn = store::migrated_in_memory();
        let (resuming, _) = broken_integrations(&conn);
        let old = job_of(&conn, Some(resuming), "failed", None);
        let first = job_of(&conn, Some(resuming), "blocked", None);
        let second = job_of(&conn, Some(resuming), "blocked", None);
        let (_, next) = resume_page(&conn, resuming, JobId(0), 1, 1000).expect("page");
        assert_eq!(next, Some(first));
        let (page, _) = retry_page(&conn, Retryable::Failed, JobId(0), 10, 1000).expect("retry");
        assert_eq!(page.count, 0, "it waits for the resume");
        let (_, next) = resume_page(&conn, resuming, first, 1, 1000).expect("page");
        assert_eq!(next, Some(second));
        let (_, next) = resume_page(&conn, resuming, second, 1, 1000).expect("page");
        assert_eq!(next, Some(JobId(0)), "walks again for the job behind it");
        let (page, next) = resume_page(&conn, resuming, JobId(0), 1, 1000).expect("page");
        assert_eq!((page.count, next), (1, Some(old)));
        let (page, next) = resume_page(&conn, resuming, old, 1, 1000).expect("page");
        assert_eq!((page.count, next), (0, None));
        assert_eq!(state_of(&conn, old).0, "queued");
        assert_eq!(status_of(&conn, resuming), ("ok".to_owned(), None));
    }
}
