//! The connection's loop: what wakes it (a frame, a finished write, a hub event, the timer)
//! and the handling of each wake-up. Waiting is all an idle widget does, so the loop keeps only
//! what it waits with and handles each wake-up in a box of its own (issue #19 item 7). A child
//! of `connection`, so it works on the connection's own state.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use futures_util::stream::{FuturesUnordered, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::chat::SiteChange;
use crate::hub::{NewcomerWait, VisitorEvent, VisitorSubscription};

use super::super::protocol::BadFrame;
use super::{
    Closed, Connection, MAX_IN_FLIGHT, PendingWrite, StoreResult, answer_close, close, close_code,
    on_read_error,
};

/// How long a connection Porch closed keeps reading for the client's own close. A client answers
/// at once once it reads the close frame; one closed for falling behind reads everything queued
/// before it first, and gets as long as an idle connection (`PORCH_WS_IDLE_TIMEOUT`).
const LINGER: Duration = Duration::from_secs(2);

/// After Porch sent its close: reads (and drops) what the client still sends until its close
/// frame, at most `limit`, and no longer once shutdown starts. Dropping the socket with unread
/// bytes in it (a slow reader's pongs) makes the kernel answer with a reset, which discards the
/// frames the client has not read yet, the close frame and its code (1013: resume) among them.
async fn linger(
    stream: &mut SplitStream<WebSocket>,
    limit: Duration,
    shutdown: &CancellationToken,
) {
    // Boxed, as where it is awaited after a close: an idle connection's future stays small.
    tokio::select! {
        () = Box::pin(read_until_close(stream, limit)) => {}
        () = shutdown.cancelled() => {}
    }
}

