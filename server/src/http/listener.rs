//! Our own accept loop. `axum::serve` installs no timer, so it never closes a connection that
//! sends nothing or half a header (shared/reference/performance.md §4a). Here hyper's HTTP/1
//! builder gets a timer and a header deadline, sockets get `TCP_NODELAY`, the listen backlog is
//! large enough for a reconnect storm, and the number of connections is capped, per address and
//! in all. A connection over a limit is answered at once (503, or the health probes from a
//! reserve), never left waiting in the kernel's backlog; see docs/operations.md.

mod admission;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::{Method, Response, StatusCode, header};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::state::AppState;

use super::read_ahead::ReadAhead;
use admission::{Admission, Admitted, Held, Reason};

/// Pending connections the kernel may queue; tokio's default (128) overflows when thousands of
/// widgets reconnect after a restart.
const LISTEN_BACKLOG: u32 = 4096;
/// Largest request head accepted (hyper's minimum is 8 KiB).
const MAX_HEADER_BUFFER: usize = 16 * 1024;
/// A refused connection has this long to send its request head, and as long again to be
/// answered, before its reserve slot is taken back.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(2);
/// The paths served from the reserve, so an orchestrator still sees a busy server as alive.
const PROBES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];
/// Seconds a refused client is asked to wait; the widget backs off on its own schedule anyway.
const RETRY_AFTER_SECONDS: &str = "5";

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

/// Sets an accepted socket's options: `TCP_NODELAY`, and `TCP_USER_TIMEOUT` so that the kernel
/// drops a connection whose peer has acknowledged nothing it was sent for `dead_after` (the widget's
/// idle timeout). Without it a peer that vanished without a FIN (a laptop put to sleep, a phone
/// off the network) keeps its connection through about 15 minutes of retransmissions: an admin
/// page's live stream, whose keep-alive is only written, never answered, would keep telling
/// visitors an agent is online all that time (docs/configuration.md, `PORCH_WS_IDLE_TIMEOUT`).
fn tune(stream: &TcpStream, dead_after: Duration) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(error = %err, "could not set TCP_NODELAY");
    }
    let millis = u32::try_from(dead_after.as_millis()).unwrap_or(u32::MAX);
    if let Err(err) = rustix::net::sockopt::set_tcp_user_timeout(stream, millis) {
        tracing::debug!(error = %err, "could not set TCP_USER_TIMEOUT");
    }
}

/// One of the limited connection slots. Held by the connection task and, after a websocket
/// upgrade, by the websocket task, so upgraded connections count too.
#[derive(Clone)]
pub struct ConnectionSlot {
    _held: Arc<Held>,
}

