//! How a delivery attempt ended, as every destination module classifies it.

use std::time::Duration;

/// The classified result of one delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The destination has it; `external_ref` is its id there (Slack `ts`, …).
    Delivered { external_ref: Option<String> },
    /// A passing failure (5xx, timeout, network): try again after a backoff, at least
    /// `not_before` if the destination said so.
    Retry {
        error: String,
        not_before: Option<Duration>,
    },
    /// The destination's rate limit (429): pause this rate key for `retry_after`; the attempt
    /// does not count.
    RateLimited { retry_after: Duration },
    /// This job can never succeed (for example a payload the destination refuses).
    Failed { error: String },
    /// The destination refused us for a reason only an admin can fix (revoked token, missing
    /// channel): block the integration and its jobs until then.
    Blocked { error: String },
}

/// An outcome plus what the attempt log shows.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    /// The destination said its budget is spent (Discord's `X-RateLimit-Remaining: 0`): hold
    /// back the job's rate key this long, whatever the outcome.
    pub pause: Option<Duration>,
    /// Calls the attempt made against its rate key's budget beyond the one its start was paced
    /// for (a Slack thread header posted before the reply); the key's pace is charged for them.
    pub extra_calls: u32,
}

impl Attempt {
    pub fn new(outcome: Outcome, http_status: Option<u16>) -> Self {
        Self {
            outcome,
            http_status,
            pause: None,
            extra_calls: 0,
        }
    }

    /// The same attempt, pacing its rate key for `pause` if given.
    #[must_use]
    pub fn paced(mut self, pause: Option<Duration>) -> Self {
        self.pause = pause;
        self
    }

    /// The same attempt, having made `calls` more calls than the one its start was paced for.
    #[must_use]
    pub fn with_extra_calls(mut self, calls: u32) -> Self {
        self.extra_calls = calls;
        self
    }
}

/// The attempt `delivery` makes, or, if it panics (a bug), a failed one: the job then shows as
/// failed on the deliveries page, where it can be retried, and its lane's slot is given back,
/// where a panic would otherwise leave the job running and the slot taken for good.
pub async fn caught(delivery: impl std::future::Future<Output = Attempt>, job: i64) -> Attempt {
    use futures_util::FutureExt as _;
    std::panic::AssertUnwindSafe(delivery)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            tracing::error!(job, "a delivery panicked: the job is marked failed");
            Attempt::new(
                Outcome::Failed {
                    error: "Porch failed while delivering this (a bug; the server log has the \
                            details). Retry it once Porch is updated."
                        .to_owned(),
                },
                None,
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_delivery_is_a_failed_attempt() {
        let fine = caught(
            async { Attempt::new(Outcome::Delivered { external_ref: None }, None) },
            1,
        );
        assert_eq!(
            fine.await.outcome,
            Outcome::Delivered { external_ref: None }
        );
        let crashed = caught(async { panic!("a bug") }, 2).await;
        assert!(
            matches!(&crashed.outcome, Outcome::Failed { error } if error.contains("a bug; the server log")),
            "{crashed:?}"
        );
    }
}
