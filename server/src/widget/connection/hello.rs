//! Waiting for the client's `hello`: the first frame of every widget connection, within
//! [`HELLO_TIMEOUT`]. A child of `connection`; anything before `hello` gets an error frame.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use futures_util::StreamExt;
use futures_util::stream::{SplitSink, SplitStream};

use crate::state::AppState;
use crate::store::MessageId;
use crate::values::VisitorContext;

use super::super::identity::IdentityClaim;
use super::super::protocol::{BadFrame, ClientFrame, ErrorCode, speaks_version};
use super::super::wire::{
    Closed, answer_close, client_id_of_bad_frame, close, close_code, on_read_error,
    refuse_bad_frame, send_error,
};

/// Time a client has to say `hello` after connecting.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// What `hello` said: the token to use, `last_id`, the browser's context and the host page's
/// identity claim.
pub(super) type Hello = (String, MessageId, VisitorContext, Option<IdentityClaim>);

/// Waits for `hello`; returns the token to use, `last_id` and the browser's context, or `None`
/// if the connection ended first.
pub(super) async fn await_hello(
    app: &AppState,
    sink: &mut SplitSink<WebSocket, Message>,
    stream: &mut SplitStream<WebSocket>,
) -> Result<Option<Hello>, Closed> {
    let deadline = tokio::time::sleep(HELLO_TIMEOUT);
    tokio::pin!(deadline);
    let mut bad_frames = 0;
    loop {
        let frame = tokio::select! {
            () = app.shutdown.cancelled() => {
                close(sink, close_code::RESTARTING, "server restarting").await?;
                return Ok(None);
            }
            () = &mut deadline => {
                send_error(&app.meters, sink, ErrorCode::HelloTimeout, None, None).await?;
                close(sink, close_code::POLICY, ErrorCode::HelloTimeout.message()).await?;
                return Ok(None);
            }
            frame = stream.next() => frame,
        };
        let text = match frame {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Binary(_))) => {
                let frame = (&BadFrame::binary(), None);
                refuse_bad_frame(&app.meters, sink, frame, &mut bad_frames).await?;
                continue;
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) => {
                answer_close(sink).await;
                return Ok(None);
            }
            None => return Ok(None),
            Some(Err(err)) => {
                on_read_error(sink, &err).await;
                return Ok(None);
            }
        };
        match ClientFrame::parse(&text) {
            Ok(ClientFrame::Hello {
                v,
                token,
                last_id,
                page,
                referrer,
                language,
                time_zone,
                identity,
            }) => {
                if !speaks_version(&v) {
                    send_error(&app.meters, sink, ErrorCode::UnsupportedVersion, None, None)
                        .await?;
                    close(
                        sink,
                        close_code::POLICY,
                        ErrorCode::UnsupportedVersion.message(),
                    )
                    .await?;
                    return Ok(None);
                }
                return Ok(Some((
                    token.unwrap_or_default(),
                    MessageId(last_id.unwrap_or(0).max(0)),
                    VisitorContext::from_hello(page, referrer, language, time_zone),
                    identity,
                )));
            }
            Ok(ClientFrame::Message { client_id, .. }) => {
                send_error(
                    &app.meters,
                    sink,
                    ErrorCode::HelloRequired,
                    None,
                    Some(&client_id),
                )
                .await?;
            }
            Ok(ClientFrame::Email { .. } | ClientFrame::Typing { .. } | ClientFrame::Ping {}) => {
                send_error(&app.meters, sink, ErrorCode::HelloRequired, None, None).await?;
            }
            Err(why) => {
                let client_id = client_id_of_bad_frame(&text);
                let frame = (&why, client_id.as_deref());
                refuse_bad_frame(&app.meters, sink, frame, &mut bad_frames).await?;
            }
        }
    }
}
