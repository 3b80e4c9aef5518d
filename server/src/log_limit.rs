//! A log line that may repeat hundreds of times a second (a full disk refusing every message, a
//! destination's whole backlog failing at once) written at most once per interval, with the
//! count of those left out since the last one.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Lets a line through at most once per `every`.
pub struct Every {
    every: Duration,
    /// When the last line was let through, and how many were held back since.
    last: Mutex<(Option<Instant>, u64)>,
}

impl Every {
    pub const fn new(every: Duration) -> Self {
        Self {
            every,
            last: Mutex::new((None, 0)),
        }
    }

    /// `Some(left_out)` when a line may be written now (`left_out` were held back since the
    /// previous one), `None` when it is held back.
    pub fn pass(&self) -> Option<u64> {
        self.let_through(true)
    }

    /// For a periodic check: `Some(count)` of the lines held back once the interval since the
    /// last line has passed, so a summary is written even when no later line comes to carry the
    /// count; counts as a line let through. `None` when nothing is held back or it is too soon.
    pub fn held_back(&self) -> Option<u64> {
        self.let_through(false)
    }

    /// The count of lines held back, however recent the last line (at a stop, so none is
    /// lost); `None` when there is none.
    pub fn take_held_back(&self) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let left_out = std::mem::take(&mut last.1);
        (left_out > 0).then_some(left_out)
    }

    /// `is_line`: a line asks to be written (and is counted when held back), rather than a
    /// periodic check asking whether held-back lines are owed a summary.
    fn let_through(&self, is_line: bool) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, left_out) = &mut *last;
        if !is_line && *left_out == 0 {
            return None;
        }
        let now = Instant::now();
        if at.is_some_and(|at| now.duration_since(at) < self.every) {
            if is_line {
                *left_out += 1;
            }
            return None;
        }
        *at = Some(now);
        Some(std::mem::take(left_out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_passes_per_interval_and_the_next_counts_the_rest() {
        let limit = Every::new(Duration::from_millis(50));
        assert_eq!(limit.pass(), Some(0));
        assert_eq!(limit.pass(), None);
        assert_eq!(limit.pass(), None);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(limit.pass(), Some(2));
    }

    #[test]
    fn lines_held_back_are_summed_up_once_the_interval_passes_without_a_later_line() {
        let limit = Every::new(Duration::from_millis(50));
        assert_eq!(limit.held_back(), None, "nothing held back");
        assert_eq!(limit.pass(), Some(0));
        assert_eq!(limit.pass(), None);
        assert_eq!(limit.held_back(), None, "too soon");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(limit.held_back(), Some(1));
        assert_eq!(limit.held_back(), None, "said once");
        assert_eq!(limit.pass(), None, "the summary counts as a line");
        assert_eq!(limit.take_held_back(), Some(1), "at a stop, however recent");
        assert_eq!(limit.take_held_back(), None);
    }
}
