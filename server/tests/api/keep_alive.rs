//! A refused call whose body the server did not need still leaves its connection usable: the
//! body is read to its end before the answer, so a client that pools connections sends its next
//! request on the same one. A body that does not come in time gets `Connection: close` instead.
//! (Before 2026-12-06 such a connection was dropped without a word, and the client's next call
//! failed: "Server disconnected without sending a response".)

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::TestApp;

/// Everything the server sends on `stream` until `enough` holds or it closes (10 s at most).
async fn read_until(stream: &mut TcpStream, enough: impl Fn(&str) -> bool) -> String {
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
            if enough(&String::from_utf8_lossy(&answer)) {
                break;
            }
        }
    })
    .await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// An admin-only call by an agent: refused before its JSON body is read.
fn refused_head(key: &str, token: &str, length: usize) -> String {
    format!(
        "PUT /api/v1/sites/{key}/retention HTTP/1.1\r\nHost: porch\r\n\
         Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n\r\n"
    )
}

#[tokio::test]
async fn a_refused_calls_connection_takes_the_next_request() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_agent_token("Ana");
    let key = app.add_site("Shop");
    let body = r#"{"days": 30}"#;
    let mut stream = TcpStream::connect(app.addr).await.expect("connect");
    stream
        .write_all(refused_head(&key, &token, body.len()).as_bytes())
        .await
        .expect("write the head");
    // The body in a packet of its own, a moment later, as over a real network.
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Writes may fail once the server has closed: what it answered is checked below.
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: porch\r\n\r\n")
        .await;
    let answers = read_until(&mut stream, |text| text.contains(r#""status":"ok""#)).await;
    let (refused_head, rest) = answers.split_once("\r\n\r\n").unwrap_or((&answers, ""));
    assert!(refused_head.starts_with("HTTP/1.1 403"), "{answers}");
    assert!(
        !refused_head
            .to_lowercase()
            .contains("\r\nconnection: close"),
        "{answers}"
    );
    assert!(
        rest.contains("HTTP/1.1 200 OK"),
        "the next request answered on the same connection: {answers}"
    );
}

#[tokio::test]
async fn a_refused_calls_body_that_does_not_come_closes_the_connection_saying_so() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_agent_token("Ana");
    let key = app.add_site("Shop");
    let mut stream = TcpStream::connect(app.addr).await.expect("connect");
    // 100 bytes promised, one sent: the answer waits a moment for the rest, then says it closes.
    let head = refused_head(&key, &token, 100);
    stream
        .write_all(format!("{head}{{").as_bytes())
        .await
        .expect("write");
    let answer = read_until(&mut stream, |text| text.contains("}}")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.to_lowercase().contains("\r\nconnection: close\r\n"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_refused_body_held_for_100_continue_is_not_asked_for() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_agent_token("Ana");
    let key = app.add_site("Shop");
    let mut stream = TcpStream::connect(app.addr).await.expect("connect");
    // The client waits for `100 Continue` before it sends its body: refused, it never sends it.
    let head =
        refused_head(&key, &token, 12).replace("\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("write");
    let answer = read_until(&mut stream, |text| text.contains("}}")).await;
    assert!(
        answer.starts_with("HTTP/1.1 403"),
        "no 100 Continue first: {answer}"
    );
    assert!(
        answer.to_lowercase().contains("\r\nconnection: close\r\n"),
        "{answer}"
    );
}
