//! The job runner: one dispatcher task owns the in-memory [`Index`]. New jobs arrive in memory
//! right after the commit that wrote them (no polling); due jobs start as lane capacity allows.
//! SQLite stays the durable record: at start-up the index is rebuilt from it, and jobs a crash
//! left `running` are queued again. Memory holds a bounded window of each rate key's jobs; a
//! backlog beyond it is read back from SQLite as the window empties (`window.rs`).
//!
//! Work reaches SQLite in rounds: one write marks the jobs about to start as running and records
//! the outcomes gathered since the last round, and only one round is written at a time. While a
//! round commits, the next one gathers, so rounds grow with load on their own (as the writer's
//! group commit does) instead of costing a write per job and state change.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::{millis, now_ms};
use crate::log_limit::Every;
use crate::store::{self, AttemptRecord, IntegrationId, JobId, JobRow, JobUpdate, Readers, Writer};

use super::blocked_log::BlockedLog;
use super::decision::{Next, decide};
use super::deliver::Deliver;
use super::index::{Entry, Index, Lane, Read};
use super::outcome::{Attempt, Outcome, caught};
use super::policy::backoff;
use super::round::{Round, write_round};
use super::stats::JobStats;

mod poll;

/// How often the runner looks for jobs written by another process (a CLI command).
pub const SAFETY_POLL: Duration = Duration::from_secs(30);
/// How often finished jobs past the retention period are deleted.
const PRUNE_EVERY: Duration = Duration::from_mins(10);
/// Rows deleted per statement while pruning, so the write lock is held briefly.
const PRUNE_CHUNK: u32 = 1000;
/// Inbound Slack event ids are kept this long (Slack stops retrying after minutes).
const SLACK_EVENT_RETENTION_MS: i64 = 3600 * 1000;
/// At most one "a delivery failed for good" line per 10 s.
static GAVE_UP_LOG: Every = Every::new(Duration::from_secs(10));
/// Sums up the "failed for good" lines held back when no later failure carried their count.
fn log_held_back_failures() {
    if let Some(left_out) = GAVE_UP_LOG.held_back() {
        tracing::warn!(
            left_out,
            "deliveries failed for good without a line of their own: the failed deliveries list them"
        );
    }
}

/// What the log says of a delivery's error: Porch's own words, up to the first `": "` after
/// "gave up after N attempts: " ("HTTP 500", "the SMTP server refused the mail"). What follows
/// is the service's answer, which may quote the payload (a visitor's words, an address); it
/// stays with the job, where the failed deliveries list shows it, so `PORCH_LOG=trace` still
/// carries no visitor's words.
pub(crate) fn loggable(error: &str) -> &str {
    let ours = if error.starts_with("gave up after ") {
        2
    } else {
        1
    };
    let end = error
        .match_indices(": ")
        .nth(ours - 1)
        .map_or(error.len(), |(at, _)| at);
    &error[..end]
}

/// Wait before jobs of a round that could not be written are tried again.
const ROUND_RETRY: Duration = Duration::from_secs(1);

/// Runner settings.
#[derive(Clone)]
pub struct RunnerConfig {
    /// Concurrent deliveries per lane.
    pub concurrency: HashMap<Lane, usize>,
    /// Finished jobs are deleted after this long.
    pub retention: Duration,
    /// Where outcomes and job lag are counted (read by the capacity sampler and `/metrics`).
    pub stats: Arc<JobStats>,
    /// Waiting jobs held in memory per rate key ([`WINDOW`] outside tests).
    pub window: usize,
    /// How often jobs written by another process are looked for ([`SAFETY_POLL`] outside
    /// tests).
    pub poll_every: Duration,
}

/// Waiting jobs held in memory per rate key: a Slack channel paced at one post a second has
/// minutes of work in memory, a fast destination is read for in pages of at least half of it,
/// and 100 destinations with a backlog hold 25,600 jobs (about 26 MB) whatever its size.
pub const WINDOW: usize = 256;

