//! The documentation at `/docs`: compiled into the binary, for anyone signed in, each document
//! with GitHub's heading anchors and its links between documents kept inside `/docs`.

use crate::helpers::TestApp;
use crate::inbox::{send, setup_admin, signed_in_from};

#[tokio::test]
async fn the_docs_are_served_to_signed_in_people_from_the_binary() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;

    let index = send(&app, "GET", "/docs", &ana.cookie, None).await;
    assert_eq!(index.status, 200, "{}", index.body);
    assert!(
        index
            .body
            .contains(r#"<a href="/docs/integrations/slack.md">Slack</a>"#),
        "{}",
        index.body
    );

    let slack = send(
        &app,
        "GET",
        "/docs/integrations/slack.md",
        &ana.cookie,
        None,
    )
    .await;
    assert_eq!(slack.status, 200, "{}", slack.body);
    assert!(
        slack.body.contains("<title>Slack · Porch</title>"),
        "{}",
        slack.body
    );
    assert!(
        slack.body.contains(r#"<h2 id="trying-it-without-slack">"#),
        "{}",
        slack.body
    );
    // A link to another document stays in /docs; the page links here too.
    assert!(
        slack.body.contains(r#"href="/docs/jobs.md"#),
        "{}",
        slack.body
    );
    let page = send(&app, "GET", "/sites", &ana.cookie, None).await;
    assert!(
        page.body.contains(r#"<a href="/docs""#),
        "the Help link: {}",
        page.body
    );

    for missing in [
        "/docs/nothing.md",
        "/docs/../Cargo.toml",
        "/docs/capacity-results",
    ] {
        let answer = send(&app, "GET", missing, &ana.cookie, None).await;
        assert_eq!(answer.status, 404, "{missing}: {}", answer.body);
    }
    let signed_out = send(&app, "GET", "/docs/admin.md", "", None).await;
    assert_eq!(signed_out.status, 303, "{}", signed_out.body);
}
