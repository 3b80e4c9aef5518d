//! What an attempt's outcome means for its job: the state to record, and what the runner's
//! index does with it. Pure, so every rule of the retry policy is unit-tested here; the runner
//! only applies the decision.

use std::time::Duration;

use crate::clock::millis;
use crate::store::{IntegrationId, JobRow, JobUpdate};

use super::JobKind;
use super::outcome::{Attempt, Outcome};

/// The longest a destination's answer can make a job wait (a `Retry-After`, Discord's
/// `retry_after` or `X-RateLimit-Reset-After`): an hour. The value is the receiver's, so it can
/// be anything, up to `u64::MAX` seconds, and the runner's clock is `i64` milliseconds.
pub const MAX_DESTINATION_WAIT: Duration = Duration::from_hours(1);

/// `now` plus a wait a destination named, at most [`MAX_DESTINATION_WAIT`].
fn after_destination_wait(now: i64, wait: Duration) -> i64 {
    now.saturating_add(millis(wait.min(MAX_DESTINATION_WAIT)))
}

/// What happens to a job after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The state recorded in SQLite in the next round.
    pub update: JobUpdate,
    /// The error the attempt log shows.
    pub error: Option<String>,
    /// What the in-memory index does with the job.
    pub next: Next,
    /// The job's integration is blocked (with this error) until an admin fixes it.
    pub blocks: Option<(IntegrationId, String)>,
    /// The job's rate key is paused until then (the destination said its budget is spent).
    pub pause_until: Option<i64>,
}

/// The job's place in the index after the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Done, failed or blocked: out of the index.
    Finish,
    /// Due again at `run_at` with `attempt` attempts used; `pauses_rate_key` holds back the
    /// other jobs of its rate key until then too (a 429).
    Reschedule {
        run_at: i64,
        attempt: u32,
        pauses_rate_key: bool,
    },
}

