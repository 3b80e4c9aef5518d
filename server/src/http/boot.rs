//! The listener's answers while the server is still starting (opening and migrating the
//! database): `/healthz` is 200, because the process is alive and must not be restarted in the
//! middle of a migration; `/readyz` is 503 `migrating`; everything else is 503 with `Retry-After`.
//! Serving from the first moment also means a load balancer or `porch health` never mistakes a
//! long migration for a dead process.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::ApiError;

/// Seconds a client is asked to wait before retrying while the server starts.
const RETRY_AFTER_SECS: &str = "2";

/// The start-up responder; [`Booting::finish`] hands the listener back for the real server.
pub struct Booting {
    done: CancellationToken,
    task: JoinHandle<TcpListener>,
}

/// Answers health probes on `listener` until [`Booting::finish`] is called.
pub fn serve_while_booting(listener: TcpListener, header_timeout: Duration) -> Booting {
    let done = CancellationToken::new();
    let task = tokio::spawn(accept_loop(listener, header_timeout, done.clone()));
    Booting { done, task }
}

impl Booting {
    /// Stops answering new connections and returns the listener. Connections accepted meanwhile
    /// finish their current exchange and close, so clients reconnect to the real server.
    ///
    /// # Errors
    /// Fails only if the responder task panicked.
    pub async fn finish(self) -> anyhow::Result<TcpListener> {
        self.done.cancel();
        self.task
            .await
            .map_err(|err| anyhow::anyhow!("the start-up responder failed: {err}"))
    }
}

fn router() -> Router {
    Router::new()
        .route(
            "/healthz",
            get(|| async { axum::Json(json!({"status": "ok"})) }),
        )
        .route("/readyz", get(not_ready))
        .fallback(|| async {
            let mut response = ApiError::unavailable().into_response();
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECS),
            );
            response
        })
        .layer(super::routes::nosniff())
}

async fn not_ready() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({"status": "not_ready", "reason": "migrating"})),
    )
        .into_response()
}

async fn accept_loop(
    listener: TcpListener,
    header_timeout: Duration,
    done: CancellationToken,
) -> TcpListener {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let router = router();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    tracing::debug!(error = %err, "accept failed while starting");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = done.cancelled() => return listener,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let router = router.clone();
            async move {
                Ok::<_, Infallible>(router.oneshot(request).await.unwrap_or_else(|e| match e {}))
            }
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let done = done.clone();
        tokio::spawn(async move {
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = done.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = result {
                tracing::debug!(error = %err, "start-up connection ended with an error");
            }
        });
    }
}
