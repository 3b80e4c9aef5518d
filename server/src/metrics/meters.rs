//! The counters hot paths bump: acked and stored visitor messages with their ack latency, open
//! widget connections, and the event-loop heartbeat's lag. Atomics only, so recording never
//! waits on a lock and never allocates; the sampler and `/metrics` read them.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use crate::histogram::LogHistogram;
use crate::jobs::JobStats;
use crate::store::IntegrityStatus;
use crate::widget::ErrorCode;

/// Shared by the whole server (in `AppState`).
#[derive(Debug, Default)]
pub struct Meters {
    /// Acks of visitor messages written since start: newly stored ones and resends of stored
    /// ones (a reconnecting widget resends what it saw no ack for).
    acked: AtomicU64,
    /// Visitor messages newly stored (committed) since start, whether or not their ack reached
    /// the widget: what the capacity page counts, since a resend's ack writes nothing.
    stored: AtomicU64,
    /// Frame received → ack written, per acked message, in microseconds.
    pub ack_latency: LogHistogram,
    /// Widget websockets open right now.
    widget_connections: AtomicI64,
    /// Error frames sent to widgets, per code (at `code as usize`): the brakes' refusals,
    /// frames that do not fit, storage trouble.
    widget_errors: [AtomicU64; ErrorCode::ALL.len()],
    /// How late the heartbeat woke up, in microseconds: time the runtime could not get to a
    /// ready task.
    pub loop_lag: LogHistogram,
    /// The job runner's outcome counters (handed to the runner's destinations).
    pub jobs: Arc<JobStats>,
    /// Slack replies in a thread Porch's bot started that matched no conversation (also logged
    /// at warn): each one is an answer the visitor did not get.
    pub slack_unmapped_replies: AtomicU64,
    /// Connections answered 503 at accept because their address held its share of connections.
    pub connections_refused_per_ip: AtomicU64,
    /// Connections answered 503 at accept because every ordinary connection slot was taken.
    pub connections_refused_capacity: AtomicU64,
    /// The background database integrity check's last outcome (also read by `/readyz`).
    pub integrity: Arc<IntegrityStatus>,
}

impl Meters {
    /// Counts a visitor message newly committed, before its ack is sent: a widget gone by then
    /// (its socket cut, the server stopping) still had it stored.
    pub fn record_stored(&self) {
        self.stored.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one ack written (of a new message or of a resend) whose frame arrived `latency`
    /// before.
    pub fn record_ack(&self, latency: Duration) {
        self.acked.fetch_add(1, Ordering::Relaxed);
        self.ack_latency.record(latency);
    }

    /// Counts an error frame sent to a widget.
    pub fn record_widget_error(&self, code: ErrorCode) {
        if let Some(count) = self.widget_errors.get(code as usize) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Error frames sent to widgets since start, per code.
    pub fn widget_errors(&self) -> Vec<(ErrorCode, u64)> {
        ErrorCode::ALL
            .into_iter()
            .map(|code| {
                let count = self.widget_errors.get(code as usize);
                (code, count.map_or(0, |n| n.load(Ordering::Relaxed)))
            })
            .collect()
    }

    /// Acks written since start, resends included.
    pub fn acked(&self) -> u64 {
        self.acked.load(Ordering::Relaxed)
    }

    /// Visitor messages newly stored since start.
    pub fn stored(&self) -> u64 {
        self.stored.load(Ordering::Relaxed)
    }

    /// Counts a widget connection as open until the guard is dropped.
    pub fn open_widget(self: &Arc<Self>) -> OpenConnection {
        self.widget_connections.fetch_add(1, Ordering::Relaxed);
        OpenConnection {
            meters: Arc::clone(self),
        }
    }

    /// Widget websockets open right now.
    pub fn widget_connections(&self) -> u64 {
        u64::try_from(self.widget_connections.load(Ordering::Relaxed)).unwrap_or(0)
    }
}

/// Holds one widget connection in the open count.
pub struct OpenConnection {
    meters: Arc<Meters>,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.meters
            .widget_connections
            .fetch_sub(1, Ordering::Relaxed);
    }
}
