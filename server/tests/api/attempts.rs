//! The attempt log through the real runner and the Slack mock: every try of a job is a row of
//! its own, a rate-limited one too, while a 429 still uses none of the job's attempt budget.

use std::time::Duration;

use porch::loadtest::{Failure, SlackMock};
use serde_json::json;

use crate::helpers::{TestApp, WAIT, ok_if, wait_until};

pub(crate) async fn slack_mock() -> SlackMock {
    SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
        .await
        .expect("mock")
}

/// Adds a site whose Slack integration posts to channel `C1` (of the mock `app` was started
/// with); returns the app and the site's key.
pub(crate) async fn shop_posting_to_c1(app: TestApp) -> (TestApp, String) {
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let path = format!("/api/v1/sites/{site}/integrations/slack");
    let body = json!({"bot_token": "xoxb-test", "channel_id": "C1", "signing_secret": "s"});
    let (status, answer) = app.api("POST", &path, &admin, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    (app, site)
}

#[tokio::test]
async fn a_run_of_429s_leaves_a_row_each_and_uses_no_attempt() {
    const LIMITED: u32 = 3;
    let mock = slack_mock().await;
    let (app, site) =
        shop_posting_to_c1(TestApp::spawn(&["--slack-api-url", &mock.api_url()]).await).await;
    // `Retry-After: 0`, so the run of 429s takes no time.
    mock.set_failure(
        "C1",
        Some(Failure::RateLimited {
            times: LIMITED,
            retry_after_secs: 0,
        }),
    );
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("v1", "hello").await;
    wait_until("the post to be delivered", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM job_attempts WHERE outcome = 'delivered'"),
            |n| *n >= 1,
        )
    })
    .await;
    assert_eq!(mock.rate_limited_count(), u64::from(LIMITED));
    assert_eq!(app.count("SELECT count(*) FROM jobs"), 1, "one job");
    assert_eq!(
        app.count("SELECT count(*) FROM job_attempts WHERE outcome = 'rate_limited'"),
        i64::from(LIMITED),
        "a row per 429"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM job_attempts"),
        i64::from(LIMITED) + 1
    );
    assert_eq!(
        app.count("SELECT count(*) FROM job_attempts WHERE attempt = 1"),
        i64::from(LIMITED) + 1,
        "every try used the first attempt"
    );
    assert_eq!(
        app.count("SELECT attempt FROM jobs"),
        1,
        "429s left the budget alone"
    );
}

/// Slack's older form of a rate limit, `ratelimited` in a 200, waits its `Retry-After` as a 429
/// does (it waited 1 s whatever the header said).
#[tokio::test]
async fn a_rate_limit_in_a_200_waits_its_retry_after() {
    let mock = slack_mock().await;
    let (app, site) =
        shop_posting_to_c1(TestApp::spawn(&["--slack-api-url", &mock.api_url()]).await).await;
    mock.set_failure(
        "C1",
        Some(Failure::RateLimitedIn200 {
            times: 1,
            retry_after_secs: 3,
        }),
    );
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    let sent = std::time::Instant::now();
    visitor.say("v1", "hello").await;
    let posts = mock.wait_for_posts(1, WAIT).await;
    assert_eq!(posts.len(), 1, "delivered after the wait");
    assert_eq!(mock.rate_limited_count(), 1);
    let waited = posts[0].received_at.duration_since(sent);
    assert!(
        waited >= Duration::from_millis(2900),
        "waited only {waited:?}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM job_attempts WHERE outcome = 'rate_limited'"),
        1
    );
}

/// As docs/integrations/slack.md promises, nothing is given up for being rate-limited: a 429
/// neither uses an attempt nor checks the deadline, so a post refused past its deadline (moved
/// into the past while Porch is stopped, as a day of 429s would) still waits and arrives.
#[tokio::test]
async fn a_post_rate_limited_past_its_deadline_still_waits_and_arrives() {
    let mock = slack_mock().await;
    let url = mock.api_url();
    let args = ["--slack-api-url", url.as_str()];
    let (app, site) = shop_posting_to_c1(TestApp::spawn(&args).await).await;
    let refuse = |times| {
        Some(Failure::RateLimited {
            times,
            retry_after_secs: 0,
        })
    };
    mock.set_failure("C1", refuse(u32::MAX));
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("v1", "hello").await;
    wait_until("a 429 to be recorded", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM job_attempts WHERE outcome = 'rate_limited'"),
            |n| *n >= 1,
        )
    })
    .await;

    let dir = crate::sealed_secrets::stop(app).await;
    rusqlite::Connection::open(dir.path().join("porch.db"))
        .expect("open")
        .execute("UPDATE jobs SET deadline_at = created_at, run_at = 0", [])
        .expect("move the deadline");
    let refused_before = mock.rate_limited_count();
    mock.set_failure("C1", refuse(2));
    let app = TestApp::spawn_in(dir, &args).await;
    wait_until("the post to arrive", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM jobs WHERE state = 'done'"),
            |n| *n == 1,
        )
    })
    .await;
    assert_eq!(
        mock.rate_limited_count(),
        refused_before + 2,
        "two more 429s"
    );
    let replies: Vec<_> = mock
        .posts()
        .into_iter()
        .filter(|p| p.text.contains("hello"))
        .collect();
    assert_eq!(replies.len(), 1, "posted once");
    assert!(
        replies[0].thread_ts.is_some(),
        "in the conversation's thread"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE state = 'failed'"),
        0
    );
    assert_eq!(
        app.count("SELECT attempt FROM jobs"),
        1,
        "429s used no attempt"
    );
}