/// Reads (and drops) frames until the client's close frame or its end, at most `limit`.
async fn read_until_close(stream: &mut SplitStream<WebSocket>, limit: Duration) {
    let until_close = async {
        while let Some(Ok(frame)) = stream.next().await {
            if matches!(frame, Message::Close(_)) {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(limit, until_close).await;
}

/// What woke a connection's loop (besides shutdown, which the loop handles itself).
enum Wake {
    Stored(StoreResult),
    /// A hub event, or `None` once the hub dropped this subscriber for falling behind.
    Event(Option<VisitorEvent>),
    /// Another connection stored this browser's visitor (their first message).
    VisitorStored,
    Frame(Option<Result<Message, axum::Error>>),
    /// A site was saved or deleted (this one's or another's).
    Site(Result<Arc<SiteChange>, RecvError>),
    Idle,
    Ping,
}

/// The visitor's next event, or the news that they were stored (while they are not).
async fn next_event(
    subscription: &mut Option<VisitorSubscription>,
    newcomer: &mut Option<NewcomerWait>,
) -> Wake {
    match (subscription, newcomer) {
        (Some(sub), _) => Wake::Event(sub.events.recv().await),
        // An error means the hub never took the wait (it cannot fail otherwise): no news.
        (None, Some(wait)) => match (&mut wait.stored).await {
            Ok(()) => Wake::VisitorStored,
            Err(_) => std::future::pending().await,
        },
        (None, None) => std::future::pending().await,
    }
}

impl Connection {
    /// The loop as a future that owns the connection. Not an async fn, whose arguments would be
    /// kept twice (see `serve_connection`): the block only borrows what it captures.
    #[allow(clippy::manual_async_fn)] // The point is not being an async fn (see above).
    pub(super) fn run_to_end(
        mut self,
        mut stream: SplitStream<WebSocket>,
    ) -> impl Future<Output = ()> + Send {
        async move { self.run(&mut stream).await }
    }

    async fn run(&mut self, stream: &mut SplitStream<WebSocket>) {
        let config = Arc::clone(&self.app.config);
        let started = tokio::time::Instant::now();
        let mut idle_at = started + config.ws_idle_timeout;
        let mut ping_at = started + config.ws_ping_interval;
        // One timer for the ping and the idle deadline, whichever is due first: every idle
        // widget holds its timers.
        let timer = tokio::time::sleep_until(idle_at.min(ping_at));
        tokio::pin!(timer);
        let mut in_flight: FuturesUnordered<PendingWrite> = FuturesUnordered::new();
        let shutdown = self.app.shutdown.clone();
        let mut is_draining = false;
        loop {
            // A held address is answered before any later frame is read.
            let reads =
                !is_draining && in_flight.len() < MAX_IN_FLIGHT && self.held_email.is_none();
            let wake = tokio::select! {
                // In this order: a site change saved before a frame arrived applies to it.
                biased;
                () = shutdown.cancelled(), if !is_draining => None,
                Some(stored) = in_flight.next(), if !in_flight.is_empty() => {
                    Some(Wake::Stored(stored))
                }
                event = next_event(&mut self.subscription, &mut self.newcomer) => Some(event),
                // Never closed: the directory sending it lives in `self.app`.
                change = self.site_changes.recv(), if !is_draining => Some(Wake::Site(change)),
                frame = stream.next(), if reads => {
                    idle_at = tokio::time::Instant::now() + config.ws_idle_timeout;
                    timer.as_mut().reset(idle_at.min(ping_at));
                    Some(Wake::Frame(frame))
                }
                () = &mut timer, if !is_draining => {
                    let now = tokio::time::Instant::now();
                    if now >= idle_at {
                        Some(Wake::Idle)
                    } else {
                        ping_at = now + config.ws_ping_interval;
                        timer.as_mut().reset(idle_at.min(ping_at));
                        Some(Wake::Ping)
                    }
                }
            };
            // The client's own close, or its end: nothing left to read.
            let client_ended =
                matches!(wake, Some(Wake::Frame(Some(Ok(Message::Close(_))) | None)));
            let fell_behind = matches!(wake, Some(Wake::Event(None)));
            let step = match wake {
                None => {
                    // Stop reading; answer the writes already accepted, then say goodbye.
                    is_draining = true;
                    Ok(())
                }
                // Boxed: handling a wake-up takes several times the state that waiting for one
                // does, and an idle widget waits for its whole life. One allocation per wake-up
                // is noise next to the work of a frame.
                Some(wake) => Box::pin(self.on_wake(wake, &mut in_flight)).await,
            };
            if step.is_err() {
                if !client_ended {
                    let limit = if fell_behind {
                        config.ws_idle_timeout
                    } else {
                        LINGER
                    };
                    linger(stream, limit, &shutdown).await;
                }
                break;
            }
            if is_draining && in_flight.is_empty() {
                let _ = close(&mut self.sink, close_code::RESTARTING, "server restarting").await;
                // Shutdown has started: a moment for the client's close, not the whole limit,
                // reading past what a busy client sent meanwhile (unread bytes would make the
                // kernel reset the socket, and the client lose the close frame: 1006).
                read_until_close(stream, LINGER).await;
                break;
            }
        }
        // Writes still in flight are finished without the connection: each is a future that
        // reaches the writer only when polled, so dropping them would lose a message that
        // arrived just before the client's close. Their acks are lost with the connection; the
        // client's resend finds them by client_id.
        if !in_flight.is_empty() {
            tokio::spawn(async move { while in_flight.next().await.is_some() {} });
        }
    }

    /// Takes the held address once every message sent before it is answered (`writes_done`).
    async fn take_held_email(&mut self, writes_done: bool) -> Result<(), Closed> {
        match self.held_email.take() {
            Some(email) if writes_done => self.accept_email(&email).await,
            held => {
                self.held_email = held;
                Ok(())
            }
        }
    }

    async fn on_wake(
        &mut self,
        wake: Wake,
        in_flight: &mut FuturesUnordered<PendingWrite>,
    ) -> Result<(), Closed> {
        match wake {
            Wake::Stored((client_id, received, result)) => {
                self.on_stored(&client_id, received, result).await?;
                self.take_held_email(in_flight.is_empty()).await
            }
            Wake::Event(Some(event)) => self.push(&event).await,
            Wake::VisitorStored => self.on_visitor_stored().await,
            // A site change may answer the writes in flight itself.
            Wake::Site(change) => {
                self.on_site_change(change, in_flight).await?;
                self.take_held_email(in_flight.is_empty()).await
            }
            Wake::Event(None) => {
                let _ = close(
                    &mut self.sink,
                    close_code::FELL_BEHIND,
                    "fell behind, resume",
                )
                .await;
                Err(Closed)
            }
            Wake::Frame(Some(Ok(Message::Text(text)))) => self.on_text(&text, in_flight).await,
            Wake::Frame(Some(Ok(Message::Binary(_)))) => {
                self.refuse_bad_frame(&BadFrame::binary(), None).await
            }
            Wake::Frame(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => Ok(()),
            Wake::Frame(Some(Ok(Message::Close(_)))) => {
                answer_close(&mut self.sink).await;
                Err(Closed)
            }
            Wake::Frame(None) => Err(Closed),
            Wake::Frame(Some(Err(err))) => {
                on_read_error(&mut self.sink, &err).await;
                Err(Closed)
            }
            Wake::Idle => {
                let _ = close(&mut self.sink, close_code::NORMAL, "idle timeout").await;
                Err(Closed)
            }
            Wake::Ping => {
                let ping = Message::Ping(Vec::new().into());
                self.sink.send(ping).await.map_err(|_| Closed)
            }
        }
    }
}
