//! Wall-clock time as stored and sent: Unix milliseconds.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A duration in whole milliseconds, as timestamps are kept (saturating).
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The wall clock business hours are judged by (docs/widget.md#business-hours): the system's,
/// unless a test (or an embedder) fixes it at an instant, so opening and closing can be tested
/// at the boundary without waiting for it.
#[derive(Debug, Default)]
pub struct WallClock {
    /// The fixed instant in Unix milliseconds, read while `is_fixed`.
    fixed_ms: AtomicI64,
    /// Set while the clock is fixed; otherwise it follows the system.
    is_fixed: AtomicBool,
}

impl WallClock {
    /// Now, in Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        if self.is_fixed.load(Ordering::Acquire) {
            self.fixed_ms.load(Ordering::Acquire)
        } else {
            now_ms()
        }
    }

    /// Fixes the clock at `at_ms` (`Some`) or lets it follow the system again (`None`).
    pub fn set(&self, at_ms: Option<i64>) {
        self.fixed_ms
            .store(at_ms.unwrap_or_default(), Ordering::Release);
        self.is_fixed.store(at_ms.is_some(), Ordering::Release);
    }
}
