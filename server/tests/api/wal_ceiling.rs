//! The WAL ceiling (`PORCH_WAL_LIMIT`, docs/operations.md): while a reader holds a read
//! transaction open, as a stuck Litestream does, no checkpoint can restart the WAL and every write
//! grows it. Past the ceiling Porch refuses writes (visitors are told `unavailable`) instead of
//! filling the disk, counts them in `/metrics`, and once the reader lets go it truncates the WAL
//! and takes writes again.

use std::time::Duration;

use serde_json::Value;

use crate::helpers::{Exchange as _, TestApp, WAIT, Widget, serve_config, wait_until};

const LIMIT: u64 = 1024 * 1024;
/// Between two messages of [`say_until`], so that the visitor's burst brake is not reached.
const SPACING: Duration = Duration::from_millis(300);

fn wal_len(app: &TestApp) -> u64 {
    std::fs::metadata(app.data_dir.path().join("porch.db-wal")).map_or(0, |m| m.len())
}

/// Sends messages until one is answered with `frame_type`, spaced so the visitor's burst brake
/// is not reached within the guard's one-second look at the WAL. Returns that answer.
async fn say_until(widget: &mut Widget, frame_type: &str, label: &str) -> Value {
    let mut n = 0;
    wait_until(&format!("{frame_type} while {label}"), WAIT, async || {
        let answer = widget
            .say(&format!("{label}-{n}"), &format!("{label} {n}"))
            .await;
        n += 1;
        if answer["type"] == frame_type {
            return Ok(answer);
        }
        tokio::time::sleep(SPACING).await;
        Err(answer)
    })
    .await
}

async fn refused_total(app: &TestApp) -> f64 {
    let answer = app.http.get("/metrics").answer().await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer
        .body
        .lines()
        .find_map(|line| {
            line.strip_prefix("porch_writer_refused_wal_limit_total ")?
                .parse()
                .ok()
        })
        .expect("the counter is exported")
}

#[tokio::test]
async fn past_the_wal_limit_writes_are_refused_until_a_stuck_reader_lets_go() {
    let app = TestApp::spawn_configured(&[], |config| config.wal_limit = LIMIT).await;
    let site = app.add_site("Ceiling");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("first", "first").await["type"], "ack");
    assert!(refused_total(&app).await < 1.0);

    // The stuck reader: another connection inside a read transaction.
    let reader = app.db();
    reader.execute_batch("BEGIN").expect("begin");
    let _: i64 = reader
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .expect("read");
    // Writes go on meanwhile; these 2 MiB from a third connection land in the pinned WAL.
    let filler = app.db();
    filler
        .busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    filler
        .execute_batch(
            "CREATE TABLE filler (x BLOB); INSERT INTO filler VALUES (zeroblob(2097152));",
        )
        .expect("filler");
    assert!(wal_len(&app) > LIMIT, "{}", wal_len(&app));

    let refused = say_until(&mut widget, "error", "stuck").await;
    assert_eq!(refused["code"], "unavailable", "{refused}");
    assert!(refused["retry_after_ms"].as_u64().is_some(), "{refused}");
    // Refused writes do not grow the WAL any further.
    let at_ceiling = wal_len(&app);
    let again = widget.say("again", "again").await;
    assert_eq!(again["code"], "unavailable", "{again}");
    assert_eq!(wal_len(&app), at_ceiling);
    assert!(refused_total(&app).await >= 2.0);

    // Litestream recovers: the next write finds the WAL truncated and is acknowledged.
    reader.execute_batch("COMMIT").expect("end read");
    say_until(&mut widget, "ack", "recovered").await;
    assert!(
        wal_len(&app) < LIMIT,
        "not truncated: {} bytes",
        wal_len(&app)
    );
}

#[test]
fn the_limit_is_validated_at_start_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let error = |value: &str| {
        serve_config(dir.path(), &["--wal-limit", value])
            .validate()
            .err()
            .map(|err| err.variable)
    };
    assert_eq!(error("1073741824"), None);
    assert_eq!(error("134217728"), None);
    assert_eq!(error("134217727"), Some("PORCH_WAL_LIMIT"));
    assert_eq!(error("1099511627777"), Some("PORCH_WAL_LIMIT"));
}
