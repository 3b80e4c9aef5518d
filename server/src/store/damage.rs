//! Saying plainly that a database file cannot be read at all. When SQLite cannot even read the
//! file's list of tables (a torn copy, a disk that failed under page 1, another file put in its
//! place), every command stops at its first query with SQLite's words twice over ("database disk
//! image is malformed: Error code 11: database disk image is malformed"), which names neither the
//! file nor what to do. Damage deeper in the file opens fine: the background check and
//! `porch check` report it (docs/operations.md, "Health").

use std::path::Path;

use rusqlite::ErrorCode;

/// A file SQLite cannot read, said with its path and what to do: the whole message, so a caller
/// adds no "opening …" of its own before it (`is::<DamagedFile>()`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DamagedFile(pub(super) String);

/// `err`, replaced by what happened and what to do when somewhere in its chain SQLite reported
/// `path` damaged or not a database ([`DamagedFile`]); any other error is returned as it was.
pub fn explain_damage(err: anyhow::Error, path: &Path) -> anyhow::Error {
    let code = err
        .chain()
        .filter_map(|cause| cause.downcast_ref::<rusqlite::ffi::Error>())
        .map(|sqlite| sqlite.code)
        .next();
    let what = match code {
        Some(ErrorCode::DatabaseCorrupt) => "is damaged",
        Some(ErrorCode::NotADatabase) => "is not a SQLite database, or its first page is damaged",
        _ => return err,
    };
    // SQLite's own words, without the "Error code 11: " its error type puts before them.
    let sqlite = err.root_cause().to_string();
    let words = sqlite
        .split_once(": ")
        .filter(|(code, _)| code.starts_with("Error code"))
        .map_or(sqlite.as_str(), |(_, words)| words);
    anyhow::Error::new(DamagedFile(format!(
        "{} {what}: SQLite cannot read it ({words}). Porch cannot open it: restore a backup that \
         `porch check` passes (docs/operations.md, \"Restore\"), and keep this file aside for a \
         closer look",
        path.display(),
    )))
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::*;
    use crate::store::{Synchronous, open_write_connection};

    /// A database whose first page (the list of tables) is overwritten after SQLite's header.
    fn database_with_page_one_damaged(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("porch.db");
        let conn = open_write_connection(&path, Synchronous::Full).expect("open");
        conn.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); VACUUM")
            .expect("schema");
        drop(conn);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[200..4096].fill(0xAB);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    fn open_then_read(path: &Path) -> anyhow::Result<i64> {
        let conn = open_write_connection(path, Synchronous::Full)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?)
    }

    #[test]
    fn a_file_sqlite_cannot_read_is_named_with_what_to_do() {
        let dir = tempfile::tempdir().expect("dir");
        let path = database_with_page_one_damaged(dir.path());
        let err = open_then_read(&path).expect_err("a damaged first page");
        let said = format!("{:#}", explain_damage(err, &path));
        assert!(
            said.starts_with(&format!(
                "{} is damaged: SQLite cannot read it (database disk image is malformed). ",
                path.display()
            )),
            "{said}"
        );
        assert!(
            said.contains("restore a backup that `porch check` passes"),
            "{said}"
        );
        assert_eq!(
            said.matches("malformed").count(),
            1,
            "SQLite's words once: {said}"
        );
    }

    #[test]
    fn a_file_that_is_not_sqlite_is_named_as_such() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        std::fs::write(
            &path,
            "mail from 2024, saved in the wrong place\n".repeat(200),
        )
        .expect("write");
        let err = open_then_read(&path).expect_err("not a database");
        let said = format!("{:#}", explain_damage(err, &path));
        assert!(
            said.starts_with(&format!(
                "{} is not a SQLite database, or its first page is damaged",
                path.display()
            )),
            "{said}"
        );
    }

    #[test]
    fn another_error_is_left_as_it_was() {
        let err = anyhow::anyhow!("the disk is full");
        let said = format!("{:#}", explain_damage(err, Path::new("/data/porch.db")));
        assert_eq!(said, "the disk is full");
    }
}
