//! Writing to a widget websocket: text frames, error frames, close frames with the code a
//! failure owes (RFC 6455), and what an unparsable frame still tells about the message it held.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures_util::SinkExt;
use futures_util::stream::SplitSink;

use super::protocol::{BadFrame, ErrorCode, ServerFrame};
use crate::metrics::Meters;

/// Close codes (RFC 6455 §7.4.1).
pub(super) mod close_code {
    pub const NORMAL: u16 = 1000;
    pub const POLICY: u16 = 1008;
    pub const INVALID_DATA: u16 = 1007;
    pub const TOO_BIG: u16 = 1009;
    pub const INTERNAL: u16 = 1011;
    pub const RESTARTING: u16 = 1012;
    pub const FELL_BEHIND: u16 = 1013;
}

/// The connection went away (or we closed it); stop.
pub(super) struct Closed;

pub(super) async fn send_text(
    sink: &mut SplitSink<WebSocket, Message>,
    text: String,
) -> Result<(), Closed> {
    sink.send(Message::Text(text.into()))
        .await
        .map_err(|_| Closed)
}

/// A wait as `retry_after_ms` says it: rounded up, so that a client which waits exactly that
/// long is never refused again for being early (1.4 ms is 2, not 1; a wait under a millisecond
/// is 1, not 0).
pub(super) fn retry_after_ms(wait: Duration) -> u64 {
    u64::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// Sends an error frame (counted in `porch_widget_errors_total`).
pub(super) async fn send_error(
    meters: &Meters,
    sink: &mut SplitSink<WebSocket, Message>,
    code: ErrorCode,
    retry_after: Option<Duration>,
    client_id: Option<&str>,
) -> Result<(), Closed> {
    meters.record_widget_error(code);
    let frame = ServerFrame::Error {
        code,
        message: code.message(),
        retry_after_ms: retry_after.map(retry_after_ms),
        client_id,
    };
    send_text(sink, frame.to_json()).await
}

/// An `invalid_message` error whose `message` says which rule was broken (the code's own text
/// only says the message cannot be sent).
pub(super) async fn send_invalid(
    meters: &Meters,
    sink: &mut SplitSink<WebSocket, Message>,
    message: &str,
    client_id: Option<&str>,
) -> Result<(), Closed> {
    send_error_saying(meters, sink, ErrorCode::InvalidMessage, message, client_id).await
}

/// An error frame of `code` whose `message` says more than the code's own text.
async fn send_error_saying(
    meters: &Meters,
    sink: &mut SplitSink<WebSocket, Message>,
    code: ErrorCode,
    message: &str,
    client_id: Option<&str>,
) -> Result<(), Closed> {
    meters.record_widget_error(code);
    let frame = ServerFrame::Error {
        code,
        message,
        retry_after_ms: None,
        client_id,
    };
    send_text(sink, frame.to_json()).await
}

/// How many `bad_frame` answers a connection gets, before `hello` and again after it; the last
/// one also closes it (1008, `too many bad frames`). A client that keeps sending what does not
/// fit is broken or hostile, and each answer costs a parse and a write: an outside check made
/// four connections send 23,000 a second, every one answered, for most of a core.
pub(super) const MAX_BAD_FRAMES: u32 = 100;

/// Answers a frame that does not fit with `bad_frame`, saying `why`, counting it in `count`; at
/// [`MAX_BAD_FRAMES`] the connection is closed.
pub(super) async fn refuse_bad_frame(
    meters: &Meters,
    sink: &mut SplitSink<WebSocket, Message>,
    (why, client_id): (&BadFrame, Option<&str>),
    count: &mut u32,
) -> Result<(), Closed> {
    let code = ErrorCode::BadFrame;
    send_error_saying(meters, sink, code, why.as_str(), client_id).await?;
    *count += 1;
    if *count < MAX_BAD_FRAMES {
        return Ok(());
    }
    let _ = close(sink, close_code::POLICY, "too many bad frames").await;
    Err(Closed)
}

pub(super) async fn close(
    sink: &mut SplitSink<WebSocket, Message>,
    code: u16,
    reason: &str,
) -> Result<(), Closed> {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    sink.send(Message::Close(Some(frame)))
        .await
        .map_err(|_| Closed)
}

/// Answers the client's close with a close (RFC 6455 5.5.1: the library queued the reply, with
/// the client's code, when it read the close; closing the sink sends it). Without it a client
/// sees its own clean close end as 1006.
pub(super) async fn answer_close(sink: &mut SplitSink<WebSocket, Message>) {
    // Bounded: a client that closed and stopped reading must not hold the task.
    let _ = tokio::time::timeout(CLOSE_ANSWER, sink.close()).await;
}

/// How long answering a client's close may take.
const CLOSE_ANSWER: Duration = Duration::from_secs(2);

/// The close frame owed for a read error caused by the client: a message or frame over the
/// size limit, or a text frame that is not UTF-8 (RFC 6455 §8.1 says: fail with 1007).
fn close_for(err: &axum::Error) -> Option<(u16, &'static str)> {
    match std::error::Error::source(err)?.downcast_ref::<tungstenite::Error>()? {
        tungstenite::Error::Capacity(_) => Some((close_code::TOO_BIG, "message too big")),
        tungstenite::Error::Utf8(_) => Some((close_code::INVALID_DATA, "text is not UTF-8")),
        _ => None,
    }
}

pub(super) async fn on_read_error(sink: &mut SplitSink<WebSocket, Message>, err: &axum::Error) {
    if let Some((code, reason)) = close_for(err) {
        let _ = close(sink, code, reason).await;
    }
}

/// The `client_id` of a `message` frame that did not parse (say, a field of the wrong type), so
/// the error can name the message it answers. Only runs on that error path. A frame that names
/// `client_id` (or `type`) twice has no one id to echo, so none is: a JSON value would keep the
/// last, and a client tracking the first could not match the refusal.
pub(super) fn client_id_of_bad_frame(text: &str) -> Option<String> {
    /// Only the two fields read; serde refuses either one given twice, and skips the rest.
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        kind: String,
        client_id: String,
    }
    let probe: Probe = serde_json::from_str(text).ok()?;
    (probe.kind == "message").then_some(probe.client_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait said too short gets the resend refused again: a refusal once said 0 ms for a
    /// wait of 0.4 ms, and the client's resend at once was refused with 0 again.
    #[test]
    fn a_wait_is_said_rounded_up_to_the_millisecond() {
        assert_eq!(retry_after_ms(Duration::from_micros(400)), 1);
        assert_eq!(retry_after_ms(Duration::from_micros(1_400)), 2);
        assert_eq!(retry_after_ms(Duration::from_secs(2)), 2_000);
        assert_eq!(retry_after_ms(Duration::ZERO), 0);
        assert_eq!(retry_after_ms(Duration::MAX), u64::MAX);
    }

    #[test]
    fn a_bad_frame_echoes_its_one_client_id() {
        let echoed = |text: &str| client_id_of_bad_frame(text);
        assert_eq!(
            echoed(r#"{"type":"message","client_id":"a1","body":7}"#).as_deref(),
            Some("a1")
        );
        assert_eq!(
            echoed(r#"{"type":"message","client_id":"a1","body":"x","body":"y"}"#).as_deref(),
            Some("a1"),
            "another field twice still names the message"
        );
        for none in [
            r#"{"type":"message","client_id":"a1","client_id":"b1","body":"x"}"#,
            r#"{"type":"email","client_id":"a1"}"#,
            r#"{"type":"message","client_id":7}"#,
            r#"{"type":"message","type":"message","client_id":"a1"}"#,
            "not json",
        ] {
            assert_eq!(echoed(none), None, "{none}");
        }
    }
}