#[allow(clippy::large_enum_variant)] // one per delivery; a box would only add an allocation
enum Command {
    Add(Vec<JobRow>),
    Finished {
        entry: Entry,
        started_at: i64,
        attempt: Attempt,
    },
    /// The round in flight is committed and its deliveries have started; `not_queued` jobs were
    /// no longer queued in SQLite (blocked or disabled meanwhile) and did not start;
    /// `not_retried` jobs, to be tried again, were blocked (or failed) instead (their integration
    /// stopped taking deliveries while they ran).
    RoundWritten {
        not_queued: Vec<Entry>,
        not_retried: Vec<JobId>,
    },
    /// The round could not be written (the writer stopped or failed): nothing of it is stored
    /// and none of its deliveries started.
    RoundFailed {
        starting: Vec<Entry>,
        records: Vec<AttemptRecord>,
        blocked: Vec<(IntegrationId, String)>,
    },
    /// Jobs queued again in bulk: per rate key, the oldest; read from SQLite a window at a time.
    Requeued(Vec<(Option<String>, JobId)>),
    /// An integration was turned off: its jobs in memory are forgotten (they are blocked in
    /// SQLite, and read again when it is turned on).
    IntegrationOff(IntegrationId),
    /// Queued jobs read from SQLite: a rate key's next ones for its window, or a conversation's
    /// from its tail.
    Loaded {
        load: Read,
        rows: Result<Vec<JobRow>, store::Error>,
    },
}

/// Hands new work to the runner. Cheap to clone.
#[derive(Clone)]
pub struct JobQueue {
    tx: mpsc::UnboundedSender<Command>,
}

impl JobQueue {
    /// Jobs just committed (or queued again): the runner considers them at once.
    pub fn submit(&self, jobs: Vec<JobRow>) {
        let queued: Vec<JobRow> = jobs.into_iter().filter(|j| j.state == "queued").collect();
        if !queued.is_empty() {
            // A closed channel means the runner has stopped; the jobs are safe in SQLite.
            let _ = self.tx.send(Command::Add(queued));
        }
    }

    /// Jobs queued again in bulk (an integration fixed or turned on, "retry all"): the runner
    /// reads them from SQLite, a window per rate key at a time, instead of taking them all at
    /// once. Called from the write's commit hook, so a job committed later (a new message's)
    /// reaches the runner behind them and cannot overtake them.
    pub fn requeued(&self, requeued: &store::Requeued) {
        if !requeued.oldest.is_empty() {
            let _ = self.tx.send(Command::Requeued(requeued.oldest.clone()));
        }
    }

    /// Integration `id` was turned off (called from the write's commit hook).
    pub fn integration_off(&self, id: IntegrationId) {
        let _ = self.tx.send(Command::IntegrationOff(id));
    }
}

/// The runner before it is started; `queue()` handles can be taken first so the domain can be
/// wired to it.
pub struct Runner {
    tx: mpsc::UnboundedSender<Command>,
    rx: mpsc::UnboundedReceiver<Command>,
}

impl Default for Runner {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self { tx, rx }
    }
}

/// What the dispatcher task works with.
struct Dispatcher {
    index: Index,
    rx: mpsc::UnboundedReceiver<Command>,
    tx: mpsc::UnboundedSender<Command>,
    in_flight: HashMap<Lane, usize>,
    config: RunnerConfig,
    destinations: Arc<dyn Deliver>,
    writer: Arc<Writer>,
    readers: Arc<Readers>,
    highest_seen: JobId,
    /// Outcomes to record in the next round.
    records: Vec<AttemptRecord>,
    /// Integrations to block in the next round, with the destination's error.
    blocked: Vec<(IntegrationId, String)>,
    /// Says each block once, not once per delivery that comes back blocked.
    blocked_log: BlockedLog,
    /// A round is being written; the next one waits for it.
    is_round_in_flight: bool,
}

impl Runner {
    pub fn queue(&self) -> JobQueue {
        JobQueue {
            tx: self.tx.clone(),
        }
    }

