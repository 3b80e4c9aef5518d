//! The Deliveries page lists the newest 200 failed and 200 blocked deliveries; a longer list
//! says so, with how many there are and how to reach the rest (docs/admin.md, "Pages"), which
//! the API's `GET /api/v1/jobs` pages through.

use crate::helpers::{Answer, TestApp};
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};

/// `n` failed webhook deliveries, as rows (what the runner leaves after giving up on them).
fn failed_jobs(app: &TestApp, n: usize) {
    let db = app.db();
    for i in 0..n {
        db.execute(
            "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at, \
                               last_error) \
             VALUES ('webhook', 'webhook.deliver', '{}', 'failed', 8, 0, ?1, 'HTTP 500')",
            [i64::try_from(i).expect("small")],
        )
        .expect("job");
    }
}

#[tokio::test]
async fn a_list_cut_to_the_newest_says_how_many_there_are() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    failed_jobs(&app, 200);
    let page = send(&app, "GET", "/deliveries", &admin.cookie, None).await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.body.matches("aria-label=\"Retry delivery ").count(),
        200
    );
    assert!(!page.body.contains("data-cut"), "all 200 are shown");

    failed_jobs(&app, 421);
    let page = send(&app, "GET", "/deliveries", &admin.cookie, None).await;
    assert_eq!(
        page.body.matches("aria-label=\"Retry delivery ").count(),
        200
    );
    assert!(
        page.body
            .contains("Showing the newest 200 of 621 failed deliveries."),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains("data-cut=\"blocked\""),
        "no blocked ones"
    );
}

/// The ids of one page of `GET /api/v1/jobs?state=failed…` and its `next`.
async fn jobs_page(app: &TestApp, token: &str, query: &str) -> (Vec<i64>, serde_json::Value) {
    let (status, body) = app
        .api(
            "GET",
            &format!("/api/v1/jobs?state=failed{query}"),
            token,
            None,
        )
        .await;
    assert_eq!(status, 200, "{query}: {body}");
    let ids = body["jobs"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|j| j["id"].as_i64().expect("an id"))
        .collect();
    (ids, body["next"].clone())
}

#[tokio::test]
async fn the_api_pages_through_every_failed_delivery_newest_first() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ops", "admin");
    failed_jobs(&app, 1203);
    let (first, next) = jobs_page(&app, &token, "").await;
    assert_eq!(first.len(), 500, "500 when no limit is given");
    assert!(next.is_string(), "{next}");

    let mut seen = Vec::new();
    let mut query = "&limit=500".to_owned();
    for _ in 0..4 {
        let (ids, next) = jobs_page(&app, &token, &query).await;
        seen.extend(ids);
        match next.as_str() {
            Some(cursor) => query = format!("&limit=500&before={cursor}"),
            None => break,
        }
    }
    let mut every: Vec<i64> = (1..=1203).collect();
    every.reverse();
    assert_eq!(
        seen, every,
        "each of the 1,203 once, newest first, in three pages"
    );
    let (last, next) = jobs_page(&app, &token, "&limit=3&before=4").await;
    assert_eq!((last, next), (vec![3, 2, 1], serde_json::Value::Null));

    for query in [
        "&limit=0",
        "&limit=501",
        "&before=x",
        "&before=-5",
        "&before=0",
    ] {
        let (status, body) = app
            .api(
                "GET",
                &format!("/api/v1/jobs?state=failed{query}"),
                &token,
                None,
            )
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (422, Some("invalid")),
            "{query}: {body}"
        );
    }
}

/// A blocked delivery, as a row.
fn blocked_job(app: &TestApp) -> i64 {
    let db = app.db();
    db.execute(
        "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) \
         VALUES ('webhook', 'webhook.deliver', '{}', 'blocked', 8, 0, 0)",
        [],
    )
    .expect("job");
    db.last_insert_rowid()
}

/// A form post of the admin's with nothing but the form token.
async fn post(app: &TestApp, admin: &Browser, path: &str) -> Answer {
    send(
        app,
        "POST",
        path,
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf)])),
    )
    .await
}

