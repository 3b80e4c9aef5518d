//! The capacity sampler: every second it turns the counters into one [`Sample`] (rates and
//! percentiles of that second), keeps the last hour in memory, and every minute writes the
//! minute's [`Rollup`] to SQLite through the writer (one small write a minute), deleting rows
//! older than 30 days. It only reads counters; it never slows the paths that bump them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::clock::{millis, now_ms};
use crate::histogram::Snapshot;
use crate::hub::Hub;
use crate::jobs::{Counted, Lane};
use crate::series::{Over, Rollup, RollupBuilder, SERIES, Sample, Series, roll_up};
use crate::store::{self, Writer};

use super::{Meters, process};

/// Audit events deleted per minute at most (see `write_minute`).
const AUDIT_PRUNE_CHUNK: u32 = 1000;
/// Minute rows are kept this long.
pub const RETENTION: Duration = Duration::from_hours(30 * 24);
/// Samples kept in memory: the last hour.
const IN_MEMORY: Duration = Duration::from_hours(1);

/// How often the sampler samples and rolls up. Not a setting: tests shorten it so a "minute"
/// passes in a fraction of a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplerTiming {
    pub every: Duration,
    pub rollup_every: Duration,
}

impl SamplerTiming {
    /// What a minute's rates are taken over: the whole minute, sampled or not.
    fn minute_span(self) -> Over {
        let every = millis(self.every).max(1);
        let slots = (millis(self.rollup_every) / every).max(1);
        Over::Span(u32::try_from(slots).unwrap_or(u32::MAX))
    }
}

impl Default for SamplerTiming {
    fn default() -> Self {
        Self {
            every: Duration::from_secs(1),
            rollup_every: Duration::from_mins(1),
        }
    }
}

/// The sampler's shared side: the recent samples, for the capacity page.
#[derive(Debug)]
pub struct Capacity {
    recent: Mutex<VecDeque<Sample>>,
    keep: usize,
    pub timing: SamplerTiming,
    /// When this process began sampling (Unix ms): the samples in memory begin there.
    started_at_ms: i64,
}

impl Capacity {
    pub fn new(timing: SamplerTiming) -> Self {
        let every = timing.every.max(Duration::from_millis(1));
        let keep = usize::try_from(IN_MEMORY.as_millis() / every.as_millis()).unwrap_or(3600);
        Self {
            recent: Mutex::new(VecDeque::with_capacity(keep.min(4096))),
            keep,
            timing,
            started_at_ms: now_ms(),
        }
    }

    /// When this process began sampling, if less than the span kept in memory ago: what is in
    /// memory (the short ranges, the headroom from traffic) begins there rather than an hour ago.
    pub fn started_within_memory(&self) -> Option<i64> {
        (now_ms() - self.started_at_ms < millis(IN_MEMORY)).then_some(self.started_at_ms)
    }

    fn push(&self, sample: Sample) {
        if let Ok(mut recent) = self.recent.lock() {
            if recent.len() == self.keep {
                recent.pop_front();
            }
            recent.push_back(sample);
        }
    }

    /// Samples since `since_ms` merged into spans of `step_ms` (graph points), oldest first.
    pub fn spans(&self, since_ms: i64, step_ms: i64) -> Vec<Rollup> {
        self.with_recent(|recent| {
            roll_up(
                recent.iter().filter(|s| s.at_ms > since_ms),
                step_ms,
                Over::Samples,
            )
        })
    }

    /// Samples since `since_ms` rolled up as the stored minutes are (the current one included).
    pub fn minutes(&self, since_ms: i64) -> Vec<Rollup> {
        let minute = millis(self.timing.rollup_every).max(1);
        self.with_recent(|recent| {
            roll_up(
                recent.iter().filter(|s| s.at_ms > since_ms),
                minute,
                self.timing.minute_span(),
            )
        })
    }

    /// Runs `f` over the samples in memory (oldest first) under the lock: keep it short.
    pub fn with_recent<R>(&self, f: impl FnOnce(&VecDeque<Sample>) -> R) -> R {
        match self.recent.lock() {
            Ok(recent) => f(&recent),
            Err(_) => f(&VecDeque::new()),
        }
    }
}

/// What the sampler reads.
pub struct Sources {
    pub meters: Arc<Meters>,
    pub writer: Arc<Writer>,
    pub hub: Arc<Hub>,
    /// Audit events older than this are pruned with each minute's write (`PORCH_AUDIT_RETENTION`).
    pub audit_retention: Duration,
}

