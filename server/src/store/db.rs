//! Opening connections with the settings Porch relies on (WAL, busy timeout, foreign keys) and
//! that Litestream needs. Every connection goes through here so no setting is forgotten.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::Error;

/// How hard each commit waits for the disk (`PRAGMA synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Synchronous {
    /// Every commit is on disk before it is acknowledged: survives power loss.
    Full,
    /// Commits survive a process crash; the last ones may be lost on power loss.
    Normal,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// Litestream and our own writer both take the write lock; wait instead of failing at once.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Truncate the WAL back to this size after a checkpoint so it does not stay large after a burst.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

fn configure(conn: &Connection) -> Result<(), Error> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Opens the single write connection: WAL mode, the chosen durability, a bounded WAL file.
pub fn open_write_connection(path: &Path, synchronous: Synchronous) -> Result<Connection, Error> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Sqlite(rusqlite::Error::InvalidParameterName(
            format!("journal_mode is {mode}, WAL is required"),
        )));
    }
    conn.pragma_update(None, "synchronous", synchronous.pragma())?;
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
    Ok(conn)
}

/// Opens an existing database read-only for inspection (`porch check`): it is never created,
/// migrated or switched to WAL, so checking a restored copy leaves it as it was.
pub fn open_existing_read_only(path: &Path) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Opens a read-only connection for the reader pool.
pub fn open_read_connection(path: &Path) -> Result<Connection, Error> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    conn.pragma_update(None, "query_only", "ON")?;
    Ok(conn)
}
