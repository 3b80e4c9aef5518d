//! A backlog larger than the runner's window (256 waiting jobs per rate key in memory): after a
//! restart, or when a blocked integration is fixed, the runner reads it from SQLite a window at
//! a time, and every job is delivered once.

use serde_json::json;

use crate::attempts::{shop_posting_to_c1, slack_mock};
use crate::helpers::{Exchange as _, TestApp, WAIT, ok_if, wait_until};
use crate::metrics::value_of;
use porch::loadtest::SlackMock;

/// More than twice the window, so at least three reads each take a part of it.
const COPIES: i64 = 600;

/// A site posting to the mock's channel C1 whose first post was delivered; stopped, with that
/// post's job copied COPIES times in `state`, each in an order queue of its own so nothing but
/// the window holds them back. Returns the mock, the restarted app and the posts before.
async fn backlog_in(state: &str) -> (SlackMock, TestApp, usize) {
    let mock = slack_mock().await;
    let url = mock.api_url();
    let args = ["--slack-api-url", url.as_str()];
    let (app, site) = shop_posting_to_c1(TestApp::spawn(&args).await).await;
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("v1", "hello").await;
    wait_until("the first post", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM jobs WHERE state = 'done'"),
            |n| *n == 1,
        )
    })
    .await;
    drop(visitor);

    let dir = crate::sealed_secrets::stop(app).await;
    let copied = rusqlite::Connection::open(dir.path().join("porch.db"))
        .expect("open")
        .execute(
            "WITH RECURSIVE copy (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM copy WHERE n < ?1) \
             INSERT INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key, \
                               max_attempts, run_at, created_at) \
             SELECT lane, kind, args, integration_id, ?2, order_key || ':copy:' || n, \
                    rate_key, max_attempts, 0, created_at FROM jobs, copy",
            rusqlite::params![COPIES, state],
        )
        .expect("copy the job");
    assert_eq!(copied, usize::try_from(COPIES).expect("small"));
    let posts_before = mock.posts().len();
    let app = TestApp::spawn_in(dir, &args).await;
    (mock, app, posts_before)
}

/// Waits for every copy to be done, then checks each was posted once and memory is empty.
async fn each_delivered_once(mock: &SlackMock, app: &TestApp, posts_before: usize) {
    wait_until("the backlog to drain", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM jobs WHERE state = 'done'"),
            |n| *n == COPIES + 1,
        )
    })
    .await;
    let posted = mock.posts().len() - posts_before;
    assert_eq!(posted, usize::try_from(COPIES).expect("small"), "each once");
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE state <> 'done'"),
        0
    );
    let metrics = app.http.get("/metrics").answer().await;
    assert_eq!(
        value_of(&metrics.body, "porch_jobs_in_memory"),
        Some(0.0),
        "nothing left in memory: {}",
        metrics.body
    );
}

#[tokio::test]
async fn a_backlog_beyond_the_window_is_read_from_sqlite_and_each_job_delivered_once() {
    let (mock, app, posts_before) = backlog_in("queued").await;
    each_delivered_once(&mock, &app, posts_before).await;
}

#[tokio::test]
async fn a_blocked_backlog_beyond_the_window_is_delivered_once_when_the_integration_is_fixed() {
    let (mock, app, posts_before) = backlog_in("blocked").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(mock.posts().len(), posts_before, "blocked jobs wait");
    let admin = app.add_user_token("Fixer", "admin");
    let integration = app.count("SELECT id FROM integrations");
    let fixed = json!({"bot_token": "xoxb-test", "channel_id": "C1", "signing_secret": "s"});
    let path = format!("/api/v1/integrations/{integration}/slack");
    let (status, answer) = app.api("PUT", &path, &admin, Some(fixed)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["resumed_jobs"], COPIES, "{answer}");
    each_delivered_once(&mock, &app, posts_before).await;
}

#[tokio::test]
async fn a_failed_backlog_beyond_the_window_is_delivered_once_after_retry_all() {
    let (mock, app, posts_before) = backlog_in("failed").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(mock.posts().len(), posts_before, "failed jobs wait");
    let admin = app.add_user_token("Retrier", "admin");
    let (status, answer) = app.api("POST", "/api/v1/jobs/retry", &admin, None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["retried"], COPIES, "{answer}");
    each_delivered_once(&mock, &app, posts_before).await;
}
