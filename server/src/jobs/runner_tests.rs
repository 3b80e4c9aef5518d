//! The runner end to end over a real SQLite file, with a scripted destination in place of the
//! integrations: each attempt takes the next scripted outcome, and the test reads the job rows
//! the runner recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::pace::SLACK_CHANNEL;
use super::runner::loggable;
use super::{
    Attempt, Deliver, Delivery, JobKind, JobStats, Lane, Outcome, Runner, RunnerConfig,
    SAFETY_POLL, WINDOW,
};
use crate::clock::now_ms;
use crate::store::{self, JobId, JobRow, NewJob, Readers, Writer};

/// Answers attempts from a script, and remembers which jobs it was asked to deliver, and when.
#[derive(Default)]
struct Script {
    outcomes: Mutex<VecDeque<Outcome>>,
    /// Each delivery asked for: the job, and when (Unix ms).
    asked: Mutex<Vec<(JobId, i64)>>,
}

impl Script {
    /// The jobs asked for, in order.
    fn asked_ids(&self) -> Vec<JobId> {
        self.asked
            .lock()
            .expect("lock")
            .iter()
            .map(|(id, _)| *id)
            .collect()
    }
}

impl Deliver for Script {
    fn deliver<'a>(&'a self, job: &'a JobRow) -> Delivery<'a> {
        self.asked.lock().expect("lock").push((job.id, now_ms()));
        let outcome = self.outcomes.lock().expect("lock").pop_front();
        let outcome = outcome.unwrap_or(Outcome::Failed {
            error: "the script ran out".into(),
        });
        Box::pin(std::future::ready(Attempt::new(outcome, Some(200))))
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    writer: Arc<Writer>,
    readers: Arc<Readers>,
    script: Arc<Script>,
    queue: super::JobQueue,
    stats: Arc<JobStats>,
    shutdown: CancellationToken,
}

async fn start(outcomes: Vec<Outcome>) -> Harness {
    start_with_window(outcomes, WINDOW).await
}

/// Lanes of two concurrent deliveries, at most `window` waiting jobs per rate key in memory.
async fn start_with_window(outcomes: Vec<Outcome>, window: usize) -> Harness {
    start_polling(outcomes, window, SAFETY_POLL).await
}

/// [`start_with_window`], looking for jobs another process wrote every `poll_every`.
async fn start_polling(outcomes: Vec<Outcome>, window: usize, poll_every: Duration) -> Harness {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("jobs.db");
    let mut conn = store::open_write_connection(&path, store::Synchronous::Normal).expect("open");
    store::apply_migrations(&mut conn).expect("migrate");
    let writer = Arc::new(Writer::start(conn, 64, 16, u64::MAX).expect("writer"));
    let readers = Readers::open(&path, 1).expect("readers");
    let script = Arc::new(Script {
        outcomes: Mutex::new(outcomes.into()),
        asked: Mutex::default(),
    });
    let runner = Runner::default();
    let queue = runner.queue();
    let shutdown = CancellationToken::new();
    let stats = Arc::new(JobStats::default());
    let config = RunnerConfig {
        concurrency: Lane::ALL.into_iter().map(|lane| (lane, 2)).collect(),
        retention: Duration::from_hours(1),
        stats: Arc::clone(&stats),
        window,
        poll_every,
    };
    runner
        .start(
            config,
            Arc::clone(&script) as Arc<dyn Deliver>,
            Arc::clone(&writer),
            Arc::clone(&readers),
            shutdown.clone(),
            Duration::from_secs(1),
        )
        .await
        .expect("runner starts");
    Harness {
        _dir: dir,
        writer,
        readers,
        script,
        queue,
        stats,
        shutdown,
    }
}

/// A chat job of `rate_key` (in `order_key`, if any), due now.
fn chat_job(rate_key: &str, order_key: Option<&str>, max_attempts: u32) -> NewJob {
    let now = now_ms();
    let kind = JobKind::SlackPost;
    NewJob {
        lane: kind.lane().as_str(),
        kind: kind.as_str(),
        args: "{}".into(),
        integration_id: None,
        is_blocked: false,
        order_key: order_key.map(Into::into),
        rate_key: Some(rate_key.into()),
        unique_key: None,
        max_attempts,
        run_at: now,
        deadline_at: None,
        created_at: now,
    }
}

impl Harness {
    /// Writes a chat job with `max_attempts` and hands it to the runner, as the domain does.
    async fn submit(&self, max_attempts: u32) -> JobId {
        self.submit_to("test", max_attempts).await
    }

    /// [`Self::submit`] with the rate key `rate_key`.
    async fn submit_to(&self, rate_key: &'static str, max_attempts: u32) -> JobId {
        self.submit_many(rate_key, None, 1, max_attempts).await[0]
    }