/// Cumulative counters at one moment; a sample is the difference of two.
struct Reading {
    at: Instant,
    stored: u64,
    ack: Snapshot,
    lag: Snapshot,
    job_lag: Snapshot,
    /// CPU, RSS and open files, read once per sample.
    process: process::ProcessReading,
    busy: Duration,
    workers: usize,
    batches: u64,
    writes: u64,
    commit_micros: u64,
    refused_busy: u64,
    delivered: [u64; 4],
    rate_limited: u64,
    failed: u64,
}

fn read(sources: &Sources) -> Reading {
    use std::sync::atomic::Ordering::Relaxed;
    let meters = &sources.meters;
    let writer = sources.writer.stats();
    let runtime = tokio::runtime::Handle::current().metrics();
    let workers = runtime.num_workers();
    let jobs = &meters.jobs;
    Reading {
        at: Instant::now(),
        stored: meters.stored(),
        ack: meters.ack_latency.snapshot(),
        lag: meters.loop_lag.snapshot(),
        job_lag: jobs.lag.snapshot(),
        process: process::read(),
        busy: (0..workers)
            .map(|w| runtime.worker_total_busy_duration(w))
            .sum(),
        workers,
        batches: writer.batches.load(Relaxed),
        writes: writer.writes.load(Relaxed),
        commit_micros: writer.commit_micros.load(Relaxed),
        refused_busy: writer.refused_busy.load(Relaxed),
        delivered: Lane::ALL.map(|lane| jobs.attempts(lane, Counted::Delivered)),
        rate_limited: jobs.total(Counted::RateLimited),
        failed: jobs.total(Counted::Failed),
    }
}

#[allow(clippy::cast_precision_loss)] // counts far below 2^52
fn per_sec(now: u64, before: u64, seconds: f64) -> f64 {
    now.saturating_sub(before) as f64 / seconds
}

#[allow(clippy::cast_precision_loss)]
fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// The sample between two readings. `max_*` are the maxima taken since the earlier one.
fn sample_between(before: &Reading, now: &Reading, sources: &Sources, at_ms: i64) -> Sample {
    use std::sync::atomic::Ordering::Relaxed;
    let seconds = now.at.duration_since(before.at).as_secs_f64().max(1e-3);
    let meters = &sources.meters;
    let writer = sources.writer.stats();
    let process = &now.process;
    let mut v = [None; SERIES];
    let mut set = |s: Series, value: Option<f64>| v[s.index()] = value;

    let acks = now.ack.since(&before.ack);
    let ack_max = meters.ack_latency.take_max();
    let has_acks = acks.count() > 0;
    set(
        Series::Messages,
        Some(per_sec(now.stored, before.stored, seconds)),
    );
    set(Series::AckP50, acks.quantile_within(0.5, ack_max).map(ms));
    set(Series::AckP99, acks.quantile_within(0.99, ack_max).map(ms));
    set(Series::AckMax, has_acks.then(|| ms(ack_max)));
    #[allow(clippy::cast_precision_loss)]
    {
        set(
            Series::WidgetConnections,
            Some(meters.widget_connections() as f64),
        );
        set(
            Series::AgentConnections,
            Some(sources.hub.inbox_subscribers() as f64),
        );
        set(
            Series::Rss,
            process.rss_bytes.map(|b| b as f64 / 1_048_576.0),
        );
        set(Series::OpenFds, process.open_fds.map(|n| n as f64));
        set(
            Series::WriterQueue,
            Some(writer.queue_depth.load(Relaxed) as f64),
        );
    }
    if let (Some(a), Some(b)) = (before.process.cpu, now.process.cpu) {
        set(
            Series::Cpu,
            Some(b.saturating_sub(a).as_secs_f64() / seconds * 100.0),
        );
    }

    let lag = now.lag.since(&before.lag);
    let lag_max = meters.loop_lag.take_max();
    set(
        Series::LoopLagP99,
        lag.quantile_within(0.99, lag_max).map(ms),
    );
    set(Series::LoopLagMax, (lag.count() > 0).then(|| ms(lag_max)));
    if now.workers > 0 {
        let busy = now.busy.saturating_sub(before.busy).as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let capacity = seconds * now.workers as f64;
        set(
            Series::RuntimeBusy,
            Some((busy / capacity * 100.0).min(100.0)),
        );
    }

    sample_work(before, now, sources, seconds, &mut v);
    Sample { at_ms, values: v }
}

