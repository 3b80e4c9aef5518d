//! The log line of a visitor message that could not be stored, at most once per 10 s: a full
//! disk refuses every message (hundreds a second under load), and the writer already logs why,
//! rate-limited the same way (docs/operations.md, Logs).

use std::time::Duration;

use crate::chat;
use crate::log_limit::Every;

static LIMIT: Every = Every::new(Duration::from_secs(10));

/// Logs that a message was not stored because of `err`, unless a line was written in the last
/// 10 s; the next line counts the refusals left out.
pub(super) fn log_not_stored(err: &chat::Error) {
    if let Some(left_out) = LIMIT.pass() {
        tracing::warn!(error = %err, left_out, "a visitor message was not stored");
    }
}
