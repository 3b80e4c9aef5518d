//! `porch backup FILE` as an operator runs it: the binary beside a real `porch serve` process
//! whose widget keeps sending, checked with `porch check` and by counting the copy's rows; and
//! its refusals, which leave no file behind.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::helpers::{ORIGIN, TestDb, Widget, listing};
use crate::shutdown::Porch;

/// Bound on any wait: the server's start-up and readiness, or one command's whole run.
const WAIT: Duration = Duration::from_secs(20);

/// `porch --data-dir DATA_DIR ARGS…`, run to the end (killed, failing the test, past [`WAIT`]).
async fn porch(data_dir: &Path, args: &[&str]) -> Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env_remove("PORCH_DATA_DIR")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(WAIT, run)
        .await
        .unwrap_or_else(|_| panic!("porch {args:?} did not end within {WAIT:?}"))
        .expect("porch runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A data directory with a migrated database and no server.
async fn migrated() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let migrate = porch(dir.path(), &["migrate"]).await;
    assert!(migrate.status.success(), "{}", text(&migrate.stderr));
    dir
}

/// Visitor messages in the database file at `path` whose `client_id` starts with `prefix`.
fn messages_in(path: &Path, prefix: &str) -> i64 {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the copy");
    conn.query_row(
        "SELECT count(*) FROM messages WHERE client_id LIKE ?1 || '%'",
        [prefix],
        |row| row.get(0),
    )
    .expect("count")
}

#[tokio::test]
async fn a_backup_beside_a_running_server_holds_every_acked_message_and_passes_the_check() {
    const BEFORE: i64 = 25;
    let dir = tempfile::tempdir().expect("dir");
    let server = Porch::spawn(dir.path(), "0s");
    let (addr, _) = server.wait_ready().await;
    let db = TestDb::open(dir.path());
    let site = db.add_site("Shop");
    // Room for every message of the test at once: the brakes are not what is tested.
    db.set_site_limits(&site, 6000, 1000, 60_000, 600);
    let mut widget = Widget::connect(addr, &site, ORIGIN).await;
    widget.hello(None, 0).await;
    for i in 0..BEFORE {
        let ack = widget
            .say(&format!("before-{i}"), "acked before the backup")
            .await;
        assert_eq!(ack["type"], "ack", "{ack}");
    }
    // The widget goes on sending while the copy is made: the server's writer is not stopped.
    let during = tokio::spawn(async move {
        for i in 0..50 {
            let ack = widget
                .say(&format!("during-{i}"), "sent during the backup")
                .await;
            assert_eq!(ack["type"], "ack", "{ack}");
        }
        widget
    });
    let out = tempfile::tempdir().expect("dir");
    let copy = out.path().join("copy.db");
    let backup = porch(dir.path(), &["backup", copy.to_str().expect("utf-8")]).await;
    let mut widget = during.await.expect("the widget's messages were all acked");

    let said = text(&backup.stdout);
    assert!(backup.status.success(), "{said}{}", text(&backup.stderr));
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.starts_with(&format!("{}: ", copy.display())), "{said}");
    assert!(said.contains(" MB, schema version "), "{said}");
    assert!(said.contains("sealing key is not in it"), "{said}");
    assert_eq!(messages_in(&copy, "before-"), BEFORE);
    let mode = std::fs::metadata(&copy)
        .expect("the copy")
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640, "mode {mode:o}");
    assert_eq!(listing(out.path()), ["copy.db"], "nothing but the copy");

    let check = porch(
        dir.path(),
        &["check", "--db", copy.to_str().expect("utf-8")],
    )
    .await;
    assert!(
        check.status.success(),
        "{}{}",
        text(&check.stdout),
        text(&check.stderr)
    );
    // The server kept its data directory and goes on serving.
    let ack = widget.say("after-0", "after the backup").await;
    assert_eq!(ack["type"], "ack", "{ack}");
}

