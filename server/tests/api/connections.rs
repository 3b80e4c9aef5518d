//! Connection hygiene: silent, half-sent and idle connections are closed; HTTP limits answer
//! with the right status.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{Exchange as _, TestApp, WAIT};

/// Reads until the server closes the stream; returns how long that took.
async fn time_until_closed(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(WAIT, stream.read(&mut buf))
            .await
            .expect("closed within the wait")
        {
            Ok(0) | Err(_) => return started.elapsed(),
            Ok(_) => {}
        }
    }
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_timeout() {
    let app = TestApp::spawn(&["--header-timeout", "1s"]).await;
    let mut stream = TcpStream::connect(app.addr).await.expect("connect");
    let waited = time_until_closed(&mut stream).await;
    assert!(
        waited >= Duration::from_millis(900),
        "closed too early: {waited:?}"
    );
}

#[tokio::test]
async fn a_half_sent_header_is_closed_after_the_header_timeout() {
    let app = TestApp::spawn(&["--header-timeout", "1s"]).await;
    let mut stream = TcpStream::connect(app.addr).await.expect("connect");
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .expect("write");
    let waited = time_until_closed(&mut stream).await;
    assert!(
        waited >= Duration::from_millis(900),
        "closed too early: {waited:?}"
    );
}

#[tokio::test]
async fn an_idle_websocket_is_closed_after_the_idle_limit() {
    let app = TestApp::spawn(&["--ws-idle-timeout", "1s", "--ws-ping-interval", "10s"]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let started = Instant::now();
    assert_eq!(widget.closed().await, Some(1000));
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[tokio::test]
async fn a_websocket_that_answers_pings_stays_open() {
    let app = TestApp::spawn(&["--ws-idle-timeout", "1s", "--ws-ping-interval", "200ms"]).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    // Reading lets the client library answer the server's pings; for 3 s nothing else happens.
    let outcome = tokio::time::timeout(Duration::from_secs(3), widget.closed()).await;
    assert!(outcome.is_err(), "the connection was closed: {outcome:?}");
    assert_eq!(widget.say("alive", "still here").await["type"], "ack");
}

#[tokio::test]
async fn http_limits_and_errors_have_clear_statuses() {
    let app = TestApp::spawn(&["--body-limit", "1024"]).await;
    let token = app.add_agent_token("Ana");
    let big = format!("{{\"body\": \"{}\"}}", "x".repeat(4096));
    let response = app
        .http
        .request("POST", "/api/v1/conversations/1/messages")
        .bearer_auth(&token)
        .header("Content-Type", "application/json")
        .body(big)
        .answer()
        .await;
    assert_eq!(response.status, 413);

    let response = app.http.get("/api/v1/conversations").answer().await;
    assert_eq!(response.status, 401);
    assert!(
        response.body.contains("\"code\":\"unauthorized\""),
        "{}",
        response.body
    );

    let (status, body) = app
        .api(
            "POST",
            "/api/v1/conversations/999/messages",
            &token,
            Some(serde_json::json!({"body": "hi"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );

    let response = app.http.get("/no/such/page").answer().await;
    assert_eq!(response.status, 404);

    assert_eq!(app.http.get("/healthz").answer().await.status, 200);
    let ready = app.http.get("/readyz").answer().await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    // `/` sends people to the admin UI (setup, sign-in or inbox).
    let home = app.http.get("/").answer().await;
    assert_eq!(home.status, 303);
}
