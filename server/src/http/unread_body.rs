//! A request body the handler left unread is read to its end before the answer goes out, so the
//! connection can carry the client's next request. A handler that refuses a call (a bad token, an
//! agent at an admin form, a wrong content type) answers without reading the body; HTTP/1.1 then
//! cannot tell where the next request begins, so hyper closes the connection after the answer,
//! without saying so, while the client may still be writing the body, and a client that pools
//! connections (httpx, requests, every HTTP library) gets a transport error on its next call.
//! Read here, bounded in size and time; past either bound the answer says `Connection: close`,
//! as a 413 or a 408 (whose bodies are never read) always does, so the client opens a new
//! connection instead. A body announced larger than the bound, or one the client holds back until
//! `100 Continue` and the handler never asked for, is not read at all (the answer closes).

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use hyper::body::{Frame, SizeHint};

/// Most bytes of an unread body read after the answer was decided: the default body limit, so
/// any refused API call or form is read; a larger upload refused early closes its connection.
const MOST_READ: usize = 1024 * 1024;
/// Longest the answer waits for the rest of a body (a client that sends it slowly gets
/// `Connection: close` rather than holding the answer).
const MOST_WAIT: Duration = Duration::from_secs(2);

/// The request's body, whose unread rest stays here when the handler drops its part, and
/// whether the handler read any of it.
type Kept = Arc<Mutex<(Option<Body>, bool)>>;

fn lock(kept: &Kept) -> MutexGuard<'_, (Option<Body>, bool)> {
    kept.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The body as the handler sees it: reads through to the kept one.
struct Shared(Kept);

impl hyper::body::Body for Shared {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let mut kept = lock(&self.0);
        kept.1 = true;
        match kept.0.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        lock(&self.0)
            .0
            .as_ref()
            .is_none_or(hyper::body::Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        lock(&self.0)
            .0
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), hyper::body::Body::size_hint)
    }
}

/// Whether `rest` ended within [`MOST_READ`] bytes and [`MOST_WAIT`].
async fn read_to_end(rest: Body) -> bool {
    let mut stream = rest.into_data_stream();
    let mut read = 0usize;
    let to_end = async {
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { return false };
            read = read.saturating_add(chunk.len());
            if read > MOST_READ {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(MOST_WAIT, to_end)
        .await
        .unwrap_or(false)
}

/// What the request's head says of its body, read before the handler takes the request: its
/// announced length is over [`MOST_READ`], and whether the client waits for `100 Continue`
/// before it sends it.
#[derive(Debug, Clone, Copy)]
struct Announced {
    too_long: bool,
    waits_to_send: bool,
}

impl Announced {
    fn of(headers: &HeaderMap) -> Self {
        let length = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        Self {
            too_long: length.is_some_and(|n| n > MOST_READ as u64),
            waits_to_send: headers
                .get(header::EXPECT)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue")),
        }
    }

    /// Whether the unread rest is not worth reading: too long, or held back for `100
    /// Continue` and never asked for by the handler (reading would tell the client to upload
    /// what was refused).
    fn is_left_alone(self, handler_read: bool) -> bool {
        self.too_long || (self.waits_to_send && !handler_read)
    }
}

/// The middleware: see the module's comment.
pub async fn finish_request_body(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    // No body (most GETs): nothing can be left unread, and nothing is kept.
    let kept: Option<(Kept, Announced)> = (!hyper::body::Body::is_end_stream(&body)).then(|| {
        (
            Arc::new(Mutex::new((Some(body), false))),
            Announced::of(&parts.headers),
        )
    });
    let body = match &kept {
        Some((kept, _)) => Body::new(Shared(Arc::clone(kept))),
        None => Body::empty(),
    };
    let mut response = next.run(Request::from_parts(parts, body)).await;
    let unread_for_good = matches!(
        response.status(),
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::REQUEST_TIMEOUT
    );
    let rest = kept.map(|(kept, announced)| {
        let mut kept = lock(&kept);
        (kept.0.take(), kept.1, announced)
    });
    let whole = match rest {
        None | Some((None, ..)) => true,
        Some((Some(rest), ..)) if hyper::body::Body::is_end_stream(&rest) => true,
        Some((Some(rest), handler_read, announced)) => {
            !unread_for_good && !announced.is_left_alone(handler_read) && read_to_end(rest).await
        }
    };
    if unread_for_good || !whole {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