    /// Writes `count` chat jobs of `rate_key` (in `order_key`, if any) in one transaction and
    /// hands them to the runner together, as a commit of many messages does.
    async fn submit_many(
        &self,
        rate_key: &'static str,
        order_key: Option<&'static str>,
        count: usize,
        max_attempts: u32,
    ) -> Vec<JobId> {
        let jobs = self
            .writer
            .write(move |c| {
                let job = chat_job(rate_key, order_key, max_attempts);
                (0..count)
                    .map(|_| Ok(store::insert_job(c, &job)?.expect("not a duplicate")))
                    .collect::<Result<Vec<JobRow>, store::Error>>()
            })
            .await
            .expect("insert");
        let ids = jobs.iter().map(|j| j.id).collect();
        self.queue.submit(jobs);
        ids
    }

    /// Waits for each of `ids` to be done, sampling the jobs in memory while they drain; the
    /// most seen.
    async fn drain_sampling_memory(&self, ids: &[JobId]) -> u64 {
        let mut most = 0;
        for id in ids {
            most = most.max(self.stats.in_memory());
            self.wait_for_state(*id, "done").await;
        }
        most
    }

    /// The job's state and attempts once it reaches `state` (bounded wait).
    async fn wait_for_state(&self, id: JobId, state: &'static str) -> (String, Vec<String>) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let found = self
                .readers
                .read(move |c| {
                    let state: String =
                        c.query_row("SELECT state FROM jobs WHERE id = ?1", [id], |r| r.get(0))?;
                    let mut stmt = c.prepare(
                        "SELECT outcome FROM job_attempts WHERE job_id = ?1 ORDER BY seq",
                    )?;
                    let outcomes = stmt
                        .query_map([id], |r| r.get(0))?
                        .collect::<Result<Vec<String>, _>>()?;
                    Ok((state, outcomes))
                })
                .await
                .expect("read");
            if found.0 == state {
                return found;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "job {id} never became {state}: {found:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test]
async fn a_rate_limited_job_is_tried_again_after_the_pause_and_recorded_once_per_try() {
    let harness = start(vec![
        Outcome::RateLimited {
            retry_after: Duration::from_millis(20),
        },
        Outcome::Delivered {
            external_ref: Some("ts-1".into()),
        },
    ])
    .await;
    let id = harness.submit(1).await;
    let (_, outcomes) = harness.wait_for_state(id, "done").await;
    // A 429 gives its attempt back: a budget of one attempt still delivers after it.
    assert_eq!(outcomes, ["rate_limited", "delivered"]);
    assert_eq!(harness.script.asked_ids(), [id, id]);
    harness.shutdown.cancel();
}

#[tokio::test]
async fn a_blocked_outcome_stops_the_job_until_an_admin_retries_it() {
    let harness = start(vec![Outcome::Blocked {
        error: "token revoked".into(),
    }])
    .await;
    let id = harness.submit(5).await;
    let (_, outcomes) = harness.wait_for_state(id, "blocked").await;
    assert_eq!(outcomes, ["blocked"]);
    harness.shutdown.cancel();
}

#[tokio::test]
async fn a_permanent_failure_is_not_tried_again() {
    let harness = start(vec![
        Outcome::Failed {
            error: "refused".into(),
        },
        Outcome::Delivered { external_ref: None },
    ])
    .await;
    let id = harness.submit(5).await;
    let (_, outcomes) = harness.wait_for_state(id, "failed").await;
    assert_eq!(outcomes, ["failed"]);
    // Give the runner a moment in which a wrong retry would show.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(harness.script.asked_ids().len(), 1);
    harness.shutdown.cancel();
}

#[tokio::test]
async fn a_slack_channel_refused_once_is_paced_and_the_runner_wakes_for_its_next_start() {
    let harness = start(vec![
        Outcome::RateLimited {
            retry_after: Duration::from_millis(20),
        },
        Outcome::Delivered { external_ref: None },
        Outcome::Delivered { external_ref: None },
    ])
    .await;
    let first = harness.submit_to("slack:T1:C1", 5).await;
    harness.wait_for_state(first, "done").await;
    let second = harness.submit_to("slack:T1:C1", 5).await;
    harness.wait_for_state(second, "done").await;
    assert_eq!(harness.script.asked_ids(), [first, first, second]);
    let at: Vec<i64> = harness
        .script
        .asked
        .lock()
        .expect("lock")
        .iter()
        .map(|(_, at)| *at)
        .collect();
    let interval = SLACK_CHANNEL.interval_ms;
    // After the 429 the channel starts one job an interval: the second waits for its turn, and
    // no longer than timer and scheduling slack (the runner sleeps until then, it does not poll).
    // Deliveries start after their round's deferred commit (at most 20 ms), hence the margin.
    assert!(
        at[2] - at[1] >= interval - 50,
        "the second kept the pace: {at:?}"
    );
    assert!(
        at[2] - at[1] < interval + 500,
        "the runner woke in time: {at:?}"
    );
    harness.shutdown.cancel();
}

#[tokio::test]
async fn a_backlog_beyond_the_window_waits_in_sqlite_and_is_delivered_in_order() {
    let delivered = || Outcome::Delivered { external_ref: None };
    let harness = start_with_window((0..40).map(|_| delivered()).collect(), 3).await;
    let ids = harness
        .submit_many("slack:T1:C1", Some("conv:1"), 40, 5)
        .await;
    // Memory holds the window and what is running, never the backlog.
    let most_in_memory = harness.drain_sampling_memory(&ids).await;
    assert!(
        most_in_memory <= 3 + 2,
        "held {most_in_memory} jobs in memory"
    );
    assert_eq!(
        harness.script.asked_ids(),
        ids,
        "each once, in the conversation's order"
    );
    harness.shutdown.cancel();
}

#[tokio::test]
async fn a_long_conversation_at_a_destination_does_not_hold_up_another() {
    let delivered = || Outcome::Delivered { external_ref: None };
    let harness = start_with_window((0..301).map(|_| delivered()).collect(), 16).await;
    let long = harness
        .submit_many("webhook:1", Some("conv:1"), 300, 5)
        .await;
    let other = harness.submit_many("webhook:1", Some("conv:2"), 1, 5).await[0];
    let all: Vec<JobId> = long.iter().copied().chain([other]).collect();
    let most_in_memory = harness.drain_sampling_memory(&all).await;
    let asked = harness.script.asked_ids();
    let at = asked.iter().position(|id| *id == other).expect("asked");
    // Before, the window held the long conversation's oldest 16, so the other waited for 285.
    assert!(at < 10, "the other conversation's post went at {at}");
    let in_order: Vec<JobId> = asked.into_iter().filter(|id| *id != other).collect();
    assert_eq!(in_order, long, "the long one each once, in order");
    assert!(
        most_in_memory <= 16 + 2,
        "held {most_in_memory} jobs in memory"
    );
    harness.shutdown.cancel();
}

/// A job another process wrote and noted (`porch erase`'s notices) is delivered at the next
/// safety poll, also when this server wrote a newer job first: reading only ids above the
/// highest seen, the poll missed it until a restart.
#[tokio::test]
async fn a_job_another_process_noted_is_picked_up_whatever_its_id() {
    let delivered = || Outcome::Delivered { external_ref: None };
    let h = start_polling(
        vec![delivered(), delivered(), delivered()],
        WINDOW,
        Duration::from_secs(1),
    )
    .await;
    // Once a job went through, the poll's first tick (at start) is behind us: the next is 1 s on.
    let first = h.submit(1).await;
    h.wait_for_state(first, "done").await;
    let foreign = h
        .writer
        .write(|c| {
            let job = chat_job("elsewhere", None, 1);
            let job = store::insert_job(c, &job)?.expect("not a duplicate");
            store::note_jobs_from_elsewhere(c, std::slice::from_ref(&job))?;
            Ok(job.id)
        })
        .await
        .expect("insert");
    // This server's own newer job, handed over at its commit, before the first poll.
    let own = h.submit(1).await;
    assert!(own > foreign);
    h.wait_for_state(own, "done").await;
    h.wait_for_state(foreign, "done").await;
    let notes: i64 = h
        .readers
        .read(|c| Ok(c.query_row("SELECT count(*) FROM jobs_from_elsewhere", [], |r| r.get(0))?))
        .await
        .expect("read");
    assert_eq!(notes, 0, "forgotten once read");
}

#[test]
fn a_logged_error_keeps_porchs_words_and_drops_the_services_answer() {
    assert_eq!(loggable("HTTP 500: {\"page\":\"x\"}"), "HTTP 500");
    assert_eq!(
        loggable("gave up after 8 attempts: HTTP 500: {\"page\":\"x\"}"),
        "gave up after 8 attempts: HTTP 500"
    );
    assert_eq!(
        loggable("the SMTP server refused the mail: 550 <a@b.c>"),
        "the SMTP server refused the mail"
    );
    assert_eq!(loggable("timed out"), "timed out");
    // Porch's own reason for giving up is whole (an operator alerts on this line).
    let gone = "nothing to deliver (the endpoint's settings are unreadable)";
    assert_eq!(loggable(gone), gone);
}
