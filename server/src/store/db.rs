//! Opening connections with the settings Porch relies on (WAL, busy timeout, foreign keys) and
//! that Litestream needs. Every connection goes through here so no setting is forgotten.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
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
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Truncate the WAL back to this size after a checkpoint so it does not stay large after a burst.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

fn configure(conn: &Connection) -> Result<(), Error> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.set_prepared_statement_cache_capacity(64);
    // Query-planner stability: without it SQLite marks a statement for re-preparation whenever
    // a parameter might change the plan (`LIMIT ?`, `x = ?` near 0 or 1, a parameter compared
    // with a partial index's constant), and rusqlite's statement cache clears the bindings each
    // time a statement goes back into the cache, which expires such statements. Every use then
    // parsed and planned the SQL again: a profile of the Slack path showed 17 % of the server's
    // CPU in `sqlite3Reprepare`. Our statements are written for one plan each, so a stable plan
    // loses nothing.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // Temporary tables in memory. `INSERT … RETURNING` (how jobs are queued with their message)
    // builds an ephemeral table, and with the default file storage SQLite created and deleted a
    // temporary file for it on every message: an open, an inode and a close per insert.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

/// Opens the single write connection: WAL mode, the chosen durability, a bounded WAL file.
pub fn open_write_connection(path: &Path, synchronous: Synchronous) -> Result<Connection, Error> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    // On a new, empty file only (an older one keeps its mode until `porch vacuum`, and setting
    // the pragma on it would wait for the write lock): then space freed by retention and erasure
    // can be given back in small steps (`store::reclaim_free_pages`) instead of by a VACUUM that
    // rewrites the whole file.
    let pages: i64 = conn.pragma_query_value(None, "page_count", |r| r.get(0))?;
    if pages == 0 {
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Sqlite(rusqlite::Error::InvalidParameterName(
            format!("journal_mode is {mode}, WAL is required"),
        )));
    }
    conn.pragma_update(None, "synchronous", synchronous.pragma())?;
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
    // Every delete and every rewrite of a row zeroes the space it leaves, in the page and in pages
    // given to the freelist. An erasure or a purge cannot find the older copies a row left behind
    // when it was rewritten (an email added, a page split), so they must be gone from the start:
    // with it off, an erased visitor's page URL and email were still in the file's bytes. It costs
    // a memset per freed cell and a write per freed page, never an extra read.
    conn.pragma_update(None, "secure_delete", "ON")?;
    Ok(conn)
}

/// Opens an existing database strictly read-only for inspection (`porch check`): it is never
/// created, migrated or switched to WAL, and no `-wal` or `-shm` file is created beside it, so a
/// restored backup, a file in a backup directory or one on read-only media is left as it was.
///
/// Without a `-wal` beside it (or with an empty one and no `-shm`, or a `-shm` too short to be
/// in use) the file is opened `immutable=1`: SQLite then takes no locks and needs no `-shm`. With a `-wal` and a `-shm` it
/// is a live (or uncleanly stopped) database whose latest commits may be only in the WAL, so
/// `immutable` would read stale pages: it is opened `mode=ro` and reads through the existing
/// `-shm`. That holds for an empty `-wal` too, as a running server's is right after a `TRUNCATE`
/// checkpoint (Litestream's): its next commits go there while this connection reads. A `-wal`
/// with commits but without a `-shm` is refused, because reading it would create the `-shm`.
///
/// # Errors
/// [`Error::WalWithoutShm`] as above; otherwise whatever SQLite reports on opening.
pub fn open_existing_read_only(path: &Path) -> Result<Connection, Error> {
    /// The `-shm`'s first wal-index region: any connection that used the WAL made it this big.
    const WAL_INDEX_REGION: u64 = 32 * 1024;
    let sibling = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };
    let wal = std::fs::metadata(sibling("-wal")).ok();
    let has_commits_in_wal = wal.as_ref().is_some_and(|m| m.len() > 0);
    let shm = std::fs::metadata(sibling("-shm")).ok();
    if has_commits_in_wal && shm.is_none() {
        return Err(Error::WalWithoutShm(path.to_owned()));
    }
    // An empty WAL without a working `-shm` is a stopped server's, or what a command refused on
    // a full disk left (a `-shm` of a few bytes, which reading `mode=ro` would have to grow):
    // ignoring both reads exactly the file. A connection's `-shm` has at least one region.
    let has_working_shm = shm.is_some_and(|m| m.len() >= WAL_INDEX_REGION);
    let is_live = has_commits_in_wal || (wal.is_some() && has_working_shm);
    let query = if is_live {
        "mode=ro"
    } else {
        "mode=ro&immutable=1"
    };
    let uri = format!("{}?{query}", file_uri(path)?);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "query_only", "ON")?;
    Ok(conn)
}

