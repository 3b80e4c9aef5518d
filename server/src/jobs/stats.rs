//! Counters of finished delivery attempts, for the capacity sampler and `/metrics`: outcomes per
//! lane and the job lag (from when a job was due to when its attempt finished). Atomics only;
//! the runner records one attempt with one call.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::metrics::LogHistogram;

use super::index::Lane;
use super::outcome::Outcome;

/// How an attempt ended, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Delivered,
    /// The destination's 429: paused, not a failure.
    RateLimited,
    /// Anything else that did not deliver: a retry, a permanent failure, a blocked integration.
    Failed,
}

impl Counted {
    pub const ALL: [Counted; 3] = [Counted::Delivered, Counted::RateLimited, Counted::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::RateLimited => "rate_limited",
            Self::Failed => "failed",
        }
    }

    fn of(outcome: &Outcome) -> Self {
        match outcome {
            Outcome::Delivered { .. } => Self::Delivered,
            Outcome::RateLimited { .. } => Self::RateLimited,
            Outcome::Retry { .. } | Outcome::Failed { .. } | Outcome::Blocked { .. } => {
                Self::Failed
            }
        }
    }

    fn slot(self) -> usize {
        match self {
            Self::Delivered => 0,
            Self::RateLimited => 1,
            Self::Failed => 2,
        }
    }
}

/// The job runner's counters since start.
#[derive(Debug, Default)]
pub struct JobStats {
    /// Attempts per lane (in `Lane::ALL` order) and outcome (in `Counted::ALL` order).
    attempts: [[AtomicU64; 3]; 4],
    /// Due (`run_at`) → attempt finished, in microseconds.
    pub lag: LogHistogram,
    /// Jobs the runner holds in memory (the rest of a backlog waits in SQLite).
    in_memory: AtomicU64,
}

impl JobStats {
    /// Counts one finished attempt of a job that was due at `due_ms`, finishing at `now_ms`.
    pub fn record(&self, lane: Lane, outcome: &Outcome, due_ms: i64, now_ms: i64) {
        let counted = Counted::of(outcome);
        self.attempts[lane.slot()][counted.slot()].fetch_add(1, Ordering::Relaxed);
        let lag_ms = u64::try_from(now_ms.saturating_sub(due_ms)).unwrap_or(0);
        self.lag.record_value(lag_ms.saturating_mul(1000));
    }

    /// Attempts so far in `lane` that ended as `counted`.
    pub fn attempts(&self, lane: Lane, counted: Counted) -> u64 {
        self.attempts[lane.slot()][counted.slot()].load(Ordering::Relaxed)
    }

    /// Sets how many jobs the runner holds in memory.
    pub fn set_in_memory(&self, jobs: usize) {
        self.in_memory
            .store(u64::try_from(jobs).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// How many jobs the runner holds in memory.
    pub fn in_memory(&self) -> u64 {
        self.in_memory.load(Ordering::Relaxed)
    }

    /// Attempts so far, all lanes, that ended as `counted`.
    pub fn total(&self, counted: Counted) -> u64 {
        Lane::ALL.iter().map(|l| self.attempts(*l, counted)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_counted_per_lane_and_outcome_with_their_lag() {
        let stats = JobStats::default();
        let delivered = Outcome::Delivered { external_ref: None };
        let limited = Outcome::RateLimited {
            retry_after: std::time::Duration::from_secs(1),
        };
        stats.record(Lane::Chat, &delivered, 1_000, 1_050);
        stats.record(Lane::Chat, &limited, 1_000, 1_010);
        stats.record(Lane::Email, &delivered, 1_000, 1_000);
        assert_eq!(stats.attempts(Lane::Chat, Counted::Delivered), 1);
        assert_eq!(stats.attempts(Lane::Chat, Counted::RateLimited), 1);
        assert_eq!(stats.total(Counted::Delivered), 2);
        assert_eq!(stats.total(Counted::Failed), 0);
        assert_eq!(stats.lag.take_max(), 50_000);
    }
}
