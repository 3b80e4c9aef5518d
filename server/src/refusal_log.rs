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

const VISITOR_LINE: &str = "visitor messages not stored, without a line of their own";
const REQUEST_LINE: &str = "requests refused (storage unavailable), without a line of their own";

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

/// Every 10 s, the refusals held back since their kind's last line, once its interval passed.
pub fn spawn_summaries(shutdown: CancellationToken) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    if let Some(left_out) = VISITOR_MESSAGES.held_back() {
                        tracing::warn!(left_out, "{VISITOR_LINE}");
                    }
                    if let Some(left_out) = REQUESTS.held_back() {
                        tracing::warn!(left_out, "{REQUEST_LINE}");
                    }
                }
                () = shutdown.cancelled() => break,
            }
        }
    });
}

/// At a stop: whatever is still held back, however recent.
pub fn at_stop() {
    if let Some(left_out) = VISITOR_MESSAGES.take_held_back() {
        tracing::warn!(left_out, "{VISITOR_LINE}");
    }
    if let Some(left_out) = REQUESTS.take_held_back() {
        tracing::warn!(left_out, "{REQUEST_LINE}");
    }
}
