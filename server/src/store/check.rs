//! Checks of a database file for `porch check`: SQLite's own integrity and foreign-key checks, the
//! schema version against this binary's, and row counts. It only reads; it never migrates. An
//! older schema passes (the server migrates it on start), so a rolled-back backup checks clean
//! with the binary that will serve it.

use rusqlite::Connection;

use super::Error;
use super::migrate::{LATEST, schema_version};

/// Most problems listed per check; a badly damaged file would otherwise print thousands of lines.
const MAX_PROBLEMS: usize = 100;

/// What `porch check` found.
#[derive(Debug)]
pub struct CheckReport {
    /// `PRAGMA integrity_check` lines other than `ok`.
    pub integrity_errors: Vec<String>,
    /// `PRAGMA foreign_key_check` rows, as `table rowid → parent`; `Err` with SQLite's reason
    /// when the check could not run (a damaged file).
    pub foreign_key_errors: Result<Vec<String>, String>,
    /// The file's `user_version`.
    pub schema_version: u32,
    /// The version this binary migrates to.
    pub expected_version: u32,
    /// Every table (SQLite's internal ones excluded) with its row count, by name.
    pub row_counts: Vec<(String, i64)>,
}

impl CheckReport {
    /// True when nothing is wrong. A schema older than this binary's is not wrong: starting the
    /// server (or `porch migrate`) upgrades it. Version 0 is a file no Porch ever migrated, and a
    /// newer one is a file this binary refuses to open.
    pub fn is_healthy(&self) -> bool {
        self.integrity_errors.is_empty()
            && self.foreign_key_errors.as_ref().is_ok_and(Vec::is_empty)
            && (1..=self.expected_version).contains(&self.schema_version)
    }
}

/// Tables every Porch schema has had since the first migration.
const PORCH_TABLES: [&str; 3] = ["sites", "conversations", "messages"];