/// Writes a copy of the database `conn` reads into the empty file `into`, in one read
/// transaction (so one transaction boundary), without free pages and in rollback-journal mode.
/// A reader in WAL mode never blocks the writer, so this may run beside a serving Porch.
///
/// # Errors
/// As SQLite reports them; [`Error::DiskFull`] for a full disk.
pub fn copy_database_into(conn: &Connection, into: &str) -> Result<(), Error> {
    // `query_only` ([`open_existing_read_only`]'s) refuses `VACUUM INTO`, though it writes only
    // the new file; the connection, opened read-only, still cannot write the database itself.
    conn.pragma_update(None, "query_only", "OFF")?;
    conn.execute("VACUUM INTO ?1", [into])?;
    Ok(())
}

/// `path` as an SQLite `file:` URI: `%`, `?` and `#` would otherwise end or garble the path.
fn file_uri(path: &Path) -> Result<String, Error> {
    let text = path.to_str().ok_or_else(|| {
        Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not valid UTF-8", path.display()),
        ))
    })?;
    let mut uri = String::from("file:");
    for c in text.chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    Ok(uri)
}

/// Opens a read-only connection for the reader pool.
pub fn open_read_connection(path: &Path) -> Result<Connection, Error> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    conn.pragma_update(None, "query_only", "ON")?;
    Ok(conn)
}

/// Copies the WAL into the database file and empties it, so page images from before the last
/// commit (clear or old-key secrets) are no longer on disk. Done only where nobody reads
/// (start-up, a command holding the data directory's lock); a checkpoint a reader blocks is
/// reported as busy rather than waited for.
pub fn truncate_wal(conn: &Connection) -> Result<bool, Error> {
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    Ok(busy == 0)
}

