//! `visitor.erased` (docs/integrations/webhooks.md): erasing a person tells each of the site's
//! endpoints that subscribes to it whom, by ids alone, signed as every event is; an endpoint
//! that does not subscribe hears nothing, one that is off hears of it once on again; the notice
//! can be replayed from the delivery log.

use serde_json::json;

use crate::helpers::WAIT;
use crate::webhooks::{Fixture, payload, verify_with_referee};

#[tokio::test]
async fn an_erasure_is_told_to_the_endpoints_that_subscribe_by_ids_alone() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (told, secret) = f
        .endpoint("/told", &["message.created", "visitor.erased"])
        .await;
    f.endpoint("/not-told", &["message.created"]).await;
    let (off, _) = f
        .endpoint("/off", &["message.created", "visitor.erased"])
        .await;
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor
        .send(json!({"type": "email", "email": "dee@example.com"}))
        .await;
    visitor.say("v1", "My order 4411 never came").await;
    f.mock.wait_for(3, WAIT).await;
    let turn = |what: &str| format!("/api/v1/integrations/{off}/{what}");
    let (status, _) = f.app.api("POST", &turn("turn-off"), &f.admin, None).await;
    assert_eq!(status, 200);
    let conversation = f.app.count("SELECT max(id) FROM conversations");
    let visitor_id = f.app.count("SELECT max(id) FROM visitors");

    let (status, answer) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/visitors/{visitor_id}/erase"),
            &f.admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let received = f.mock.wait_for(4, WAIT).await;
    let notice = &received[3];
    assert_eq!(notice.path, "/told");
    assert_eq!(
        payload(notice)["data"],
        json!({
            "visitor": {"id": visitor_id},
            "site": {"key": f.site, "name": "Shop"},
            "conversation_ids": [conversation],
        })
    );
    assert_eq!(payload(notice)["type"], "visitor.erased");
    for personal in ["dee@example.com", "4411"] {
        assert!(!notice.body.contains(personal), "{}", notice.body);
    }
    verify_with_referee(&secret, std::slice::from_ref(notice)).expect("the signature verifies");
    assert_eq!(
        received.iter().filter(|r| r.path == "/not-told").count(),
        1,
        "only the message"
    );

    // An endpoint that was off hears of it once it is on again: its copies are still there.
    let (status, _) = f.app.api("POST", &turn("turn-on"), &f.admin, None).await;
    assert_eq!(status, 200);
    let received = f.mock.wait_for(5, WAIT).await;
    assert_eq!(received[4].path, "/off");
    assert_eq!(payload(&received[4])["type"], "visitor.erased");

    // In the delivery log as any event, and replayed under the same webhook-id.
    let log = f.log(told).await;
    let delivered = &log["deliveries"][0];
    assert_eq!(delivered["event"], "visitor.erased", "{log}");
    f.replay(told, delivered["job_id"].as_i64().expect("job id"))
        .await;
    let received = f.mock.wait_for(6, WAIT).await;
    assert_eq!(received[5].body, notice.body);
    assert_eq!(
        received[5].headers["webhook-id"],
        notice.headers["webhook-id"]
    );
}
