//! Opening the database file for `serve` and the commands that migrate it, refusing a file that is
//! there but is not Porch's. SQLite takes a 0-byte file as a new database and would migrate
//! Porch's tables into another application's file; either way the start answered as a fresh
//! install. Worse, an on-boot restore skips a directory that holds any `porch.db` (Litestream's
//! `-if-db-not-exists`), so a 0-byte file left there started an empty Porch whose replication then
//! made the backup's newest state an empty database. `porch check` says the same words.

use std::path::Path;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use super::{
    DamagedFile, Error, Synchronous, explain_damage, has_no_tables, is_porch_database,
    open_write_connection, schema_version,
};

/// Opens the database at `path` (creating it when there is no file) for migrating, after
/// refusing a 0-byte file, and then one with tables that are not Porch's. A file with no tables
/// at all is taken: a first start that stopped before its first migration leaves one.
///
/// # Errors
/// A refused file is a [`DamagedFile`] naming it; an unreadable one is explained as
/// [`explain_damage`] does.
pub fn open_porch_database(path: &Path, synchronous: Synchronous) -> anyhow::Result<Connection> {
    refuse_misplaced_files(path)?;
    let existed = path.exists();
    if existed {
        look_before_opening(path)?;
    }
    open_write_connection(path, synchronous).map_err(|err| {
        // SQLite creates the file empty and writes its first page only at the write
        // connection's settings: a failure in between would leave an empty file that the next
        // start refuses. A file this call created goes again.
        if !existed {
            remove_if_empty(path);
        }
        explain_damage(err.into(), path)
    })
}

/// Refuses another application's file through a bare connection that changes nothing: the write
/// connection's settings would switch it to WAL, and a last connection's close would checkpoint
/// its WAL into it. Beside a running server (a management command), a checkpoint may hold a lock
/// for a moment, so it waits as long as any connection does. A refused file is left as it was:
/// the `-wal` and `-shm` that reading a WAL-mode file makes beside it go again.
fn look_before_opening(path: &Path) -> anyhow::Result<()> {
    let sidecar = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };
    let (wal, shm) = (sidecar("-wal"), sidecar("-shm"));
    let (had_wal, had_shm) = (wal.exists(), shm.exists());
    let looked = look(path);
    if looked.is_err() {
        // Only what this look made (a query-only connection writes nothing to its WAL).
        if !had_wal && std::fs::metadata(&wal).is_ok_and(|meta| meta.len() == 0) {
            let _ = std::fs::remove_file(&wal);
        }
        if !had_shm {
            let _ = std::fs::remove_file(&shm);
        }
    }
    looked
}

/// What [`look_before_opening`] does, with its connection closed on return.
fn look(path: &Path) -> anyhow::Result<()> {
    let bare = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|bare| {
        bare.busy_timeout(super::db::BUSY_TIMEOUT)?;
        bare.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        bare.pragma_update(None, "query_only", "ON")?;
        Ok(bare)
    })
    .map_err(|err| explain_damage(Error::from(err).into(), path))?;
    refuse_other_database(&bare, path)
}

/// Removes `path` if it is an empty file (one SQLite created for a connection that then failed).
fn remove_if_empty(path: &Path) {
    let is_empty = std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() == 0);
    if is_empty && let Err(err) = std::fs::remove_file(path) {
        let path = path.display();
        tracing::warn!(error = %err, %path, "could not remove an empty database file");
    }
}

/// `err` after `context` (such as "opening the database …"), unless it names the file already
/// (a [`DamagedFile`], whose message is whole).
pub fn in_context(err: anyhow::Error, context: String) -> anyhow::Error {
    if err.is::<DamagedFile>() {
        err
    } else {
        err.context(context)
    }
}

/// Refuses what a failed copy or restore leaves at `path`, before SQLite opens it: a file of 0
/// bytes (no file at all is a new install, and fine), or a file not in WAL mode beside a `-wal`
/// that is not empty.
///
/// # Errors
/// A [`DamagedFile`] that says what to do.
pub fn refuse_misplaced_files(path: &Path) -> anyhow::Result<()> {
    refuse_empty_file(path)?;
    refuse_foreign_wal(path)
}

