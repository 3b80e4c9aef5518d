//! The writer's WAL bound and ceiling. SQLite's automatic PASSIVE checkpoint (every 1,000 pages)
//! keeps the WAL small as long as no reader pins it, and Litestream, when attached, owns
//! checkpointing: its read transaction stops anyone else from restarting the WAL, and it
//! checkpoints on its own schedule. This is the safety net for when neither works (readers that
//! never pause, Litestream stopped or stuck):
//!
//! - past [`WAL_BOUND`], the writer runs one TRUNCATE checkpoint a minute, with a short busy
//!   timeout so a pinned WAL costs a stalled writer at most that long;
//! - past the ceiling (`PORCH_WAL_LIMIT`), the writer refuses whole batches (callers get a
//!   transient error: visitors `unavailable`, jobs retry) until a TRUNCATE checkpoint succeeds,
//!   tried at most once a second, or the WAL restarted (Litestream's checkpoint does that).
//!   Refusing is the only hard ceiling there is: no checkpoint can take frames from under
//!   another process's read transaction, so Porch cannot force its way past a stuck
//!   Litestream, only stop the WAL (and the disk) from growing.
//!
//! Sizes are the WAL frames in use, not the file's length: a restarted WAL keeps its file. While
//! the file is past a threshold, telling them costs a PASSIVE checkpoint a second on the writer
//! thread (what SQLite's automatic checkpoint would do anyway); under it, a `stat`.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::Error;
use super::writer::{Writer, WriterStats};

/// WAL size past which the writer checkpoints itself: four times `journal_size_limit`, and well
/// above the 64 MiB at which `docker/litestream.yml` has Litestream truncate, so the two never
/// compete while Litestream is healthy.
pub const WAL_BOUND: u64 = 256 * 1024 * 1024;
/// How often the WAL's size is looked at: a `stat` per commit would be cheap, but not free.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Least time between two forced checkpoints, so a WAL pinned by a reader does not stall every
/// batch.
const RETRY_INTERVAL: Duration = Duration::from_mins(1);
/// The WAL file's header, and each frame's header before its page (sqlite.org/fileformat.html).
const WAL_HEADER_BYTES: u64 = 32;
const WAL_FRAME_HEADER_BYTES: u64 = 24;
/// How long a forced checkpoint waits for readers before giving up (it blocks the writer).
const CHECKPOINT_BUSY_TIMEOUT: Duration = Duration::from_millis(500);
/// How long the checkpoint after deleting personal data waits for readers: Porch's own reads take
/// a few milliseconds, and a reader that holds the WAL for good (Litestream) costs each erasure
/// this much of the writer.
const ERASURE_CHECKPOINT_WAIT: Duration = Duration::from_millis(25);
/// The connection's usual busy timeout, restored afterwards (see `db.rs`).
const NORMAL_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Watches the WAL's size from the writer thread.
pub struct WalGuard {
    /// `<database>-wal`; `None` for an in-memory database.
    wal_path: Option<PathBuf>,
    bound: u64,
    /// The ceiling past which writes are refused.
    limit: u64,
    /// The database's page size, for the bytes of WAL frames in use.
    page_size: u64,
    next_check: Instant,
    next_attempt: Instant,
    /// Set while the WAL is past the ceiling: batches are refused without looking until
    /// `next_limit_check`.
    is_over_limit: bool,
    next_limit_check: Instant,
}

/// What a call to [`WalGuard::after_commit`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to do (not time to look, or the WAL is within bounds).
    Idle,
    /// The WAL was over the bound and is now truncated.
    Truncated,
    /// The WAL is over the bound but a reader kept the checkpoint from finishing.
    Pinned,
}

