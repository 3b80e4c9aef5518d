//! Resuming: whatever was committed while a visitor was away, or while they were reconnecting,
//! arrives exactly once and in order, however much it is.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use porch::chat::{Agent, MessageBody};
use porch::store::ConversationId;
use serde_json::Value;

use crate::helpers::{TestApp, Widget};

/// The ids of agent messages among `frames` (welcome messages or pushed `message` frames).
fn agent_ids<'a>(frames: impl IntoIterator<Item = &'a Value>) -> Vec<i64> {
    frames
        .into_iter()
        .filter(|f| f["type"] == "message" && f["author"] == "agent")
        .filter_map(|f| f["id"].as_i64())
        .collect()
}

/// A visitor with a conversation: their widget, token and the conversation.
async fn visitor_with_conversation(app: &TestApp, site: &str) -> (Widget, String, ConversationId) {
    let (mut widget, welcome) = app.visitor(site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    widget.say("q-1", "Is anyone there?").await;
    let conversation = app
        .db()
        .query_row("SELECT id FROM conversations", [], |r| r.get(0))
        .expect("a conversation");
    (widget, token, ConversationId(conversation))
}

fn agent() -> Agent {
    Agent {
        user_id: None,
        name: "Ana".into(),
    }
}

/// Reads frames until one carries message id `id` or later; returns them all.
async fn recv_through(widget: &mut Widget, id: i64) -> Vec<Value> {
    let mut frames = Vec::new();
    while !frames.iter().any(|f: &Value| f["id"].as_i64() >= Some(id)) {
        frames.push(widget.recv().await);
    }
    frames
}

#[tokio::test]
async fn replies_committed_while_the_visitor_keeps_reconnecting_arrive_once_in_order() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (widget, token, conversation) = visitor_with_conversation(&app, &site).await;
    drop(widget);
    let chat = app.server.as_ref().expect("running").app.chat.clone();

    // Two agents reply as fast as the server takes it, so replies land inside every hello.
    let stop = Arc::new(AtomicBool::new(false));
    let agents: Vec<_> = (0..2)
        .map(|n| {
            let (chat, stop) = (chat.clone(), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut ids = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let body =
                        MessageBody::parse(&format!("reply {n}-{}", ids.len())).expect("body");
                    let row = chat
                        .post_agent_message(conversation, &agent(), body, Vec::new(), None)
                        .await
                        .expect("reply stored")
                        .row;
                    ids.push(row.id.0);
                }
                ids
            })
        })
        .collect();

    let mut received = Vec::new();
    for round in 0..150 {
        let last_id = received.last().copied().unwrap_or(0);
        let (mut widget, welcome) = app.visitor(&site, Some(&token), last_id).await;
        received.extend(agent_ids(welcome["messages"].as_array().expect("messages")));
        // Stay for a pushed reply now and then, so live pushes and resumes interleave.
        if round % 3 == 0 {
            let pushed = widget.recv().await;
            received.extend(agent_ids([&pushed]));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut posted = Vec::new();
    for handle in agents {
        posted.extend(handle.await.expect("agent task"));
    }
    posted.sort_unstable();
    let newest = *posted.last().expect("replies were posted");

    let last_id = received.last().copied().unwrap_or(0);
    let (mut widget, welcome) = app.visitor(&site, Some(&token), last_id).await;
    let mut tail: Vec<Value> = welcome["messages"].as_array().expect("messages").clone();
    if tail.last().and_then(|m| m["id"].as_i64()) < Some(newest) {
        tail.extend(recv_through(&mut widget, newest).await);
    }
    received.extend(agent_ids(&tail));

    assert!(
        received.windows(2).all(|w| w[0] < w[1]),
        "replies repeated or out of order"
    );
    let missing: Vec<_> = posted.iter().filter(|id| !received.contains(id)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} replies never arrived: {missing:?}",
        missing.len(),
        posted.len()
    );
}

