//! What the widget learns about the agents' side (compatible additions to widget protocol v1):
//! `read` when an agent has opened the conversation after the visitor's message ("Seen"), live
//! and again after `welcome` on resume; `closed` when an agent closes the conversation, live and
//! on resume; and the visitor's next message then starts a new conversation.

use serde_json::Value;

use crate::helpers::{TestApp, Widget};
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};
use crate::revocation::open_stream;

async fn admin(app: &TestApp) -> Browser {
    signed_in_from(app, &setup_admin(app).await).await
}

fn only_conversation(app: &TestApp) -> i64 {
    app.count("SELECT id FROM conversations")
}

/// The next frame of `kind`, skipping `read` frames (an agent's page may mark read on the way).
async fn next_of(widget: &mut Widget, kind: &str) -> Value {
    loop {
        let frame = widget.recv().await;
        if frame["type"] == kind {
            return frame;
        }
        assert_eq!(frame["type"], "read", "expected {kind}, got {frame}");
    }
}

#[tokio::test]
async fn an_agent_opening_the_conversation_sends_read_live_and_again_on_resume() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    let first = widget.say("c1", "Hello").await;
    let second = widget.say("c2", "Anyone?").await;
    assert_eq!(second["type"], "ack", "{second}");

    let page = format!("/conversations/{}", only_conversation(&app));
    assert_eq!(
        send(&app, "GET", &page, &admin.cookie, None).await.status,
        200
    );
    let read = widget.recv().await;
    assert_eq!(read["type"], "read", "{read}");
    assert_eq!(
        read["up_to"], second["id"],
        "the newest visitor message seen"
    );
    assert_ne!(read["up_to"], first["id"]);

    // Opening it again tells the visitor nothing new: the next frame is the next ack.
    send(&app, "GET", &page, &admin.cookie, None).await;
    assert_eq!(widget.say("c3", "Thanks").await["type"], "ack");

    drop(widget);
    let last_id = second["id"].as_i64().expect("id");
    let (mut again, _) = app.visitor(&site, Some(&token), last_id).await;
    let resumed = again.recv().await;
    assert_eq!(resumed["type"], "read", "{resumed}");
    assert_eq!(
        resumed["up_to"], second["id"],
        "c3 came after the agent looked"
    );
}

#[tokio::test]
async fn a_message_arriving_on_an_open_page_is_seen_when_the_page_says_the_agent_sees_it() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let first = widget.say("c1", "Hello").await;
    let page = format!("/conversations/{}", only_conversation(&app));
    assert_eq!(
        send(&app, "GET", &page, &admin.cookie, None).await.status,
        200
    );
    let _stream = open_stream(&app, &format!("{page}/events"), &admin.cookie).await;
    // Opening the page is opening the conversation.
    let opened = widget.recv().await;
    assert_eq!(opened["type"], "read", "{opened}");
    assert_eq!(opened["up_to"], first["id"]);

    // A message arriving on the open page is read when the page says the agent can see it
    // (its tab is visible), not when the stream carries it: a background tab sees nothing.
    let ack = widget.say("c2", "Are you there?").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(500), widget.recv()).await;
    assert!(quiet.is_err(), "read before the page said so: {quiet:?}");
    let id = ack["id"].as_i64().expect("id").to_string();
    let path = format!("/conversations/{}/read", only_conversation(&app));
    let body = form(&[("csrf", &admin.csrf), ("up_to", &id)]);
    let marked = send(&app, "POST", &path, &admin.cookie, Some(&body)).await;
    assert_eq!(marked.status, 204, "{}", marked.body);
    let read = widget.recv().await;
    assert_eq!(read["type"], "read", "{read}");
    assert_eq!(read["up_to"], ack["id"]);
}

#[tokio::test]
async fn a_read_mark_stops_at_the_newest_message_and_needs_the_conversation() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let first = widget.say("c1", "Hello").await;
    let conversation = only_conversation(&app);
    let mark = |conversation: i64, up_to: i64| {
        let body = form(&[("csrf", &admin.csrf), ("up_to", &up_to.to_string())]);
        let path = format!("/conversations/{conversation}/read");
        let cookie = admin.cookie.clone();
        let app = &app;
        async move { send(app, "POST", &path, &cookie, Some(&body)).await }
    };
    // A conversation that is not there (deleted while its page was open) is a 404.
    let gone = mark(conversation + 1000, 1).await;
    assert_eq!(gone.status, 404, "{}", gone.body);

    // A mark past the newest message is kept at it: the next message is still unread.
    let first_id = first["id"].as_i64().expect("id");
    assert_eq!(mark(conversation, first_id + 1_000_000).await.status, 204);
    assert_eq!(
        app.count("SELECT last_read_id FROM conversation_reads"),
        first_id
    );
    let read = widget.recv().await;
    assert_eq!(read["up_to"], first["id"], "{read}");
}

#[tokio::test]
async fn a_visitor_nobody_has_read_gets_no_read_frame_on_resume() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    widget.say("c1", "Hello").await;
    drop(widget);
    let (mut again, _) = app.visitor(&site, Some(&token), 0).await;
    let next = again.say("c1", "Hello").await;
    assert_eq!(next["type"], "ack", "{next}");
}

