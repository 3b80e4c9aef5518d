//! Live updates for the inbox and conversation pages, over Server-Sent Events. Each stream
//! subscribes to the hub first, then replays from the database what came after the client's
//! last message id (`Last-Event-ID` on a reconnect, `?after=` on the first connect), then
//! streams; events the replay already covered are skipped. A subscriber that fell behind gets
//! `Resync` from the hub and replays again. Fragments are rendered by the page components.
//! Every stream also carries the agent's unread counts and alerts (`tally.rs`); pages without a
//! list of their own follow `/inbox/counts`, which carries only those.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use porch_app::conversation::{render_conversation_aside, render_message};
use porch_app::inbox::render_conversation_item;
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc};

use crate::accounts::SessionWatch;
use crate::chat::{INBOX_PAGE_SIZE, LiveItem};
use crate::hub::{Erasure, InboxSignal};
use crate::state::AppState;
use crate::store::{
    ConversationId, InboxItemRow, InboxQuery, InboxSort, MessageId, MessageRow, UserId,
};
use crate::values::Author;

use super::inbox_query::{InboxParams, InboxRequest};
use super::session::SignedIn;
use super::tally::{Gone, Tally};
use super::views;

/// How soon a browser reconnects after losing the stream.
const RETRY: Duration = Duration::from_secs(2);
/// A comment this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Events rendered ahead of a slow browser before the stream task waits.
const BUFFER: usize = 64;

#[derive(Debug, Default, Deserialize)]
pub struct LiveQuery {
    #[serde(default)]
    after: Option<i64>,
}

/// Where to resume: the browser's `Last-Event-ID` (sent on automatic reconnects) wins over the
/// page's `?after=`.
fn resume_point(headers: &HeaderMap, after: Option<i64>) -> MessageId {
    let header = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    MessageId(header.or(after).unwrap_or(0).max(0))
}

fn sse(mut rx: mpsc::Receiver<Event>) -> Response {
    let stream = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|event| event.map(Ok::<_, Infallible>))
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Tells nginx-style proxies not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Registers a stream with its session, so that signing out, a password change or a disable
/// ends it at once (the session was checked at connect only). `None`: it already ended.
async fn watch(app: &AppState, who: &SignedIn) -> Option<SessionWatch> {
    app.accounts
        .watch_session(&who.cookie_value, who.user.id)
        .await
        .ok()
        .flatten()
}

async fn send(tx: &mpsc::Sender<Event>, event: Event) -> Result<(), Gone> {
    tx.send(event).await.map_err(|_| Gone)
}

/// `GET /inbox/events?status=…&assignee=…&site=…&sort=…&after=…` (the list's filters, as
/// [`InboxParams`]): `conversation` events carry a list item (with its sort key) to insert or
/// replace; `removed` events the id of one that no longer matches the filters.
pub async fn inbox_events(
    State(app): State<AppState>,
    who: SignedIn,
    headers: HeaderMap,
    Query(query): Query<LiveQuery>,
    Query(params): Query<InboxParams>,
) -> Response {
    let after = resume_point(&headers, query.after);
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(async move {
        let Some(session) = watch(&app, &who).await else {
            return;
        };
        let Ok(choices) = app.chat.inbox_choices().await else {
            return;
        };
        let filter = InboxRequest::parse(&params, who.user.id, &choices).query;
        let shutdown = app.shutdown.clone();
        tokio::select! {
            _ = stream_inbox(&app, who.user.id, &filter, after, &tx) => {}
            () = shutdown.cancelled() => {}
            () = tx.closed() => {}
            () = session.ended() => {}
        }
    });
    sse(rx)
}

async fn send_item(
    app: &AppState,
    tx: &mpsc::Sender<Event>,
    me: UserId,
    filter: &InboxQuery,
    conversation: ConversationId,
    id: MessageId,
) -> Result<(), Gone> {
    let event = Event::default().id(id.to_string());
    let event = match app.chat.live_inbox_item(conversation, id).await {
        Ok(Some(live)) if filter.matches(&live.row.item) => event
            .event("conversation")
            .data(&*rendered_item(&live, me, filter)),
        Ok(_) => event.event("removed").data(conversation.to_string()),
        Err(err) => {
            tracing::warn!(error = %err, "live inbox: reading a conversation failed");
            return Err(Gone);
        }
    };
    send(tx, event).await
}