/// A database that is not in WAL mode (bytes 18 and 19 of its header are 1, as in a copy made by
/// `porch backup`) has no WAL of its own, so a `-wal` with frames beside it is another file's:
/// the database it replaced, when a backup was copied over `porch.db` after a crash and the old
/// `-wal` and `-shm` stayed. SQLite would replay that WAL into the copy, and Porch served a mix
/// of the two, or refused it as damaged, which sent the operator back to the same backup.
fn refuse_foreign_wal(path: &Path) -> anyhow::Result<()> {
    let mut header = [0_u8; 20];
    let read = std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut header));
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal_has_frames = std::fs::metadata(&wal).is_ok_and(|meta| meta.len() > 0);
    if read.is_err() || header[18..20] != [1, 1] || !wal_has_frames {
        return Ok(());
    }
    let shown = path.display();
    Err(DamagedFile(format!(
        "{shown} is not in WAL mode (a copy made by `porch backup`, or a file put there by hand), \
         yet {shown}-wal beside it holds changes: they belong to the database this file replaced, \
         and opening it would replay them into it. Move {shown}-wal and {shown}-shm aside (keep \
         them with the file they came from), then start again (docs/operations.md, \"Restore\": \
         the whole trio moves together)"
    ))
    .into())
}

/// Refuses a file of 0 bytes at `path`.
fn refuse_empty_file(path: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == 0 => Err(DamagedFile(format!(
            "{} is empty (0 bytes): not a Porch database. Porch does not start on it, since an \
             empty file where a database should be is more often a failed copy or restore than \
             a new install: restore a backup (docs/operations.md, \"Restore\"), or delete the \
             file to start a new, empty Porch",
            path.display()
        ))
        .into()),
        _ => Ok(()),
    }
}

