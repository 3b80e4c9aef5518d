//! A token bucket: `burst` tokens, refilled at a steady rate; each event takes one.

use std::time::{Duration, Instant};

/// A token bucket whose rate and size are passed at each use, so a site's changed settings apply
/// to existing buckets at once.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn full(burst: f64, now: Instant) -> Self {
        Self {
            tokens: burst,
            updated: now,
        }
    }

    fn refill(&mut self, now: Instant, per_second: f64, burst: f64) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_second).min(burst);
        self.updated = now;
    }

    /// Takes a token, or says how long until one is there.
    pub fn try_take(&mut self, now: Instant, per_second: f64, burst: f64) -> Result<(), Duration> {
        self.try_take_many(now, 1.0, per_second, burst)
    }

    /// How long until a token is there (zero: now), taking nothing.
    pub fn wait(&mut self, now: Instant, per_second: f64, burst: f64) -> Duration {
        self.refill(now, per_second, burst);
        let short = (1.0_f64.min(burst) - self.tokens).max(0.0);
        Duration::from_secs_f64(short / per_second.max(f64::MIN_POSITIVE))
    }

    /// Takes `amount` tokens (at most `burst`), or says how long until they are there.
    pub fn try_take_many(
        &mut self,
        now: Instant,
        amount: f64,
        per_second: f64,
        burst: f64,
    ) -> Result<(), Duration> {
        self.refill(now, per_second, burst);
        let amount = amount.min(burst);
        if self.tokens >= amount {
            self.tokens -= amount;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (amount - self.tokens) / per_second.max(f64::MIN_POSITIVE),
            ))
        }
    }

    /// Returns a token taken for an event that was refused further on, so only admitted events
    /// are charged.
    pub fn give_back(&mut self, burst: f64) {
        self.give_back_many(1.0, burst);
    }

    /// Returns `amount` tokens taken for what was not used after all.
    pub fn give_back_many(&mut self, amount: f64, burst: f64) {
        self.tokens = (self.tokens + amount).min(burst);
    }

    /// True once the bucket has refilled completely: it then holds no information and can be
    /// forgotten.
    pub fn is_full(&mut self, now: Instant, per_second: f64, burst: f64) -> bool {
        self.refill(now, per_second, burst);
        self.tokens >= burst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_a_burst_then_the_rate() {
        let start = Instant::now();
        let mut bucket = TokenBucket::full(3.0, start);
        for _ in 0..3 {
            assert!(bucket.try_take(start, 1.0, 3.0).is_ok());
        }
        let wait = bucket.try_take(start, 1.0, 3.0).unwrap_err();
        assert!((wait.as_secs_f64() - 1.0).abs() < 1e-6);
        assert!(
            bucket
                .try_take(start + Duration::from_millis(1001), 1.0, 3.0)
                .is_ok()
        );
        assert!(
            bucket
                .try_take(start + Duration::from_millis(1002), 1.0, 3.0)
                .is_err()
        );
    }

    #[test]
    fn never_holds_more_than_the_burst() {
        let start = Instant::now();
        let mut bucket = TokenBucket::full(2.0, start);
        let later = start + Duration::from_hours(1);
        assert!(bucket.is_full(later, 1.0, 2.0));
        assert!(bucket.try_take(later, 1.0, 2.0).is_ok());
        assert!(bucket.try_take(later, 1.0, 2.0).is_ok());
        assert!(bucket.try_take(later, 1.0, 2.0).is_err());
    }
}
