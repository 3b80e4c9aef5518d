//! `/metrics` in the Prometheus text format (0.0.4), encoded by the official client
//! (`prometheus-client`). The figures live in our own atomics (cheap to bump on the hot path);
//! at each scrape they are read once into [`Figures`], which a `Collector` encodes.

use std::sync::atomic::Ordering::Relaxed;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeMetric, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::histogram::Snapshot;
use crate::hub::Hub;
use crate::jobs::{Counted, Lane};
use crate::store::Writer;

use super::{DeliveryGauges, Meters, process};

/// The content type of the text exposition.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Everything a scrape reports, read at once.
#[derive(Debug)]
struct Figures {
    acked: u64,
    stored: u64,
    ack_latency: Snapshot,
    widget_connections: u64,
    widget_errors: Vec<(crate::widget::ErrorCode, u64)>,
    agent_connections: u64,
    process: process::ProcessReading,
    loop_lag: Snapshot,
    workers: usize,
    busy_seconds: f64,
    queue_depth: usize,
    batches: u64,
    writes: u64,
    batch_sizes: Snapshot,
    commit_latency: Snapshot,
    refused_busy: u64,
    refused_wal_limit: u64,
    reruns: u64,
    failed_batches: u64,
    is_disk_full: bool,
    job_attempts: Vec<(Lane, Counted, u64)>,
    job_lag: Snapshot,
    jobs_in_memory: u64,
    slack_unmapped_replies: u64,
    refused_per_ip: u64,
    refused_capacity: u64,
    integrity: i64,
    integrity_checked_at_ms: Option<i64>,
    /// Absent when the database could not be read for this scrape.
    deliveries: Option<DeliveryGauges>,
}

/// Latency histograms show bounds from 2^6 µs (64 µs) to 2^25 µs (about 34 s).
const LATENCY_POWERS: (u32, u32) = (6, 25);
/// Batch sizes from 1 to 2^10 - 1 writes.
const BATCH_POWERS: (u32, u32) = (1, 10);

/// Renders the exposition.
///
/// # Errors
/// Only if formatting fails (it writes to a `String`).
pub fn render(
    meters: &Meters,
    writer: &Writer,
    hub: &Hub,
    deliveries: Option<DeliveryGauges>,
) -> Result<String, std::fmt::Error> {
    let stats = writer.stats();
    let runtime = tokio::runtime::Handle::current().metrics();
    let workers = runtime.num_workers();
    let jobs = &meters.jobs;
    let figures = Figures {
        acked: meters.acked(),
        stored: meters.stored(),
        ack_latency: meters.ack_latency.snapshot(),
        widget_connections: meters.widget_connections(),
        widget_errors: meters.widget_errors(),
        agent_connections: hub.inbox_subscribers() as u64,
        process: process::read(),
        loop_lag: meters.loop_lag.snapshot(),
        workers,
        busy_seconds: (0..workers)
            .map(|w| runtime.worker_total_busy_duration(w).as_secs_f64())
            .sum(),
        queue_depth: stats.queue_depth.load(Relaxed),
        batches: stats.batches.load(Relaxed),
        writes: stats.writes.load(Relaxed),
        batch_sizes: stats.batch_sizes.snapshot(),
        commit_latency: stats.commit_latency.snapshot(),
        refused_busy: stats.refused_busy.load(Relaxed),
        refused_wal_limit: stats.refused_wal_limit.load(Relaxed),
        reruns: stats.reruns.load(Relaxed),
        failed_batches: stats.failed_batches.load(Relaxed),
        is_disk_full: stats.is_disk_full.load(Relaxed),
        job_attempts: Lane::ALL
            .iter()
            .flat_map(|lane| {
                Counted::ALL
                    .iter()
                    .map(|c| (*lane, *c, jobs.attempts(*lane, *c)))
            })
            .collect(),
        job_lag: jobs.lag.snapshot(),
        jobs_in_memory: jobs.in_memory(),
        slack_unmapped_replies: meters.slack_unmapped_replies.load(Relaxed),
        refused_per_ip: meters.connections_refused_per_ip.load(Relaxed),
        refused_capacity: meters.connections_refused_capacity.load(Relaxed),
        integrity: meters.integrity.gauge(),
        integrity_checked_at_ms: meters.integrity.checked_at_ms(),
        deliveries,
    };
    let mut registry = Registry::with_prefix("porch");
    registry.register_collector(Box::new(figures));
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)?;
    Ok(text)
}

