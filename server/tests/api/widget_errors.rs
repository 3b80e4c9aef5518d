//! Bad input gets a clear error code and loses nothing.

use futures_util::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::{ORIGIN, TestApp};
use crate::metrics::{metrics_until, value_of};

#[tokio::test]
async fn a_wrong_origin_is_refused_with_a_policy_close() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut widget = app.connect(&site, "https://evil.example.net").await;
    let error = widget.recv().await;
    assert_eq!(error["type"], "error");
    assert_eq!(error["code"], "origin_not_allowed");
    assert_eq!(widget.closed().await, Some(1008));
}

#[tokio::test]
async fn an_unknown_site_gets_a_clear_error() {
    let app = TestApp::spawn(&[]).await;
    // `site` twice names no one site: still the upgrade and the error, not a bare HTTP 400.
    let twice = format!("{0}&site={0}", app.add_site("Shop"));
    for key in ["s_0000000000000000", "not-a-key", "", &twice] {
        let mut widget = app.connect(key, ORIGIN).await;
        let error = widget.recv().await;
        assert_eq!(error["code"], "site_not_found", "{key}");
        assert_eq!(widget.closed().await, Some(1008));
    }
}

#[tokio::test]
async fn malformed_frames_get_bad_frame_and_the_connection_stays_usable() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    // Each says what did not fit, for the developer of the client.
    for (text, says) in [
        ("not json", "expected ident at line 1 column 2"),
        ("[1,2]", "not a JSON object"),
        (
            r#"{"type":"launch_missiles"}"#,
            "unknown variant `launch_missiles`",
        ),
        (
            r#"{"type":"message","client_id":7,"body":"x"}"#,
            "invalid type: integer `7`, expected a string",
        ),
        (r#"{"type":"hello","v":1}"#, "a second hello"),
    ] {
        widget.send_raw(Message::Text(text.into())).await;
        let error = widget.recv().await;
        assert_eq!(error["code"], "bad_frame", "{text}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{text}: {message}");
    }
    widget.send_raw(Message::Binary(vec![1, 2, 3].into())).await;
    let error = widget.recv().await;
    assert_eq!(error["code"], "bad_frame");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("a binary frame")
    );
    assert_eq!(widget.say("ok-1", "still works").await["type"], "ack");
}

#[tokio::test]
async fn invalid_messages_are_refused_with_their_client_id() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let empty = widget.say("e1", "   \n ").await;
    assert_eq!(
        (empty["code"].as_str(), empty["client_id"].as_str()),
        (Some("invalid_message"), Some("e1"))
    );
    let long = widget.say("e2", &"x".repeat(4001)).await;
    assert_eq!(long["code"], "invalid_message");
    // Nothing visible (zero width space, byte order mark) is empty; a NUL is refused.
    let invisible = widget.say("e3", "\u{200B}\u{FEFF}").await;
    assert_eq!(invisible["code"], "invalid_message", "{invisible}");
    let nul = widget.say("e4", "a\u{0}b").await;
    assert_eq!(nul["code"], "invalid_message", "{nul}");
    let bad_id = widget.say("has spaces", "hi").await;
    assert_eq!(bad_id["code"], "invalid_message");
    // A client_id too long to take is still echoed whole, so the client can match the error.
    let too_long = "x".repeat(100);
    let refused = widget.say(&too_long, "hi").await;
    assert_eq!(
        (refused["code"].as_str(), refused["client_id"].as_str()),
        (Some("invalid_message"), Some(too_long.as_str()))
    );
    assert_eq!(app.count("SELECT count(*) FROM messages"), 0);
}

