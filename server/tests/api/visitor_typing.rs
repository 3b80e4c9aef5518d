//! The visitor's `typing` frame (a compatible addition to widget protocol v1): forwarded to the
//! agents' open conversation streams as `typing` events, at most one a second per connection on
//! average in bursts of two (a stop after a start is free), never answered, never stored, not
//! counted by the brakes.

use std::time::Duration;

use reqwest::Response;
use serde_json::json;

use crate::helpers::{TestApp, WAIT};
use crate::inbox::{send, setup_admin, signed_in_from};
use crate::revocation::open_stream;

/// Reads the stream for `within`, returning what arrived (a quiet stream just times out).
async fn read_for(stream: &mut Response, within: Duration) -> String {
    let mut seen = Vec::new();
    let _ = tokio::time::timeout(within, async {
        while let Ok(Some(chunk)) = stream.chunk().await {
            seen.extend_from_slice(&chunk);
        }
    })
    .await;
    String::from_utf8_lossy(&seen).into_owned()
}

/// Reads the stream until `needle` arrived; returns everything read.
async fn read_until(stream: &mut Response, needle: &str) -> String {
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        while !String::from_utf8_lossy(&seen).contains(needle) {
            let chunk = stream.chunk().await.expect("read").expect("open stream");
            seen.extend_from_slice(&chunk);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {needle:?} in {}", String::from_utf8_lossy(&seen)));
    String::from_utf8_lossy(&seen).into_owned()
}

fn typing_events(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .filter(|e| e.contains("event: typing"))
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .collect()
}

#[tokio::test]
async fn a_visitors_typing_reaches_the_conversation_page_unanswered_and_unstored() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let ack = widget.say("c1", "Hello").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let conversation: i64 = app.count("SELECT id FROM conversations");
    let page = format!("/conversations/{conversation}");
    assert_eq!(
        send(&app, "GET", &page, &admin.cookie, None).await.status,
        200
    );
    let (mut stream, _) = open_stream(&app, &format!("{page}/events"), &admin.cookie).await;
    // Opening the page is the agent reading the conversation: the widget hears of it (`read`).
    let read = widget.recv().await;
    assert_eq!(read["type"], "read", "{read}");

    widget.send(json!({"type": "typing", "active": true})).await;
    let seen = read_until(&mut stream, "event: typing").await;
    assert_eq!(typing_events(&seen), ["true"]);
    // No answer to the typing frame: the next frame is the next message's ack.
    let next = widget.say("c2", "Still here").await;
    assert_eq!(next["type"], "ack", "{next}");
    assert_eq!(app.count("SELECT count(*) FROM messages"), 2);
}

#[tokio::test]
async fn typing_beyond_the_burst_is_dropped_but_the_stop_passes() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let conversation: i64 = app.count("SELECT id FROM conversations");
    let path = format!("/conversations/{conversation}/events");
    let (mut stream, _) = open_stream(&app, &path, &admin.cookie).await;

    for _ in 0..5 {
        widget.send(json!({"type": "typing", "active": true})).await;
    }
    widget
        .send(json!({"type": "typing", "active": false}))
        .await;
    widget
        .send(json!({"type": "typing", "active": false}))
        .await;
    let seen = read_for(&mut stream, Duration::from_millis(700)).await;
    // Two of the five starts (the burst), the stop after them; the second stop has no token.
    assert_eq!(typing_events(&seen), ["true", "true", "false"], "{seen}");
}

#[tokio::test]
async fn typing_is_not_counted_as_messages_by_the_brakes() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    // Two messages a burst: a third message now would be refused.
    app.set_site_limits(&site, 2, 2, 600, 60);
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("c1", "Hello").await["type"], "ack");
    for _ in 0..20 {
        widget.send(json!({"type": "typing", "active": true})).await;
    }
    let second = widget.say("c2", "Again").await;
    assert_eq!(second["type"], "ack", "{second}");
}

#[tokio::test]
async fn typing_before_the_first_message_goes_nowhere() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.send(json!({"type": "typing", "active": true})).await;
    let ack = widget.say("c1", "Hello").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(app.count("SELECT count(*) FROM messages"), 1);
}

#[tokio::test]
async fn a_malformed_typing_frame_is_a_bad_frame() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget
        .send(json!({"type": "typing", "active": "yes"}))
        .await;
    let answer = widget.recv().await;
    assert_eq!(answer["code"], "bad_frame", "{answer}");
}
