//! Server-Sent Events for the admin UI's live pages, written in batches. A stream task collects
//! what a burst of hub signals produces into one [`Batch`] and hands it over as one chunk: with
//! many agents watching a busy inbox, one socket write per agent per burst instead of one per
//! event per agent is what keeps the fan-out's cost per message flat (docs/capacity.md, "Agents
//! watching"). The framing follows the HTML Living Standard's `text/event-stream`.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

use super::tally::Gone;

/// A comment this often keeps proxies from closing a quiet stream. It is also what lets the
/// kernel notice a browser that vanished without closing: a write that goes unacknowledged ends
/// the connection after `TCP_USER_TIMEOUT` (`http/listener.rs`).
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Batches handed over ahead of a slow browser before the stream task waits.
const BUFFER: usize = 8;

/// Frames `data` as an event's `data` field(s), for [`Batch::framed_event`].
pub fn data_field(data: &str) -> String {
    let mut field = String::with_capacity(data.len() + 8);
    push_data_lines(&mut field, data);
    field
}

/// One `data:` field per line: a line break of any of the three kinds inside the data would
/// otherwise end the field early.
fn push_data_lines(buf: &mut String, data: &str) {
    for line in data.split("\r\n").flat_map(|l| l.split(['\r', '\n'])) {
        buf.push_str("data: ");
        buf.push_str(line);
        buf.push('\n');
    }
}

/// Events framed for the wire, not sent yet.
#[derive(Debug, Default)]
pub struct Batch {
    buf: String,
}

impl Batch {
    /// Appends an event with a name and no id.
    pub fn event(&mut self, name: &str, data: &str) {
        self.push(None, name, data);
    }

    /// Appends an event whose id the browser sends back as `Last-Event-ID` on a reconnect.
    pub fn event_with_id(&mut self, id: i64, name: &str, data: &str) {
        self.push(Some(id), name, data);
    }

    /// Appends how soon the browser reconnects after losing the stream.
    pub fn retry(&mut self, after: Duration) {
        let _ = write!(self.buf, "retry: {}\n\n", after.as_millis());
    }

    /// Appends an event (with an id, or not) whose data `field` was framed by [`data_field`]:
    /// data many streams send is framed once, not once per stream (at 20 agents, framing each
    /// copy was a tenth of the server's time; docs/capacity.md).
    pub fn framed_event(&mut self, id: Option<i64>, name: &str, field: &str) {
        self.head(id, name);
        self.buf.push_str(field);
        self.buf.push('\n');
    }

    fn head(&mut self, id: Option<i64>, name: &str) {
        if let Some(id) = id {
            let _ = writeln!(self.buf, "id: {id}");
        }
        self.buf.push_str("event: ");
        self.buf.push_str(name);
        self.buf.push('\n');
    }

    fn push(&mut self, id: Option<i64>, name: &str, data: &str) {
        self.head(id, name);
        push_data_lines(&mut self.buf, data);
        self.buf.push('\n');
    }

    /// Hands everything appended so far to the response as one chunk (nothing when empty).
    ///
    /// # Errors
    /// `Gone` when the browser left.
    pub async fn flush(&mut self, tx: &mpsc::Sender<Bytes>) -> Result<(), Gone> {
        if self.buf.is_empty() {
            return Ok(());
        }
        // The next burst is likely as large: start it at this one's size instead of growing
        // (and copying) its way there again.
        let next = String::with_capacity(self.buf.len());
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, next));
        tx.send(chunk).await.map_err(|_| Gone)
    }
}

/// A channel for a stream task's batches and the response that writes them.
pub fn channel() -> (mpsc::Sender<Bytes>, mpsc::Receiver<Bytes>) {
    mpsc::channel(BUFFER)
}

/// The `text/event-stream` response writing each batch as it comes, with a keep-alive comment
/// after `KEEP_ALIVE` without one.
pub fn response(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let chunk = match tokio::time::timeout(KEEP_ALIVE, rx.recv()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return None,
            Err(_) => Bytes::from_static(b":\n\n"),
        };
        Some((Ok::<_, Infallible>(chunk), rx))
    });
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Tells nginx-style proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_line_break_starts_a_new_data_field() {
        let mut batch = Batch::default();
        batch.event_with_id(7, "entry", "a\nb\r\nc\rd");
        assert_eq!(
            batch.buf,
            "id: 7\nevent: entry\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
        );
        // Framed once ahead, the same event.
        let mut framed = Batch::default();
        framed.framed_event(Some(7), "entry", &data_field("a\nb\r\nc\rd"));
        assert_eq!(framed.buf, batch.buf);
    }

    #[test]
    fn events_of_a_batch_follow_each_other_in_one_chunk() {
        let mut batch = Batch::default();
        batch.retry(Duration::from_secs(2));
        batch.event("counts", "{}");
        batch.event("alert", "");
        assert_eq!(
            batch.buf,
            "retry: 2000\n\nevent: counts\ndata: {}\n\nevent: alert\ndata: \n\n"
        );
    }
}