#[tokio::test]
async fn a_frame_over_the_size_limit_closes_with_1009() {
    let app = TestApp::spawn(&["--ws-max-message", "1024"]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let body = "x".repeat(2000);
    widget
        .send(json!({"type": "message", "client_id": "big", "body": body}))
        .await;
    assert_eq!(widget.closed().await, Some(1009));
    assert_eq!(app.count("SELECT count(*) FROM messages"), 0);
}

#[tokio::test]
async fn messages_before_hello_are_refused_and_a_wrong_version_closes() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut widget = app.connect(&site, ORIGIN).await;
    widget
        .send(json!({"type": "message", "client_id": "early", "body": "hi"}))
        .await;
    assert_eq!(widget.recv().await["code"], "hello_required");
    widget.send(json!({"type": "hello", "v": 2})).await;
    assert_eq!(widget.recv().await["code"], "unsupported_version");
    assert_eq!(widget.closed().await, Some(1008));
    // Any number other than 1 is a wrong version, not a bad frame; 1.0 is 1.
    let mut widget = app.connect(&site, ORIGIN).await;
    widget.send(json!({"type": "hello", "v": 1.5})).await;
    assert_eq!(widget.recv().await["code"], "unsupported_version");
    assert_eq!(widget.closed().await, Some(1008));
    let mut widget = app.connect(&site, ORIGIN).await;
    widget.send(json!({"type": "hello", "v": 1.0})).await;
    assert_eq!(widget.recv().await["type"], "welcome");
}

/// `ping` is answered `pong` (docs/widget-protocol.md, "ping"), also between messages, storing
/// nothing; before `hello` it is `hello_required` like every frame but `hello`.
#[tokio::test]
async fn a_ping_is_answered_with_a_pong() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut widget = app.connect(&site, ORIGIN).await;
    widget.send(json!({"type": "ping"})).await;
    let early = widget.recv().await;
    assert_eq!(early["code"], "hello_required", "{early}");
    assert!(early.get("client_id").is_none(), "{early}");
    widget.hello(None, 0).await;
    for _ in 0..3 {
        widget.send(json!({"type": "ping"})).await;
        assert_eq!(widget.recv().await, json!({"type": "pong"}));
    }
    assert_eq!(widget.say("m1", "still here").await["type"], "ack");
    widget.send(json!({"type": "ping", "since": 25})).await;
    assert_eq!(
        widget.recv().await,
        json!({"type": "pong"}),
        "fields are ignored"
    );
    assert_eq!(app.count("SELECT count(*) FROM messages"), 1);
}

#[tokio::test]
async fn errors_answering_a_message_frame_carry_its_client_id() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut widget = app.connect(&site, ORIGIN).await;
    widget
        .send(json!({"type": "message", "client_id": "early", "body": "hi"}))
        .await;
    let early = widget.recv().await;
    assert_eq!(
        (early["code"].as_str(), early["client_id"].as_str()),
        (Some("hello_required"), Some("early")),
        "{early}"
    );
    widget
        .send_raw(Message::Text(
            r#"{"type":"message","client_id":"typed","body":5}"#.into(),
        ))
        .await;
    let before_hello = widget.recv().await;
    assert_eq!(before_hello["client_id"], "typed", "{before_hello}");
    widget.hello(None, 0).await;
    widget
        .send_raw(Message::Text(
            r#"{"type":"message","client_id":"wrong-body","body":["x"]}"#.into(),
        ))
        .await;
    let wrong_body = widget.recv().await;
    assert_eq!(
        (
            wrong_body["code"].as_str(),
            wrong_body["client_id"].as_str()
        ),
        (Some("bad_frame"), Some("wrong-body")),
        "{wrong_body}"
    );
    // A frame that is not a message names no message.
    widget
        .send_raw(Message::Text(r#"{"type":"email","email":7}"#.into()))
        .await;
    assert!(widget.recv().await.get("client_id").is_none());
    assert_eq!(app.count("SELECT count(*) FROM messages"), 0);
}

#[tokio::test]
async fn a_text_frame_that_is_not_utf8_closes_with_1007() {
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let invalid = Frame::message(vec![b'{', 0xff, 0xfe, b'}'], OpCode::Data(Data::Text), true);
    widget.send_raw(Message::Frame(invalid)).await;
    assert_eq!(widget.closed().await, Some(1007));
}

/// RFC 6455 5.5.1: the server answers a client's close with a close (before `hello` and after),
/// so a page that closes its socket sees a clean 1000, not 1006.
#[tokio::test]
async fn a_clients_close_is_answered_with_a_close() {
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    for says_hello in [false, true] {
        let (mut widget, _) = if says_hello {
            app.visitor(&site, None, 0).await
        } else {
            (app.connect(&site, ORIGIN).await, serde_json::Value::Null)
        };
        let bye = CloseFrame {
            code: CloseCode::Away,
            reason: "page left".into(),
        };
        widget.send_raw(Message::Close(Some(bye))).await;
        assert_eq!(widget.closed().await, Some(1001), "hello: {says_hello}");
    }
}

/// Each `email` frame stored is a write: a loop of them is held to the visitor's rate, like
/// messages, and refused in memory.
#[tokio::test]
async fn a_loop_of_email_frames_is_held_to_the_visitors_rate() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("q", "Hello").await["type"], "ack");
    // The default burst is 10: the message took one.
    for n in 0..9 {
        let email = format!("ana{n}@example.org");
        widget.send(json!({"type": "email", "email": email})).await;
        assert_eq!(widget.recv().await["type"], "email_saved", "{n}");
    }
    widget
        .send(json!({"type": "email", "email": "ana9@example.org"}))
        .await;
    let refused = widget.recv().await;
    assert_eq!(refused["code"], "rate_limited", "{refused}");
    assert!(refused["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0));
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE email = 'ana8@example.org'"),
        1
    );
}

