//! The attempt log through the real runner and the Slack mock: every try of a job is a row of
//! its own, a rate-limited one too, while a 429 still uses none of the job's attempt budget.

use std::time::Duration;

use porch::loadtest::{Failure, SlackMock};
use serde_json::json;

use crate::helpers::{TestApp, WAIT, ok_if, wait_until};

#[tokio::test]
async fn a_run_of_429s_leaves_a_row_each_and_uses_no_attempt() {
    const LIMITED: u32 = 3;
    let mock = SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
        .await
        .expect("mock");
    let app = TestApp::spawn(&["--slack-api-url", &mock.api_url()]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/slack"),
            &admin,
            Some(json!({"bot_token": "xoxb-test", "channel_id": "C1", "signing_secret": "s"})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
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
