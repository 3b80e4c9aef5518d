//! A damaged database is found early: the background check turns `/readyz` 503 `corrupt`, sets
//! the `/metrics` gauge to 0 and logs it. `porch check` is safe on any file: it creates nothing
//! beside the file it checks, and names non-Porch files and newer schemas plainly.

use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::helpers::{Exchange as _, Http, TestApp, WAIT, listing, ok_if, wait_until};
use crate::process::{Served, porch, run, run_within};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// One `GET`: the status and the body (`None` while the port is not yet open).
async fn get(http: &Http, path: &str) -> Option<(u16, String)> {
    let answer = http.get(path).try_answer().await.ok()?;
    Some((answer.status, answer.body))
}

/// The value of an unlabelled metric in an exposition.
fn metric(exposition: &str, name: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok())?
    })
}

/// A migrated Porch database in `dir` holding `rows` messages, closed (no `-wal` left).
fn porch_database_with_messages(dir: &Path, rows: u32) -> PathBuf {
    let migrated = run(dir, &["migrate"]);
    assert!(migrated.status.success(), "{}", stderr(&migrated));
    let path = dir.join("porch.db");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(
        "INSERT INTO sites (id, key, name, created_at) VALUES (1, 'k', 'Shop', 0); \
         INSERT INTO visitors (id, site_id, token_hash, first_seen_at, last_seen_at) \
             VALUES (1, 1, x'00', 0, 0); \
         INSERT INTO conversations (id, site_id, visitor_id, created_at, last_message_at) \
             VALUES (1, 1, 1, 0, 0);",
    )
    .expect("parents");
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
         INSERT INTO messages (conversation_id, author, author_name, body, created_at) \
         SELECT 1, 'agent', 'Ann', printf('message %d %.200c', i, 'x'), i FROM n",
        [rows],
    )
    .expect("insert messages");
    drop(conn);
    assert!(
        !dir.join("porch.db-wal").exists(),
        "closing the last connection checkpoints and removes the WAL"
    );
    path
}

/// Overwrites whole pages in the middle of the file, where the messages table's b-tree lives
/// (it fills most of the file), as a failing disk or a torn copy would.
fn damage_pages_in_the_middle(path: &Path) {
    const PAGE: usize = 4096;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open for damage");
    let pages = file.seek(SeekFrom::End(0)).expect("size") / PAGE as u64;
    assert!(pages > 100, "the file is big enough to damage its middle");
    for page in [pages / 2, pages / 2 + 1, pages / 2 + 2] {
        file.seek(SeekFrom::Start(page * PAGE as u64))
            .expect("seek");
        file.write_all(&[0xA5; PAGE]).expect("damage");
    }
    file.sync_all().expect("sync");
}