    /// Requeues what a crash left running, loads every queued job and starts dispatching.
    /// The task ends after `shutdown`, once running deliveries finished (or `grace` passed).
    pub async fn start(
        self,
        config: RunnerConfig,
        destinations: Arc<dyn Deliver>,
        writer: Arc<Writer>,
        readers: Arc<Readers>,
        shutdown: CancellationToken,
        grace: Duration,
    ) -> Result<JoinHandle<()>, store::Error> {
        let now = now_ms();
        let requeued = writer
            .write(move |c| store::requeue_running_jobs(c, now))
            .await?;
        if requeued > 0 {
            tracing::warn!(
                jobs = requeued,
                "requeued deliveries a crash or a stop interrupted (they may be sent twice)"
            );
        }
        let (queued, rate_keys, highest) = readers
            .read(|c| {
                // The highest id first: a job another process commits after it has a higher id,
                // which the safety poll reads; one committed before it is in the keys read next.
                let highest = store::highest_job_id(c)?;
                let rate_keys = store::list_queued_rate_keys(c)?;
                Ok((store::count_queued_jobs(c)?, rate_keys, highest))
            })
            .await?;
        tracing::info!(jobs = queued, "job runner starting");
        let mut index = Index::new(config.window);
        // Read in by the first loads, a window per rate key, not all at once.
        index.expect_stored(&rate_keys);
        let dispatcher = Dispatcher {
            index,
            rx: self.rx,
            tx: self.tx,
            in_flight: HashMap::new(),
            config,
            destinations,
            writer,
            readers,
            highest_seen: highest,
            records: Vec::new(),
            blocked: Vec::new(),
            blocked_log: BlockedLog::default(),
            is_round_in_flight: false,
        };
        Ok(tokio::spawn(async move {
            dispatcher.run(shutdown, grace).await;
        }))
    }
}

impl Dispatcher {
    fn add(&mut self, jobs: Vec<JobRow>) {
        for job in jobs {
            self.highest_seen = self.highest_seen.max(job.id);
            self.index.insert(job);
        }
    }

    fn capacity(&self, lane: Lane) -> usize {
        self.config.concurrency.get(&lane).copied().unwrap_or(1)
    }

    async fn run(mut self, shutdown: CancellationToken, grace: Duration) {
        // Its first tick is at once: that first turn of the loop starts the loads of the
        // windows the start-up found queued jobs for.
        let mut poll = tokio::time::interval(self.config.poll_every);
        // The first prune waits a full period: start-up has enough to do.
        let mut prune =
            tokio::time::interval_at(tokio::time::Instant::now() + PRUNE_EVERY, PRUNE_EVERY);
        loop {
            let wake = self.next_wake();
            tokio::select! {
                command = self.rx.recv() => match command {
                    Some(command) => self.apply(command),
                    None => break,
                },
                () = tokio::time::sleep_until(wake) => {}
                _ = poll.tick() => {
                    self.poll_database().await;
                    log_held_back_failures();
                }
                _ = prune.tick() => self.spawn_prune(),
                () = shutdown.cancelled() => break,
            }
            while let Ok(command) = self.rx.try_recv() {
                self.apply(command);
            }
            self.start_loads();
            if !self.is_round_in_flight {
                self.start_round();
            }
            self.config.stats.set_in_memory(self.index.len());
        }
        self.drain(grace).await;
    }

    /// The earliest time a waiting job becomes due, or a minute from now. While a round is
    /// being written nothing can start, and its end wakes the dispatcher anyway.
    fn next_wake(&self) -> tokio::time::Instant {
        if self.is_round_in_flight {
            return tokio::time::Instant::now() + Duration::from_mins(1);
        }
        let now = now_ms();
        let due = Lane::ALL
            .iter()
            .filter(|lane| self.in_flight.get(lane).copied().unwrap_or(0) < self.capacity(**lane))
            .filter_map(|lane| self.index.next_due(*lane))
            .min()
            .unwrap_or(now + 60_000);
        let wait = u64::try_from(due.saturating_sub(now)).unwrap_or(0);
        tokio::time::Instant::now() + Duration::from_millis(wait)
    }

