//! The Deliveries page lists the newest 200 failed and 200 blocked deliveries; a longer list
//! says so, with how many there are and how to reach the rest (docs/admin.md, "Pages").

use crate::helpers::TestApp;
use crate::inbox::{send, setup_admin, signed_in_from};

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
