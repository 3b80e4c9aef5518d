//! Faults during the run, all drawn from the run's seed: SIGKILL and restart of the server,
//! Slack 429s with `Retry-After` and 500s, Slack answers held past Porch's client timeout, and
//! webhook 500s and 429s. It leaves the server running and the outside services healthy.

use std::sync::Arc;
use std::time::{Duration, Instant};

use porch::loadtest::{Failure, SlackMock, WebhookMock};
use rand::Rng;
use rand::rngs::StdRng;

use crate::agents::CHANNEL;
use crate::process::Porch;
use crate::slack_proxy::SlackProxy;

pub const HOOK_PATH: &str = "/hook";

/// How often a held (timed-out) Slack answer is staged again in a long run.
const HOLD_EVERY: Duration = Duration::from_mins(1);

/// What was done, for the summary.
#[derive(Debug, Default)]
pub struct Done {
    pub kills: usize,
    pub slack_faults: usize,
    pub held: usize,
    pub webhook_faults: usize,
}

pub struct Chaos {
    pub porch: Porch,
    pub http: reqwest::Client,
    pub mock: Arc<SlackMock>,
    pub proxy: Arc<SlackProxy>,
    pub hooks: Arc<WebhookMock>,
    pub rng: StdRng,
}

impl Chaos {
    /// Injects faults until `until`; returns the server, running.
    pub async fn run(mut self, until: Instant) -> (Porch, Done) {
        let mut done = Done::default();
        let now = Instant::now();
        let mut next_kill = now + self.pause(1_000..3_000);
        let mut next_slack = now + self.pause(500..2_000);
        // Halfway: kills before, the held answers' quiet window after (see `kill_allowed`).
        let mut next_hold = now + until.saturating_duration_since(now) / 2;
        let mut next_hook = now + self.pause(1_000..3_000);
        let mut hook_failures_sent = 0;
        // Webhook retries come after 5 s and then 5 min: no fault late in the run, so every
        // delivery can finish within the drain's deadline.
        let hooks_stop = until.checked_sub(Duration::from_secs(12)).unwrap_or(now);
        loop {
            let wake = next_kill
                .min(next_slack)
                .min(next_hold)
                .min(next_hook)
                .min(until);
            tokio::time::sleep_until(wake.into()).await;
            let now = Instant::now();
            if now >= until {
                break;
            }
            if now >= next_hold {
                // The next thread header and the next reply are answered after Porch gave up.
                self.proxy.hold_next_headers(1);
                self.proxy.hold_next_replies(1);
                done.held += 2;
                next_hold = now + HOLD_EVERY;
            }
            if now >= next_slack {
                let failure = match self.rng.random_range(0..4) {
                    0 => Some(Failure::RateLimited {
                        times: self.rng.random_range(1..4),
                        retry_after_secs: 1,
                    }),
                    1 => Some(Failure::ServerError {
                        times: self.rng.random_range(1..3),
                    }),
                    _ => None,
                };
                done.slack_faults += usize::from(failure.is_some());
                self.mock.set_failure(CHANNEL, failure);
                next_slack = now + self.pause(1_000..3_000);
            }
            if now >= next_hook && now < hooks_stop {
                // One pair at a time: a delivery meets at most two failures (then waits 5 s).
                let answered_badly = self
                    .hooks
                    .received()
                    .iter()
                    .filter(|r| r.status >= 400)
                    .count();
                if answered_badly >= hook_failures_sent {
                    let second = if self.rng.random_bool(0.5) { 429 } else { 500 };
                    self.hooks.answer(HOOK_PATH, &[500, second]);
                    hook_failures_sent += 2;
                    done.webhook_faults += 2;
                }
                next_hook = now + self.pause(7_000..9_000);
            }
            // No kill while a held answer plays out (that would turn a timeout's duplicate into
            // a kill's), nor just before the end.
            if now >= next_kill {
                if self.proxy.kill_allowed() && now + Duration::from_secs(2) < until {
                    self.porch.kill();
                    done.kills += 1;
                    // Down for a moment, as under a supervisor's restart delay.
                    tokio::time::sleep(self.pause(0..400)).await;
                    self.porch.start(&self.http).await;
                    next_kill = Instant::now() + self.pause(1_500..4_000);
                } else {
                    next_kill = now + Duration::from_millis(500);
                }
            }
        }
        self.mock.set_failure(CHANNEL, None);
        if !self.porch.is_running() {
            self.porch.start(&self.http).await;
        }
        (self.porch, done)
    }

    fn pause(&mut self, millis: std::ops::Range<u64>) -> Duration {
        Duration::from_millis(self.rng.random_range(millis))
    }
}
