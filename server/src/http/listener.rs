//! Our own accept loop. `axum::serve` installs no timer, so it never closes a connection that
//! sends nothing or half a header (shared/reference/performance.md §4a). Here hyper's HTTP/1
//! builder gets a timer and a header deadline, sockets get `TCP_NODELAY`, the listen backlog is
//! large enough for a reconnect storm, and the number of connections is capped.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::state::AppState;

/// Pending connections the kernel may queue; tokio's default (128) overflows when thousands of
/// widgets reconnect after a restart.
const LISTEN_BACKLOG: u32 = 4096;
/// Largest request head accepted (hyper's minimum is 8 KiB).
const MAX_HEADER_BUFFER: usize = 16 * 1024;

/// Binds a listener with Porch's socket options.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// One of the limited connection slots. Held by the connection task and, after a websocket
/// upgrade, by the websocket task, so upgraded connections count too.
#[derive(Clone)]
pub struct ConnectionSlot {
    _permit: Arc<OwnedSemaphorePermit>,
}

/// Serves `router` on `listener` until shutdown starts, then lets open HTTP exchanges finish
/// (up to the configured grace period).
pub async fn serve(listener: TcpListener, router: Router, app: AppState, max_connections: usize) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(app.config.header_timeout)
        .max_buf_size(MAX_HEADER_BUFFER);
    let open = TaskTracker::new();
    let slots = Arc::new(Semaphore::new(max_connections));
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = app.shutdown.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Usually EMFILE; back off briefly instead of spinning.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = app.shutdown.cancelled() => break,
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY");
        }
        let slot = ConnectionSlot {
            _permit: Arc::new(permit),
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            request.extensions_mut().insert(slot.clone());
            let router = router.clone();
            async move {
                Ok::<_, Infallible>(router.oneshot(request).await.unwrap_or_else(|e| match e {}))
            }
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let shutdown = app.shutdown.clone();
        open.spawn(async move {
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = shutdown.cancelled() => {
                    // Finish the exchange in progress, then close instead of keeping alive.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = result {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    open.close();
    if tokio::time::timeout(app.config.shutdown_grace, open.wait())
        .await
        .is_err()
    {
        tracing::warn!("some HTTP connections were still open at the end of the grace period");
    }
}
