//! Capacity figures end to end: `/metrics` after real widget traffic and who may read it, the
//! sampler's minute rollups in SQLite with their 30-day pruning, and load-test runs recorded in
//! the live database.

use std::time::Duration;

use porch::metrics::SamplerTiming;

use crate::helpers::{Exchange as _, TestApp, WAIT, ok_if, wait_until};

const DAY_MS: i64 = 24 * 3600 * 1000;

async fn get(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = app.http.get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let answer = request.answer().await;
    (answer.status, answer.body)
}

/// The value of an unlabelled sample line `name value` in an exposition.
pub(crate) fn value_of(exposition: &str, name: &str) -> Option<f64> {
    exposition
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Polls `/metrics` until `check` holds, failing after [`WAIT`].
pub(crate) async fn metrics_until(
    app: &TestApp,
    what: &str,
    check: impl Fn(&str) -> bool,
) -> String {
    wait_until(what, WAIT, async || {
        let (status, body) = get(app, "/metrics", &[]).await;
        assert_eq!(status, 200, "{body}");
        if check(&body) { Ok(body) } else { Err(body) }
    })
    .await
}

#[tokio::test]
async fn metrics_count_acks_stored_messages_and_open_widget_connections() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    for i in 0..3 {
        let ack = widget.say(&format!("c{i}"), "hello").await;
        assert_eq!(ack["type"], "ack", "{ack}");
    }
    // A resend of a stored message is acked again, but stores nothing.
    let resent = widget.say("c0", "hello").await;
    assert_eq!(resent["type"], "ack", "{resent}");

    let (status, body) = get(&app, "/metrics", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        value_of(&body, "porch_visitor_messages_acked_total"),
        Some(4.0),
        "{body}"
    );
    assert_eq!(
        value_of(&body, "porch_visitor_messages_stored_total"),
        Some(3.0),
        "{body}"
    );
    assert_eq!(
        value_of(&body, "porch_ack_latency_seconds_count"),
        Some(4.0)
    );
    assert!(value_of(&body, "porch_ack_latency_seconds_sum").is_some_and(|s| s > 0.0));
    assert_eq!(value_of(&body, "porch_widget_connections"), Some(1.0));
    assert_eq!(value_of(&body, "porch_agent_connections"), Some(0.0));
    assert!(value_of(&body, "porch_writer_writes_total").is_some_and(|n| n >= 3.0));
    assert!(body.contains("# HELP porch_visitor_messages_acked_total "));
    assert!(body.contains("# TYPE porch_ack_latency_seconds histogram"));
    assert!(body.contains(r#"porch_ack_latency_seconds_bucket{le="+Inf"} 4"#));

    drop(widget);
    metrics_until(&app, "the closed widget to leave the gauge", |body| {
        value_of(body, "porch_widget_connections") == Some(0.0)
    })
    .await;
}

#[tokio::test]
async fn metrics_are_refused_to_requests_forwarded_by_an_untrusted_proxy() {
    let app = TestApp::spawn(&[]).await;
    // Loopback, but a proxy says the client is elsewhere and nobody vouches for the proxy.
    let (status, body) = get(&app, "/metrics", &[("X-Forwarded-For", "10.0.0.7")]).await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("porch_"), "{body}");
}

#[tokio::test]
async fn metrics_are_refused_through_a_trusted_proxy_without_the_token() {
    let app = TestApp::spawn(&["--trusted-proxies", "127.0.0.1"]).await;
    // A proxy's own address is local whoever the client is, with or without forwarding headers
    // (nginx adds none unless told to), and the headers themselves can be forged upstream.
    for headers in [
        &[("X-Forwarded-For", "203.0.113.9")][..],
        &[("X-Forwarded-For", "10.0.0.7")][..],
        &[("X-Real-IP", "10.0.0.7")][..],
        &[][..],
    ] {
        let (status, body) = get(&app, "/metrics", headers).await;
        assert_eq!(status, 403, "{headers:?}: {body}");
    }
}

#[tokio::test]
async fn metrics_need_the_token_when_one_is_configured() {
    let app = TestApp::spawn(&["--metrics-token", "s3cret-token"]).await;
    let (status, _) = get(&app, "/metrics", &[]).await;
    assert_eq!(
        status, 403,
        "loopback alone is not enough once a token is set"
    );
    let (status, body) = get(&app, "/metrics", &[("Authorization", "Bearer wrong")]).await;
    assert_eq!(status, 403);
    assert!(body.contains("need the metrics token"), "{body}");
    let (status, body) = get(
        &app,
        "/metrics",
        &[("Authorization", "Bearer s3cret-token")],
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        body.contains("porch_visitor_messages_acked_total 0"),
        "{body}"
    );
}

#[tokio::test]
async fn minute_rollups_are_stored_and_rows_past_30_days_pruned() {
    // A "minute" of 200 ms, so rollups come quickly.
    let app = TestApp::spawn_configured(&[], |config| {
        config.sampler = SamplerTiming {
            every: Duration::from_millis(50),
            rollup_every: Duration::from_millis(200),
        };
    })
    .await;
    let now = porch::clock::now_ms();
    let db = app.db();
    for at in [now - 31 * DAY_MS, now - 29 * DAY_MS] {
        db.execute(
            "INSERT INTO metrics_minutes (at, samples) VALUES (?1, 60)",
            [at],
        )
        .expect("insert an old minute");
    }
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    for i in 0..5 {
        assert_eq!(widget.say(&format!("c{i}"), "hi").await["type"], "ack");
    }

    wait_until(
        "a rollup with the traffic (busy > 0) and the old row pruned (old = 0)",
        WAIT,
        async || {
            let busy = app.count(&format!(
                "SELECT count(*) FROM metrics_minutes WHERE at >= {now} - 60000 AND messages_per_sec_max > 0 \
                 AND ack_p99_ms_max > 0 AND widget_connections_max >= 1 AND cpu_pct_mean IS NOT NULL"
            ));
            let old = app.count(&format!(
                "SELECT count(*) FROM metrics_minutes WHERE at < {}",
                now - 30 * DAY_MS
            ));
            ok_if((busy, old), |(busy, old)| *busy > 0 && *old == 0)
        },
    )
    .await;
    let kept = app.count(&format!(
        "SELECT count(*) FROM metrics_minutes WHERE at = {}",
        now - 29 * DAY_MS
    ));
    assert_eq!(kept, 1, "a 29-day-old minute is kept");
}

/// A small `porch loadtest` result: two passing stairs of the `porch` series.
pub(crate) const REPORT: &str = r#"{
  "started_at": "2026-03-01T10:00:00Z", "command": "porch loadtest --stairs 1000,5000",
  "machine": {"cores": 2, "cpu_model": "Test CPU <b>", "kernel": "6.1"},
  "placement": "taskset", "visitors": 200, "sites": 8, "idle": 0, "flood_rate": 0,
  "warmup_ms": 2000, "duration_ms": 5000, "gate_p99_ms": 50.0,
  "series": [{"name": "porch", "stairs": [
    {"target": 1000, "round": 1, "achieved": 1000.0, "sent": 5000, "acked": 5000,
     "refused": {}, "broken": 0, "p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.5, "p999_ms": 4.0,
     "max_ms": 9.0, "server_cpu_pct": 5.0, "server_us_per_msg": 50.0, "server_rss_mb": 20.0,
     "loadgen_cpu_pct": 3.0, "idle_kib_per_socket": null, "connect_ms": 40, "slack": null,
     "flood": null, "passed": true},
    {"target": 5000, "round": 1, "achieved": 4990.0, "sent": 25000, "acked": 24950,
     "refused": {}, "broken": 0, "p50_ms": 2.0, "p90_ms": 4.0, "p99_ms": 12.25, "p999_ms": 20.0,
     "max_ms": 30.0, "server_cpu_pct": 26.0, "server_us_per_msg": 52.0, "server_rss_mb": 22.0,
     "loadgen_cpu_pct": 9.0, "idle_kib_per_socket": null, "connect_ms": 40, "slack": null,
     "flood": null, "passed": true}]}]
}"#;