/// The list item `me` sees, rendered once for every agent who sees the same: the only inputs
/// of [`views::inbox_item`] that differ between agents are the unread state, whether the
/// conversation is assigned to the reader ("You") and the list's order (the sort key).
fn rendered_item(live: &LiveItem, me: UserId, filter: &InboxQuery) -> Arc<str> {
    let is_unread = live.row.is_unread_for(me);
    let is_mine = live.row.item.assignee_id == Some(me);
    let by_waiting = filter.sort == InboxSort::Waiting;
    let variant = usize::from(is_unread) | usize::from(is_mine) << 1 | usize::from(by_waiting) << 2;
    live.rendering(variant, || {
        let item = InboxItemRow {
            is_unread,
            ..live.row.item.clone()
        };
        render_conversation_item(views::inbox_item(item, me, filter))
    })
}

/// Sends every conversation changed after `after`; returns the newest message id covered.
async fn replay_inbox(
    app: &AppState,
    tx: &mpsc::Sender<Event>,
    me: UserId,
    filter: &InboxQuery,
    after: MessageId,
) -> Result<MessageId, Gone> {
    let changed = app
        .chat
        .conversations_changed_after(after)
        .await
        .map_err(|_| Gone)?;
    let mut covered = after;
    // A client away for more changes than a page holds gets the newest ones; older changes
    // show on the next reload (documented in admin.md).
    let skip = changed.len().saturating_sub(INBOX_PAGE_SIZE as usize);
    for (conversation, id) in changed.into_iter().skip(skip) {
        send_item(app, tx, me, filter, conversation, id).await?;
        covered = covered.max(id);
    }
    Ok(covered)
}

async fn stream_inbox(
    app: &AppState,
    me: UserId,
    filter: &InboxQuery,
    after: MessageId,
    tx: &mpsc::Sender<Event>,
) -> Result<(), Gone> {
    send(tx, Event::default().retry(RETRY)).await?;
    let mut subscription = app.chat.hub().subscribe_inbox();
    let mut tally = Tally::load(app, me, None).await?;
    tally.send_counts(tx).await?;
    // Without a starting point there is nothing to catch up on: start from now.
    let mut covered = if after.0 == 0 {
        app.chat.last_message_id().await.map_err(|_| Gone)?
    } else {
        replay_inbox(app, tx, me, filter, after).await?
    };
    let mut last = covered;
    loop {
        let signal = subscription.recv().await;
        if let InboxSignal::Resync = signal {
            tracing::debug!("live inbox fell behind; replaying");
            subscription = app.chat.hub().subscribe_inbox();
            tally.follow(app, tx, &signal).await?;
            covered = replay_inbox(app, tx, me, filter, last).await?;
            last = last.max(covered);
            continue;
        }
        tally.follow(app, tx, &signal).await?;
        if let InboxSignal::Event(event) = signal {
            let id = event.message.id;
            if id <= covered {
                continue;
            }
            last = last.max(id);
            send_item(app, tx, me, filter, event.message.conversation_id, last).await?;
        }
    }
}

/// `GET /inbox/counts`: only the agent's unread counts (`counts` events) and alerts (`alert`
/// events), for admin pages without a live list of their own.
pub async fn count_events(State(app): State<AppState>, who: SignedIn) -> Response {
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(async move {
        let Some(session) = watch(&app, &who).await else {
            return;
        };
        let shutdown = app.shutdown.clone();
        tokio::select! {
            _ = stream_counts(&app, who.user.id, &tx) => {}
            () = shutdown.cancelled() => {}
            () = tx.closed() => {}
            () = session.ended() => {}
        }
    });
    sse(rx)
}

async fn stream_counts(app: &AppState, me: UserId, tx: &mpsc::Sender<Event>) -> Result<(), Gone> {
    send(tx, Event::default().retry(RETRY)).await?;
    let mut subscription = app.chat.hub().subscribe_inbox();
    let mut tally = Tally::load(app, me, None).await?;
    tally.send_counts(tx).await?;
    loop {
        let signal = subscription.recv().await;
        if let InboxSignal::Resync = signal {
            subscription = app.chat.hub().subscribe_inbox();
        }
        tally.follow(app, tx, &signal).await?;
    }
}

