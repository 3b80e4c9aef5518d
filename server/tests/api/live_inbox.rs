//! The live inbox as several agents see it at once. One read and one rendering of each event
//! are shared by every open inbox (`chat/live_items.rs`), so this checks that what differs
//! between agents still differs: the unread state (each agent's own read marker) and "You" for
//! the assignee. A conversation already shown is followed in memory instead of read again
//! (`chat/live_summaries.rs`), so this also checks that every live item is exactly the item a
//! reload of the page shows, whatever changed the conversation.

use serde_json::json;

use crate::audit::SITE_FIELDS;
use crate::helpers::{ORIGIN, TestApp, WAIT};
use crate::identity::{rotate_secret, user_hash};
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

/// An agent's open `/inbox/events`, and everything it has sent so far.
pub(crate) struct LiveInbox {
    response: reqwest::Response,
    seen: String,
    /// The whole events passed over on the way to those found, in order.
    pub(crate) passed: String,
}

impl LiveInbox {
    pub(crate) async fn open(app: &TestApp, who: &Browser) -> Self {
        Self::open_at(app, who, "/inbox/events").await
    }

    /// The stream of a list with filters: `/inbox/events?…`.
    pub(crate) async fn open_at(app: &TestApp, who: &Browser, path: &str) -> Self {
        let response = crate::inbox::request(app, "GET", path, &who.cookie, None)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .expect("an answer");
        assert_eq!(response.status(), 200);
        let mut live = Self {
            response,
            seen: String::new(),
            passed: String::new(),
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
        self.event_with("event: conversation", what).await
    }

    /// As [`Self::item_with`], for the first event that holds both `kind` and `what`.
    pub(crate) async fn event_with(&mut self, kind: &str, what: &str) -> String {
        tokio::time::timeout(WAIT, async {
            loop {
                let mut consumed = 0;
                let mut found = None;
                for event in self.seen.split_inclusive("\n\n") {
                    if !event.ends_with("\n\n") {
                        break;
                    }
                    consumed += event.len();
                    if event.contains(kind) && event.contains(what) {
                        found = Some(event.to_owned());
                        break;
                    }
                    self.passed.push_str(event);
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
        .unwrap_or_else(|_| panic!("no {kind:?} event with {what:?} in {}", self.seen))
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
    read_conversation(&app, &ana, conversation).await;
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

    // Read in another tab: her list's row loses its unread mark at once (Bo's stays, below).
    ana_live
        .event_with("event: read\n", &format!("data: {conversation}\n"))
        .await;
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

/// `who` opens conversation `id`'s page, which marks it read up to its newest message.
async fn read_conversation(app: &TestApp, who: &Browser, id: i64) {
    let page = send(
        app,
        "GET",
        &format!("/conversations/{id}"),
        &who.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
}

/// The `<li>` of conversation `id` in `html` (a page, or a live event's data).
fn list_item(html: &str, id: i64) -> String {
    let start = html
        .find(&format!("<li id=\"conversation-{id}\""))
        .unwrap_or_else(|| panic!("conversation {id} in {html}"));
    let end = html[start..].find("</li>").expect("the item ends") + start + "</li>".len();
    html[start..end].to_owned()
}

/// Waits for the live item containing `what` and checks it is the one a reload shows `who`.
async fn live_matches_reload(app: &TestApp, who: &Browser, live: &mut LiveInbox, what: &str) {
    let event = live.item_with(what).await;
    let conversation: i64 = event
        .split("data-id=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("a conversation id in {event}"));
    let page = send(app, "GET", "/inbox", &who.cookie, None).await;
    assert_eq!(page.status, 200);
    assert_eq!(
        list_item(&event, conversation),
        list_item(&page.body, conversation),
        "after {what:?}, live (left) and reloaded (right) differ"
    );
}

#[tokio::test]
async fn a_followed_conversation_shows_live_exactly_as_a_reload_shows_it() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let site = app.add_site("Acme");
    let mut live = LiveInbox::open(&app, &ana).await;

    // The first event reads the conversation; the second is followed from the first.
    let (mut visitor, welcome) = app.visitor(&site, None, 0).await;
    visitor.say("c-1", "one").await;
    live_matches_reload(&app, &ana, &mut live, "one").await;
    visitor.say("c-2", "two").await;
    live_matches_reload(&app, &ana, &mut live, "two").await;
    let conversation = app.count("SELECT max(id) FROM conversations");

    // An agent's reply ends the wait; a note changes only the last activity.
    let post = |kind: &'static str, body: &'static str| {
        let bo = &bo;
        let app = &app;
        async move {
            let fields = form(&[("csrf", &bo.csrf), ("body", body), ("kind", kind)]);
            let path = format!("/conversations/{conversation}/reply");
            let posted = send(app, "POST", &path, &bo.cookie, Some(&fields)).await;
            assert_eq!(posted.status, 303, "{}", posted.body);
        }
    };
    post("reply", "three").await;
    // The reply took the unassigned conversation for Bo: the item that says so is what a reload shows.
    live_matches_reload(&app, &ana, &mut live, "class=\"assignee\">Bo<").await;
    post("note", "four").await;
    let noted = app.count("SELECT created_at FROM messages WHERE body = 'four'");
    live_matches_reload(&app, &ana, &mut live, &format!("data-at=\"{noted}\"")).await;

    // Ana reads it (a read mark, no list event); Bo's next reply shows it read for her.
    read_conversation(&app, &ana, conversation).await;
    post("reply", "five").await;
    live_matches_reload(&app, &ana, &mut live, "five").await;

    // The site's new name shows from the next event on.
    let mut fields = vec![
        ("csrf", ana.csrf.as_str()),
        ("name", "Acme Two"),
        ("origins", ORIGIN),
    ];
    fields.extend_from_slice(&SITE_FIELDS);
    let path = format!("/sites/{site}");
    let renamed = send(&app, "POST", &path, &ana.cookie, Some(&form(&fields))).await;
    assert_eq!(renamed.status, 303, "{}", renamed.body);
    visitor.say("c-6", "six").await;
    live_matches_reload(&app, &ana, &mut live, "Acme Two").await;

    // A verified identity that comes with a message names the visitor, also in a conversation
    // already followed.
    let secret = rotate_secret(&app, &ana, &site).await;
    let token = welcome["token"].as_str().expect("token");
    for (n, name) in ["Vera Visitor", "Vera Renamed"].into_iter().enumerate() {
        let mut known = app.connect(&site, ORIGIN).await;
        let hash = user_hash(&secret, "u-9");
        let identity = json!({"id": "u-9", "name": name, "user_hash": hash});
        known
            .send(json!({"type": "hello", "v": 1, "token": token, "identity": identity}))
            .await;
        assert_eq!(known.recv().await["type"], "welcome");
        known.say(&format!("c-7-{n}"), "seven").await;
        live_matches_reload(&app, &ana, &mut live, name).await;
    }

    // A status line (here an assignment) is read again.
    let body = form(&[("csrf", &ana.csrf), ("assignee", "me")]);
    let path = format!("/conversations/{conversation}/assign");
    let assigned = send(&app, "POST", &path, &ana.cookie, Some(&body)).await;
    assert_eq!(assigned.status, 303, "{}", assigned.body);
    live_matches_reload(&app, &ana, &mut live, "class=\"assignee\">You<").await;
}