#[tokio::test]
async fn a_backup_with_the_server_stopped_is_a_whole_copy() {
    let dir = migrated().await;
    TestDb::open(dir.path()).add_site("Shop");
    let out = tempfile::tempdir().expect("dir");
    let copy = out.path().join("copy.db");
    let before = listing(dir.path());

    let backup = porch(dir.path(), &["backup", copy.to_str().expect("utf-8")]).await;
    let said = text(&backup.stdout);
    assert!(backup.status.success(), "{said}{}", text(&backup.stderr));
    // Read as it lies, under the data directory's lock: no -wal or -shm made beside it.
    assert_eq!(listing(dir.path()), before);
    let version = format!("schema version {},", porch::store::LATEST_SCHEMA);
    assert!(said.contains(&version), "{said}");
    let conn =
        rusqlite::Connection::open_with_flags(&copy, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the copy");
    let sites: i64 = conn
        .query_row("SELECT count(*) FROM sites", [], |row| row.get(0))
        .expect("count");
    assert_eq!(sites, 1);
    let check = porch(
        dir.path(),
        &["check", "--db", copy.to_str().expect("utf-8")],
    )
    .await;
    assert!(check.status.success(), "{}", text(&check.stdout));
}

#[tokio::test]
async fn an_existing_file_is_refused_and_left_as_it_was() {
    let dir = migrated().await;
    let out = tempfile::tempdir().expect("dir");
    let existing = out.path().join("backup.db");
    std::fs::write(&existing, b"an older backup").expect("write");

    let backup = porch(dir.path(), &["backup", existing.to_str().expect("utf-8")]).await;
    assert_eq!(backup.status.code(), Some(1), "{}", text(&backup.stdout));
    let said = text(&backup.stderr);
    assert!(
        said.contains(&format!("{} already exists", existing.display())),
        "{said}"
    );
    assert!(said.contains("never replaces one"), "{said}");
    assert_eq!(std::fs::read(&existing).expect("read"), b"an older backup");
    assert_eq!(listing(out.path()), ["backup.db"], "no partial file left");
}

/// A copy that fails half way (a damaged page in the live database) leaves nothing behind.
#[tokio::test]
async fn a_copy_that_fails_leaves_no_file() {
    let dir = migrated().await;
    let path = dir.path().join("porch.db");
    let conn = rusqlite::Connection::open(&path).expect("open");
    // Rows written last, so the file's last pages are their leaves; out of WAL mode, so every
    // page is in the file itself.
    conn.execute_batch(
        "PRAGMA journal_mode = DELETE; CREATE TABLE filler (body BLOB);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
         INSERT INTO filler SELECT randomblob(1000) FROM n;",
    )
    .expect("filler");
    drop(conn);
    let mut bytes = std::fs::read(&path).expect("read");
    let len = bytes.len();
    bytes[len - 8 * 4096..].fill(0xff);
    std::fs::write(&path, bytes).expect("damage");
    let out = tempfile::tempdir().expect("dir");
    let target = out.path().join("backup.db");

    let backup = porch(dir.path(), &["backup", target.to_str().expect("utf-8")]).await;
    assert_eq!(backup.status.code(), Some(1), "{}", text(&backup.stdout));
    let said = text(&backup.stderr);
    assert!(said.contains("malformed"), "{said}");
    assert!(listing(out.path()).is_empty(), "{:?}", listing(out.path()));
}

#[tokio::test]
async fn a_missing_destination_directory_is_refused_and_not_created() {
    let dir = migrated().await;
    let out = tempfile::tempdir().expect("dir");
    let target = out.path().join("missing").join("backup.db");

    let backup = porch(dir.path(), &["backup", target.to_str().expect("utf-8")]).await;
    assert_eq!(backup.status.code(), Some(1), "{}", text(&backup.stdout));
    let said = text(&backup.stderr);
    assert!(
        said.contains(&format!(
            "the directory {} does not exist",
            out.path().join("missing").display()
        )),
        "{said}"
    );
    assert!(listing(out.path()).is_empty(), "{:?}", listing(out.path()));
}

#[tokio::test]
async fn a_data_directory_without_a_database_is_refused_and_left_empty() {
    let dir = tempfile::tempdir().expect("dir");
    let out = tempfile::tempdir().expect("dir");
    let target = out.path().join("backup.db");

    let backup = porch(dir.path(), &["backup", target.to_str().expect("utf-8")]).await;
    assert_eq!(backup.status.code(), Some(1), "{}", text(&backup.stdout));
    let said = text(&backup.stderr);
    assert!(
        said.contains(&format!(
            "there is no database at {}",
            dir.path().join("porch.db").display()
        )),
        "{said}"
    );
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    assert!(listing(out.path()).is_empty(), "{:?}", listing(out.path()));
}

#[tokio::test]
async fn a_backup_without_a_file_is_a_bad_argument() {
    let dir = migrated().await;
    let backup = porch(dir.path(), &["backup"]).await;
    assert_eq!(backup.status.code(), Some(2), "{}", text(&backup.stderr));
}
