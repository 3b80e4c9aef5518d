//! Retry policy: exponential backoff with jitter, capped; a deadline and an attempt budget per
//! job (both stored on the job row).

use std::time::Duration;

/// First retry after about this long.
const BASE: Duration = Duration::from_secs(2);
/// Never wait longer than this between attempts in about the first hour, so a destination back
/// from a short outage gets its deliveries within minutes.
const CAP: Duration = Duration::from_mins(5);
/// From this attempt on (about 54 minutes after the first without jitter), the wait is
/// [`LATE_WAIT`]: an outage that long is no blip, and a try every 5 minutes for the rest of a
/// day would be 280 more attempts, each a row of the delivery log.
const LATE_FROM: u32 = 18;
/// The wait between attempts after [`LATE_FROM`].
const LATE_WAIT: Duration = Duration::from_mins(30);

/// How long to wait before attempt `attempt + 1`, after `attempt` failed (1-based): the
/// [`scheduled`] wait plus up to 20 % jitter, so retries of many jobs that failed together do
/// not arrive together.
pub fn backoff(attempt: u32) -> Duration {
    scheduled(attempt).mul_f64(1.0 + rand::random::<f64>() * 0.2)
}

/// The wait before jitter: `min(cap, base · 2^(attempt-1))`, or [`LATE_WAIT`] from
/// [`LATE_FROM`] on.
fn scheduled(attempt: u32) -> Duration {
    if attempt >= LATE_FROM {
        return LATE_WAIT;
    }
    let exponent = attempt.saturating_sub(1).min(16);
    BASE.saturating_mul(1 << exponent).min(CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_bounded_jitter() {
        for (attempt, base) in [
            (1, 2.0),
            (2, 4.0),
            (3, 8.0),
            (9, 300.0),
            (17, 300.0),
            (18, 1800.0),
            (60, 1800.0),
        ] {
            let secs = backoff(attempt).as_secs_f64();
            assert!(
                secs >= base && secs <= base * 1.2 + 1e-9,
                "attempt {attempt}: {secs}"
            );
        }
    }

    /// While its destination takes other deliveries, a failing chat post is given up after
    /// about an hour and a half and a mail after about 15 minutes (docs/jobs.md, "Retries"),
    /// from the first attempt to the last, with or without the jitter's 20 %. The chat budget
    /// was 25 attempts, which the 30-minute waits from attempt 18 on made 4.4 to 5.3 hours.
    #[test]
    fn the_budget_while_the_destination_is_up_is_the_time_the_docs_say() {
        use crate::jobs::JobKind;
        for (kind, minutes) in [
            (JobKind::SlackPost, 75.0..=105.0),
            (JobKind::DiscordPost, 75.0..=105.0),
            (JobKind::EmailReply, 12.0..=18.0),
        ] {
            let last: f64 = (1..kind.attempts_while_up())
                .map(|attempt| scheduled(attempt).as_secs_f64() / 60.0)
                .sum();
            assert!(
                minutes.contains(&last) && minutes.contains(&(last * 1.2)),
                "{kind}: the last attempt after {last:.1} to {:.1} minutes",
                last * 1.2
            );
        }
    }

    /// The chat and mail budgets end with their deadline: without jitter their last attempt
    /// comes within a couple of hours of it, so neither ends an outage's retries long before
    /// the other; and the first hour holds a try every few minutes.
    #[test]
    fn the_attempts_span_about_the_day_of_the_deadline() {
        use crate::jobs::JobKind;
        for kind in [JobKind::SlackPost, JobKind::EmailReply] {
            let mut at = 0.0;
            let mut first_hour = 0;
            for attempt in 1..kind.max_attempts() {
                if at < 3600.0 {
                    first_hour += 1;
                }
                at += scheduled(attempt).as_secs_f64();
            }
            let deadline = kind.deadline().as_secs_f64();
            assert!(
                (deadline - 7200.0..=deadline + 9000.0).contains(&at),
                "{kind}: the last attempt after {:.1} h",
                at / 3600.0
            );
            assert!(first_hour >= 15, "{kind}: {first_hour} in the first hour");
        }
    }
}
