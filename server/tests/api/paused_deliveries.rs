//! `--pause-deliveries`, for a restored copy (the restore drill): messages are stored and their
//! jobs wait, but nothing is sent; the same file started without it delivers them, in order.

use std::time::Duration;

use porch::loadtest::WebhookMock;

use crate::helpers::{TestApp, WAIT};
use crate::sealed_secrets::{add_webhook, stop};

#[tokio::test]
async fn a_paused_server_stores_messages_and_sends_nothing_until_started_without_it() {
    let hooks = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let app = TestApp::spawn(&["--allow-private-networks", "--pause-deliveries"]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    add_webhook(&app, &admin, &site, &hooks.url("/hook")).await;
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "first").await;
    visitor.say("m2", "second").await;
    // Long enough for a delivery over loopback, many times over.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(hooks.received().is_empty(), "a paused server delivered");
    let waiting = app.count("SELECT count(*) FROM jobs WHERE state = 'queued' AND attempt = 0");
    assert_eq!(waiting, 2);
    let dir = stop(app).await;

    let _app = TestApp::spawn_in(dir, &["--allow-private-networks"]).await;
    let received = hooks.wait_for(2, WAIT).await;
    let bodies: Vec<String> = received.iter().map(|r| r.body.clone()).collect();
    assert!(
        bodies[0].contains("first") && bodies[1].contains("second"),
        "{bodies:?}"
    );
}