#[test]
fn a_load_test_run_is_recorded_in_the_live_database_with_its_summary() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut db = crate::helpers::TestDb::open(dir.path()).db();
    porch::store::apply_migrations(&mut db).expect("a live database");
    let report: porch::loadtest::Report = serde_json::from_str(REPORT).expect("a report");
    let id = porch::loadtest::record_run(&report, dir.path())
        .expect("recorded")
        .expect("the live database exists");
    let row: (i64, i64, bool, f64, String) = crate::helpers::TestDb::open(dir.path())
        .db()
        .query_row(
            "SELECT started_at, capacity, is_passed, us_per_msg, report FROM loadtest_runs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .expect("the row");
    assert_eq!(row.0, 1_772_359_200_000, "2026-03-01T10:00:00Z");
    assert_eq!(row.1, 5000, "the highest passing porch stair");
    assert!(row.2);
    assert!(
        (row.3 - 51.0).abs() < 1e-9,
        "median µs/msg of the passing stairs (50 and 52: the mean of the two)"
    );
    assert!(row.4.contains("Test CPU"));
}

#[test]
fn a_load_test_creates_no_database_where_there_is_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let report: porch::loadtest::Report = serde_json::from_str(REPORT).expect("a report");
    assert_eq!(
        porch::loadtest::record_run(&report, dir.path()).expect("no error"),
        None
    );
    assert!(!dir.path().join("porch.db").exists());
}

