//! The writer's admission control and shutdown: a full queue refuses with `busy`, and nothing
//! that was acknowledged is ever missing.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;

use crate::helpers::{TestApp, Widget, ok_if, wait_until};

/// Occupies the writer thread until the returned sender is dropped or sent to, so the test
/// controls exactly when the queue drains.
async fn hold_writer(app: &TestApp) -> std::sync::mpsc::Sender<()> {
    let server = app.server.as_ref().expect("running");
    let writer = std::sync::Arc::clone(&server.app.writer);
    let (release, held) = std::sync::mpsc::channel::<()>();
    tokio::spawn(async move {
        writer
            .write(move |_| {
                let _ = held.recv();
                Ok(())
            })
            .await
    });
    let queued = || server.app.writer.stats().queue_depth.load(Ordering::SeqCst);
    wait_until(
        "the writer to take the hold",
        Duration::from_secs(5),
        async || ok_if(queued(), |depth| *depth == 0),
    )
    .await;
    release
}

async fn send_many(widget: &mut Widget, prefix: &str, n: usize) {
    for i in 0..n {
        widget
            .send(json!({"type": "message", "client_id": format!("{prefix}{i}"), "body": "queued"}))
            .await;
    }
}

#[tokio::test]
async fn a_full_queue_refuses_with_busy_and_nothing_acked_is_lost() {
    let app = TestApp::spawn(&["--writer-queue", "4", "--writer-batch", "1"]).await;
    let site = app.add_site("Shop");
    // This test is about the queue, not the visitor's rate limit.
    app.set_site_limits(&site, 10_000, 100, 600, 60);
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let release = hold_writer(&app).await;

    send_many(&mut widget, "m", 10).await;
    let mut busy = Vec::new();
    for _ in 0..6 {
        let answer = widget.recv().await;
        assert_eq!(answer["code"], "busy", "{answer}");
        assert!(answer["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0));
        busy.push(answer["client_id"].as_str().expect("client_id").to_owned());
    }
    assert_eq!(
        app.count("SELECT count(*) FROM messages"),
        0,
        "nothing is committed while held"
    );
    release.send(()).expect("release");

    let mut acked = Vec::new();
    for _ in 0..4 {
        let ack = widget.recv().await;
        assert_eq!(ack["type"], "ack", "{ack}");
        acked.push(ack["id"].as_i64().expect("id"));
    }
    for id in &acked {
        assert_eq!(
            app.count(&format!("SELECT count(*) FROM messages WHERE id = {id}")),
            1
        );
    }
    // The refused ones were not stored; resending them now succeeds.
    for client_id in &busy {
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) FROM messages WHERE client_id = '{client_id}'"
            )),
            0
        );
        assert_eq!(widget.say(client_id, "queued").await["type"], "ack");
    }
    assert_eq!(app.count("SELECT count(*) FROM messages"), 10);
}

#[tokio::test]
async fn shutdown_answers_queued_writes_before_closing_and_keeps_them() {
    let mut app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let release = hold_writer(&app).await;
    send_many(&mut widget, "s", 5).await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    let server = app.server.take().expect("running");
    let stopping = tokio::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    release.send(()).expect("release");

    let mut acked = 0;
    for _ in 0..5 {
        assert_eq!(widget.recv().await["type"], "ack");
        acked += 1;
    }
    assert_eq!(
        widget.closed().await,
        Some(1012),
        "clients are told to reconnect"
    );
    stopping.await.expect("stop completes");
    assert_eq!(acked, 5);
    assert_eq!(app.count("SELECT count(*) FROM messages"), 5);
}