impl WalGuard {
    /// A guard for the database `conn` is open on, checkpointing past `bound` bytes and refusing
    /// writes past `limit` bytes.
    pub fn new(conn: &Connection, bound: u64, limit: u64) -> Self {
        let now = Instant::now();
        Self {
            wal_path: conn
                .path()
                .filter(|path| !path.is_empty())
                .map(|path| PathBuf::from(format!("{path}-wal"))),
            bound,
            limit,
            page_size: conn
                .pragma_query_value(None, "page_size", |r| r.get::<_, i64>(0))
                .ok()
                .and_then(|size| u64::try_from(size).ok())
                .unwrap_or(4096),
            next_check: now,
            next_attempt: now,
            is_over_limit: false,
            next_limit_check: now,
        }
    }

    fn wal_len(&self) -> Option<u64> {
        self.wal_path
            .as_ref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
    }

    /// The WAL's size when it is larger than `threshold` bytes, counting only the frames in use.
    /// The file alone overstates it: a WAL restarted by another connection (Litestream's writes
    /// after its checkpoints, which set no `journal_size_limit`) keeps its largest size and is
    /// written again from its start, so a 160 MB file may hold a few pages. Judged by the file,
    /// a healthy Litestream, whose read transaction never lets a TRUNCATE finish, looked stuck
    /// for ever. The `stat` comes first, as it is what almost every call needs.
    fn wal_past(&self, conn: &Connection, threshold: u64) -> Option<u64> {
        let file = self.wal_len().filter(|&len| len > threshold)?;
        let in_use = frames_in_use(conn).map_or(file, |frames| {
            WAL_HEADER_BYTES + frames * (self.page_size + WAL_FRAME_HEADER_BYTES)
        });
        Some(in_use).filter(|&bytes| bytes > threshold)
    }

    /// Called by the writer before each batch: false if the batch must be refused because the
    /// WAL is past the ceiling and could not be truncated.
    pub fn admit(&mut self, conn: &Connection) -> bool {
        let now = Instant::now();
        if now < self.next_limit_check {
            return !self.is_over_limit;
        }
        // A look a second while under the ceiling; while over it, one checkpoint attempt a second
        // (each may block the writer for the busy timeout, and refused writes cost nothing).
        self.next_limit_check = now + CHECK_INTERVAL;
        let Some(size) = self.wal_past(conn, self.limit) else {
            self.recovered();
            return true;
        };
        if truncate(conn, CHECKPOINT_BUSY_TIMEOUT).unwrap_or(false) {
            tracing::warn!(
                wal_bytes = size,
                "WAL past PORCH_WAL_LIMIT: checkpointed and truncated"
            );
            self.recovered();
            return true;
        }
        if !self.is_over_limit {
            tracing::error!(
                wal_bytes = size,
                wal_limit = self.limit,
                "WAL past PORCH_WAL_LIMIT and a reader keeps it from being checkpointed (is \
                 Litestream stuck?): refusing every write until it can be truncated"
            );
        }
        self.is_over_limit = true;
        false
    }

    fn recovered(&mut self) {
        if std::mem::take(&mut self.is_over_limit) {
            tracing::warn!("WAL back under PORCH_WAL_LIMIT: accepting writes again");
        }
    }

    /// Called by the writer after each batch, outside any transaction.
    pub fn after_commit(&mut self, conn: &Connection, stats: &WriterStats) -> Outcome {
        if stats.wal_truncate_asked.swap(false, Ordering::Relaxed) {
            return truncate_after_deleting(conn);
        }
        let now = Instant::now();
        if now < self.next_check || now < self.next_attempt {
            return Outcome::Idle;
        }
        self.next_check = now + CHECK_INTERVAL;
        let Some(size) = self.wal_past(conn, self.bound) else {
            return Outcome::Idle;
        };
        self.next_attempt = now + RETRY_INTERVAL;
        let outcome = truncate(conn, CHECKPOINT_BUSY_TIMEOUT);
        match &outcome {
            Ok(true) => {
                tracing::info!(
                    wal_bytes = size,
                    "WAL past its bound: checkpointed and truncated"
                );
                Outcome::Truncated
            }
            Ok(false) => {
                tracing::warn!(
                    wal_bytes = size,
                    "WAL past its bound and a reader keeps it from being checkpointed \
                     (is Litestream stuck?); trying again in a minute"
                );
                Outcome::Pinned
            }
            Err(err) => {
                tracing::warn!(error = %err, wal_bytes = size, "WAL checkpoint failed");
                Outcome::Pinned
            }
        }
    }
}