/// `GET /conversations/{id}/events?after=…`: `entry` events carry a message to append;
/// `aside` events the refreshed side panel after a status change; `typing` events (`true` or
/// `false`) the visitor's typing.
pub async fn conversation_events(
    State(app): State<AppState>,
    who: SignedIn,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Query(query): Query<LiveQuery>,
) -> Response {
    let after = resume_point(&headers, query.after);
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(async move {
        let Some(session) = watch(&app, &who).await else {
            return;
        };
        let shutdown = app.shutdown.clone();
        tokio::select! {
            _ = stream_conversation(&app, &who, ConversationId(id), after, &tx) => {}
            () = shutdown.cancelled() => {}
            () = tx.closed() => {}
            () = session.ended() => {}
        }
    });
    sse(rx)
}

async fn send_entry(
    app: &AppState,
    tx: &mpsc::Sender<Event>,
    who: &SignedIn,
    message: &MessageRow,
) -> Result<(), Gone> {
    let event = Event::default()
        .event("entry")
        .id(message.id.to_string())
        .data(render_message(views::message(message)));
    send(tx, event).await?;
    if message.author == Author::System {
        // A status line means the side panel changed (status, assignee); this also marks read.
        let view = app
            .chat
            .open_conversation(who.user.id, message.conversation_id)
            .await
            .map_err(|_| Gone)?;
        let aside = render_conversation_aside(views::aside(&view, who.user.id, &who.csrf));
        send(tx, Event::default().event("aside").data(aside)).await?;
    } else if app
        .chat
        .mark_read(who.user.id, message.conversation_id, message.id)
        .await
        .is_err()
    {
        // Not fatal: the conversation just stays unread in the list.
        tracing::debug!("could not mark a conversation read");
    }
    Ok(())
}

async fn replay_conversation(
    app: &AppState,
    tx: &mpsc::Sender<Event>,
    who: &SignedIn,
    conversation: ConversationId,
    after: MessageId,
) -> Result<MessageId, Gone> {
    let messages = app
        .chat
        .conversation_messages_after(conversation, after)
        .await
        .map_err(|_| Gone)?;
    let mut covered = after;
    for message in &messages {
        send_entry(app, tx, who, message).await?;
        covered = covered.max(message.id);
    }
    Ok(covered)
}

/// What an open conversation page shows when its visitor was erased.
const ERASED: &str = "This visitor's data was erased.";

/// Whether an erasure took `conversation`. Erasures missed because many came at once count as
/// not (the page finds out on its next load); the hub gone ends the stream.
fn is_erased(
    erasure: Result<Arc<Erasure>, broadcast::error::RecvError>,
    conversation: ConversationId,
) -> Result<bool, Gone> {
    match erasure {
        Ok(erasure) => Ok(erasure.conversations.contains(&conversation)),
        Err(broadcast::error::RecvError::Lagged(_)) => Ok(false),
        Err(broadcast::error::RecvError::Closed) => Err(Gone),
    }
}

async fn stream_conversation(
    app: &AppState,
    who: &SignedIn,
    conversation: ConversationId,
    after: MessageId,
    tx: &mpsc::Sender<Event>,
) -> Result<(), Gone> {
    send(tx, Event::default().retry(RETRY)).await?;
    let mut erasures = app.chat.hub().subscribe_erasures();
    let mut subscription = app.chat.hub().subscribe_inbox();
    let mut tally = Tally::load(app, who.user.id, Some(conversation)).await?;
    tally.send_counts(tx).await?;
    let mut covered = replay_conversation(app, tx, who, conversation, after).await?;
    let mut last = covered;
    loop {
        let signal = tokio::select! {
            signal = subscription.recv() => signal,
            erasure = erasures.recv() => {
                if is_erased(erasure, conversation)? {
                    // The page says so and stops listening (docs/admin.md#live-updates).
                    let event = Event::default().event("erased").data(ERASED);
                    return send(tx, event).await;
                }
                continue;
            }
        };
        if let InboxSignal::Resync = signal {
            subscription = app.chat.hub().subscribe_inbox();
            tally.follow(app, tx, &signal).await?;
            covered = replay_conversation(app, tx, who, conversation, last).await?;
            last = last.max(covered);
            continue;
        }
        tally.follow(app, tx, &signal).await?;
        match signal {
            InboxSignal::Event(event) => {
                let message = &event.message;
                if message.conversation_id != conversation || message.id <= covered {
                    continue;
                }
                last = last.max(message.id);
                send_entry(app, tx, who, message).await?;
            }
            InboxSignal::VisitorTyping {
                conversation: typing_in,
                active,
            } if typing_in == conversation => {
                let data = if active { "true" } else { "false" };
                send(tx, Event::default().event("typing").data(data)).await?;
            }
            _ => {}
        }
    }
}