/// Decides what `attempt` means for `job` at `now`; `destination_up` says other deliveries to
/// its rate key succeeded lately (then the kind's [`JobKind::attempts_while_up`] is its budget);
/// `backoff` is the retry policy's wait after the given (1-based) failed attempt.
pub fn decide(
    job: &JobRow,
    attempt: Attempt,
    (now, destination_up): (i64, bool),
    backoff: impl FnOnce(u32) -> Duration,
) -> Decision {
    let tries = job.attempt + 1;
    let while_up = JobKind::parse(&job.kind)
        .filter(|_| destination_up)
        .map(JobKind::attempts_while_up)
        .filter(|budget| *budget < job.max_attempts);
    let out_of_budget =
        tries >= while_up.unwrap_or(job.max_attempts) || job.deadline_at.is_some_and(|d| now >= d);
    let pause_until = attempt
        .pause
        .filter(|_| job.rate_key.is_some())
        .map(|pause| after_destination_wait(now, pause));
    let finish = |update, error: Option<String>| Decision {
        update,
        error,
        next: Next::Finish,
        blocks: None,
        pause_until,
    };
    match attempt.outcome {
        Outcome::Delivered { external_ref } => finish(JobUpdate::Done { external_ref }, None),
        Outcome::RateLimited { retry_after } => {
            let run_at = after_destination_wait(now, retry_after);
            Decision {
                update: JobUpdate::Snooze { run_at },
                error: Some("rate limited by the destination".to_owned()),
                // A 429 gives its attempt back.
                next: Next::Reschedule {
                    run_at,
                    attempt: job.attempt,
                    pauses_rate_key: true,
                },
                blocks: None,
                pause_until,
            }
        }
        Outcome::Retry { error, .. } if out_of_budget => {
            let why = if while_up.is_some() {
                " while other deliveries to it succeeded"
            } else {
                ""
            };
            finish(
                JobUpdate::Failed,
                Some(format!(
                    "gave up after {tries} attempt{}{why}: {error}",
                    if tries == 1 { "" } else { "s" }
                )),
            )
        }
        Outcome::Retry { error, not_before } => {
            // `not_before` holds a schedule of the destination's own (a webhook's, which bounds
            // the receiver's `Retry-After` by [`MAX_DESTINATION_WAIT`]), so it is not cut here.
            let wait = backoff(tries).max(not_before.unwrap_or_default());
            let run_at = now.saturating_add(millis(wait));
            Decision {
                update: JobUpdate::Retry { run_at },
                error: Some(error),
                next: Next::Reschedule {
                    run_at,
                    attempt: tries,
                    pauses_rate_key: false,
                },
                blocks: None,
                pause_until,
            }
        }
        Outcome::Failed { error } => finish(JobUpdate::Failed, Some(error)),
        Outcome::Blocked { error } => {
            // A test that is refused reports it and blocks the integration as a real delivery
            // would, but is itself over: waiting blocked, it would go out at the fix.
            let is_test = JobKind::parse(&job.kind).is_some_and(JobKind::is_test);
            let update = if is_test {
                JobUpdate::Failed
            } else {
                JobUpdate::Blocked
            };
            Decision {
                blocks: job.integration_id.map(|i| (i, error.clone())),
                ..finish(update, Some(error))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::JobId;

    const NOW: i64 = 1_000_000;

    fn job(attempt: u32, max_attempts: u32, deadline_at: Option<i64>) -> JobRow {
        JobRow {
            id: JobId(7),
            lane: "chat".into(),
            kind: "slack.post".into(),
            args: "{}".into(),
            integration_id: Some(IntegrationId(3)),
            state: "running".into(),
            order_key: None,
            rate_key: Some("slack:T:C".into()),
            attempt,
            max_attempts,
            run_at: NOW - 10,
            deadline_at,
            is_uncertain: false,
            last_error: None,
            created_at: NOW - 10,
        }
    }

    fn retry(not_before: Option<Duration>) -> Attempt {
        Attempt::new(
            Outcome::Retry {
                error: "HTTP 503".into(),
                not_before,
            },
            Some(503),
        )
    }

    fn two_seconds(_: u32) -> Duration {
        Duration::from_secs(2)
    }

    #[test]
    fn a_delivery_finishes_the_job_with_its_external_ref() {
        let delivered = Attempt::new(
            Outcome::Delivered {
                external_ref: Some("ts1".into()),
            },
            Some(200),
        );
        let decision = decide(&job(0, 5, None), delivered, (NOW, false), two_seconds);
        assert_eq!(
            decision.update,
            JobUpdate::Done {
                external_ref: Some("ts1".into())
            }
        );
        assert_eq!(
            (decision.next, decision.error, decision.blocks),
            (Next::Finish, None, None)
        );
    }

    #[test]
    fn a_passing_failure_is_retried_after_the_backoff_and_counts_the_attempt() {
        let decision = decide(&job(1, 5, None), retry(None), (NOW, false), |tries| {
            assert_eq!(tries, 2, "the backoff is asked for the attempt that failed");
            Duration::from_secs(4)
        });
        let run_at = NOW + 4000;
        assert_eq!(decision.update, JobUpdate::Retry { run_at });
        assert_eq!(
            decision.next,
            Next::Reschedule {
                run_at,
                attempt: 2,
                pauses_rate_key: false
            }
        );
        assert_eq!(decision.error.as_deref(), Some("HTTP 503"));
    }

    /// A chat post failing while others to its channel go out is given up after the short
    /// budget; while the channel is down as a whole it keeps its day of retries.
    #[test]
    fn a_failure_while_the_destination_is_up_uses_the_short_budget() {
        let chat = JobKind::SlackPost;
        let at_short_budget = job(chat.attempts_while_up() - 1, chat.max_attempts(), None);
        let up = decide(&at_short_budget, retry(None), (NOW, true), two_seconds);
        assert_eq!(up.update, JobUpdate::Failed);
        assert!(
            up.error
                .as_deref()
                .is_some_and(|e| e.contains("while other deliveries to it succeeded")),
            "{:?}",
            up.error
        );
        let down = decide(&at_short_budget, retry(None), (NOW, false), two_seconds);
        assert!(matches!(down.update, JobUpdate::Retry { .. }), "{down:?}");
        // A budget already smaller than the short one (a test post's one try) is kept.
        let one_try = job(0, 1, None);
        let tested = decide(&one_try, retry(None), (NOW, true), two_seconds);
        assert_eq!(tested.update, JobUpdate::Failed);
    }

    #[test]
    fn a_destination_asking_for_a_longer_wait_gets_it() {
        let decision = decide(
            &job(0, 5, None),
            retry(Some(Duration::from_mins(1))),
            (NOW, false),
            two_seconds,
        );
        assert_eq!(
            decision.update,
            JobUpdate::Retry {
                run_at: NOW + 60_000
            }
        );
    }

    #[test]
    fn the_last_attempt_or_a_passed_deadline_gives_up() {
        for spent in [job(4, 5, None), job(0, 5, Some(NOW))] {
            let decision = decide(&spent, retry(None), (NOW, false), two_seconds);
            assert_eq!(decision.update, JobUpdate::Failed);
            assert_eq!(decision.next, Next::Finish);
            assert!(
                decision
                    .error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("gave up after") && e.ends_with("HTTP 503")),
                "{:?}",
                decision.error
            );
        }
    }

    #[test]
    fn a_429_snoozes_the_job_and_its_rate_key_without_using_an_attempt() {
        let limited = Attempt::new(
            Outcome::RateLimited {
                retry_after: Duration::from_secs(30),
            },
            Some(429),
        );
        // Even on its last attempt and past its deadline: a rate limit is never the job's fault
        // (docs/jobs.md, Retries).
        let decision = decide(
            &job(4, 5, Some(NOW - 1)),
            limited,
            (NOW, false),
            two_seconds,
        );
        let run_at = NOW + 30_000;
        assert_eq!(decision.update, JobUpdate::Snooze { run_at });
        assert_eq!(
            decision.next,
            Next::Reschedule {
                run_at,
                attempt: 4,
                pauses_rate_key: true
            }
        );
    }

    #[test]
    fn a_blocked_destination_blocks_the_integration_with_its_error() {
        let blocked = Attempt::new(
            Outcome::Blocked {
                error: "Slack refused: invalid_auth".into(),
            },
            Some(200),
        );
        let decision = decide(&job(0, 5, None), blocked, (NOW, false), two_seconds);
        assert_eq!(decision.update, JobUpdate::Blocked);
        assert_eq!(
            decision.blocks,
            Some((IntegrationId(3), "Slack refused: invalid_auth".into()))
        );
        assert_eq!(decision.next, Next::Finish);
    }

    #[test]
    fn a_refused_test_blocks_the_integration_but_is_itself_failed() {
        let refused = Attempt::new(
            Outcome::Blocked {
                error: "Discord answered 404".into(),
            },
            Some(404),
        );
        let test = JobRow {
            kind: "discord.test".into(),
            ..job(0, 1, None)
        };
        let decision = decide(&test, refused, (NOW, false), two_seconds);
        assert_eq!(decision.update, JobUpdate::Failed);
        assert_eq!(
            decision.blocks,
            Some((IntegrationId(3), "Discord answered 404".into()))
        );
        assert_eq!(decision.error.as_deref(), Some("Discord answered 404"));
    }

    #[test]
    fn a_spent_budget_pauses_the_rate_key_whatever_the_outcome() {
        let paced = Attempt::new(Outcome::Delivered { external_ref: None }, Some(200))
            .paced(Some(Duration::from_millis(1500)));
        let decision = decide(&job(0, 5, None), paced.clone(), (NOW, false), two_seconds);
        assert_eq!(decision.pause_until, Some(NOW + 1500));
        let mut keyless = job(0, 5, None);
        keyless.rate_key = None;
        assert_eq!(
            decide(&keyless, paced, (NOW, false), two_seconds).pause_until,
            None
        );
    }

    /// A receiver's `Retry-After: 18446744073709551615` once overflowed the runner's clock and
    /// stopped every delivery of the server (found by an attacker's receiver): a destination's
    /// wait counts for an hour at most, and no wait overflows.
    #[test]
    fn a_destinations_wait_is_an_hour_at_most_and_never_overflows() {
        let forever = Duration::from_secs(u64::MAX);
        let hour = i64::try_from(MAX_DESTINATION_WAIT.as_millis()).expect("an hour");
        let limited = Attempt::new(
            Outcome::RateLimited {
                retry_after: forever,
            },
            Some(429),
        )
        .paced(Some(forever));
        let decision = decide(&job(0, 5, None), limited, (NOW, false), two_seconds);
        assert_eq!(decision.update, JobUpdate::Snooze { run_at: NOW + hour });
        assert_eq!(decision.pause_until, Some(NOW + hour));
        let decision = decide(
            &job(0, 5, None),
            retry(Some(forever)),
            (NOW, false),
            two_seconds,
        );
        assert_eq!(decision.update, JobUpdate::Retry { run_at: i64::MAX });
    }
}
