//! Retry policy: exponential backoff with jitter, capped; a deadline and an attempt budget per
//! job (both stored on the job row).

use std::time::Duration;

/// First retry after about this long.
const BASE: Duration = Duration::from_secs(2);
/// Never wait longer than this between attempts.
const CAP: Duration = Duration::from_mins(5);

/// How long to wait before attempt `attempt + 1`, after `attempt` failed (1-based):
/// `min(cap, base · 2^(attempt-1))`, plus up to 20 % jitter so retries of many jobs that failed
/// together do not arrive together.
pub fn backoff(attempt: u32) -> Duration {
    let exponent = attempt.saturating_sub(1).min(16);
    let delay = BASE.saturating_mul(1 << exponent).min(CAP);
    delay.mul_f64(1.0 + rand::random::<f64>() * 0.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_bounded_jitter() {
        for (attempt, base) in [(1, 2.0), (2, 4.0), (3, 8.0), (9, 300.0), (40, 300.0)] {
            let secs = backoff(attempt).as_secs_f64();
            assert!(
                secs >= base && secs <= base * 1.2 + 1e-9,
                "attempt {attempt}: {secs}"
            );
        }
    }
}
