//! Visitor messages over the real websocket: acks after commit, idempotent resends, resume, and
//! live agent replies.

use serde_json::json;

use crate::helpers::TestApp;

#[tokio::test]
async fn the_message_row_exists_when_its_ack_arrives() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    assert!(
        welcome["token"]
            .as_str()
            .is_some_and(|t| t.starts_with("vt1."))
    );
    assert_eq!(welcome["site"]["name"], "Shop");

    let ack = widget.say("m-1", "  Do you ship to Norway?  ").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(ack["client_id"], "m-1");
    // Read through a separate connection the moment the ack is in hand: it must be committed.
    let id = ack["id"].as_i64().expect("id");
    let body: String = app
        .db()
        .query_row("SELECT body FROM messages WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .expect("the acked row exists");
    assert_eq!(body, "Do you ship to Norway?");
    assert_eq!(app.count("SELECT count(*) FROM conversations"), 1);
}

#[tokio::test]
async fn a_resend_after_reconnect_returns_the_same_id_and_leaves_one_row() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    let first = widget.say("resend-me", "hello").await;
    drop(widget);

    let (mut again, _) = app.visitor(&site, Some(&token), 0).await;
    let second = again.say("resend-me", "hello").await;
    assert_eq!(second["type"], "ack");
    assert_eq!(second["id"], first["id"]);
    assert_eq!(second["at"], first["at"]);
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE client_id = 'resend-me'"),
        1
    );
}

#[tokio::test]
async fn the_same_client_id_from_another_visitor_is_a_different_message() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut alice, _) = app.visitor(&site, None, 0).await;
    let (mut bob, _) = app.visitor(&site, None, 0).await;
    let a = alice.say("1", "from alice").await;
    let b = bob.say("1", "from bob").await;
    assert_ne!(a["id"], b["id"]);
    assert_eq!(app.count("SELECT count(*) FROM conversations"), 2);
}

#[tokio::test]
async fn an_agent_reply_reaches_the_connected_visitor_live_with_typing_first() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let token = app.add_agent_token("Ana");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let ack = widget.say("q", "anyone there?").await;
    let conversation = app
        .db()
        .query_row(
            "SELECT conversation_id FROM messages WHERE id = ?1",
            [ack["id"].as_i64()],
            |r| r.get::<_, i64>(0),
        )
        .expect("row");

    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/typing"),
            &token,
            Some(json!({"active": true})),
        )
        .await;
    assert_eq!(status, 204);
    let typing = widget.recv().await;
    assert_eq!(
        typing,
        json!({"type": "typing", "agent_name": "Ana", "active": true})
    );

    let (status, reply) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &token,
            Some(json!({"body": "Yes, hi!"})),
        )
        .await;
    assert_eq!(status, 201, "{reply}");
    let pushed = widget.recv().await;
    assert_eq!(pushed["type"], "message");
    assert_eq!(pushed["author"], "agent");
    assert_eq!(pushed["agent_name"], "Ana");
    assert_eq!(pushed["body"], "Yes, hi!");
    assert_eq!(pushed["id"], reply["id"]);
}

