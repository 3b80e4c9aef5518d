//! A visitor's other tabs (docs/widget-protocol.md): every connection of the visitor gets their
//! messages live, also one that said hello before the visitor's first message stored them.

use serde_json::{Value, json};

use crate::helpers::{TestApp, Widget};

/// The `ack` of message `q-{n}`. Before it, and only before it, a copy of the same message
/// stored from the other tab may come as a `message`: when it reached this connection before
/// this tab's own frame did (a busy box), this tab had not sent it yet (widget-protocol.md).
async fn ack_of(tab: &mut Widget, n: u32) -> Value {
    let client_id = format!("q-{n}");
    loop {
        let frame = tab.recv().await;
        match frame["type"].as_str() {
            Some("ack") => {
                assert_eq!(frame["client_id"], client_id.as_str(), "{frame}");
                return frame;
            }
            Some("message") if frame["client_id"] == client_id.as_str() => {}
            _ => panic!("round {n}: {frame}"),
        }
    }
}

/// The next frame, which must be a `message`.
async fn next_message(widget: &mut Widget) -> Value {
    let frame = widget.recv().await;
    assert_eq!(frame["type"], "message", "{frame}");
    frame
}

#[tokio::test]
async fn a_tab_opened_before_the_first_message_gets_it_and_every_reply_live() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let agent = app.add_agent_token("Ana");
    let (mut first, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    let (mut second, welcome) = app.visitor(&site, Some(&token), 0).await;
    assert_eq!(welcome["messages"], json!([]));

    let ack = first.say("q-1", "Hello from the first tab").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let pushed = next_message(&mut second).await;
    assert_eq!(
        (&pushed["id"], &pushed["body"], &pushed["author"]),
        (
            &ack["id"],
            &json!("Hello from the first tab"),
            &json!("visitor")
        )
    );

    // The agent's typing and reply reach both tabs.
    let conversation = app.count("SELECT id FROM conversations");
    let path = format!("/api/v1/conversations/{conversation}");
    let (status, _) = app
        .api(
            "POST",
            &format!("{path}/typing"),
            &agent,
            Some(json!({"active": true})),
        )
        .await;
    assert_eq!(status, 204);
    let (status, reply) = app
        .api(
            "POST",
            &format!("{path}/messages"),
            &agent,
            Some(json!({"body": "Hi!"})),
        )
        .await;
    assert_eq!(status, 201, "{reply}");
    for tab in [&mut first, &mut second] {
        let typing = tab.recv().await;
        assert_eq!(typing["type"], "typing", "{typing}");
        let pushed = next_message(tab).await;
        assert_eq!(
            (&pushed["id"], &pushed["body"]),
            (&reply["id"], &json!("Hi!"))
        );
    }

    // The second tab's message joins the conversation and reaches the first tab.
    let ack = second.say("q-2", "And from the second").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let pushed = next_message(&mut first).await;
    assert_eq!(pushed["id"], ack["id"]);
    assert_eq!(app.count("SELECT count(*) FROM conversations"), 1);
    assert_eq!(app.count("SELECT count(*) FROM visitors"), 1);
}

#[tokio::test]
async fn tabs_opened_before_the_first_message_each_get_every_message_once_whoever_writes() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut writer, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    let mut readers = Vec::new();
    for _ in 0..3 {
        readers.push(app.visitor(&site, Some(&token), 0).await.0);
    }
    // Pipelined: the later messages are stored while the readers are being told of the first.
    for n in 0..5 {
        writer
            .send(
                json!({"type": "message", "client_id": format!("m-{n}"), "body": format!("n{n}")}),
            )
            .await;
    }
    let mut ids = Vec::new();
    for _ in 0..5 {
        let ack = writer.recv().await;
        assert_eq!(ack["type"], "ack", "{ack}");
        ids.push(ack["id"].clone());
    }
    for reader in &mut readers {
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(next_message(reader).await["id"].clone());
        }
        assert_eq!(got, ids, "every message once, in order");
    }
}

/// The other tabs hear of the first message at its commit, not from the tab that sent it: that
/// tab may be gone before its ack.
#[tokio::test]
async fn the_other_tab_follows_even_when_the_writing_tab_closes_before_its_ack() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let agent = app.add_agent_token("Ana");
    let (mut first, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    let (mut second, _) = app.visitor(&site, Some(&token), 0).await;
    first
        .send(json!({"type": "message", "client_id": "q-1", "body": "sent, then the tab closed"}))
        .await;
    drop(first);
    assert_eq!(
        next_message(&mut second).await["body"],
        "sent, then the tab closed"
    );
    let conversation = app.count("SELECT id FROM conversations");
    let path = format!("/api/v1/conversations/{conversation}/messages");
    let (status, _) = app
        .api("POST", &path, &agent, Some(json!({"body": "Still there?"})))
        .await;
    assert_eq!(status, 201);
    assert_eq!(next_message(&mut second).await["body"], "Still there?");
}

/// A new visitor's `last_id` (a client's bug, or a token reused on another server) is beyond
/// everything stored for them: what comes after still arrives.
#[tokio::test]
async fn a_new_visitors_last_id_beyond_every_message_holds_nothing_back() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let agent = app.add_agent_token("Ana");
    for last_id in [json!(5000), json!(1e30)] {
        let mut widget = app.connect(&site, crate::helpers::ORIGIN).await;
        widget
            .send(json!({"type": "hello", "v": 1, "last_id": last_id}))
            .await;
        assert_eq!(widget.recv().await["type"], "welcome");
        assert_eq!(widget.say("q", "hello").await["type"], "ack");
        let conversation = app.count("SELECT max(id) FROM conversations");
        let path = format!("/api/v1/conversations/{conversation}/messages");
        let (status, _) = app
            .api("POST", &path, &agent, Some(json!({"body": "Hi!"})))
            .await;
        assert_eq!(status, 201);
        assert_eq!(next_message(&mut widget).await["body"], "Hi!", "{last_id}");
    }
}

/// The same `client_id` sent from two tabs at once is stored once, and neither tab gets it back
/// as a `message` frame: each gets its `ack`, whichever copy was stored (docs/widget-protocol.md,
/// "a connection never gets its own messages back").
#[tokio::test]
async fn a_message_sent_from_two_tabs_at_once_is_acked_in_both_and_echoed_to_neither() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    // Each copy costs one of the visitor's rate: room for every round's two.
    app.set_site_limits(&site, 1000, 100, 1000, 100);
    let agent = app.add_agent_token("Ana");
    let (mut first, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    assert_eq!(first.say("q-0", "Hello").await["type"], "ack");
    let (mut second, _) = app.visitor(&site, Some(&token), 0).await;
    let conversation = app.count("SELECT id FROM conversations");
    let path = format!("/api/v1/conversations/{conversation}/messages");
    for n in 1..=20 {
        let frame =
            json!({"type": "message", "client_id": format!("q-{n}"), "body": format!("n{n}")});
        first.send(frame.clone()).await;
        second.send(frame).await;
        let (a, b) = (ack_of(&mut first, n).await, ack_of(&mut second, n).await);
        assert_eq!(a["id"], b["id"], "stored once");
        // The next frame either tab gets is the agent's reply, not an echo of its own message.
        let (status, reply) = app
            .api(
                "POST",
                &path,
                &agent,
                Some(json!({"body": format!("r{n}")})),
            )
            .await;
        assert_eq!(status, 201, "{reply}");
        for tab in [&mut first, &mut second] {
            let pushed = next_message(tab).await;
            assert_eq!(pushed["id"], reply["id"], "round {n}: {pushed}");
        }
    }
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'visitor'"),
        21
    );
}
