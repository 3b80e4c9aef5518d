//! The bare websocket echo (`porch loadtest-echo`): the baseline every load-test figure is divided
//! by. Same listener backlog and websocket buffer settings as the widget socket, no storage, so
//! `porch ÷ echo` measures what Porch's own work costs on this machine.

use std::net::SocketAddr;

use anyhow::Context;
use axum::Router;
use axum::extract::WebSocketUpgrade;
use axum::extract::ws::{Message, WebSocket};
use axum::response::Response;
use axum::routing::get;
use axum::serve::Listener;
use tokio::net::{TcpListener, TcpStream};

use crate::http::read_ahead::ReadAhead;

/// The widget socket's settings (`widget::endpoint`), repeated so the baseline pays the same;
/// its connections are read ahead in chunks as Porch's are (`http/read_ahead.rs`).
const READ_BUFFER: usize = 512;
const MAX_WRITE_BUFFER: usize = 256 * 1024;
const MAX_MESSAGE: usize = 64 * 1024;

/// Runs the echo until the process is stopped; it serves `/widget/ws` like Porch.
pub fn run_echo(listen: SocketAddr) -> anyhow::Result<()> {
    // One worker thread: the scratch Porch is pinned to one core too, so both sides of the
    // ratio get the same CPU.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let listener =
            crate::http::bind(listen).with_context(|| format!("listening on {listen}"))?;
        let app = Router::new().route("/widget/ws", get(upgrade));
        axum::serve(ReadAheadListener(listener), app)
            .await
            .context("serving")
    })
}

/// A listener whose connections are read ahead, like Porch's.
struct ReadAheadListener(TcpListener);

impl Listener for ReadAheadListener {
    type Io = ReadAhead<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = Listener::accept(&mut self.0).await;
        (ReadAhead::new(stream), addr)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Listener::local_addr(&self.0)
    }
}

async fn upgrade(ws: WebSocketUpgrade) -> Response {
    ws.read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_write_buffer_size(MAX_WRITE_BUFFER)
        .max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .on_upgrade(echo)
}

async fn echo(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
        let reply = match message {
            Message::Text(_) | Message::Binary(_) => message,
            Message::Close(_) => return,
            // Pongs are answered by the library; nothing else needs an answer.
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        if socket.send(reply).await.is_err() {
            return;
        }
    }
}
