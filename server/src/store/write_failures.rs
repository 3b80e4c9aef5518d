//! The writer's failed batches: the log lines they may still write (the first at once, then one
//! summary per interval, so a full disk does not flood the log) and the free-space probe that
//! lets readiness recover while no traffic arrives to commit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::Error;
use super::writer::WriterStats;

/// While batches keep failing, one log line per this interval sums them up (a full disk fails
/// hundreds of batches a second; one line each would flood the log and the disk further).
const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// While the disk is full and nothing commits, how often free space is probed, so readiness
/// recovers without waiting for traffic.
const DISK_PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// Failed batches since the last commit: the log lines they may still write, and when the disk
/// is next probed.
#[derive(Default)]
pub(super) struct Failures {
    /// When the last line was logged; `None` while commits succeed.
    logged_at: Option<Instant>,
    /// Batches (and their writes) that failed since that line.
    unlogged_batches: u64,
    unlogged_writes: u64,
    /// Set while the disk is full.
    pub(super) next_probe: Option<Instant>,
}

impl Failures {
    /// Counts a failed batch (and a full disk) in `stats`, and logs the first failure at once,
    /// later ones as one summary per [`FAILURE_LOG_INTERVAL`].
    pub(super) fn failed(&mut self, err: &Error, writes: u64, stats: &WriterStats) {
        let now = Instant::now();
        stats.failed_batches.fetch_add(1, Ordering::Relaxed);
        if matches!(err, Error::DiskFull) {
            stats.is_disk_full.store(true, Ordering::Relaxed);
            self.next_probe = Some(now + DISK_PROBE_INTERVAL);
        }
        self.unlogged_batches += 1;
        self.unlogged_writes += writes;
        match self.logged_at {
            None => tracing::error!(error = %err, writes, "write batch rolled back"),
            Some(at) if now.duration_since(at) >= FAILURE_LOG_INTERVAL => tracing::error!(
                error = %err,
                batches = self.unlogged_batches,
                writes = self.unlogged_writes,
                "write batches rolled back in the last {}s",
                now.duration_since(at).as_secs()
            ),
            Some(_) => return,
        }
        self.logged_at = Some(now);
        self.unlogged_batches = 0;
        self.unlogged_writes = 0;
    }

    /// A batch committed: says so once if failures were being counted.
    pub(super) fn committed(&mut self) {
        if self.logged_at.take().is_some() {
            tracing::warn!(
                batches = self.unlogged_batches,
                writes = self.unlogged_writes,
                "writes commit again (counts: rolled back since the last error line)"
            );
        }
        self.unlogged_batches = 0;
        self.unlogged_writes = 0;
        self.next_probe = None;
    }

    /// Writes and syncs a scratch file beside the database; true if that works: the disk has
    /// room again and readiness can be restored (the next batch confirms it or fails again).
    pub(super) fn probe(&mut self, conn: &Connection) -> bool {
        let dir = database_dir(conn).unwrap_or_default();
        match super::disk_room::has_room(&dir) {
            Ok(()) => {
                self.next_probe = None;
                tracing::warn!("disk space is available again; ready for writes");
                true
            }
            Err(err) => {
                tracing::debug!(error = %err, "the disk is still full");
                self.next_probe = Some(Instant::now() + DISK_PROBE_INTERVAL);
                false
            }
        }
    }

    /// The writer's failures as it starts; `is_disk_full` is set when the disk has no room (a
    /// restart of an install whose disk filled): the server starts all the same, serves what it
    /// has and is not ready until there is room, as when the disk fills while it runs.
    pub(super) fn at_start(conn: &Connection, is_disk_full: &AtomicBool) -> Self {
        let mut failures = Self::default();
        if failures.starts_full(conn) {
            is_disk_full.store(true, Ordering::Relaxed);
        }
        failures
    }

    /// True, said once and probed from now on, when the disk has no room.
    fn starts_full(&mut self, conn: &Connection) -> bool {
        let Some(dir) = database_dir(conn) else {
            return false;
        };
        match super::disk_room::has_room(&dir) {
            Err(err) if err.kind() == std::io::ErrorKind::StorageFull => {
                tracing::error!(
                    dir = %dir.display(),
                    "the disk holding the database is full: nothing can be stored, and /readyz \
                     says disk_full, until there is room (no restart needed)"
                );
                self.next_probe = Some(Instant::now() + DISK_PROBE_INTERVAL);
                true
            }
            _ => false,
        }
    }
}

/// The directory of the database file; `None` for an in-memory database.
fn database_dir(conn: &Connection) -> Option<std::path::PathBuf> {
    conn.path()
        .filter(|path| !path.is_empty())
        .and_then(|path| {
            std::path::Path::new(path)
                .parent()
                .map(std::path::Path::to_path_buf)
        })
}
