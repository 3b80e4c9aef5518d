//! Opening the database file for `serve` and the commands that migrate it, refusing a file that is
//! there but is not Porch's. SQLite takes a 0-byte file as a new database and would migrate
//! Porch's tables into another application's file; either way the start answered as a fresh
//! install. Worse, an on-boot restore skips a directory that holds any `porch.db` (Litestream's
//! `-if-db-not-exists`), so a 0-byte file left there started an empty Porch whose replication then
//! made the backup's newest state an empty database. `porch check` says the same words.

use std::path::Path;

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
    refuse_empty_file(path)?;
    if path.exists() {
        // Looked at through a bare connection first: the write connection's settings would
        // already change another application's file (it would be switched to WAL).
        let bare = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|err| explain_damage(Error::from(err).into(), path))?;
        // Beside a running server (a management command), its checkpoint may hold a lock.
        bare.busy_timeout(super::db::BUSY_TIMEOUT)
            .map_err(|err| explain_damage(Error::from(err).into(), path))?;
        refuse_other_database(&bare, path)?;
    }
    open_write_connection(path, synchronous).map_err(|err| explain_damage(err.into(), path))
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

/// Refuses a file of 0 bytes at `path` (no file at all is a new install, and fine).
///
/// # Errors
/// A [`DamagedFile`] that says what to do.
pub fn refuse_empty_file(path: &Path) -> anyhow::Result<()> {
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
    }

    #[test]
    fn a_new_path_and_a_file_without_tables_are_opened() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        drop(open_porch_database(&path, Synchronous::Full).expect("a new file"));
        drop(open_porch_database(&path, Synchronous::Full).expect("no tables yet"));
    }
}
