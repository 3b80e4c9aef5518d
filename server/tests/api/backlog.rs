//! A backlog larger than the runner's window (256 waiting jobs per rate key in memory): after a
//! restart, or when a blocked integration is fixed, the runner reads it from SQLite a window at
//! a time, and every job is delivered once. A fixed integration's backlog is queued again in
//! pages of 1,000 jobs, and a message sent meanwhile is posted after its conversation's older
//! ones.

use serde_json::json;

use crate::attempts::{shop_posting_to_c1, slack_mock};
use crate::helpers::{Exchange as _, TestApp, WAIT, ok_if, wait_until};
use crate::metrics::value_of;
use porch::loadtest::SlackMock;

/// More than twice the window, so at least three reads each take a part of it.
const COPIES: i64 = 600;

/// More than two pages of a resume (1,000 jobs a write, `jobs/retry.rs`).
const PAGED_COPIES: i64 = 2_100;

/// Where the copies of the first post go.
#[derive(Clone, Copy)]
enum Queue {
    /// Each in an order queue of its own, so nothing but the window holds them back.
    OwnEach,
    /// The conversation's: they are posted one after another, in id order.
    Conversation,
}

/// A site posting to the mock's channel C1 whose first post was delivered.
struct Backlog {
    mock: SlackMock,
    app: TestApp,
    site: String,
    /// The visitor's token, to come back to the same conversation.
    token: String,
    posts_before: usize,
}

/// A [`Backlog`] stopped, with its first post's job copied COPIES times in `state`, each in an
/// order queue of its own, and restarted.
async fn backlog_in(state: &str) -> (SlackMock, TestApp, usize) {
    let backlog = backlog_of(state, COPIES, Queue::OwnEach, None).await;
    (backlog.mock, backlog.app, backlog.posts_before)
}

/// A [`Backlog`] stopped, with its first post's job copied `copies` times in `state` into
/// `queue`, the integration marked broken with `error` if one is given, and restarted.
async fn backlog_of(state: &str, copies: i64, queue: Queue, error: Option<&str>) -> Backlog {
    let mock = slack_mock().await;
    let url = mock.api_url();
    let args = ["--slack-api-url", url.as_str()];
    let (app, site) = shop_posting_to_c1(TestApp::spawn(&args).await).await;
    let (mut visitor, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
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
    let db = rusqlite::Connection::open(dir.path().join("porch.db")).expect("open");
    let order_key = match queue {
        Queue::OwnEach => "order_key || ':copy:' || n",
        Queue::Conversation => "order_key",
    };
    let inserted = db
        .execute(
            &format!(
                "WITH RECURSIVE copy (n) AS \
                   (SELECT 1 UNION ALL SELECT n + 1 FROM copy WHERE n < ?1) \
                 INSERT INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key, \
                                   max_attempts, run_at, created_at) \
                 SELECT lane, kind, args, integration_id, ?2, {order_key}, rate_key, \
                        max_attempts, 0, created_at FROM jobs, copy"
            ),
            rusqlite::params![copies, state],
        )
        .expect("copy the job");
    assert_eq!(inserted, usize::try_from(copies).expect("small"));
    if let Some(error) = error {
        db.execute(
            "UPDATE integrations SET status = 'broken', last_error = ?1",
            [error],
        )
        .expect("break the integration");
    }
    drop(db);
    let posts_before = mock.posts().len();
    let app = TestApp::spawn_in(dir, &args).await;
    Backlog {
        mock,
        app,
        site,
        token,
        posts_before,
    }
}

/// Waits for every copy to be done, then checks each was posted once and memory is empty.
async fn each_delivered_once(mock: &SlackMock, app: &TestApp, posts_before: usize) {
    each_of_delivered_once(COPIES, mock, app, posts_before).await;
}

/// Waits for `copies` copies and the first post to be done, then checks each copy was posted
/// once and memory is empty.
async fn each_of_delivered_once(copies: i64, mock: &SlackMock, app: &TestApp, before: usize) {
    wait_until("the backlog to drain", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM jobs WHERE state = 'done'"),
            |n| *n == copies + 1,
        )
    })
    .await;
    let posted = mock.posts().len() - before;
    assert_eq!(posted, usize::try_from(copies).expect("small"), "each once");
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
    let (status, answer) = fix_slack(&app).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["resumed_jobs"], COPIES, "{answer}");
    each_delivered_once(&mock, &app, posts_before).await;
}