#[tokio::test]
async fn resume_delivers_agent_messages_sent_while_the_visitor_was_away() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let agent = app.add_agent_token("Ana");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let visitor_token = welcome["token"].as_str().expect("token").to_owned();
    let ack = widget.say("q", "hello?").await;
    let last_seen = ack["id"].as_i64().expect("id");
    drop(widget);

    let (_, list) = app.api("GET", "/api/v1/conversations", &agent, None).await;
    let conversation = list["conversations"][0]["id"]
        .as_i64()
        .expect("a conversation");
    for body in ["First answer", "Second answer"] {
        let (status, _) = app
            .api(
                "POST",
                &format!("/api/v1/conversations/{conversation}/messages"),
                &agent,
                Some(json!({"body": body})),
            )
            .await;
        assert_eq!(status, 201);
    }

    let (_, welcome) = app.visitor(&site, Some(&visitor_token), last_seen).await;
    let missed: Vec<&str> = welcome["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["body"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(missed, ["First answer", "Second answer"]);
    // From scratch, the whole history comes back in order.
    let (_, full) = app.visitor(&site, Some(&visitor_token), 0).await;
    let authors: Vec<&str> = full["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["author"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(authors, ["visitor", "agent", "agent"]);
}

#[tokio::test]
async fn a_message_shows_on_the_visitors_other_tab() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut first_tab, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    first_tab.say("a", "opening").await;
    let (mut second_tab, _) = app.visitor(&site, Some(&token), 0).await;

    let ack = first_tab.say("b", "from tab one").await;
    let echoed = second_tab.recv().await;
    assert_eq!(echoed["type"], "message");
    assert_eq!(echoed["author"], "visitor");
    assert_eq!(echoed["client_id"], "b");
    assert_eq!(echoed["id"], ack["id"]);
}

#[tokio::test]
async fn a_forged_token_gets_a_fresh_identity_and_no_history() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    widget.say("x", "secret question").await;
    let real = welcome["token"].as_str().expect("token");
    let forged = format!("{}AAAA", &real[..real.len() - 4]);
    let (_, other) = app.visitor(&site, Some(&forged), 0).await;
    assert_ne!(other["token"], welcome["token"]);
    assert_eq!(other["messages"], json!([]));
}

#[tokio::test]
async fn welcome_says_whether_an_agent_has_the_inbox_open() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (_, nobody) = app.visitor(&site, None, 0).await;
    assert_eq!(nobody["site"]["agents_online"], false);
    // What an agent's open inbox page holds: a live inbox subscription.
    let hub = std::sync::Arc::clone(app.server.as_ref().expect("running").app.chat.hub());
    let agent = hub.subscribe_inbox();
    let (_, someone) = app.visitor(&site, None, 0).await;
    assert_eq!(someone["site"]["agents_online"], true);
    drop(agent);
    let (_, gone) = app.visitor(&site, None, 0).await;
    assert_eq!(gone["site"]["agents_online"], false);
}

/// An `email` frame may follow the visitor's first message at once, without waiting for its ack:
/// the message is answered first, then the address is taken, for a returning visitor too. Before
/// any message, it is refused.
#[tokio::test]
async fn an_address_sent_right_behind_the_first_message_is_taken() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    app.set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
    let email = json!({"type": "email", "email": "ann@example.org"});
    let (mut early, _) = app.visitor(&site, None, 0).await;
    early.send(email.clone()).await;
    assert_eq!(early.recv().await["code"], "invalid_message");

    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    widget
        .send(json!({"type": "message", "client_id": "m1", "body": "Hi"}))
        .await;
    widget.send(email).await;
    assert_eq!(widget.recv().await["type"], "ack");
    assert_eq!(
        widget.recv().await,
        json!({"type": "email_saved", "email": "ann@example.org"})
    );
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE email = 'ann@example.org'"),
        1
    );
    // A returning visitor's frames are answered in the same order: every message sent before
    // the address is acked before it (its `email_saved` once came first).
    let token = welcome["token"].as_str().expect("token").to_owned();
    drop(widget);
    let (mut widget, _) = app.visitor(&site, Some(&token), 0).await;
    for round in 0..3 {
        for n in 0..8 {
            let frame =
                json!({"type": "message", "client_id": format!("r{round}-{n}"), "body": "Again"});
            widget.send(frame).await;
        }
        let address = format!("ann{round}@example.org");
        widget
            .send(json!({"type": "email", "email": address}))
            .await;
        for n in 0..8 {
            let ack = widget.recv().await;
            assert_eq!(ack["type"], "ack", "round {round}, message {n}: {ack}");
        }
        assert_eq!(
            widget.recv().await,
            json!({"type": "email_saved", "email": address})
        );
    }
}