/// After personal data was deleted (an erasure, a retention purge, uploads no message took): the
/// deleted rows' older pages are in the WAL, where they would stay until later writes overwrite
/// them (on a quiet box, for weeks), and in any copy of the data directory. A TRUNCATE
/// checkpoint writes the state without them into the database file and empties the WAL. A
/// reader holding the WAL (Litestream) stops it; Litestream's own checkpoint, on its schedule,
/// then does the same (docs/privacy.md). It waits [`ERASURE_CHECKPOINT_WAIT`] for readers, not
/// the bound checkpoint's 500 ms: with Litestream attached it can never finish, and each erasure
/// (a visitor's *Delete my data* too) would stall every write that long. `porch erase` calls it
/// on its own connection.
pub fn truncate_after_deleting(conn: &Connection) -> Outcome {
    match truncate(conn, ERASURE_CHECKPOINT_WAIT) {
        Ok(true) => {
            tracing::info!("after deleting personal data: WAL checkpointed and truncated");
            Outcome::Truncated
        }
        Ok(false) => {
            tracing::info!(
                "after deleting personal data: a reader (Litestream, or a long read) holds the \
                 WAL, which was not truncated"
            );
            Outcome::Pinned
        }
        Err(err) => {
            tracing::warn!(error = %err, "after deleting personal data: WAL checkpoint failed");
            Outcome::Pinned
        }
    }
}

/// Has the writer truncate the WAL between two batches ([`truncate_after_deleting`]), and waits
/// for it: the flag, then a batch of nothing, after which the writer truncates (having answered
/// it), then a second, which it takes only once that is done. A failure is logged, not
/// returned: what was deleted is deleted, and asking again finds nothing to delete.
pub async fn truncate_wal_after_deleting(writer: &Writer) {
    if let Err(err) = ask_for_truncate(writer).await {
        tracing::warn!(error = %err, "after deleting personal data: the WAL checkpoint was not run");
    }
}

async fn ask_for_truncate(writer: &Writer) -> Result<(), Error> {
    writer
        .stats()
        .wal_truncate_asked
        .store(true, Ordering::Relaxed);
    writer.write(|_| Ok(())).await?;
    writer.write(|_| Ok(())).await
}

/// Frames in the WAL since it last restarted, from a PASSIVE checkpoint (which waits for
/// nobody, and does what SQLite's automatic checkpoint would); `None` if unknown (another
/// connection is checkpointing at the moment).
fn frames_in_use(conn: &Connection) -> Option<u64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1))
        .ok()
        .and_then(|frames| u64::try_from(frames).ok())
}