/// The writer's and the job runner's part of a sample.
fn sample_work(
    before: &Reading,
    now: &Reading,
    sources: &Sources,
    seconds: f64,
    v: &mut [Option<f64>; SERIES],
) {
    let meters = &sources.meters;
    let writer = sources.writer.stats();
    let mut set = |s: Series, value: Option<f64>| v[s.index()] = value;
    let batches = now.batches.saturating_sub(before.batches);
    let commit_max = writer.commit_latency.take_max();
    if batches > 0 {
        #[allow(clippy::cast_precision_loss)]
        let batches = batches as f64;
        set(
            Series::WriterBatch,
            Some(per_sec(now.writes, before.writes, batches)),
        );
        set(
            Series::CommitMean,
            Some(per_sec(now.commit_micros, before.commit_micros, batches) / 1000.0),
        );
        set(Series::CommitMax, Some(ms(commit_max)));
    }
    set(
        Series::WriterBusy,
        Some(per_sec(now.refused_busy, before.refused_busy, seconds)),
    );

    let job_lag = now.job_lag.since(&before.job_lag);
    let job_lag_max = meters.jobs.lag.take_max();
    set(
        Series::JobLagP99,
        job_lag.quantile_within(0.99, job_lag_max).map(ms),
    );
    set(
        Series::JobLagMax,
        (job_lag.count() > 0).then(|| ms(job_lag_max)),
    );
    let lanes = [
        Series::DeliveriesChat,
        Series::DeliveriesWebhook,
        Series::DeliveriesEmail,
        Series::DeliveriesMaint,
    ];
    for (i, series) in lanes.into_iter().enumerate() {
        set(
            series,
            Some(per_sec(now.delivered[i], before.delivered[i], seconds)),
        );
    }
    set(
        Series::RateLimited,
        Some(per_sec(now.rate_limited, before.rate_limited, seconds)),
    );
    set(
        Series::Failures,
        Some(per_sec(now.failed, before.failed, seconds)),
    );
}

/// The sampler task's state.
struct Sampler {
    sources: Sources,
    capacity: Arc<Capacity>,
    previous: Reading,
    minute: Option<RollupBuilder>,
}

impl Sampler {
    fn step(&mut self) {
        let now = read(&self.sources);
        let at_ms = now_ms();
        let sample = sample_between(&self.previous, &now, &self.sources, at_ms);
        self.previous = now;
        let every = millis(self.capacity.timing.rollup_every).max(1);
        // The second just measured ended at `at_ms`; it belongs to the span it started in.
        let span = (at_ms - 1).div_euclid(every) * every;
        if self.minute.as_ref().is_some_and(|m| m.at_ms() != span) {
            self.write_minute();
        }
        self.minute
            .get_or_insert_with(|| RollupBuilder::new(span))
            .add(&sample);
        self.capacity.push(sample);
    }

    /// Writes the current minute's rollup and prunes old rows, in the background.
    fn write_minute(&mut self) {
        let Some(minute) = self.minute.take().filter(|m| !m.is_empty()) else {
            return;
        };
        let rollup = minute.finish(self.capacity.timing.minute_span());
        let writer = Arc::clone(&self.sources.writer);
        let before = now_ms() - millis(RETENTION);
        let audit_before = now_ms() - millis(self.sources.audit_retention);
        tokio::spawn(async move {
            let written = writer
                .write(move |c| {
                    store::insert_metrics_minute(c, &rollup)?;
                    // The audit log's retention rides on this write, so pruning costs no commit
                    // of its own; a bounded chunk keeps the write lock brief, and at one chunk a
                    // minute a backlog still clears far faster than events are recorded.
                    store::prune_audit_events(c, audit_before, AUDIT_PRUNE_CHUNK)?;
                    store::prune_metrics_minutes(c, before)
                })
                .await;
            match written {
                Ok(_) => {}
                // A minute that ended as the server stops: expected, not worth a warning.
                Err(store::Error::Stopped) => {
                    tracing::debug!("the capacity minute was not stored: shutting down");
                }
                // A lost minute leaves a gap in the graphs, nothing worse.
                Err(err) => tracing::warn!(error = %err, "could not store the capacity minute"),
            }
        });
    }
}

/// Starts sampling into `capacity`; at `shutdown` the partial minute is written and it stops.
pub fn spawn_sampler(sources: Sources, capacity: Arc<Capacity>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let every = capacity.timing.every;
        let previous = read(&sources);
        let mut sampler = Sampler {
            sources,
            capacity,
            previous,
            minute: None,
        };
        let start = tokio::time::Instant::now() + every;
        let mut tick = tokio::time::interval_at(start, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => sampler.step(),
                () = shutdown.cancelled() => {
                    sampler.write_minute();
                    break;
                }
            }
        }
    });
}