/// Serves `router` on `listener` until shutdown starts, then lets open HTTP exchanges finish
/// (up to the configured grace period) and closes within [`IDLE_CHECK`] every connection that is
/// in no exchange (idle, or with half a request head).
pub async fn serve(listener: TcpListener, router: Router, app: AppState, max_connections: usize) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(app.config.header_timeout)
        .max_buf_size(MAX_HEADER_BUFFER);
    let open = TaskTracker::new();
    let admission = Admission::new(
        max_connections,
        app.config.max_connections_per_ip,
        &app.config.trusted_proxies,
        Arc::clone(&app.meters),
    );
    loop {
        // Accept first and decide after: waiting for a free slot before accepting would leave
        // new connections, health probes included, unanswered in the kernel's backlog.
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
        tune(&stream, app.config.ws_idle_timeout);
        let held = match admission.admit(peer.ip()) {
            Admitted::Slot(held) => held,
            Admitted::Reserve(held, reason) => {
                open.spawn(answer_refused(stream, peer, router.clone(), held, reason));
                continue;
            }
            Admitted::Refused(reason) => {
                refuse_now(&stream, reason);
                continue;
            }
        };
        let slot = ConnectionSlot {
            _held: Arc::new(held),
        };
        let router = router.clone();
        let exchanges = Exchanges::default();
        let counted = exchanges.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            request.extensions_mut().insert(slot.clone());
            let router = router.clone();
            let exchange = counted.begin();
            async move {
                let response = router.oneshot(request).await.unwrap_or_else(|e| match e {});
                // The exchange lasts until hyper has written (and dropped) the whole body.
                Ok::<_, Infallible>(response.map(|inner| {
                    axum::body::Body::new(CountedBody {
                        inner,
                        _exchange: exchange,
                    })
                }))
            }
        });
        // Read ahead in chunks, so an upgraded widget socket can keep a small read buffer of
        // its own (see `read_ahead.rs`).
        let connection = builder
            .serve_connection(TokioIo::new(ReadAhead::new(stream)), service)
            .with_upgrades();
        let shutdown = app.shutdown.clone();
        open.spawn(async move {
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = shutdown.cancelled() => {
                    // Finish the exchange in progress, then close instead of keeping alive.
                    connection.as_mut().graceful_shutdown();
                    finish_or_close(connection, &exchanges).await
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

fn refusal_text(reason: Reason) -> &'static str {
    match reason {
        Reason::PerIp => "Too many connections from your address; retry shortly.\n",
        Reason::Capacity => "The server is at its connection limit; retry shortly.\n",
    }
}

/// The 503 a refused connection gets, with `Connection: close`.
fn refusal(reason: Reason) -> Response<axum::body::Body> {
    let body = refusal_text(reason);
    let mut response = Response::new(axum::body::Body::from(body));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(
        header::RETRY_AFTER,
        header::HeaderValue::from_static(RETRY_AFTER_SECONDS),
    );
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    response
}

/// Serves one request of a refused connection from the reserve: the probes for real, anything
/// else a 503, also to a client whose request head did not arrive in time. Bounded by
/// [`REFUSAL_DEADLINE`] twice over, whatever the client does.
async fn answer_refused(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    held: Held,
    reason: Reason,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(REFUSAL_DEADLINE)
        .max_buf_size(MAX_HEADER_BUFFER)
        .keep_alive(false);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        let router = router.clone();
        async move {
            let is_probe = matches!(*request.method(), Method::GET | Method::HEAD)
                && PROBES.contains(&request.uri().path());
            if !is_probe {
                return Ok::<_, Infallible>(refusal(reason));
            }
            request.extensions_mut().insert(ConnectInfo(peer));
            Ok(router.oneshot(request).await.unwrap_or_else(|e| match e {}))
        }
    });
    // hyper drops a connection whose head is late without a word. A second descriptor of the
    // socket (which stays open until both are closed) gives it the 503 then.
    let spare = rustix::io::dup(&stream).ok();
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(2 * REFUSAL_DEADLINE, connection).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) if err.is_timeout() => {
            if let Some(spare) = spare {
                refuse_now(spare, reason);
            }
        }
        Ok(Err(err)) => tracing::debug!(error = %err, "refused connection ended with an error"),
        Err(_) => tracing::debug!("refused connection ran out of time"),
    }
    drop(held);
}

/// Answers without reading when even the reserve is taken: one non-blocking write of the 503
/// into an empty send buffer, then close. A client whose request was still arriving may see a
/// reset instead, which is still an immediate answer.
/// Works on the socket's descriptor, so it also serves one that hyper has given up on; the
/// socket is non-blocking either way.
fn refuse_now(socket: impl AsFd, reason: Reason) {
    let body = refusal_text(reason);
    // Reading what already arrived makes the close a FIN rather than a reset more often.
    let mut scratch = [0u8; 4096];
    for _ in 0..4 {
        if !matches!(rustix::io::read(&socket, &mut scratch), Ok(n) if n > 0) {
            break;
        }
    }
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nretry-after: {RETRY_AFTER_SECONDS}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    if let Err(err) = rustix::io::write(&socket, head.as_bytes()) {
        tracing::debug!(error = %err, "could not answer a refused connection");
    }
}

/// How often a connection that is shutting down checks whether it is in an exchange at all.
const IDLE_CHECK: Duration = Duration::from_millis(100);

/// After `graceful_shutdown`: waits while a request is being answered (up to the grace period the
/// caller enforces), but closes a connection that is in no exchange. hyper itself closes an idle
/// keep-alive connection at once, but one that sent half a request head would otherwise hold
/// shutdown until its header timeout. A head that is already complete is dispatched by the first
/// poll, so it counts as an exchange before the first check.
async fn finish_or_close<C>(mut connection: Pin<&mut C>, exchanges: &Exchanges) -> hyper::Result<()>
where
    C: Future<Output = hyper::Result<()>>,
{
    loop {
        tokio::select! {
            result = connection.as_mut() => return result,
            () = tokio::time::sleep(IDLE_CHECK) => if exchanges.is_idle() {
                tracing::debug!("closing a connection with no request in progress");
                return Ok(());
            },
        }
    }
}

/// The requests of one connection that are being answered, from the call of the service until
/// hyper drops the response body.
#[derive(Clone, Default)]
struct Exchanges(Arc<AtomicUsize>);

impl Exchanges {
    fn begin(&self) -> Exchange {
        self.0.fetch_add(1, Ordering::SeqCst);
        Exchange(Arc::clone(&self.0))
    }

    fn is_idle(&self) -> bool {
        self.0.load(Ordering::SeqCst) == 0
    }
}

struct Exchange(Arc<AtomicUsize>);

impl Drop for Exchange {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its exchange counted until it is dropped.
struct CountedBody {
    inner: axum::body::Body,
    _exchange: Exchange,
}

impl HttpBody for CountedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