/// A counter of `u64` or `f64` (`_total` is appended by the encoder).
fn counter<N: EncodeCounterValue>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: N,
) -> Result<(), std::fmt::Error> {
    let metric = ConstCounter::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: Option<u64>,
) -> Result<(), std::fmt::Error> {
    let Some(value) = value else { return Ok(()) };
    let metric = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

/// A gauge that may be negative (or fractional), such as a state with -1 for "not yet".
fn signed_gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: f64,
) -> Result<(), std::fmt::Error> {
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

/// A histogram of whole units (`scale` of them to the exported unit), with power-of-two bounds.
/// Values are whole units, so "below 2^k" is exactly "at most 2^k - 1": that is the `le` shown.
fn histogram(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    snapshot: &Snapshot,
    (from, to): (u32, u32),
    scale: f64,
) -> Result<(), std::fmt::Error> {
    #[allow(clippy::cast_precision_loss)]
    let buckets: Vec<(f64, u64)> = snapshot
        .power_of_two_buckets(from, to)
        .into_iter()
        .map(|(bound, n)| {
            let le = if bound == u64::MAX {
                f64::INFINITY
            } else {
                (bound - 1) as f64 / scale
            };
            (le, n)
        })
        .collect();
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    #[allow(clippy::cast_precision_loss)]
    let sum = snapshot.sum as f64 / scale;
    metric.encode_histogram::<NoLabelSet>(sum, snapshot.count(), &buckets, None)
}

const MICROS: f64 = 1e6;

impl Collector for Figures {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        counter(
            &mut e,
            "visitor_messages_acked",
            "Acks of visitor messages written: newly stored ones and resends of stored ones.",
            self.acked,
        )?;
        counter(
            &mut e,
            "visitor_messages_stored",
            "Visitor messages newly stored (committed), whether or not the ack reached the widget; resends not counted.",
            self.stored,
        )?;
        histogram(
            &mut e,
            "ack_latency_seconds",
            "Visitor message frame received to ack written.",
            &self.ack_latency,
            LATENCY_POWERS,
            MICROS,
        )?;
        gauge(
            &mut e,
            "widget_connections",
            "Open widget websockets.",
            Some(self.widget_connections),
        )?;
        gauge(
            &mut e,
            "agent_connections",
            "Open live inbox and conversation streams of agents.",
            Some(self.agent_connections),
        )?;
        {
            let metric = ConstCounter::new(0u64);
            let mut family = e.encode_descriptor(
                "widget_errors",
                "Error frames sent to widgets, by code (every code of the widget protocol): the brakes' refusals (rate_limited, too_many_conversations, site_busy), frames that do not fit (bad_frame, invalid_message, …), storage trouble (busy, unavailable).",
                None,
                metric.metric_type(),
            )?;
            for (code, n) in &self.widget_errors {
                ConstCounter::new(*n).encode(family.encode_family(&[("code", code.as_str())])?)?;
            }
        }
        {
            let metric = ConstCounter::new(0u64);
            let mut family = e.encode_descriptor(
                "connections_refused",
                "Connections answered 503 at accept, by reason (per_ip: the address's limit; capacity: every slot taken).",
                None,
                metric.metric_type(),
            )?;
            for (reason, n) in [
                ("per_ip", self.refused_per_ip),
                ("capacity", self.refused_capacity),
            ] {
                ConstCounter::new(n).encode(family.encode_family(&[("reason", reason)])?)?;
            }
        }
        self.encode_process(&mut e)?;
        self.encode_integrity(&mut e)?;
        if let Some(deliveries) = &self.deliveries {
            deliveries.encode(&mut e)?;
        }
        self.encode_work(&mut e)
    }
}