/// Whether `conn` holds a Porch database (rather than another application's SQLite file, or an
/// empty one): all of Porch's core tables exist.
pub fn is_porch_database(conn: &Connection) -> Result<bool, Error> {
    let mut statement =
        conn.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1")?;
    for table in PORCH_TABLES {
        let count: i64 = statement.query_row([table], |r| r.get(0))?;
        if count == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the file holds no table at all: a SQLite file made and never migrated (a first
/// `porch serve` stopped before its first migration), as opposed to another application's.
pub fn has_no_tables(conn: &Connection) -> Result<bool, Error> {
    let count: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
        [],
        |r| r.get(0),
    )?;
    Ok(count == 0)
}

/// Runs every check on `conn`. On a damaged file the reads after SQLite's integrity check can
/// fail too; what they hit is listed with the other damage, so the report still comes.
pub fn check_database(conn: &Connection) -> Result<CheckReport, Error> {
    let mut integrity_errors = integrity_errors(conn)
        .unwrap_or_else(|err| vec![format!("the integrity check stopped: {err}")]);
    let mut unreadable = Vec::new();
    let foreign_key_errors = foreign_key_errors(conn).map_err(|err| err.to_string());
    let schema_version = schema_version(conn)?;
    let mut names = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")?
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    names.dedup();
    let mut row_counts = Vec::with_capacity(names.len());
    for name in names {
        // Table names come from sqlite_schema, not from a user; quoting keeps odd names valid.
        let quoted = name.replace('"', "\"\"");
        match conn.query_row(&format!("SELECT count(*) FROM \"{quoted}\""), [], |r| {
            r.get(0)
        }) {
            Ok(count) => row_counts.push((name, count)),
            Err(err) => unreadable.push(format!("table {name} could not be counted: {err}")),
        }
    }
    integrity_errors.extend(unreadable);
    Ok(CheckReport {
        integrity_errors,
        foreign_key_errors,
        schema_version,
        expected_version: LATEST,
        row_counts,
    })
}

fn integrity_errors(conn: &Connection) -> Result<Vec<String>, Error> {
    let lines = conn
        .prepare(&format!("PRAGMA integrity_check({MAX_PROBLEMS})"))?
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(lines.into_iter().filter(|line| line != "ok").collect())
}

fn foreign_key_errors(conn: &Connection) -> Result<Vec<String>, Error> {
    let mut statement = conn.prepare("PRAGMA foreign_key_check")?;
    let rows = statement.query_map([], |r| {
        let table: String = r.get(0)?;
        let rowid: Option<i64> = r.get(1)?;
        let parent: String = r.get(2)?;
        Ok(match rowid {
            Some(rowid) => format!("{table} row {rowid} refers to a missing row of {parent}"),
            None => format!("{table} (a row without rowid) refers to a missing row of {parent}"),
        })
    })?;
    rows.take(MAX_PROBLEMS)
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Synchronous, apply_migrations, open_write_connection};

    fn migrated() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut conn =
            open_write_connection(&dir.path().join("porch.db"), Synchronous::Full).expect("open");
        apply_migrations(&mut conn).expect("migrate");
        (dir, conn)
    }

    #[test]
    fn a_freshly_migrated_database_is_healthy_and_counts_every_table() {
        let (_dir, conn) = migrated();
        let report = check_database(&conn).expect("check");
        assert!(report.is_healthy(), "{report:?}");
        assert_eq!(report.schema_version, LATEST);
        assert!(
            report
                .row_counts
                .iter()
                .any(|(name, n)| name == "messages" && *n == 0)
        );
    }

    #[test]
    fn a_dangling_foreign_key_is_reported() {
        let (_dir, conn) = migrated();
        conn.pragma_update(None, "foreign_keys", "OFF")
            .expect("pragma");
        conn.execute(
            "INSERT INTO site_origins (site_id, origin) VALUES (999, 'https://x.example')",
            [],
        )
        .expect("insert orphan");
        let report = check_database(&conn).expect("check");
        assert!(!report.is_healthy());
        assert_eq!(
            report.foreign_key_errors.as_ref().map(Vec::len),
            Ok(1),
            "{report:?}"
        );
    }

    #[test]
    fn a_never_migrated_or_newer_schema_fails() {
        let (_dir, conn) = migrated();
        conn.pragma_update(None, "user_version", 0).expect("pragma");
        assert!(!check_database(&conn).expect("check").is_healthy());
        conn.pragma_update(None, "user_version", LATEST + 1)
            .expect("pragma");
        assert!(!check_database(&conn).expect("check").is_healthy());
    }

    #[test]
    fn an_older_schema_passes_since_the_server_migrates_it() {
        let (_dir, conn) = migrated();
        conn.pragma_update(None, "user_version", LATEST - 1)
            .expect("pragma");
        assert!(check_database(&conn).expect("check").is_healthy());
    }

    /// A leaf page of `messages` overwritten, as a failing disk would: the report still comes,
    /// with the damage listed, instead of the first read error in its place.
    #[test]
    fn damage_inside_a_table_is_listed_in_the_report() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("damaged.db");
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA page_size = 4096; \
             CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT); \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) \
             INSERT INTO messages (body) SELECT printf('%0100d', i) FROM n;",
        )
        .expect("fill");
        drop(conn);
        let mut bytes = std::fs::read(&path).expect("read");
        let page = 30 * 4096;
        assert!(bytes.len() > page + 4096, "the table spans more pages");
        bytes[page..page + 2000].fill(0xA5);
        std::fs::write(&path, bytes).expect("write");

        let conn = Connection::open(&path).expect("reopen");
        let report = check_database(&conn).expect("a report, not an error");
        assert!(!report.is_healthy(), "{report:?}");
        assert!(
            report
                .integrity_errors
                .iter()
                .any(|line| line.starts_with("table messages could not be counted")),
            "{report:?}"
        );
    }
}