/// Starts `porch serve` on a free port with its log in `log`.
fn serve(data_dir: &Path, log: &Path) -> (Served, Http) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let child = porch(data_dir, &["serve", "--listen", &listen, "--log", "info"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("porch serve starts");
    (Served(child), Http::new(([127, 0, 0, 1], port).into()))
}

#[tokio::test]
async fn a_damaged_database_makes_readiness_503_corrupt_with_the_gauge_at_0_and_a_log_line() {
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data dir");
    let path = porch_database_with_messages(&data, 20_000);
    damage_pages_in_the_middle(&path);
    let log = dir.path().join("serve.log");
    let (_served, http) = serve(&data, &log);

    // Before the check has finished it is 503 `migrating`, then 200 `ready` for a moment.
    let (status, readiness) = wait_until("/readyz to say corrupt", WAIT * 2, async || {
        let (status, body) = get(&http, "/readyz").await.ok_or(None)?;
        let body: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        ok_if((status, body), |(_, body)| body["reason"] == "corrupt").map_err(Some)
    })
    .await;
    assert_eq!(status, 503, "{readiness}");
    let (status, exposition) = get(&http, "/metrics").await.expect("metrics");
    assert_eq!(status, 200);
    assert_eq!(
        metric(&exposition, "porch_database_integrity"),
        Some(0.0),
        "{exposition}"
    );
    assert!(
        metric(&exposition, "porch_database_integrity_checked_at_seconds").is_some_and(|t| t > 0.0)
    );
    let logged = std::fs::read_to_string(&log).expect("log");
    let line = logged
        .lines()
        .find(|line| line.contains("database integrity check FAILED"))
        .unwrap_or_else(|| panic!("no integrity line in the log:\n{logged}"));
    assert!(line.contains("ERROR"), "{line}");
    // One line, the problem count on it too.
    assert!(line.contains("problems="), "{logged}");
    // The liveness probe stays up: the process is fine, only its file is not.
    assert_eq!(get(&http, "/healthz").await.map(|(s, _)| s), Some(200));
}

#[tokio::test]
async fn a_healthy_database_reaches_gauge_1_and_stays_ready() {
    let app = TestApp::spawn(&[]).await;
    wait_until("the check to finish", WAIT, async || {
        let exposition = app.http.get("/metrics").answer().await.body;
        match metric(&exposition, "porch_database_integrity") {
            Some(1.0) => Ok(()),
            Some(-1.0) => Err(exposition),
            other => panic!("unexpected integrity gauge {other:?}:\n{exposition}"),
        }
    })
    .await;
    assert_eq!(app.http.get("/readyz").answer().await.status, 200);
}

#[test]
fn check_leaves_the_directory_of_a_stopped_database_exactly_as_it_was() {
    // Tests run as root, for whom a chmod-ed read-only directory is writable anyway: the only
    // honest test of "touches nothing" is the directory's listing before and after.
    let dir = tempfile::tempdir().expect("dir");
    let path = porch_database_with_messages(dir.path(), 100);
    let backups = tempfile::tempdir().expect("backups");
    let copy = backups.path().join("porch-2024-05-01.db");
    std::fs::copy(&path, &copy).expect("copy");
    let before = listing(backups.path());

    let output = run(
        dir.path(),
        &["check", "--db", copy.to_str().expect("utf-8")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(listing(backups.path()), before);
}

#[tokio::test]
async fn check_beside_a_running_server_reads_its_wal_and_creates_nothing() {
    let app = TestApp::spawn(&[]).await;
    app.add_site("Shop");
    let before = listing(app.data_dir.path());
    assert!(before.contains(&"porch.db-wal".to_owned()), "{before:?}");

    let output = run(app.data_dir.path(), &["check"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = String::from_utf8_lossy(&output.stdout);
    // The site was committed to the WAL only: the check saw it, so it read through the WAL.
    assert!(
        report
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["sites", "1"]),
        "{report}"
    );
    assert_eq!(listing(app.data_dir.path()), before);
}

/// Runs `porch check --db file` (from `dir`), which must refuse it: what it says.
fn check_refusal(dir: &Path, file: &Path) -> String {
    let output = run(dir, &["check", "--db", file.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(1));
    stderr(&output)
}

#[test]
fn check_names_another_applications_sqlite_file_and_one_never_migrated() {
    let dir = tempfile::tempdir().expect("dir");
    for (name, schema, expected) in [
        (
            "notes.db",
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)",
            "is a SQLite database but not a Porch database (no Porch tables, schema version 0)",
        ),
        // A SQLite file with no tables at all is most likely Porch's own, never migrated.
        (
            "porch.db",
            "PRAGMA user_version = 0; VACUUM",
            "is a SQLite database with no tables yet: a start that stopped before its first \
             migration",
        ),
    ] {
        let file = dir.path().join(name);
        rusqlite::Connection::open(&file)
            .expect("open")
            .execute_batch(schema)
            .expect("schema");
        let message = check_refusal(dir.path(), &file);
        assert!(message.contains(expected), "{message}");
        if name == "notes.db" {
            assert!(!message.contains("migrate"), "{message}");
        }
    }
}

#[test]
fn check_on_an_empty_file_or_a_text_file_says_so_in_one_line() {
    let dir = tempfile::tempdir().expect("dir");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("empty");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database at all\n".repeat(100)).expect("text");

    for (file, expected) in [
        (&empty, "is empty (0 bytes): not a Porch database"),
        (&text, "is not a SQLite database"),
    ] {
        let message = check_refusal(dir.path(), file);
        assert!(message.contains(expected), "{message}");
        assert_eq!(message.trim().lines().count(), 1, "{message}");
    }
    assert_eq!(std::fs::metadata(&empty).expect("empty").len(), 0);
}

#[test]
fn a_newer_schema_is_named_plainly_by_serve_migrate_check_and_raise_ids() {
    let dir = tempfile::tempdir().expect("dir");
    let path = porch_database_with_messages(dir.path(), 1);
    rusqlite::Connection::open(&path)
        .expect("open")
        .pragma_update(None, "user_version", 99)
        .expect("newer version");
    let expected = format!(
        "the database is at schema version 99, newer than this porch ({}): run a newer Porch \
         or restore a backup",
        porch::store::LATEST_SCHEMA
    );

    for args in [
        &["serve", "--listen", "127.0.0.1:0"][..],
        &["migrate"],
        &["check"],
        &["raise-ids", "--by", "1"],
    ] {
        let output = run(dir.path(), args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let message = stderr(&output);
        assert!(message.contains(&expected), "{args:?}: {message}");
        assert!(!message.contains("Invalid parameter name"), "{args:?}");
    }
    let next: i64 = rusqlite::Connection::open(&path)
        .expect("open")
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'messages'",
            [],
            |r| r.get(0),
        )
        .expect("counter");
    assert_eq!(next, 1, "raise-ids changed no counter");
}

/// A 0-byte `porch.db` (a failed copy; an on-boot restore skips a directory that has one) and
/// another application's SQLite file are refused by every command as `porch check` refuses them,
/// and left as they were: SQLite would have taken the first as a new database and migrated
/// Porch's tables into the second, answering as a fresh install. The start removes the sealing
/// key it generated.
#[test]
fn an_empty_file_or_another_applications_file_is_refused_by_every_command() {
    let other_schema = "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');";
    for (schema, expected) in [
        (None, "is empty (0 bytes): not a Porch database."),
        (
            Some(other_schema),
            "is a SQLite database but not a Porch database (no Porch tables, schema version 0)",
        ),
    ] {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("porch.db");
        std::fs::write(&path, b"").expect("file");
        if let Some(schema) = schema {
            let conn = rusqlite::Connection::open(&path).expect("open");
            conn.execute_batch(schema).expect("schema");
        }
        let before = std::fs::read(&path).expect("read");
        for args in [
            &["serve", "--listen", "127.0.0.1:0"][..],
            &["migrate"],
            &["check"],
            &["site", "list"],
            &["user", "list"],
            &["export", "--all"],
        ] {
            let output = run_within(dir.path(), args, Duration::from_mins(1));
            assert_eq!(output.status.code(), Some(1), "{args:?}");
            let message = stderr(&output);
            let named = format!("{} {expected}", path.display());
            assert!(message.contains(&named), "{args:?}: {message}");
        }
        assert_eq!(
            std::fs::read(&path).expect("read"),
            before,
            "left as it was"
        );
        assert!(
            !dir.path().join("secret.key").exists(),
            "the key serve generated is gone"
        );
    }
}

/// A file whose first page, SQLite's list of tables, is overwritten cannot be opened at all: every
/// command names the file and what to do, in SQLite's words once, and the start removes the
/// sealing key it generated for it (nothing was sealed with it).
#[test]
fn a_file_sqlite_cannot_read_is_named_plainly_by_every_command() {
    let dir = tempfile::tempdir().expect("dir");
    let path = porch_database_with_messages(dir.path(), 10);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[200..4096].fill(0xAB);
    std::fs::write(&path, bytes).expect("damage page 1");
    let expected = format!(
        "{} is damaged: SQLite cannot read it (database disk image is malformed). Porch cannot \
         open it: restore a backup that `porch check` passes",
        path.display()
    );

    for args in [
        &["serve", "--listen", "127.0.0.1:0"][..],
        &["migrate"],
        &["check"],
        &["site", "list"],
    ] {
        let output = run(dir.path(), args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let message = stderr(&output);
        assert!(message.contains(&expected), "{args:?}: {message}");
        assert_eq!(
            message.matches("malformed").count(),
            1,
            "{args:?}: {message}"
        );
        let named = format!("{}", path.display());
        assert_eq!(
            message.matches(&named).count(),
            1,
            "the path once: {args:?}: {message}"
        );
    }
    assert!(
        !dir.path().join("secret.key").exists(),
        "the key serve generated is gone"
    );
}

/// `porch migrate` says what it did: from which schema version to which, or that there was
/// nothing to do (both printed the same line before).
#[test]
fn migrate_says_whether_it_migrated() {
    let dir = tempfile::tempdir().expect("dir");
    let first = run(dir.path(), &["migrate"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let said = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(
        said.contains("migrated from schema version 0 to "),
        "{said}"
    );
    let again = run(dir.path(), &["migrate"]);
    let said = String::from_utf8_lossy(&again.stdout).into_owned();
    assert!(said.ends_with(": nothing to do\n"), "{said}");
}