/// Runs `wal_checkpoint(TRUNCATE)`, waiting up to `wait` for readers; true if it completed
/// (SQLite reports busy as a row, not an error).
fn truncate(conn: &Connection, wait: Duration) -> rusqlite::Result<bool> {
    conn.busy_timeout(wait)?;
    let busy = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        r.get::<_, i64>(0)
    });
    conn.busy_timeout(NORMAL_BUSY_TIMEOUT)?;
    Ok(busy? == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Synchronous, open_read_connection, open_write_connection};

    fn database() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn =
            open_write_connection(&dir.path().join("porch.db"), Synchronous::Normal).expect("open");
        // Keep SQLite's own checkpoint out of the way so the WAL grows as the test wants.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .expect("pragma");
        conn.execute_batch("CREATE TABLE t (x BLOB); INSERT INTO t VALUES (zeroblob(100000));")
            .expect("write");
        (dir, conn)
    }

    /// A reader holding a read transaction open, as a stuck Litestream does: the WAL cannot be
    /// restarted past its snapshot until it commits.
    fn pin_snapshot(dir: &std::path::Path) -> rusqlite::Connection {
        let reader = open_read_connection(&dir.join("porch.db")).expect("reader");
        reader.execute_batch("BEGIN").expect("begin");
        let _: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("read");
        reader
    }

    fn wal_len(dir: &tempfile::TempDir) -> u64 {
        std::fs::metadata(dir.path().join("porch.db-wal")).map_or(0, |m| m.len())
    }

    #[test]
    fn a_wal_past_the_bound_is_truncated() {
        let (dir, conn) = database();
        assert!(wal_len(&dir) > 1000);
        let mut guard = WalGuard::new(&conn, 1000, u64::MAX);
        assert_eq!(
            guard.after_commit(&conn, &WriterStats::default()),
            Outcome::Truncated
        );
        assert_eq!(wal_len(&dir), 0);
    }

    #[test]
    fn a_wal_within_the_bound_is_left_alone() {
        let (dir, conn) = database();
        let before = wal_len(&dir);
        let mut guard = WalGuard::new(&conn, WAL_BOUND, u64::MAX);
        assert_eq!(
            guard.after_commit(&conn, &WriterStats::default()),
            Outcome::Idle
        );
        assert_eq!(wal_len(&dir), before);
    }

    #[test]
    fn a_pinned_wal_gives_up_quickly_and_waits_before_trying_again() {
        let (dir, conn) = database();
        let reader = pin_snapshot(dir.path());
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))", [])
            .expect("write");
        let mut guard = WalGuard::new(&conn, 1000, u64::MAX);
        let started = Instant::now();
        assert_eq!(
            guard.after_commit(&conn, &WriterStats::default()),
            Outcome::Pinned
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            guard.after_commit(&conn, &WriterStats::default()),
            Outcome::Idle,
            "no second try at once"
        );
        reader.execute_batch("COMMIT").expect("end read");
    }

    /// What a healthy Litestream does after a stall: it checkpoints, writes (which restarts the
    /// WAL from its start but leaves the file at its size) and reads again, so no TRUNCATE can
    /// finish. The WAL in use is small again, and writes must resume.
    #[test]
    fn past_the_ceiling_writes_resume_once_the_wal_restarted_though_the_file_kept_its_size() {
        let (dir, conn) = database();
        let mut guard = WalGuard::new(&conn, u64::MAX, 150_000);
        let stuck = pin_snapshot(dir.path());
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))", [])
            .expect("write");
        assert!(!guard.admit(&conn), "pinned past the ceiling");

        stuck.execute_batch("COMMIT").expect("end read");
        // A plain connection, as Litestream's: no `journal_size_limit`.
        let litestream = Connection::open(dir.path().join("porch.db")).expect("open");
        litestream
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .expect("checkpoint");
        litestream
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS seq (n INTEGER); INSERT INTO seq VALUES (1);",
            )
            .expect("a write restarts the WAL");
        let _reading_again = pin_snapshot(dir.path());
        assert!(wal_len(&dir) > 150_000, "the file keeps its size");

        guard.next_limit_check = Instant::now();
        assert!(guard.admit(&conn), "the WAL in use is small: writes resume");
        conn.execute("INSERT INTO t VALUES (1)", []).expect("write");
    }

    #[test]
    fn past_the_ceiling_writes_are_refused_until_the_wal_can_be_truncated() {
        let (dir, conn) = database();
        let mut guard = WalGuard::new(&conn, u64::MAX, 1000);
        let reader = pin_snapshot(dir.path());
        conn.execute("INSERT INTO t VALUES (zeroblob(100000))", [])
            .expect("write");
        assert!(!guard.admit(&conn), "pinned past the ceiling");
        assert!(!guard.admit(&conn), "refused without a new attempt");
        reader.execute_batch("COMMIT").expect("end read");
        guard.next_limit_check = Instant::now();
        assert!(guard.admit(&conn), "truncated once the reader let go");
        assert_eq!(wal_len(&dir), 0);
    }
}
