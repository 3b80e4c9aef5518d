//! Refusals at the edge: one address over its connection limit, or any client once every slot is
//! taken, gets an immediate 503 instead of waiting in the backlog; health probes still answer.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::MaybeTlsStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::helpers::{ORIGIN, TestApp, WAIT, Widget};

/// A refusal must come at once; a hang in the backlog would run into this.
const QUICK: Duration = Duration::from_secs(1);
const FIRST: [u8; 4] = [127, 0, 0, 1];
/// Loopback's whole /8 reaches the server on Linux, so this is a second client address.
const SECOND: [u8; 4] = [127, 0, 0, 2];

async fn connect_from(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::new(IpAddr::from(from), 0))
        .expect("bind the client address");
    socket.connect(addr).await.expect("connect")
}

/// Sends one request and reads the answer until the server closes; fails past `limit`.
async fn request_from(from: [u8; 4], addr: SocketAddr, path: &str, limit: Duration) -> String {
    let started = Instant::now();
    let mut stream = connect_from(from, addr).await;
    let head = format!("GET {path} HTTP/1.1\r\nHost: porch\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(limit, stream.read_to_end(&mut answer))
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within {limit:?}"))
        .expect("read");
    assert!(
        started.elapsed() < limit,
        "{path} took {:?}",
        started.elapsed()
    );
    String::from_utf8_lossy(&answer).into_owned()
}

/// Opens a keep-alive connection and waits for one answer on it, so it surely holds a slot.
async fn hold_slot(from: [u8; 4], addr: SocketAddr) -> TcpStream {
    let mut stream = connect_from(from, addr).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: porch\r\n\r\n")
        .await
        .expect("write");
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(WAIT, stream.read(&mut buf))
        .await
        .expect("answered")
        .expect("read");
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
    stream
}

fn assert_refused(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 5"), "{answer}");
    assert!(lower.contains("connection: close"), "{answer}");
}

#[tokio::test]
async fn an_address_over_its_connection_limit_is_refused_at_once_while_another_address_chats() {
    let app = TestApp::spawn(&["--max-connections-per-ip", "3"]).await;
    let site = app.add_site("Shop");
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(hold_slot(FIRST, app.addr).await);
    }

    for _ in 0..2 {
        assert_refused(&request_from(FIRST, app.addr, "/", QUICK).await);
    }

    let stream = connect_from(SECOND, app.addr).await;
    let mut request = format!("ws://{}/widget/ws?site={site}", app.addr)
        .into_client_request()
        .expect("request");
    request
        .headers_mut()
        .insert("origin", ORIGIN.parse().expect("origin header"));
    let (ws, _) = tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(stream))
        .await
        .expect("the second address opens a websocket");
    let mut widget = Widget { ws };
    widget.hello(None, 0).await;
    let ack = widget.say("c1", "Hello from another address").await;
    assert_eq!(ack["type"], "ack", "{ack}");

    let metrics = request_from(SECOND, app.addr, "/metrics", WAIT).await;
    assert!(
        metrics.contains("porch_connections_refused_total{reason=\"per_ip\"} 2"),
        "{metrics}"
    );
    drop(held);
}

#[tokio::test]
async fn with_every_slot_taken_a_new_connection_is_refused_at_once_and_probes_still_answer() {
    let app = TestApp::spawn(&["--max-connections", "2"]).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(hold_slot(FIRST, app.addr).await);
    }

    assert_refused(&request_from(FIRST, app.addr, "/", QUICK).await);
    for probe in ["/healthz", "/readyz"] {
        let answer = request_from(FIRST, app.addr, probe, QUICK).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{probe}: {answer}");
    }
    // The scrape is refused an ordinary slot too, so it counts itself: 1 + 2 probes + 1.
    let metrics = request_from(FIRST, app.addr, "/metrics", QUICK).await;
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(
        metrics.contains("porch_connections_refused_total{reason=\"capacity\"} 4"),
        "{metrics}"
    );
    drop(held);
}

/// A refused connection that sends nothing, or only part of a request head, still gets its 503
/// when its time in the reserve is up, not a silent close.
#[tokio::test]
async fn a_refused_connection_that_sends_nothing_or_half_a_head_still_gets_the_503() {
    let app = TestApp::spawn(&["--max-connections-per-ip", "3"]).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(hold_slot(FIRST, app.addr).await);
    }
    for sent in [&b""[..], b"GET / HTTP/1.1\r\nHost: por"] {
        let mut stream = connect_from(FIRST, app.addr).await;
        stream.write_all(sent).await.expect("write");
        let mut answer = Vec::new();
        tokio::time::timeout(WAIT, stream.read_to_end(&mut answer))
            .await
            .expect("an answer within the reserve's deadlines")
            .expect("read");
        let answer = String::from_utf8_lossy(&answer);
        assert_refused(&answer);
        assert!(answer.ends_with("Too many connections from your address; retry shortly.\n"));
    }
    drop(held);
}
