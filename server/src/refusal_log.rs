//! The log lines of writes refused because storage is unavailable (a full disk, the WAL past
//! `PORCH_WAL_LIMIT`, a busy writer): each visitor message and each request would write one,
//! hundreds a second under load, while the writer already logs the cause. Each kind is written
//! at most once per 10 s, with `left_out` counting the refusals since its previous line;
//! [`spawn_summaries`] writes a count no later refusal carried within 20 s, and [`at_stop`] the
//! rest, so an incident's refusals are told in its own time, never in the next incident's line
//! (docs/operations.md, Logs).
//!
//! The counters are the process's, as its log is: `From<store::Error>` for an HTTP failure has no
//! state to carry them, and the widget's connections share them.

use std::fmt::Display;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::log_limit::Every;

const EVERY: Duration = Duration::from_secs(10);
static VISITOR_MESSAGES: Every = Every::new(EVERY);
static REQUESTS: Every = Every::new(EVERY);

/// A visitor message was not stored because of `error` (the widget answers `unavailable`).
pub fn visitor_message_not_stored(error: &dyn Display) {
    if let Some(left_out) = VISITOR_MESSAGES.pass() {
        tracing::warn!(error = %error, left_out, "a visitor message was not stored");
    }
}

/// A request was refused with 503 because of `error`.
pub fn request_refused(error: &dyn Display) {
    if let Some(left_out) = REQUESTS.pass() {
        tracing::warn!(error = %error, left_out, "storage unavailable");
    }
}

/// Each kind's limit and the line that sums up its refusals held back.
fn kinds() -> [(&'static Every, &'static str); 2] {
    [
        (
            &VISITOR_MESSAGES,
            "visitor messages not stored, without a line of their own",
        ),
        (
            &REQUESTS,
            "requests refused (storage unavailable), without a line of their own",
        ),
    ]
}

/// Writes each kind's held-back count that `take` gives.
fn sum_up(take: impl Fn(&Every) -> Option<u64>) {
    for (limit, line) in kinds() {
        if let Some(left_out) = take(limit) {
            tracing::warn!(left_out, "{line}");
        }
    }
}

/// Every 10 s, the refusals held back since their kind's last line, once its interval passed.
pub fn spawn_summaries(shutdown: CancellationToken) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tokio::select! {
                _ = tick.tick() => sum_up(Every::held_back),
                () = shutdown.cancelled() => break,
            }
        }
    });
}

/// At a stop: whatever is still held back, however recent.
pub fn at_stop() {
    sum_up(Every::take_held_back);
}