/// A transaction that takes the write lock as it begins, waiting for it up to the busy timeout
/// (behind a running server's writer, Litestream, another command). For a command's writes: a
/// deferred transaction that reads first cannot wait when it comes to write, since once another
/// connection has committed after its read SQLite refuses the upgrade at once ("database is
/// locked", `SQLITE_BUSY_SNAPSHOT`), whatever the busy timeout.
///
/// # Errors
/// The lock was not had within the busy timeout, or storage failed.
pub fn write_transaction(conn: &Connection) -> Result<rusqlite::Transaction<'_>, Error> {
    Ok(rusqlite::Transaction::new_unchecked(
        conn,
        rusqlite::TransactionBehavior::Immediate,
    )?)
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;

    /// A file copied with its WAL but not its `-shm` would get a new `-shm` from SQLite.
    #[test]
    fn a_wal_without_its_shm_is_refused_and_nothing_is_created() {
        let live = tempfile::tempdir().expect("temp dir");
        let path = live.path().join("porch.db");
        let conn = open_write_connection(&path, Synchronous::Full).expect("open");
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .expect("pragma");
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .expect("write");
        let copy = tempfile::tempdir().expect("temp dir");
        for name in ["porch.db", "porch.db-wal"] {
            std::fs::copy(live.path().join(name), copy.path().join(name)).expect("copy");
        }
        let listing = || {
            let mut names: Vec<_> = std::fs::read_dir(copy.path())
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            names.sort();
            names
        };
        let before = listing();
        let refused = open_existing_read_only(&copy.path().join("porch.db"));
        assert!(
            matches!(refused, Err(Error::WalWithoutShm(_))),
            "{refused:?}"
        );
        assert_eq!(listing(), before);
    }

    /// What [`write_transaction`] is for: a command that reads, then writes, beside a server that
    /// commits in between. Deferred, its write fails at once; begun as a write, it is the
    /// server's commit that waits for it.
    #[test]
    fn a_write_transaction_is_not_outdated_by_a_commit_between_its_read_and_its_write() {
        let (_dir, path, server) = one_row();
        let command = open_write_connection(&path, Synchronous::Full).expect("open");
        let read = |tx: &rusqlite::Transaction<'_>| -> i64 {
            tx.query_row("SELECT x FROM t", [], |r| r.get(0))
                .expect("read")
        };

        let deferred = command.unchecked_transaction().expect("begin");
        assert_eq!(read(&deferred), 1);
        server
            .execute("UPDATE t SET x = 2", [])
            .expect("the server's commit");
        let refused = deferred.execute("UPDATE t SET x = 3", []);
        assert!(refused.is_err(), "{refused:?}");
        drop(deferred);

        let tx = write_transaction(&command).expect("begin");
        assert_eq!(read(&tx), 2);
        server.busy_timeout(Duration::ZERO).expect("no wait");
        let waits = server.execute("UPDATE t SET x = 4", []);
        assert!(
            waits.is_err(),
            "the server's write waits for the command: {waits:?}"
        );
        tx.execute("UPDATE t SET x = x + 1", [])
            .expect("the command's write");
        tx.commit().expect("commit");
        let x: i64 = server
            .query_row("SELECT x FROM t", [], |r| r.get(0))
            .expect("read");
        assert_eq!(x, 3);
    }

    /// A database in WAL mode with a table `t` of one row, and its writer.
    fn one_row() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("porch.db");
        let writer = open_write_connection(&path, Synchronous::Full).expect("open");
        writer
            .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .expect("write");
        (dir, path, writer)
    }

    /// A server's WAL is empty right after a `TRUNCATE` checkpoint: a reader opened then must
    /// still see what is committed after it, not the file as it was (`immutable`).
    #[test]
    fn a_live_database_with_an_empty_wal_is_read_through_its_wal() {
        let (dir, path, writer) = one_row();
        assert!(truncate_wal(&writer).expect("checkpoint"));
        assert_eq!(
            std::fs::metadata(dir.path().join("porch.db-wal"))
                .map(|m| m.len())
                .ok(),
            Some(0)
        );
        let reader = open_existing_read_only(&path).expect("open read-only");
        writer
            .execute("INSERT INTO t VALUES (2)", [])
            .expect("write");
        let rows: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 2, "the commit after the checkpoint is seen");
    }

    /// A command refused on a full disk can leave an empty `-wal` and a `-shm` of a few bytes
    /// (SQLite could not grow it): `porch check` must still read the file in place, not try to
    /// grow that `-shm` on the same full disk.
    #[test]
    fn a_stub_shm_beside_an_empty_wal_is_ignored() {
        let (dir, path, writer) = one_row();
        drop(writer);
        std::fs::write(dir.path().join("porch.db-wal"), b"").expect("empty wal");
        std::fs::write(dir.path().join("porch.db-shm"), b"\0\0\0").expect("stub shm");
        let reader = open_existing_read_only(&path).expect("open read-only");
        let rows: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 1);
        assert_eq!(
            std::fs::metadata(dir.path().join("porch.db-shm"))
                .map(|m| m.len())
                .ok(),
            Some(3),
            "left as it was: growing it is what fails on a full disk"
        );
    }

    /// A cached statement must not be parsed again on each use: see `configure`.
    #[test]
    fn cached_statements_with_parameters_are_not_prepared_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn =
            open_write_connection(&dir.path().join("t.db"), Synchronous::Normal).expect("open");
        conn.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, state TEXT); \
             CREATE INDEX t_k ON t (k) WHERE state = 'queued';",
        )
        .expect("schema");
        // `LIMIT ?` and an equality on 0/1 each mark a statement for re-preparation.
        let sql = "SELECT id FROM t WHERE k = ?1 AND state = ?2 ORDER BY id LIMIT ?3";
        for i in 0..50_i64 {
            let mut stmt = conn.prepare_cached(sql).expect("prepare");
            let mut rows = stmt
                .query(rusqlite::params![i % 2, "queued", i])
                .expect("query");
            while rows.next().expect("row").is_some() {}
        }
        let stmt = conn.prepare_cached(sql).expect("prepare");
        assert_eq!(stmt.get_status(StatementStatus::Run), 50);
        assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
    }
}