#[tokio::test]
async fn closing_sends_closed_live_and_on_resume_and_the_next_message_starts_a_new_conversation() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    widget.say("c1", "Hello").await;
    let conversation = only_conversation(&app);

    let close = format!("/conversations/{conversation}/close");
    let body = form(&[("csrf", &admin.csrf)]);
    let closed = send(&app, "POST", &close, &admin.cookie, Some(&body)).await;
    assert_eq!(closed.status, 303, "{}", closed.body);
    let frame = next_of(&mut widget, "closed").await;
    let line = app.count("SELECT max(id) FROM messages WHERE author = 'system'");
    assert_eq!(frame["conversation_id"], conversation, "{frame}");
    assert_eq!(frame["id"], line, "placed after the status line: {frame}");
    // An agent answers the closed conversation (it stays closed): the notice stays before it.
    let token_of_agent = app.add_user_token("Bo", "agent");
    let path = format!("/api/v1/conversations/{conversation}/messages");
    let body = serde_json::json!({"body": "One last thing"});
    let (status, _) = app.api("POST", &path, &token_of_agent, Some(body)).await;
    assert_eq!(status, 201);
    // And tags it afterwards: a later status line, which the resumed notice is not placed at.
    let tags = format!("/api/v1/conversations/{conversation}/tags");
    let body = serde_json::json!({"add": ["followed up"]});
    let (status, _) = app.api("POST", &tags, &token_of_agent, Some(body)).await;
    assert_eq!(status, 200);

    drop(widget);
    let (mut again, resumed) = app.visitor(&site, Some(&token), 0).await;
    assert_eq!(resumed["messages"].as_array().map(Vec::len), Some(2));
    let frame = next_of(&mut again, "closed").await;
    assert_eq!(frame["conversation_id"], conversation, "{frame}");
    assert_eq!(
        frame["id"], line,
        "the close's line, not the later reply or tag line"
    );

    let ack = again.say("c2", "One more question").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(app.count("SELECT count(*) FROM conversations"), 2);
    assert_eq!(
        app.count("SELECT count(*) FROM conversations WHERE status = 'open'"),
        1
    );
    assert_eq!(
        app.count("SELECT conversation_id FROM messages WHERE client_id = 'c2'"),
        conversation + 1,
        "the new message went to a new conversation"
    );

    // The new conversation is open, so the next resume says nothing about the old one.
    drop(again);
    let (mut third, _) = app.visitor(&site, Some(&token), 0).await;
    let next = third.say("c3", "Hi").await;
    assert_eq!(next["type"], "ack", "{next}");
}

#[tokio::test]
async fn reopening_sends_reopened_live_and_the_next_message_joins_that_conversation() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let conversation = only_conversation(&app);
    let body = form(&[("csrf", &admin.csrf)]);
    for action in ["close", "reopen"] {
        let path = format!("/conversations/{conversation}/{action}");
        let done = send(&app, "POST", &path, &admin.cookie, Some(&body)).await;
        assert_eq!(done.status, 303, "{action}: {}", done.body);
    }
    next_of(&mut widget, "closed").await;
    let frame = next_of(&mut widget, "reopened").await;
    let line = app.count("SELECT max(id) FROM messages WHERE author = 'system'");
    assert_eq!(frame["conversation_id"], conversation, "{frame}");
    assert_eq!(
        frame["id"], line,
        "placed after the reopen's status line: {frame}"
    );

    let ack = widget.say("c2", "Thanks for coming back").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(app.count("SELECT count(*) FROM conversations"), 1);
    assert_eq!(
        app.count("SELECT conversation_id FROM messages WHERE client_id = 'c2'"),
        conversation
    );
}

#[tokio::test]
async fn after_a_close_a_tab_joins_the_conversation_another_tab_started() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin(&app).await;
    let site = app.add_site("Acme");
    // Two new conversations a minute: a third would be refused as a flood.
    app.set_site_limits(&site, 1_000, 100, 10_000, 2);
    let (mut tab_a, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    tab_a.say("a1", "Hello").await;
    let (mut tab_b, _) = app.visitor(&site, Some(&token), 0).await;
    let conversation = only_conversation(&app);
    let close = format!("/conversations/{conversation}/close");
    let body = form(&[("csrf", &admin.csrf)]);
    assert_eq!(
        send(&app, "POST", &close, &admin.cookie, Some(&body))
            .await
            .status,
        303
    );
    next_of(&mut tab_a, "closed").await;
    next_of(&mut tab_b, "closed").await;

    assert_eq!(tab_b.say("b1", "One more thing").await["type"], "ack");
    let pushed = next_of(&mut tab_a, "message").await;
    assert_eq!(pushed["client_id"], "b1");
    let ack = tab_a.say("a2", "And another").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(app.count("SELECT count(*) FROM conversations"), 2);
}

#[tokio::test]
async fn an_agents_typing_is_true_or_false_and_nothing_else() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let path = format!("/conversations/{}/typing", only_conversation(&app));
    let typing = |active: &str| form(&[("csrf", &admin.csrf), ("active", active)]);
    let maybe = send(&app, "POST", &path, &admin.cookie, Some(&typing("maybe"))).await;
    assert_eq!(maybe.status, 422, "{}", maybe.body);
    let yes = send(&app, "POST", &path, &admin.cookie, Some(&typing("true"))).await;
    assert_eq!(yes.status, 204, "{}", yes.body);
    // The refused one told the visitor nothing: the first frame is the accepted one.
    let frame = next_of(&mut widget, "typing").await;
    assert_eq!(frame["active"], true, "{frame}");
}