/// Refuses a SQLite file at `path` whose tables are not Porch's.
///
/// # Errors
/// A [`DamagedFile`] naming the file and its schema version; a read error as it is.
pub fn refuse_other_database(conn: &Connection, path: &Path) -> anyhow::Result<()> {
    let read = |err: Error| explain_damage(err.into(), path);
    if is_porch_database(conn).map_err(read)? || has_no_tables(conn).map_err(read)? {
        return Ok(());
    }
    let version = schema_version(conn).map_err(read)?;
    Err(DamagedFile(format!(
        "{} is a SQLite database but not a Porch database (no Porch tables, schema version \
         {version}); check the path",
        path.display()
    ))
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(path: &Path) -> String {
        let err = open_porch_database(path, Synchronous::Full).expect_err("refused");
        assert!(err.is::<DamagedFile>(), "{err:#}");
        format!("{err:#}")
    }

    #[test]
    fn an_empty_file_is_refused_and_left_empty() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        std::fs::write(&path, b"").expect("write");
        let said = refusal(&path);
        assert!(
            said.starts_with(&format!(
                "{} is empty (0 bytes): not a Porch database.",
                path.display()
            )),
            "{said}"
        );
        assert_eq!(std::fs::metadata(&path).expect("meta").len(), 0);
    }

    /// A backup copied over `porch.db` after a crash, the crashed server's `-wal` still beside it.
    #[test]
    fn a_copy_beside_another_databases_wal_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        // The crashed server's database, its last changes in its WAL (the connection stays
        // open, so nothing is checkpointed).
        let crashed = open_write_connection(&path, Synchronous::Full).expect("open");
        crashed
            .execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('after');")
            .expect("write");
        let wal = std::fs::read(dir.path().join("porch.db-wal")).expect("the wal");
        assert!(!wal.is_empty());
        drop(crashed);
        // The copy, as `porch backup` makes it: not in WAL mode.
        std::fs::remove_file(&path).expect("remove");
        let copy = Connection::open(&path).expect("copy");
        copy.execute_batch("CREATE TABLE notes (text TEXT);")
            .expect("schema");
        drop(copy);
        std::fs::write(dir.path().join("porch.db-wal"), &wal).expect("the stale wal");
        let before = std::fs::read(&path).expect("read");

        let said = refusal(&path);
        assert!(
            said.contains("porch.db-wal beside it holds changes"),
            "{said}"
        );
        assert!(said.contains("Move "), "{said}");
        assert_eq!(std::fs::read(&path).expect("read"), before);
        // Moved aside, the copy is what it was: the other file's row is not in it.
        std::fs::remove_file(dir.path().join("porch.db-wal")).expect("move");
        refuse_misplaced_files(&path).expect("taken");
        let rows: i64 = Connection::open(&path)
            .expect("opens")
            .query_row("SELECT count(*) FROM notes", [], |r| r.get(0))
            .expect("read");
        assert_eq!(rows, 0);
    }

    #[test]
    fn another_applications_database_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        let other = Connection::open(&path).expect("open");
        other
            .execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
            .expect("notes");
        drop(other);
        let said = refusal(&path);
        assert!(
            said.contains("is a SQLite database but not a Porch database"),
            "{said}"
        );
        let other = Connection::open(&path).expect("open");
        let tables: i64 = other
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
            .expect("count");
        assert_eq!(tables, 1, "nothing migrated into it");
        let mode: String = other
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .expect("mode");
        assert_eq!(mode, "delete", "not switched to WAL");
        assert!(!dir.path().join("porch.db-wal").exists());
    }

    /// Another application's WAL file keeps its WAL: the look at it does not checkpoint it.
    #[test]
    fn another_applications_wal_is_not_checkpointed_into_its_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        let other = Connection::open(&path).expect("open");
        other
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; \
                 CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');",
            )
            .expect("notes");
        // Closed without a checkpoint, as a crashed application leaves it: the rows are in the
        // WAL only.
        other
            .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .expect("config");
        drop(other);
        let wal = dir.path().join("porch.db-wal");
        let before = std::fs::metadata(&wal).expect("a WAL").len();
        assert!(before > 0);
        refusal(&path);
        assert_eq!(std::fs::metadata(&wal).expect("the WAL").len(), before);
    }

    #[test]
    fn an_empty_file_left_by_a_failed_first_open_is_removed() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        std::fs::write(&path, b"").expect("empty");
        remove_if_empty(&path);
        assert!(!path.exists());
        std::fs::write(&path, b"data").expect("data");
        remove_if_empty(&path);
        assert!(path.exists(), "a file with data is never removed");
    }

    /// A WAL-mode database cut short (a torn copy) is refused, and nothing is left beside it:
    /// reading it made a `-wal` and a `-shm`, which go again.
    #[test]
    fn a_damaged_file_is_refused_with_nothing_left_beside_it() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        let conn = open_write_connection(&path, Synchronous::Full).expect("open");
        conn.execute_batch(
            "CREATE TABLE sites (id INTEGER PRIMARY KEY, name TEXT); \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) \
             INSERT INTO sites (name) SELECT printf('%0200d', i) FROM n;",
        )
        .expect("fill");
        drop(conn);
        let bytes = std::fs::read(&path).expect("read");
        assert!(bytes.len() > 200_000, "{}", bytes.len());
        let mut cut = bytes[..100_000].to_vec();
        // The list of tables (page 1) names a table whose pages are now past the end.
        cut[4096..8192].fill(0xA5);
        std::fs::write(&path, &cut).expect("cut");
        let said = refusal(&path);
        assert!(said.contains("SQLite cannot read it"), "{said}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(left, ["porch.db"]);
        assert_eq!(std::fs::read(&path).expect("read"), cut, "left as it was");
    }

    #[test]
    fn a_new_path_and_a_file_without_tables_are_opened() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        drop(open_porch_database(&path, Synchronous::Full).expect("a new file"));
        drop(open_porch_database(&path, Synchronous::Full).expect("no tables yet"));
    }
}