impl Figures {
    #[allow(clippy::cast_precision_loss)] // -1, 0, 1 and Unix milliseconds are exact in an f64
    fn encode_integrity(&self, e: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        signed_gauge(
            e,
            "database_integrity",
            "The background PRAGMA quick_check: 1 ok, 0 failed (the file is damaged), -1 not yet run.",
            self.integrity as f64,
        )?;
        if let Some(ms) = self.integrity_checked_at_ms {
            signed_gauge(
                e,
                "database_integrity_checked_at_seconds",
                "Unix time the last background integrity check finished.",
                ms as f64 / 1e3,
            )?;
        }
        Ok(())
    }

    fn encode_process(&self, e: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        if let Some(cpu) = self.process.cpu {
            counter(
                e,
                "process_cpu_seconds",
                "User and system CPU time of the process.",
                cpu.as_secs_f64(),
            )?;
        }
        gauge(
            e,
            "process_resident_memory_bytes",
            "Resident memory of the process.",
            self.process.rss_bytes,
        )?;
        gauge(
            e,
            "process_open_fds",
            "Open file descriptors of the process.",
            self.process.open_fds,
        )?;
        histogram(
            e,
            "event_loop_lag_seconds",
            "How late a 100 ms heartbeat timer fired: time ready tasks waited for a worker.",
            &self.loop_lag,
            LATENCY_POWERS,
            MICROS,
        )?;
        gauge(
            e,
            "runtime_workers",
            "Async runtime worker threads.",
            Some(self.workers as u64),
        )?;
        counter(
            e,
            "runtime_busy_seconds",
            "Time the async runtime's workers spent running tasks, summed over workers.",
            self.busy_seconds,
        )?;
        Ok(())
    }

    fn encode_work(&self, e: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        gauge(
            e,
            "writer_queue_depth",
            "Writes waiting for the database writer.",
            Some(self.queue_depth as u64),
        )?;
        counter(
            e,
            "writer_batches",
            "Transactions committed by the writer.",
            self.batches,
        )?;
        counter(
            e,
            "writer_writes",
            "Writes committed by the writer (sum of batch sizes).",
            self.writes,
        )?;
        histogram(
            e,
            "writer_batch_size",
            "Writes per committed transaction.",
            &self.batch_sizes,
            BATCH_POWERS,
            1.0,
        )?;
        histogram(
            e,
            "writer_commit_seconds",
            "BEGIN to COMMIT of one batch, fsync included.",
            &self.commit_latency,
            LATENCY_POWERS,
            MICROS,
        )?;
        counter(
            e,
            "writer_refused_busy",
            "Writes refused because the writer's queue was full (visitors were told busy).",
            self.refused_busy,
        )?;
        counter(
            e,
            "writer_refused_wal_limit",
            "Writes refused because the WAL was past PORCH_WAL_LIMIT and could not be checkpointed.",
            self.refused_wal_limit,
        )?;
        counter(
            e,
            "writer_reruns",
            "Batches run a second time because a visitor message in them failed.",
            self.reruns,
        )?;
        counter(
            e,
            "writer_failed_batches",
            "Batches rolled back because their commit failed (a full disk, a locked database).",
            self.failed_batches,
        )?;
        gauge(
            e,
            "writer_disk_full",
            "1 from a commit that failed for lack of disk space until there is room again.",
            Some(u64::from(self.is_disk_full)),
        )?;
        {
            let metric = ConstCounter::new(0u64);
            let mut family = e.encode_descriptor(
                "job_attempts",
                "Finished delivery attempts by lane and outcome (rate_limited: the destination's 429).",
                None,
                metric.metric_type(),
            )?;
            for (lane, outcome, n) in &self.job_attempts {
                let labels = [("lane", lane.as_str()), ("outcome", outcome.as_str())];
                ConstCounter::new(*n).encode(family.encode_family(&labels)?)?;
            }
        }
        gauge(
            e,
            "jobs_in_memory",
            "Queued and running jobs the runner holds in memory (at most 256 waiting per rate key; \
             the rest of a backlog waits in SQLite).",
            Some(self.jobs_in_memory),
        )?;
        counter(
            e,
            "slack_unmapped_replies",
            "Slack replies in a thread Porch started that matched no conversation (not delivered).",
            self.slack_unmapped_replies,
        )?;
        histogram(
            e,
            "job_lag_seconds",
            "A job's due time to its delivery attempt finishing.",
            &self.job_lag,
            LATENCY_POWERS,
            MICROS,
        )
    }
}
