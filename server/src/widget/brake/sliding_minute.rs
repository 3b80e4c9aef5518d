//! A count of events over a sliding minute, shared by the site's flood brake and each address's
//! share of it.

use std::time::{Duration, Instant};

pub(super) const MINUTE: Duration = Duration::from_mins(1);
/// Shortest wait suggested to a refused client, so retries do not spin.
pub(super) const MIN_RETRY: Duration = Duration::from_millis(250);

/// Counts events over a sliding minute, approximated by two fixed windows (the previous
/// window's count weighted by how much of it still overlaps the last 60 s).
#[derive(Debug, Clone)]
pub(super) struct SlidingMinute {
    window_start: Instant,
    previous: u32,
    current: u32,
}

impl SlidingMinute {
    pub(super) fn new(now: Instant) -> Self {
        Self {
            window_start: now,
            previous: 0,
            current: 0,
        }
    }

    pub(super) fn roll(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.window_start);
        if elapsed >= 2 * MINUTE {
            *self = Self::new(now);
        } else if elapsed >= MINUTE {
            self.previous = self.current;
            self.current = 0;
            self.window_start += MINUTE;
        }
    }

    /// Counts one event now (after `roll`).
    pub(super) fn add(&mut self) {
        self.current += 1;
    }

    /// Takes back one event counted at `at` (a message admitted but not stored after all), from
    /// the window that holds it; one that has left the count is not there to take back.
    pub(super) fn remove(&mut self, at: Instant) {
        if at >= self.window_start {
            self.current = self.current.saturating_sub(1);
        } else if at + MINUTE >= self.window_start {
            self.previous = self.previous.saturating_sub(1);
        }
    }

    /// True when nothing was counted for two minutes: the count is zero and stays so.
    pub(super) fn is_idle(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.window_start) >= 2 * MINUTE
    }

    fn previous_weight(&self, now: Instant) -> f64 {
        1.0 - now
            .saturating_duration_since(self.window_start)
            .as_secs_f64()
            / 60.0
    }

    pub(super) fn count(&self, now: Instant) -> f64 {
        f64::from(self.previous) * self.previous_weight(now) + f64::from(self.current)
    }

    /// How long until one more event fits under `limit` if nothing else arrives, as this very
    /// count will judge it then: a client told to wait that long is let in when it comes back.
    /// Until the window ends the previous window's share decays; after it, the current window
    /// becomes the previous one and decays in turn, so the wait can be up to two minutes.
    pub(super) fn wait_below(&self, now: Instant, limit: f64) -> Duration {
        let excess = self.count(now) + 1.0 - limit;
        if excess <= 0.0 {
            return Duration::ZERO;
        }
        let to_window_end = MINUTE.saturating_sub(now.saturating_duration_since(self.window_start));
        let decay_per_second = f64::from(self.previous) / 60.0;
        if decay_per_second > 0.0 {
            let within = Duration::from_secs_f64(excess / decay_per_second);
            if within <= to_window_end {
                return within.max(MIN_RETRY);
            }
        }
        // After the window ends the count is `current × (1 − s/60)` at `s` seconds past it.
        let current = f64::from(self.current);
        let past_window_end = if current > limit - 1.0 {
            Duration::from_secs_f64(60.0 * (1.0 - (limit - 1.0) / current))
        } else {
            Duration::ZERO
        };
        (to_window_end + past_window_end).clamp(MIN_RETRY, 2 * MINUTE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message given back is taken from the window that counted it, also after the count
    /// rolled on; one that has left the count is not there to take.
    #[test]
    fn an_event_taken_back_leaves_the_window_that_holds_it() {
        let start = Instant::now();
        let mut minute = SlidingMinute::new(start);
        minute.add();
        let later = start + Duration::from_secs(61);
        minute.roll(later);
        minute.add();
        assert_eq!((minute.previous, minute.current), (1, 1));
        minute.remove(start);
        assert_eq!((minute.previous, minute.current), (0, 1));
        minute.remove(later);
        assert_eq!((minute.previous, minute.current), (0, 0));
        let gone = start + Duration::from_secs(200);
        minute.roll(gone);
        minute.add();
        minute.remove(start);
        assert_eq!(
            (minute.previous, minute.current),
            (0, 1),
            "nothing of then is left"
        );
    }
}