    fn apply(&mut self, command: Command) {
        match command {
            Command::Add(jobs) => self.add(jobs),
            Command::Requeued(oldest) => self.index.expect_stored(&oldest),
            Command::IntegrationOff(id) => {
                self.index.remove_integration(id);
            }
            Command::Finished {
                entry,
                started_at,
                attempt,
            } => self.finished(&entry, started_at, attempt),
            Command::RoundWritten {
                not_queued,
                not_retried,
            } => {
                self.is_round_in_flight = false;
                for id in not_retried {
                    self.index.forget_blocked(id);
                }
                for entry in not_queued {
                    self.release(&entry);
                    self.index.finish(entry.row.id);
                }
            }
            Command::RoundFailed {
                starting,
                records,
                blocked,
            } => {
                self.is_round_in_flight = false;
                let run_at = now_ms() + millis(ROUND_RETRY);
                for entry in starting {
                    self.release(&entry);
                    self.index
                        .reschedule(entry.row.id, run_at, entry.row.attempt, false);
                }
                // Ahead of what was gathered since, so outcomes stay in order.
                self.records.splice(0..0, records);
                self.blocked.splice(0..0, blocked);
            }
            Command::Loaded { load, rows } => match rows {
                Ok(rows) => self.index.insert_loaded(&load, rows),
                Err(err) => {
                    tracing::warn!(error = %err, "could not read queued jobs; trying again soon");
                    self.index.load_failed(&load);
                }
            },
        }
    }

    /// Makes the index's reads: the next jobs of each rate key whose window is half empty with
    /// more in SQLite, and of each conversation whose tail is to be read back.
    fn start_loads(&mut self) {
        for load in self.index.take_loads() {
            let readers = Arc::clone(&self.readers);
            let tx = self.tx.clone();
            let read = load.clone();
            tokio::spawn(async move {
                let rows = readers
                    .read(move |c| match &read {
                        Read::Page(page) => store::list_queued_jobs_of_rate_key(
                            c,
                            page.rate_key.as_deref(),
                            page.after,
                            page.limit,
                        ),
                        Read::Fill(fill) => {
                            let ids: Vec<_> = fill.ids.iter().map(|(id, _)| *id).collect();
                            store::list_queued_jobs_by_id(c, &ids)
                        }
                    })
                    .await;
                let _ = tx.send(Command::Loaded { load, rows });
            });
        }
    }

