//! Liveness and readiness: `/healthz` answers whenever the process serves HTTP; `/readyz` is 503
//! with a reason while the database is migrating at start-up and once shutdown has begun.

use axum::body::Body;
use serde_json::Value;
use tower::ServiceExt;

use crate::helpers::{Exchange as _, Http, TestApp, WAIT, ok_if, serve_config, wait_until};

async fn get(http: &Http, path: &str) -> (u16, Value) {
    let answer = http.get(path).answer().await;
    (answer.status, answer.json())
}

#[tokio::test]
async fn readiness_is_false_while_migrating_and_liveness_stays_true() {
    let data_dir = tempfile::tempdir().expect("temp dir");
    // Another process (as Litestream can) holds the database locked, so opening and migrating
    // waits on SQLite's busy timeout: the start-up phase lasts until the lock is released. The
    // file is a SQLite file with no tables yet (an empty file would be refused outright).
    let blocker = rusqlite::Connection::open(data_dir.path().join("porch.db")).expect("open");
    blocker
        .execute_batch("PRAGMA user_version = 0; VACUUM; BEGIN EXCLUSIVE")
        .expect("lock");
    let config = serve_config(data_dir.path(), &[]);
    let listener = porch::http::bind(config.listen).expect("bind");
    let client = Http::new(listener.local_addr().expect("addr"));
    let starting = tokio::spawn(porch::start(config, listener));

    let (status, body) = get(&client, "/readyz").await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (503, Some("migrating")),
        "{body}"
    );
    assert_eq!(get(&client, "/healthz").await.0, 200);
    let (status, body) = get(&client, "/api/v1/conversations").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("unavailable"))
    );
    assert!(!starting.is_finished(), "the server waits for the lock");

    blocker.execute_batch("ROLLBACK").expect("unlock");
    let server = tokio::time::timeout(WAIT, starting)
        .await
        .expect("starts once unlocked")
        .expect("no panic")
        .expect("server starts");
    // Connections of the start-up phase close after their exchange; a new one meets the server.
    let (_, body) = wait_until("readiness", WAIT, async || {
        ok_if(get(&client, "/readyz").await, |(status, _)| *status == 200)
    })
    .await;
    assert_eq!(body["status"], "ready");
    server.stop().await;
}

#[tokio::test]
async fn readiness_is_false_once_shutdown_begins() {
    let mut app = TestApp::spawn(&[]).await;
    assert_eq!(get(&app.http, "/readyz").await.0, 200);
    let server = app.server.take().expect("running");
    server.app.begin_shutdown();

    // The listener stops accepting at once, so a probe still in flight is what sees the answer;
    // the router is what serves it.
    let router = porch::http::router(std::sync::Arc::clone(&server.app));
    let request = axum::http::Request::get("/readyz")
        .body(Body::empty())
        .expect("request");
    let response = router.oneshot(request).await.expect("infallible");
    assert_eq!(response.status(), 503);
    let body = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .expect("body");
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(body["reason"], "shutting_down", "{body}");
    // Liveness is unaffected: the process is still up and finishing its work.
    let router = porch::http::router(std::sync::Arc::clone(&server.app));
    let request = axum::http::Request::get("/healthz")
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        router.oneshot(request).await.expect("infallible").status(),
        200
    );
    server.stop().await;
}
