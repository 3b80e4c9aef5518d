//! Uploads are limited per address (docs/widget-protocol.md, "Attachments"): a visitor token is
//! free, so fresh tokens must not let one machine store file after file.

use std::net::IpAddr;

use serde_json::Value;

use crate::helpers::{ORIGIN, TestApp};

/// Uploads a small file with a fresh visitor token from `from`; (status, JSON).
async fn upload_from(app: &TestApp, site: &str, from: IpAddr, n: usize) -> (u16, Value) {
    let (_, welcome) = app.visitor(site, None, 0).await;
    let token = welcome["token"].as_str().expect("token");
    let client = reqwest::Client::builder()
        .local_address(from)
        .build()
        .expect("client");
    let answer = client
        .post(format!(
            "http://{}/widget/attachments?site={site}&name=f{n}.txt",
            app.addr
        ))
        .header("origin", ORIGIN)
        .header("authorization", format!("Bearer {token}"))
        .body(format!("file number {n}\n"))
        .send()
        .await
        .expect("answer");
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn one_address_gets_twenty_files_at_once_whatever_its_tokens_and_another_address_is_not_held()
{
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let (flooder, neighbour): (IpAddr, IpAddr) = ([127, 0, 0, 1].into(), [127, 0, 0, 2].into());
    for n in 0..20 {
        let (status, body) = upload_from(&app, &site, flooder, n).await;
        assert_eq!(status, 201, "upload {n}: {body}");
    }
    let (status, body) = upload_from(&app, &site, flooder, 20).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limited");
    let wait = body["error"]["retry_after_ms"].as_u64().expect("a wait");
    assert!(
        (55_000..=60_000).contains(&wait),
        "one file a minute: {wait} ms"
    );
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 20);

    let (status, body) = upload_from(&app, &site, neighbour, 21).await;
    assert_eq!(status, 201, "{body}");
}