    /// Writes a round: every due job the lanes have room for is marked running, together with
    /// the outcomes and blocked integrations gathered since the last round. The deliveries start
    /// once that is committed, so a crash can tell which deliveries may have happened.
    fn start_round(&mut self) {
        let starting = self.pop_due();
        if starting.is_empty() && self.records.is_empty() && self.blocked.is_empty() {
            return;
        }
        self.is_round_in_flight = true;
        let ids: Vec<JobId> = starting.iter().map(|e| e.row.id).collect();
        let records = std::mem::take(&mut self.records);
        let blocked = std::mem::take(&mut self.blocked);
        let writer = Arc::clone(&self.writer);
        let destinations = Arc::clone(&self.destinations);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let round = Round {
                records,
                blocked,
                starting: ids,
            };
            let (marked, not_retried) = match write_round(&writer, round).await {
                Ok(written) => (written.marked, written.not_retried),
                Err(round) => {
                    let _ = tx.send(Command::RoundFailed {
                        starting,
                        records: round.records,
                        blocked: round.blocked,
                    });
                    return;
                }
            };
            // `marked` keeps the order of `starting`, so one walk over both splits them.
            let mut marked = marked.into_iter().peekable();
            let (starting, not_queued): (Vec<Entry>, Vec<Entry>) = starting
                .into_iter()
                .partition(|entry| marked.next_if_eq(&entry.row.id).is_some());
            for entry in starting {
                let destinations = Arc::clone(&destinations);
                let tx = tx.clone();
                tokio::spawn(async move {
                    let started_at = now_ms();
                    let attempt = caught(destinations.deliver(&entry.row), entry.row.id.0).await;
                    let _ = tx.send(Command::Finished {
                        entry,
                        started_at,
                        attempt,
                    });
                });
            }
            let _ = tx.send(Command::RoundWritten {
                not_queued,
                not_retried,
            });
        });
    }

    /// Takes every due job the lanes have room for out of the index.
    fn pop_due(&mut self) -> Vec<Entry> {
        let now = now_ms();
        let mut starting: Vec<Entry> = Vec::new();
        for lane in Lane::ALL {
            let capacity = self.capacity(lane);
            let in_flight = self.in_flight.entry(lane).or_insert(0);
            while *in_flight < capacity {
                let Some(entry) = self.index.pop_due(lane, now) else {
                    break;
                };
                *in_flight += 1;
                starting.push(entry);
            }
        }
        starting
    }

    /// Gives the lane back the slot `entry` took when it was popped.
    fn release(&mut self, entry: &Entry) {
        if let Some(n) = self.in_flight.get_mut(&entry.lane) {
            *n = n.saturating_sub(1);
        }
    }

    /// Applies what an attempt means for its job ([`decide`]): in memory now, in SQLite in the
    /// next round.
    fn finished(&mut self, entry: &Entry, started_at: i64, attempt: Attempt) {
        self.release(entry);
        let now = now_ms();
        self.config
            .stats
            .record(entry.lane, &attempt.outcome, entry.row.run_at, now);
        let job = &entry.row;
        let http_status = attempt.http_status;
        if let (calls @ 1.., Some(key)) = (attempt.extra_calls, &job.rate_key) {
            self.index.spend(key, calls, now);
        }
        let destination_up = job.rate_key.as_deref().is_some_and(|key| {
            let succeeded = matches!(attempt.outcome, Outcome::Delivered { .. });
            self.index.attempt_ended(entry.lane, key, succeeded, now);
            self.index.is_up(key, now)
        });
        let decision = decide(job, attempt, (now, destination_up), backoff);
        if let (Some(until), Some(key)) = (decision.pause_until, &job.rate_key) {
            self.index.pause(key, until);
        }
        match decision.next {
            Next::Finish => self.index.finish(job.id),
            Next::Reschedule {
                run_at,
                attempt,
                pauses_rate_key,
            } => self
                .index
                .reschedule(job.id, run_at, attempt, pauses_rate_key),
        }
        if let Some((integration, error)) = decision.blocks {
            let removed = self.index.remove_integration(integration);
            self.blocked_log.say(integration, &error, removed + 1, now);
            self.blocked.push((integration, error));
        }
        if let Some(error) = &decision.error {
            let error = loggable(error);
            tracing::debug!(job = %job.id, kind = job.kind, error, "delivery attempt did not succeed");
            // Giving up is for an operator to see (retry from the deliveries page or the API); a
            // destination's whole backlog may give up at once, so at most a line per 10 s.
            if decision.update == JobUpdate::Failed
                && let Some(left_out) = GAVE_UP_LOG.pass()
            {
                tracing::warn!(job = %job.id, kind = job.kind, error, left_out, "a delivery failed for good");
            }
        }
        self.records.push(AttemptRecord {
            job_id: job.id,
            update: decision.update,
            started_at,
            finished_at: now,
            http_status,
            error: decision.error,
        });
    }

    fn spawn_prune(&self) {
        let writer = Arc::clone(&self.writer);
        let before = now_ms() - millis(self.config.retention);
        tokio::spawn(async move {
            loop {
                let deleted = writer
                    .write(move |c| store::prune_done_jobs(c, before, PRUNE_CHUNK))
                    .await;
                match deleted {
                    Ok(n) if n == PRUNE_CHUNK as usize => {}
                    Ok(_) => break,
                    Err(err) => {
                        tracing::warn!(error = %err, "pruning finished jobs failed");
                        break;
                    }
                }
            }
            let events_before = now_ms() - SLACK_EVENT_RETENTION_MS;
            if let Err(err) = writer
                .write(move |c| store::prune_slack_events(c, events_before))
                .await
            {
                tracing::warn!(error = %err, "pruning Slack event ids failed");
            }
        });
    }

    /// After shutdown: lets running deliveries finish and records them.
    async fn drain(&mut self, grace: Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        while self.is_round_in_flight || self.in_flight.values().sum::<usize>() > 0 {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(command)) => self.apply(command),
                Ok(None) | Err(_) => break,
            }
        }
        let records = std::mem::take(&mut self.records);
        let blocked = std::mem::take(&mut self.blocked);
        if !records.is_empty() || !blocked.is_empty() {
            // Awaited: the writer stops right after the runner. A failure is logged; the job
            // rows then say what happened at the next start.
            let round = Round {
                records,
                blocked,
                starting: Vec::new(),
            };
            let _ = write_round(&self.writer, round).await;
        }
        let abandoned: usize = self.in_flight.values().sum();
        if abandoned > 0 {
            tracing::warn!(
                deliveries = abandoned,
                "deliveries still running after PORCH_SHUTDOWN_GRACE were abandoned: the next start sends them again"
            );
        }
        tracing::info!(left = self.index.len(), "job runner stopped");
    }
}
