//! The webhook lane shared by every endpoint (docs/jobs.md, "Lanes"): endpoints that hang hold
//! a bounded share of it, so a healthy endpoint's deliveries go out while theirs time out.

use std::time::Duration;

use porch::loadtest::WebhookMock;
use serde_json::json;

use crate::helpers::TestApp;
use crate::shutdown::SilentReceiver;

/// More conversations than one endpoint's quarter of the lane, so each hung endpoint has more
/// deliveries due than it may run.
const CONVERSATIONS: usize = 40;

#[tokio::test]
async fn two_hung_endpoints_do_not_hold_up_a_healthy_one() {
    let mock = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let hung = [SilentReceiver::start(), SilentReceiver::start()];
    let app = TestApp::spawn(&[
        "--allow-private-networks",
        "--ip-conversations-burst",
        "1000",
    ])
    .await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    app.set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
    let mut urls: Vec<String> = hung
        .iter()
        .map(|r| format!("http://127.0.0.1:{}/hook", r.port))
        .collect();
    urls.push(mock.url("/healthy"));
    for url in urls {
        let (status, answer) = app
            .api(
                "POST",
                &format!("/api/v1/sites/{site}/integrations/webhooks"),
                &admin,
                Some(json!({"url": url, "events": ["message.created"]})),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let mut widgets = Vec::new();
    for n in 0..CONVERSATIONS {
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        assert_eq!(widget.say(&format!("m{n}"), "hello").await["type"], "ack");
        widgets.push(widget);
    }
    // The hung endpoints' deliveries run until the 15 s timeout; the healthy endpoint's must not
    // wait for it. Before each endpoint's share was bounded (32 of 64 each), the two filled the
    // lane and the healthy one got nothing for those 15 s.
    let delivered = mock.wait_for(CONVERSATIONS, Duration::from_secs(8)).await;
    assert_eq!(
        delivered.len(),
        CONVERSATIONS,
        "delivered while two endpoints hang"
    );
    let started: usize = hung.iter().map(SilentReceiver::requests).sum();
    assert!(
        started <= 32,
        "{started} deliveries to the hung endpoints at once"
    );
}
