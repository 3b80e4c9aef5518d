//! `PORCH_VISITOR_IP` (docs/privacy.md, "What Porch stores"): a visitor's address is stored
//! whole, as its network, or not at all; the brakes, which count it in memory, work the same.

use crate::helpers::TestApp;

async fn stored_ip(flags: &[&str]) -> Option<String> {
    let app = TestApp::spawn(flags).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("m1", "hello").await["type"], "ack");
    app.db()
        .query_row("SELECT ip FROM visitors", [], |r| r.get(0))
        .expect("one visitor")
}

#[tokio::test]
async fn a_visitors_address_is_stored_whole_masked_or_not_at_all() {
    assert_eq!(stored_ip(&[]).await.as_deref(), Some("127.0.0.1"));
    assert_eq!(
        stored_ip(&["--visitor-ip", "masked"]).await.as_deref(),
        Some("127.0.0.0/24")
    );
    assert_eq!(stored_ip(&["--visitor-ip", "none"]).await, None);
}

/// With no address stored, the per-address brake on new conversations still holds.
#[tokio::test]
async fn the_brakes_count_the_address_when_none_is_stored() {
    let app = TestApp::spawn(&[
        "--visitor-ip",
        "none",
        "--ip-conversations-burst",
        "1",
        "--ip-conversations-per-hour",
        "1",
    ])
    .await;
    let site = app.add_site("Shop");
    let (mut first, _) = app.visitor(&site, None, 0).await;
    assert_eq!(first.say("a1", "hello").await["type"], "ack");
    let (mut second, _) = app.visitor(&site, None, 0).await;
    let refused = second.say("b1", "hello too").await;
    assert_eq!(refused["code"], "too_many_conversations", "{refused}");
}
