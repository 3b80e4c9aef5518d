//! The capacity page's replication card: without a sidecar it says so; with
//! `PORCH_LITESTREAM_METRICS_URL` it shows what Litestream's metrics tell (a fake sidecar serves
//! the metric names Litestream 0.5.17 exposes), and warns once the endpoint goes away.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::helpers::{TestApp, WAIT, wait_until};
use crate::inbox::{send, setup_admin, signed_in_from};

/// A fake Litestream: its sync counter rises at every scrape, as the real one's does once a second.
async fn fake_litestream(stop: CancellationToken) -> String {
    let syncs = Arc::new(AtomicU64::new(0));
    let metrics = axum::routing::get(move || {
        let n = syncs.fetch_add(1, Ordering::Relaxed) + 1;
        async move {
            format!(
                "# HELP litestream_txid The current transaction ID\n\
                 # TYPE litestream_txid gauge\n\
                 litestream_txid{{db=\"/data/porch.db\"}} 4242\n\
                 litestream_sync_count{{db=\"/data/porch.db\"}} {n}\n\
                 litestream_sync_error_count{{db=\"/data/porch.db\"}} 3\n\
                 litestream_disk_full{{db=\"/data/porch.db\"}} 0\n"
            )
        }
    });
    let router = axum::Router::new().route("/metrics", metrics);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await
            .expect("fake litestream");
    });
    format!("http://{addr}/metrics")
}

/// Reloads the capacity page until `wanted` is on it.
async fn page_showing(app: &TestApp, cookie: &str, wanted: &str) -> String {
    wait_until(&format!("the page to show {wanted}"), WAIT, async || {
        let page = send(app, "GET", "/capacity", cookie, None).await;
        assert_eq!(page.status, 200);
        if page.body.contains(wanted) {
            Ok(page.body)
        } else {
            Err(page.body)
        }
    })
    .await
}

#[tokio::test]
async fn without_a_sidecar_the_page_says_none_is_configured() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let page = send(&app, "GET", "/capacity", &admin.cookie, None).await;
    assert!(
        page.body.contains("No Litestream sidecar configured"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn the_page_shows_litestreams_sync_and_warns_when_the_scrape_fails() {
    let stop = CancellationToken::new();
    let url = fake_litestream(stop.clone()).await;
    let app = TestApp::spawn_configured(&[], |config| {
        config.litestream_metrics_url = Some(url.clone());
        config.litestream_scrape_every = Duration::from_millis(100);
    })
    .await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;

    let page = page_showing(&app, &admin.cookie, "<td>4242</td>").await;
    for part in [
        "Last successful sync seen",
        " s ago</td>",
        "<td>3</td>",
        &url,
    ] {
        assert!(page.contains(part), "{part} missing: {page}");
    }
    assert!(
        !page.contains("role=\"alert\""),
        "no warning while syncs rise: {page}"
    );

    stop.cancel();
    let page = page_showing(&app, &admin.cookie, "metrics failed: cannot reach").await;
    assert!(page.contains("connection failed"), "{page}");
    assert!(
        page.contains("<td>4242</td>"),
        "the last figures stay: {page}"
    );
}