/// An `invalid_message` says which rule the message broke, so a client can tell its user.
#[tokio::test]
async fn an_invalid_message_names_the_rule_it_broke() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let long = "x".repeat(4001);
    for (client_id, body, says) in [
        ("e1", "   ", "The message is empty."),
        (
            "e2",
            long.as_str(),
            "The message is longer than 4,000 characters.",
        ),
        ("e3", "a\u{0}b", "control character"),
        ("bad id!", "hi", "client_id must be 1 to 64 characters"),
    ] {
        let refused = widget.say(client_id, body).await;
        assert_eq!(refused["code"], "invalid_message", "{refused}");
        assert_eq!(refused["client_id"], client_id);
        let message = refused["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{client_id}: {message}");
    }
}

/// A message that arrived before the client's close is stored, even though its ack cannot be
/// sent any more (the client's resend would find it by `client_id`).
#[tokio::test]
async fn a_message_sent_just_before_the_close_is_stored() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    for n in 0..12 {
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        let frame = json!({"type": "message", "client_id": format!("last-{n}"), "body": "bye"});
        // One TCP write, as a page that sends and closes at once makes.
        let text = Message::Text(frame.to_string().into());
        widget.ws.feed(text).await.expect("feed");
        widget.ws.feed(Message::Close(None)).await.expect("feed");
        widget.ws.flush().await.expect("flush");
        widget.closed().await;
    }
    crate::helpers::wait_until("every message stored", crate::helpers::WAIT, async || {
        crate::helpers::ok_if(
            app.count("SELECT count(*) FROM messages WHERE client_id LIKE 'last-%'"),
            |n| *n == 12,
        )
    })
    .await;
}

/// A connection that keeps sending frames that do not fit gets 100 `bad_frame` answers, before
/// `hello` and again after it, and is then closed (1008); every error frame is counted by code.
#[tokio::test]
async fn a_hundred_bad_frames_close_the_connection_and_every_error_is_counted() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut early = app.connect(&site, ORIGIN).await;
    early.send(json!({"type": "typing", "active": true})).await;
    assert_eq!(early.recv().await["code"], "hello_required");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    for socket in [&mut early, &mut widget] {
        for n in 1..=100 {
            socket.send_raw(Message::Text("{not json".into())).await;
            assert_eq!(socket.recv().await["code"], "bad_frame", "answer {n}");
        }
    }
    assert_eq!(early.closed().await, Some(1008));
    assert_eq!(widget.closed().await, Some(1008));
    let count = |body: &str, code: &str| {
        value_of(
            body,
            &format!("porch_widget_errors_total{{code=\"{code}\"}}"),
        )
    };
    metrics_until(&app, "every error frame counted by code", |body| {
        count(body, "bad_frame") == Some(200.0)
            && count(body, "hello_required") == Some(1.0)
            && count(body, "rate_limited") == Some(0.0)
    })
    .await;
}