/// The `delivery.dismissed` events: target type, target id and detail, oldest first.
fn dismissals(app: &TestApp) -> Vec<(String, String, String)> {
    app.db()
        .prepare(
            "SELECT target_type, target_id, detail FROM audit_events \
             WHERE action = 'delivery.dismissed' ORDER BY id",
        )
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// Dismissing deletes failed deliveries, one (page or API) or all (page or API, a page of 1,000
/// at a time, each page recorded), each recorded in the audit log; a blocked one is not
/// dismissed.
#[tokio::test]
async fn failed_deliveries_are_dismissed_one_or_all_and_recorded() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let token = app.add_user_token("ops", "admin");
    let agent = app.add_user_token("bo", "agent");
    failed_jobs(&app, 3);
    let blocked = blocked_job(&app);
    let failed = |app: &TestApp| app.count("SELECT count(*) FROM jobs WHERE state = 'failed'");

    let page = send(&app, "GET", "/deliveries", &admin.cookie, None).await;
    assert_eq!(
        page.body.matches("aria-label=\"Dismiss delivery ").count(),
        3,
        "not the blocked one"
    );
    assert!(page.body.contains("Dismiss all failed"));
    let one = post(&app, &admin, "/deliveries/1/dismiss").await;
    assert_eq!(one.header("location"), Some("/deliveries?notice=dismissed"));
    assert_eq!(failed(&app), 2);
    let again = post(&app, &admin, "/deliveries/1/dismiss").await;
    assert_eq!(
        again.header("location"),
        Some("/deliveries?notice=not-dismissed")
    );

    let (status, body) = app.api("DELETE", "/api/v1/jobs/2", &token, None).await;
    assert_eq!(
        (status, body),
        (200, serde_json::json!({"id": 2, "dismissed": true}))
    );
    let (status, body) = app
        .api("DELETE", &format!("/api/v1/jobs/{blocked}"), &token, None)
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    assert_eq!(
        app.api("DELETE", "/api/v1/jobs/3", &agent, None).await.0,
        403
    );

    failed_jobs(&app, 1500);
    let (status, body) = app.api("POST", "/api/v1/jobs/dismiss", &token, None).await;
    assert_eq!(
        (status, body),
        (200, serde_json::json!({"dismissed": 1501}))
    );
    assert_eq!(failed(&app), 0);
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE state = 'blocked'"),
        1
    );
    failed_jobs(&app, 2);
    let all = post(&app, &admin, "/deliveries/dismiss").await;
    assert_eq!(all.header("location"), Some("/deliveries?notice=dismissed"));
    assert_eq!(failed(&app), 0);
    let none = post(&app, &admin, "/deliveries/dismiss").await;
    assert_eq!(
        none.header("location"),
        Some("/deliveries?notice=none-failed")
    );

    assert_eq!(
        dismissals(&app),
        [
            ("job", "1", r#"{"integration":null}"#),
            ("job", "2", r#"{"integration":null}"#),
            ("jobs", "failed", r#"{"count":1000}"#),
            ("jobs", "failed", r#"{"count":501}"#),
            ("jobs", "failed", r#"{"count":2}"#),
        ]
        .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()))
    );
}

/// The dismiss forms are an admin's, with the session's form token.
#[tokio::test]
async fn dismissing_takes_an_admin_and_the_form_token() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    crate::inbox::add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(
        &app,
        &crate::inbox::sign_in(&app, "bo@example.com", crate::inbox::PASSWORD).await,
    )
    .await;
    failed_jobs(&app, 1);
    for path in ["/deliveries/1/dismiss", "/deliveries/dismiss"] {
        let agent = send(
            &app,
            "POST",
            path,
            &bo.cookie,
            Some(&form(&[("csrf", &bo.csrf)])),
        )
        .await;
        assert_eq!(agent.status, 403, "{path}");
        let forged = send(
            &app,
            "POST",
            path,
            &admin.cookie,
            Some(&form(&[("csrf", "nope")])),
        )
        .await;
        assert_eq!(forged.status, 403, "{path}");
    }
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE state = 'failed'"),
        1
    );
}

/// A row says how many times its delivery was tried, every try counted: a retry starts the
/// attempt budget again (`attempt = 0`), and the page once read "0 attempts" beside the error.
#[tokio::test]
async fn a_row_counts_every_try_of_its_delivery() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let untried = blocked_job(&app);
    let retried = blocked_job(&app);
    for seq in [1, 2] {
        app.db()
            .execute(
                "INSERT INTO job_attempts (job_id, seq, attempt, started_at, finished_at, \
                                           outcome, http_status, error) \
                 VALUES (?1, ?2, 1, 0, 1, 'blocked', 404, 'HTTP 404')",
                [retried, seq],
            )
            .expect("try");
    }
    let page = send(&app, "GET", "/deliveries", &admin.cookie, None).await;
    let row = |id: i64| {
        let start = page
            .body
            .find(&format!("Retry delivery {id}\""))
            .expect("the row");
        page.body[..start]
            .rsplit("<li")
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(row(untried).contains("not tried yet"), "{}", page.body);
    // What it carries, in words, not the job's internal kind (`webhook.deliver`).
    assert!(row(untried).contains("an event"), "{}", page.body);
    assert!(!page.body.contains("webhook.deliver"), "{}", page.body);
    assert!(row(retried).contains("tried 2 times"), "{}", page.body);
}
