//! The capacity page: admins only, graphs that follow live traffic, and recorded load-test runs
//! with their headroom fallback.

use std::time::Duration;

use crate::helpers::{TestApp, WAIT, wait_until};
use crate::inbox::{PASSWORD, add_user, send, setup_admin, sign_in, signed_in_from};
use crate::metrics::REPORT;

#[tokio::test]
async fn the_capacity_page_is_for_admins_only() {
    let app = TestApp::spawn(&[]).await;
    let anonymous = send(&app, "GET", "/capacity", "", None).await;
    assert_eq!(anonymous.status, 303);
    assert_eq!(anonymous.header("location"), Some("/login?next=/capacity"));

    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let page = send(&app, "GET", "/capacity?range=15m", &admin.cookie, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<h1>Capacity</h1>"), "{}", page.body);
    assert!(
        page.body.contains("No headroom estimate yet"),
        "a fresh install says so"
    );
    // In plain words first, with what to do; the technical reason folded under it.
    assert!(
        page.body
            .contains("this box has not been busy enough to measure what a message costs it")
            && page.body.contains("<summary>Why there is none</summary>"),
        "{}",
        page.body
    );
    // And what the traffic lacked: both criteria, since it had none.
    assert!(
        page.body.contains(
            "it held 0 busy seconds (20 or more messages a second) where it takes 30 and 0 \
             messages in its busy seconds where it takes 5,000"
        ),
        "{}",
        page.body
    );
    assert!(page.body.contains("No load test recorded yet"));
    // Started moments ago: the hour kept in memory begins at the start, and the page says so.
    assert!(
        page.body
            .contains("per message from <!>the traffic since Porch started (<time"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains(r#"data-capacity="restarted""#),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(r#"<a href="/capacity" aria-current="page">Capacity</a>"#)
    );
    let fragment = send(
        &app,
        "GET",
        "/capacity/graphs?range=7d",
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(fragment.status, 200);
    assert!(
        fragment
            .body
            .starts_with(r#"<section id="capacity-graphs""#),
        "{}",
        fragment.body
    );

    add_user(&app, "bo@example.com", "agent");
    let agent = sign_in(&app, "bo@example.com", PASSWORD).await;
    let agent = signed_in_from(&app, &agent).await;
    for path in ["/capacity", "/capacity/graphs", "/capacity/runs/1"] {
        let refused = send(&app, "GET", path, &agent.cookie, None).await;
        assert_eq!(refused.status, 403, "{path}");
    }
}

/// The number of points the graph titled `title` draws, if it draws an SVG.
fn points_in(page: &str, title: &str) -> Option<usize> {
    let svg = page.split(&format!(r#"aria-label="{title}"#)).nth(1)?;
    let after = svg.split(r#"data-points=""#).nth(1)?;
    after.split('"').next()?.parse().ok()
}

#[tokio::test]
async fn the_capacity_page_graphs_live_traffic() {
    let app = TestApp::spawn_configured(&[], |config| {
        config.sampler.every = Duration::from_millis(100);
    })
    .await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("c1", "hi").await["type"], "ack");
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    // The ack latency graph has points only once a sample covered the message.
    wait_until("points on the ack latency graph", WAIT, async || {
        let page = send(
            &app,
            "GET",
            "/capacity/graphs?range=15m",
            &admin.cookie,
            None,
        )
        .await;
        assert_eq!(page.status, 200);
        match points_in(&page.body, "Ack latency") {
            Some(n) if n > 0 => Ok(()),
            _ => Err(page.body),
        }
    })
    .await;
}

#[tokio::test]
async fn a_recorded_load_test_run_is_listed_and_shown_on_the_capacity_page() {
    let app = TestApp::spawn(&[]).await;
    let report: porch::loadtest::Report = serde_json::from_str(REPORT).expect("a report");
    let id = porch::loadtest::record_run(&report, app.data_dir.path())
        .expect("recorded")
        .expect("the live database exists");

    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let page = send(&app, "GET", "/capacity", &admin.cookie, None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains(&format!(r#"href="/capacity/runs/{id}""#)),
        "{}",
        page.body
    );
    assert!(page.body.contains("5,000 msg/s"));
    assert!(page.body.contains("all stairs passed"));
    // No live traffic: the headroom comes from the run (median cost of its passing stairs).
    assert!(page.body.contains("(51 µs)"), "{}", page.body);
    assert!(page.body.contains("comes from the newest"));

    let run = send(
        &app,
        "GET",
        &format!("/capacity/runs/{id}"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(run.status, 200);
    assert!(run.body.contains("12.25"), "the stair table: {}", run.body);
    assert!(run.body.contains("Achieved rate per stair"));
    assert!(
        run.body.contains(r#"data-points="4""#),
        "achieved and target lines"
    );
    assert!(
        run.body.contains("Test CPU &lt;b"),
        "report text is escaped"
    );
    assert!(!run.body.contains("Test CPU <b>"));
    let missing = send(&app, "GET", "/capacity/runs/999", &admin.cookie, None).await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn a_listed_run_that_measured_no_server_cpu_is_not_called_missing() {
    let app = TestApp::spawn(&[]).await;
    let mut report: porch::loadtest::Report = serde_json::from_str(REPORT).expect("a report");
    // As a run against another server (`--url`) records it: no server CPU figure.
    for series in &mut report.series {
        for stair in &mut series.stairs {
            stair.server_us_per_msg = None;
        }
    }
    let id = porch::loadtest::record_run(&report, app.data_dir.path())
        .expect("recorded")
        .expect("the live database exists");
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let page = send(&app, "GET", "/capacity", &admin.cookie, None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains(&format!(r#"href="/capacity/runs/{id}""#)),
        "the run is listed: {}",
        page.body
    );
    assert!(
        page.body.contains("No headroom estimate yet"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("no recorded load test measured it"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("has been recorded"), "{}", page.body);
}

/// A run recorded before 2026-12-07 stored the cost of stairs too short to measure one: the page
/// judges the stored report by today's rules, so that cost is not the headroom.
#[tokio::test]
async fn a_run_stored_with_the_cost_of_stairs_too_short_is_judged_again() {
    let app = TestApp::spawn(&[]).await;
    let mut report: porch::loadtest::Report = serde_json::from_str(REPORT).expect("a report");
    report.duration_ms = 500;
    let json = serde_json::to_string(&report).expect("json");
    porch::store::insert_loadtest_run(
        &app.db(),
        &porch::store::NewLoadtestRun {
            started_at: 1,
            capacity: Some(50),
            is_passed: true,
            us_per_msg: Some(2150.0),
            report: &json,
        },
    )
    .expect("an old run");
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let page = send(&app, "GET", "/capacity", &admin.cookie, None).await;
    assert!(
        page.body.contains("No headroom estimate yet"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("2150"), "{}", page.body);
}

/// The highest passing stair is a limit only when a stair above it failed and none below it did:
/// with a lower one failed (a busier moment), the page says "or more", where the CLI's report
/// calls the run "not comparable" (an outside check read "capacity found 500" for a top stair
/// nobody failed).
#[tokio::test]
async fn a_capacity_is_called_a_limit_only_when_a_stair_above_it_failed() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    for (day, failed, listed, headroom) in [
        (
            2,
            &[1000][..],
            "10,000 msg/s or more",
            "10,000 messages a second or more: no limit found",
        ),
        (
            3,
            &[10_000],
            "5,000 msg/s",
            "capacity found 5,000 messages a second",
        ),
        (
            4,
            &[1000, 10_000],
            "5,000 msg/s or more",
            "5,000 messages a second or more: no limit found",
        ),
    ] {
        let mut report: porch::loadtest::Report = serde_json::from_str(REPORT).expect("a report");
        // The newer run is the headroom's.
        report.started_at = format!("2026-03-0{day}T10:00:00Z");
        let stairs = &mut report.series[0].stairs;
        let mut above = stairs[1].clone();
        above.target = 10_000;
        stairs.push(above);
        for stair in stairs {
            stair.passed = !failed.contains(&stair.target);
        }
        let id = porch::loadtest::record_run(&report, app.data_dir.path())
            .expect("recorded")
            .expect("the live database exists");
        let page = send(&app, "GET", "/capacity", &admin.cookie, None).await;
        // The list's row (the headroom links to the run too).
        let row = format!(r#"<td><a href="/capacity/runs/{id}""#);
        let listed_row = page.body.split(&row).nth(1).expect("the run is listed");
        let cell = listed_row.split("</tr>").next().unwrap_or_default();
        assert!(cell.contains(&format!("<td>{listed}</td>")), "{cell}");
        assert!(page.body.contains(headroom), "{}", page.body);
        let run = send(
            &app,
            "GET",
            &format!("/capacity/runs/{id}"),
            &admin.cookie,
            None,
        )
        .await;
        assert!(
            run.body.contains(&format!("capacity {listed}<")),
            "{}",
            run.body
        );
    }
}
