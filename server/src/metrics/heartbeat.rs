//! The event-loop-lag heartbeat (shared/reference/performance.md §5.3): a task that sleeps a
//! fixed period and records how late it woke. A late wake means the runtime's workers were all
//! busy: every ready task, a websocket's ack included, waited about that long too.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Meters;

/// How often the heartbeat wakes: often enough for a per-second p99, rare enough to cost nothing.
const PERIOD: Duration = Duration::from_millis(100);

/// Starts the heartbeat; it stops at `shutdown`.
pub fn spawn_heartbeat(meters: Arc<Meters>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        loop {
            let deadline = tokio::time::Instant::now() + PERIOD;
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    meters.loop_lag.record(tokio::time::Instant::now() - deadline);
                }
                () = shutdown.cancelled() => break,
            }
        }
    });
}
