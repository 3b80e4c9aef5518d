//! The live inbox as several agents see it at once. One read and one rendering of each event
//! are shared by every open inbox (`chat/live_items.rs`), so this checks that what differs
//! between agents still differs: the unread state (each agent's own read marker) and "You" for
//! the assignee.

use crate::helpers::{TestApp, WAIT};
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

/// An agent's open `/inbox/events`, and everything it has sent so far.
pub(crate) struct LiveInbox {
    response: reqwest::Response,
    seen: String,
}

impl LiveInbox {
    pub(crate) async fn open(app: &TestApp, who: &Browser) -> Self {
        let response = crate::inbox::request(app, "GET", "/inbox/events", &who.cookie, None)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .expect("an answer");
        assert_eq!(response.status(), 200);
        let mut live = Self {
            response,
            seen: String::new(),
        };
        // The stream is subscribed once its first event (the reconnection delay) is out.
        tokio::time::timeout(WAIT, async {
            while !live.seen.contains("retry:") {
                let chunk = live.response.chunk().await.expect("read").expect("open");
                live.seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .expect("the stream starts");
        live
    }

    /// Reads on until a list item (a `conversation` event) containing `what` has arrived;
    /// returns it, and forgets every event up to it (so the next call looks at newer ones only).
    /// Other events (counts, alerts) are skipped.
    pub(crate) async fn item_with(&mut self, what: &str) -> String {
        tokio::time::timeout(WAIT, async {
            loop {
                let mut consumed = 0;
                let mut found = None;
                for event in self.seen.split_inclusive("\n\n") {
                    if !event.ends_with("\n\n") {
                        break;
                    }
                    consumed += event.len();
                    if event.contains("event: conversation") && event.contains(what) {
                        found = Some(event.to_owned());
                        break;
                    }
                }
                self.seen.drain(..consumed);
                if let Some(event) = found {
                    return event;
                }
                let chunk = self.response.chunk().await.expect("read").expect("open");
                self.seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no list item with {what:?} in {}", self.seen))
    }
}

#[tokio::test]
async fn agents_watching_together_each_see_their_own_unread_state_and_assignee() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let site = app.add_site("Acme");
    let mut ana_live = LiveInbox::open(&app, &ana).await;
    let mut bo_live = LiveInbox::open(&app, &bo).await;

    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("c-1", "Hello there").await;
    for live in [&mut ana_live, &mut bo_live] {
        let event = live.item_with("Hello there").await;
        assert!(event.contains("class=\"conversation unread\""), "{event}");
        assert!(event.contains("Unassigned"), "{event}");
    }
    let conversation: i64 = app.count("SELECT max(id) FROM conversations");

    // Ana reads the conversation, then takes it: the status line is an event for both.
    let page = send(
        &app,
        "GET",
        &format!("/conversations/{conversation}"),
        &ana.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    let ana_id = app.count("SELECT id FROM users WHERE email = 'ana@example.com'");
    let body = form(&[("csrf", &ana.csrf), ("assignee", &ana_id.to_string())]);
    let assigned = send(
        &app,
        "POST",
        &format!("/conversations/{conversation}/assign"),
        &ana.cookie,
        Some(&body),
    )
    .await;
    assert_eq!(assigned.status, 303, "{}", assigned.body);

    let for_ana = ana_live.item_with("class=\"assignee\">You<").await;
    assert!(
        for_ana.contains("class=\"conversation\""),
        "Ana has read it: {for_ana}"
    );
    let for_bo = bo_live.item_with("class=\"assignee\">Ana<").await;
    assert!(
        for_bo.contains("class=\"conversation unread\""),
        "Bo has not: {for_bo}"
    );
    assert!(!for_bo.contains(">You<"), "{for_bo}");

    // A new visitor message is unread for both again.
    visitor.say("c-2", "Are you there?").await;
    for live in [&mut ana_live, &mut bo_live] {
        let event = live.item_with("Are you there?").await;
        assert!(event.contains("class=\"conversation unread\""), "{event}");
    }
}