#[tokio::test]
async fn more_than_a_page_of_missed_messages_arrives_whole_and_oldest_first() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (widget, token, conversation) = visitor_with_conversation(&app, &site).await;
    drop(widget);
    let chat = app.server.as_ref().expect("running").app.chat.clone();
    let mut posted = Vec::new();
    for n in 0..620 {
        let body = MessageBody::parse(&format!("answer {n}")).expect("body");
        let row = chat
            .post_agent_message(conversation, &agent(), body, Vec::new(), None)
            .await
            .expect("reply stored")
            .row;
        posted.push(row.id.0);
    }

    let (mut widget, welcome) = app.visitor(&site, Some(&token), 0).await;
    let first_page = welcome["messages"].as_array().expect("messages");
    assert_eq!(first_page.len(), 500);
    assert_eq!(welcome["more"], true);
    assert_eq!(first_page[0]["author"], "visitor", "oldest first");
    let mut received = agent_ids(first_page);
    received.extend(agent_ids(&recv_through(&mut widget, posted[619]).await));
    assert_eq!(received, posted);

    // Caught up: the next resume has nothing more.
    let (_, again) = app.visitor(&site, Some(&token), posted[619]).await;
    assert_eq!(again["messages"], serde_json::json!([]));
    assert_eq!(again["more"], false);
    // Nothing else is queued on the first connection.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), widget.recv())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_history_too_large_for_one_frame_arrives_whole_after_a_smaller_welcome() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (widget, token, conversation) = visitor_with_conversation(&app, &site).await;
    drop(widget);
    let chat = app.server.as_ref().expect("running").app.chat.clone();
    // 30 replies of 4,000 three-byte characters: 360 KB, more than a connection may queue.
    let mut posted = Vec::new();
    for n in 0..30 {
        let text = format!("{n} {}", "中".repeat(3_990));
        let body = MessageBody::parse(&text).expect("body");
        let row = chat
            .post_agent_message(conversation, &agent(), body, Vec::new(), None)
            .await
            .expect("reply stored")
            .row;
        posted.push(row.id.0);
    }

    let (mut widget, welcome) = app.visitor(&site, Some(&token), 0).await;
    let first_page = welcome["messages"].as_array().expect("messages");
    assert!(first_page.len() < 31, "{} in welcome", first_page.len());
    assert_eq!(welcome["more"], true);
    let mut received = agent_ids(first_page);
    received.extend(agent_ids(&recv_through(&mut widget, posted[29]).await));
    assert_eq!(received, posted);
}

#[tokio::test]
async fn a_new_visitors_pipelined_first_messages_get_acks_and_are_not_echoed() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    for n in 0..5 {
        widget
            .send(
                serde_json::json!({"type": "message", "client_id": format!("p-{n}"), "body": "hi"}),
            )
            .await;
    }
    let mut kinds = Vec::new();
    for _ in 0..5 {
        kinds.push(
            widget.recv().await["type"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        );
    }
    assert_eq!(kinds, ["ack"; 5]);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), widget.recv())
            .await
            .is_err(),
        "nothing more, in particular no echo of our own messages"
    );
}

/// A `last_id` beyond every stored id (a client that counted its acks, say) is not a reason to
/// hold back what comes next: the next reply still arrives live.
#[tokio::test]
async fn a_last_id_from_the_future_does_not_mute_the_connection() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (widget, token, conversation) = visitor_with_conversation(&app, &site).await;
    drop(widget);
    let (mut widget, welcome) = app.visitor(&site, Some(&token), 1_000_000).await;
    assert_eq!(welcome["messages"], serde_json::json!([]));
    let chat = app.server.as_ref().expect("running").app.chat.clone();
    let body = MessageBody::parse("Still here?").expect("body");
    let row = chat
        .post_agent_message(conversation, &agent(), body, Vec::new(), None)
        .await
        .expect("reply stored")
        .row;
    let pushed = widget.recv().await;
    assert_eq!(pushed["type"], "message", "{pushed}");
    assert_eq!(pushed["id"], row.id.0);
}
