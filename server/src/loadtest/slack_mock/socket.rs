//! Enough Socket Mode for tests: a hello, the envelopes a test sends, and the acks recorded.

use std::sync::Arc;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::server::{MockState, SlackMock};
use crate::loadtest::served::lock;

pub(super) async fn socket(
    State(state): State<Arc<MockState>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    lock(&state.socket_agents).push(agent.to_owned());
    ws.on_upgrade(move |socket| serve_socket(state, socket))
}

impl SlackMock {
    /// The `User-Agent` each Socket Mode connection came with, in order (empty when none).
    pub fn socket_user_agents(&self) -> Vec<String> {
        lock(&self.state.socket_agents).clone()
    }

    /// The payload Porch's ack of `envelope_id` carried (`Null` for a bare ack), if it came.
    pub fn ack_payload(&self, envelope_id: &str) -> Option<Value> {
        let acks = lock(&self.state.acks);
        let (_, payload) = acks.iter().find(|(id, _)| id == envelope_id)?;
        Some(payload.clone())
    }
}

async fn serve_socket(state: Arc<MockState>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let hello =
        json!({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "AMOCK"}});
    if sink
        .send(Message::Text(hello.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    lock(&state.sockets).push(tx);
    loop {
        tokio::select! {
            outgoing = rx.recv() => match outgoing {
                Some(text) => if sink.send(Message::Text(text.into())).await.is_err() { break },
                None => break,
            },
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    let ack = serde_json::from_str::<Value>(&text).unwrap_or_default();
                    if let Some(id) = ack["envelope_id"].as_str() {
                        lock(&state.acks).push((id.to_owned(), ack["payload"].clone()));
                        state.changed.notify_waiters();
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
        }
    }
}