/// A database another program keeps locked (an operator's `sqlite3` left in a transaction)
/// fails the writer's batches after the busy timeout: the visitor is told `unavailable` and may
/// resend, and `/metrics` counts the rolled-back batch, so the state shows outside the log.
#[tokio::test]
async fn a_batch_failing_on_a_locked_database_is_counted_and_its_resend_stored_once() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("m1", "hello").await["type"], "ack");
    let (_, body) = get(&app, "/metrics", &[]).await;
    assert_eq!(
        value_of(&body, "porch_writer_failed_batches_total"),
        Some(0.0)
    );

    let outsider = app.db();
    outsider
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let refused = widget.say("m2", "while locked").await;
    assert_eq!(
        (&refused["type"], &refused["code"]),
        (
            &serde_json::json!("error"),
            &serde_json::json!("unavailable")
        ),
        "{refused}"
    );
    metrics_until(&app, "the failed batch to be counted", |body| {
        value_of(body, "porch_writer_failed_batches_total").is_some_and(|n| n >= 1.0)
    })
    .await;
    outsider.execute_batch("ROLLBACK").expect("let go");
    drop(outsider);

    assert_eq!(widget.say("m2", "while locked").await["type"], "ack");
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE client_id = 'm2'"),
        1
    );
}

/// A message committed after its widget went away (the socket cut while the write waited) is
/// stored without its ack ever being written: `stored` counts it, `acked` does not, and its
/// resend is an ack of a message stored already, not a second one.
#[tokio::test]
async fn a_message_stored_after_its_widget_left_counts_as_stored_and_its_resend_as_an_ack() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    assert_eq!(widget.say("m1", "hello").await["type"], "ack");

    // The write waits for the lock; the frame is read before the close that follows it.
    let outsider = app.db();
    outsider
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    widget
        .send(serde_json::json!({"type": "message", "client_id": "m2", "body": "cut off"}))
        .await;
    drop(widget);
    // Its connection ended (the frame was read before the close): only then may the write
    // commit, with no socket left to write its ack to.
    metrics_until(&app, "the widget's connection to end", |body| {
        value_of(body, "porch_widget_connections") == Some(0.0)
    })
    .await;
    outsider.execute_batch("ROLLBACK").expect("let go");
    drop(outsider);
    let counted = |stored: f64, acked: f64| {
        move |body: &str| {
            value_of(body, "porch_visitor_messages_stored_total") == Some(stored)
                && value_of(body, "porch_visitor_messages_acked_total") == Some(acked)
        }
    };
    metrics_until(&app, "m2 stored, its ack never written", counted(2.0, 1.0)).await;
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE client_id = 'm2'"),
        1
    );

    let (mut again, _) = app.visitor(&site, Some(&token), 0).await;
    assert_eq!(again.say("m2", "cut off").await["type"], "ack");
    metrics_until(&app, "the resend acked, nothing stored", counted(2.0, 2.0)).await;
}

/// The value of the series `name{labels}` (labels as the exposition writes them).
fn series(exposition: &str, name: &str, labels: &str) -> Option<f64> {
    value_of(exposition, &format!("{name}{{{labels}}}"))
}

#[tokio::test]
async fn metrics_give_each_integrations_health_and_the_jobs_in_each_state() {
    let f = crate::webhooks::Fixture::start(&["--allow-private-networks"]).await;
    for path in ["/ok", "/down", "/gone"] {
        f.endpoint(path, &["message.created"]).await;
    }
    let off = f.endpoint("/off", &["message.created"]).await.0;
    f.mock.answer("/down", &[500; 8]);
    f.mock.answer("/gone", &[410]);
    let (status, _) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/integrations/{off}/turn-off"),
            &f.admin,
            None,
        )
        .await;
    assert_eq!(status, 200);
    let before = metrics_until(&f.app, "the gauges", |body| {
        series(body, "porch_integrations", r#"kind="webhook",health="off""#) == Some(1.0)
    })
    .await;
    assert_eq!(
        series(
            &before,
            "porch_integrations",
            r#"kind="webhook",health="healthy""#
        ),
        Some(3.0),
        "nothing was tried yet: {before}"
    );
    assert_eq!(
        series(
            &before,
            "porch_integrations",
            r#"kind="slack",health="failing""#
        ),
        Some(0.0)
    );
    assert_eq!(
        series(&before, "porch_jobs", r#"state="failed""#),
        Some(0.0)
    );

    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    assert_eq!(visitor.say("v1", "hello").await["type"], "ack");
    let judged = |health: &str| format!(r#"kind="webhook",health="{health}""#);
    let jobs = |body: &str, state: &str| series(body, "porch_jobs", &format!(r#"state="{state}""#));
    // The failing endpoint's delivery waits for its retry (or is being retried); the gone one's
    // waits for an admin.
    let after = metrics_until(
        &f.app,
        "one of each health and two unfinished jobs",
        |body| {
            ["healthy", "failing", "blocked", "off"]
                .iter()
                .all(|h| series(body, "porch_integrations", &judged(h)) == Some(1.0))
                && jobs(body, "blocked") == Some(1.0)
                && jobs(body, "queued")
                    .zip(jobs(body, "running"))
                    .map(|(q, r)| q + r)
                    == Some(1.0)
        },
    )
    .await;
    assert_eq!(jobs(&after, "failed"), Some(0.0), "{after}");
    assert!(after.contains("# TYPE porch_integrations gauge"), "{after}");
}