/// Saves the Slack integration's settings again, as an admin who fixed its token would.
async fn fix_slack(app: &TestApp) -> (u16, serde_json::Value) {
    let admin = app.add_user_token("Fixer", "admin");
    let integration = app.count("SELECT id FROM integrations");
    let fixed = json!({"bot_token": "xoxb-test", "channel_id": "C1", "signing_secret": "s"});
    let path = format!("/api/v1/integrations/{integration}/slack");
    app.api("PUT", &path, &admin, Some(fixed)).await
}

fn integration_status(app: &TestApp) -> (String, Option<String>) {
    app.db()
        .query_row("SELECT status, last_error FROM integrations", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("integration")
}

/// A broken integration's blocked backlog of three pages is queued again page by page, each job
/// delivered once, and the integration is healthy at the end.
#[tokio::test]
async fn a_broken_integrations_backlog_of_several_pages_resumes_and_each_job_is_delivered_once() {
    let backlog = backlog_of(
        "blocked",
        PAGED_COPIES,
        Queue::OwnEach,
        Some("token_revoked"),
    )
    .await;
    let app = &backlog.app;
    assert_eq!(integration_status(app).0, "broken");
    let (status, answer) = fix_slack(app).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["resumed_jobs"], PAGED_COPIES, "{answer}");
    assert_eq!(
        answer["status"], "ok",
        "the status once the resume ended: {answer}"
    );
    assert_eq!(integration_status(app), ("ok".to_owned(), None));
    each_of_delivered_once(PAGED_COPIES, &backlog.mock, app, backlog.posts_before).await;
}

/// A conversation whose posts were blocked: a message the visitor sends while the fix is being
/// saved is posted after every older one, never ahead of them. (Its posts go one at a time, a
/// runner round each, so the backlog is kept short.)
#[tokio::test]
async fn a_message_sent_while_an_integration_resumes_is_posted_after_its_blocked_ones() {
    const QUEUED: i64 = 40;
    let backlog = backlog_of(
        "blocked",
        QUEUED,
        Queue::Conversation,
        Some("token_revoked"),
    )
    .await;
    let app = &backlog.app;
    let (mut visitor, _) = app.visitor(&backlog.site, Some(&backlog.token), 0).await;
    let ((status, answer), ack) = tokio::join!(fix_slack(app), visitor.say("v2", "after the fix"));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(ack["type"], "ack", "{ack}");
    wait_until("the backlog and the new message", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM jobs WHERE state = 'done'"),
            |n| *n == QUEUED + 2,
        )
    })
    .await;
    let texts: Vec<String> = backlog.mock.posts()[backlog.posts_before..]
        .iter()
        .map(|post| post.text.clone())
        .collect();
    assert_eq!(texts.len(), usize::try_from(QUEUED + 1).expect("small"));
    let (last, older) = texts.split_last().expect("posts");
    assert!(last.contains("after the fix"), "{last}");
    assert!(older.iter().all(|text| text.contains("hello")), "{older:?}");
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

/// A resume the server's stop interrupted (the integration still marked as resuming, some jobs
/// still blocked) goes on at the next start: each job is delivered once and the integration is
/// healthy again, with no admin action.
#[tokio::test]
async fn a_resume_interrupted_by_a_stop_goes_on_at_the_next_start() {
    let resuming = Some(porch::store::RESUMING);
    let backlog = backlog_of("blocked", COPIES, Queue::OwnEach, resuming).await;
    each_delivered_once(&backlog.mock, &backlog.app, backlog.posts_before).await;
    assert_eq!(integration_status(&backlog.app), ("ok".to_owned(), None));
}
