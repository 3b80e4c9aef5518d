//! The log line of a visitor message that could not be stored, at most once per
//! [`LOG_EVERY`]: a full disk refuses every message (hundreds a second under load), and the
//! writer already logs why, rate-limited the same way (docs/operations.md, Logs).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::chat;

/// The shortest time between two lines.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// When the last line was written, and how many refusals were not logged since.
static LAST: Mutex<(Option<Instant>, u64)> = Mutex::new((None, 0));

/// Logs that a message was not stored because of `err`, unless a line was written in the last
/// [`LOG_EVERY`]; the next line counts the refusals left out.
pub(super) fn log_not_stored(err: &chat::Error) {
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    let (at, left_out) = &mut *last;
    let now = Instant::now();
    if at.is_some_and(|at| now.duration_since(at) < LOG_EVERY) {
        *left_out += 1;
        return;
    }
    tracing::warn!(error = %err, left_out = *left_out, "a visitor message was not stored");
    *at = Some(now);
    *left_out = 0;
}
