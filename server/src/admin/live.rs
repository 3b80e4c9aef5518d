//! Live updates for the inbox and conversation pages, over Server-Sent Events. Each stream
//! subscribes to the hub first, then replays from the database what came after the client's
//! last message id (`Last-Event-ID` on a reconnect, `?after=` on the first connect), then
//! streams; events the replay already covered are skipped. A subscriber that fell behind gets
//! `Resync` from the hub and replays again. Fragments are rendered by the page components.
//! Every stream also carries the agent's unread counts and alerts (`tally.rs`); pages without a
//! list of their own follow `/inbox/counts`, which carries only those. A stream takes the hub's
//! signals in bursts: the first one, then whatever else arrived within `GATHER`, all written to
//! the browser at once (`sse.rs`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use porch_app::conversation::{render_closed_hint, render_conversation_aside, render_message};
use porch_app::inbox::render_conversation_item;
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc};

use crate::accounts::SessionWatch;
use crate::chat::{Error as ChatError, INBOX_PAGE_SIZE, LiveItem};
use crate::hub::{Erasure, InboxSignal, InboxSubscription, Typist};
use crate::state::AppState;
use crate::store::{
    ConversationId, InboxItemRow, InboxQuery, InboxSort, MessageId, MessageRow, UserId, VisitorId,
};
use crate::values::Author;

use super::inbox_query::{InboxParams, InboxRequest, LiveFilter};
use super::session::SignedIn;
use super::sse::{self, Batch};
use super::tally::{Gone, Tally};
use super::views;

/// How soon a browser reconnects after losing the stream.
const RETRY: Duration = Duration::from_secs(2);
/// How long a stream lets more signals gather after the first of a burst. One write per agent
/// per window instead of one per event is the difference between a team of agents costing a
/// socket write per message each and costing almost nothing (docs/capacity.md); a live update
/// arrives at most this much later.
const GATHER: Duration = Duration::from_millis(10);

#[derive(Debug, Default, Deserialize)]
pub struct LiveQuery {
    #[serde(default)]
    after: Option<i64>,
}

/// Where to resume: the browser's `Last-Event-ID` (sent on automatic reconnects) wins over the
/// page's `?after=`; `None` when neither says (start from now). `after=0` is a point like any
/// other: a page rendered before the first message (an inbox that was empty) catches up on
/// everything when its stream opens again.
fn resume_point(headers: &HeaderMap, after: Option<i64>) -> Option<MessageId> {
    let header = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    header.or(after).map(|id| MessageId(id.max(0)))
}

/// Follows `signal` in the unread counts. After a `Resync` it subscribes again before the
/// counts are reloaded, so nothing published while they are read is missed (subscribe first,
/// then read, as at connect).
async fn follow(
    app: &AppState,
    subscription: &mut InboxSubscription,
    tally: &mut Tally,
    batch: &mut Batch,
    signal: &InboxSignal,
) -> Result<(), Gone> {
    if let InboxSignal::Resync = signal {
        *subscription = app.chat.hub().subscribe_inbox();
    }
    tally.follow(app, batch, signal).await
}

/// Follows an erasure in the counts: the erased visitor's conversations count no more. Missed
/// erasures (many at once) read the counts again; the hub gone ends the stream. The erasure, if
/// one was read, for the stream to tell its page.
async fn follow_erasure(
    app: &AppState,
    tally: &mut Tally,
    erasure: Result<Arc<Erasure>, broadcast::error::RecvError>,
) -> Result<Option<Arc<Erasure>>, Gone> {
    match erasure {
        Ok(erasure) => {
            tally.on_erased(&erasure);
            Ok(Some(erasure))
        }
        Err(broadcast::error::RecvError::Lagged(_)) => {
            tally.reload(app).await?;
            Ok(None)
        }
        Err(broadcast::error::RecvError::Closed) => Err(Gone),
    }
}

/// The rest of a burst that began with `first`: every signal the hub queues for this stream in
/// the next `GATHER`. Ends at a `Resync` (the subscription is spent then).
async fn gather(first: InboxSignal, subscription: &mut InboxSubscription) -> Vec<InboxSignal> {
    let mut signals = vec![first];
    if matches!(signals[0], InboxSignal::Resync) {
        return signals;
    }
    tokio::time::sleep(GATHER).await;
    while let Some(signal) = subscription.try_recv() {
        let spent = matches!(signal, InboxSignal::Resync);
        signals.push(signal);
        if spent {
            break;
        }
    }
    signals
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
    let (tx, rx) = sse::channel();
    tokio::spawn(async move {
        let Some(session) = watch(&app, &who).await else {
            return;
        };
        let Ok(choices) = app.chat.inbox_choices().await else {
            return;
        };
        let filter = LiveFilter::from(InboxRequest::parse(&params, who.user.id, &choices));
        let shutdown = app.shutdown.clone();
        tokio::select! {
            _ = stream_inbox(&app, who.user.id, &filter, after, &tx) => {}
            () = shutdown.cancelled() => {}
            () = tx.closed() => {}
            () = app.accounts.session_ended(&session, &who.cookie_value) => {}
        }
    });
    sse::response(rx)
}

/// The events of a burst a live inbox turns into list items: (message id, conversation).
type Burst = Vec<(MessageId, ConversationId)>;

/// Adds the list item for event `event` of `burst` (read with the rest of the burst), under
/// the stream's event id `id`.
async fn add_item(
    app: &AppState,
    batch: &mut Batch,
    (me, filter): (UserId, &LiveFilter),
    (event, conversation): (MessageId, ConversationId),
    id: MessageId,
    burst: &Burst,
) -> Result<(), Gone> {
    match app.chat.live_inbox_item((event, conversation), burst).await {
        Ok(Some(live)) if filter.matches(&live.row.item) => {
            batch.framed_event(
                Some(id.0),
                "conversation",
                &rendered_item(&live, me, &filter.query),
            );
        }
        Ok(_) => batch.event_with_id(id.0, "removed", &conversation.to_string()),
        Err(err) => {
            tracing::warn!(error = %err, "live inbox: reading a conversation failed");
            return Err(Gone);
        }
    }
    Ok(())
}

/// The list item `me` sees, rendered and framed as an event's data once for every agent who
/// sees the same: the only inputs of [`views::inbox_item`] that differ between agents are the
/// unread state, whether the conversation is assigned to the reader ("You") and the list's
/// order (the sort key).
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
        sse::data_field(&render_conversation_item(views::inbox_item(
            item, me, filter,
        )))
    })
}

/// Sends every conversation changed after `after`; returns the newest message id covered.
async fn replay_inbox(
    app: &AppState,
    batch: &mut Batch,
    me: UserId,
    filter: &LiveFilter,
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
    let burst: Burst = changed
        .into_iter()
        .skip(skip)
        .map(|(conversation, id)| (id, conversation))
        .collect();
    for &(id, conversation) in &burst {
        add_item(app, batch, (me, filter), (id, conversation), id, &burst).await?;
        covered = covered.max(id);
    }
    Ok(covered)
}

async fn stream_inbox(
    app: &AppState,
    me: UserId,
    filter: &LiveFilter,
    after: Option<MessageId>,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), Gone> {
    let mut batch = Batch::default();
    batch.retry(RETRY);
    let mut erasures = app.chat.hub().subscribe_erasures();
    let mut subscription = app.chat.hub().subscribe_inbox();
    let mut tally = Tally::load(app, me, None, filter.query.site).await?;
    // Without a starting point there is nothing to catch up on: start from now.
    let mut covered = match after {
        None => app.chat.last_message_id().await.map_err(|_| Gone)?,
        Some(after) => replay_inbox(app, &mut batch, me, filter, after).await?,
    };
    let mut last = covered;
    loop {
        // The counts once a burst, after everything it changed.
        tally.send_counts(&mut batch);
        batch.flush(tx).await?;
        let first = tokio::select! {
            // Signals first: a message queued before an erasure must not be counted after it.
            biased;
            signal = subscription.recv() => signal,
            erasure = erasures.recv() => {
                // An erased visitor's rows leave the list, as their counts leave the tally.
                if let Some(erasure) = follow_erasure(app, &mut tally, erasure).await? {
                    for id in &erasure.conversations {
                        batch.event("removed", &id.to_string());
                    }
                }
                continue;
            }
        };
        let signals = gather(first, &mut subscription).await;
        let burst: Burst = signals
            .iter()
            .filter_map(|signal| match signal {
                InboxSignal::Event(event) if event.message.id > covered => {
                    Some((event.message.id, event.message.conversation_id))
                }
                _ => None,
            })
            .collect();
        for signal in signals {
            follow(app, &mut subscription, &mut tally, &mut batch, &signal).await?;
            match signal {
                InboxSignal::Resync => {
                    tracing::debug!("live inbox fell behind; replaying");
                    covered = replay_inbox(app, &mut batch, me, filter, last).await?;
                    last = last.max(covered);
                }
                InboxSignal::Event(event) if event.message.id > covered => {
                    last = last.max(event.message.id);
                    let this = (event.message.id, event.message.conversation_id);
                    add_item(app, &mut batch, (me, filter), this, last, &burst).await?;
                }
                // Marked unread by this agent (in any tab): the row's unread mark comes back.
                InboxSignal::Read(mark) if mark.user == me && mark.is_unread => {
                    batch.event("unread", &mark.conversation.to_string());
                }
                // Read by this agent (in any tab): the row's unread mark goes, as the counts'.
                InboxSignal::Read(mark) if mark.user == me && tally.is_read(mark.conversation) => {
                    batch.event("read", &mark.conversation.to_string());
                }
                _ => {}
            }
        }
    }
}

/// `GET /inbox/counts`: only the agent's unread counts (`counts` events) and alerts (`alert`
/// events), for admin pages without a live list of their own.
pub async fn count_events(State(app): State<AppState>, who: SignedIn) -> Response {
    let (tx, rx) = sse::channel();
    tokio::spawn(async move {
        let Some(session) = watch(&app, &who).await else {
            return;
        };
        let shutdown = app.shutdown.clone();
        tokio::select! {
            _ = stream_counts(&app, who.user.id, &tx) => {}
            () = shutdown.cancelled() => {}
            () = tx.closed() => {}
            () = app.accounts.session_ended(&session, &who.cookie_value) => {}
        }
    });
    sse::response(rx)
}

async fn stream_counts(app: &AppState, me: UserId, tx: &mpsc::Sender<Bytes>) -> Result<(), Gone> {
    let mut batch = Batch::default();
    batch.retry(RETRY);
    let mut erasures = app.chat.hub().subscribe_erasures();
    let mut subscription = app.chat.hub().subscribe_inbox();
    let mut tally = Tally::load(app, me, None, None).await?;
    loop {
        // The counts once a burst, after everything it changed.
        tally.send_counts(&mut batch);
        batch.flush(tx).await?;
        let first = tokio::select! {
            // Signals first: a message queued before an erasure must not be counted after it.
            biased;
            signal = subscription.recv() => signal,
            erasure = erasures.recv() => {
                follow_erasure(app, &mut tally, erasure).await?;
                continue;
            }
        };
        for signal in gather(first, &mut subscription).await {
            follow(app, &mut subscription, &mut tally, &mut batch, &signal).await?;
        }
    }
}

/// `GET /conversations/{id}/events?after=…`: `entry` events carry a message to append;
/// `aside` events the refreshed side panel after a status change; `typing` events (`true` or
/// `false`) the visitor's typing, `colleague_typing` another agent's reply being written;
/// `closed_hint` the reply box's hint once the visitor started a newer conversation; `erased` and
/// `gone` the end of the conversation.
pub async fn conversation_events(
    State(app): State<AppState>,
    who: SignedIn,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Query(query): Query<LiveQuery>,
) -> Response {
    let after = resume_point(&headers, query.after);
    let (tx, rx) = sse::channel();
    tokio::spawn(async move {
        let Some(session) = watch(&app, &who).await else {
            return;
        };
        let shutdown = app.shutdown.clone();
        tokio::select! {
            _ = stream_conversation(&app, &who, ConversationId(id), after.unwrap_or(MessageId(0)), &tx) => {}
            () = shutdown.cancelled() => {}
            () = tx.closed() => {}
            () = app.accounts.session_ended(&session, &who.cookie_value) => {}
        }
    });
    sse::response(rx)
}

/// Adds `message` to the page, and the side panel again when it changed: after a status line
/// (status, assignee, snooze), or a visitor's message that ended the snooze the panel shows
/// (`snoozed`, kept current here).
async fn add_entry(
    app: &AppState,
    batch: &mut Batch,
    who: &SignedIn,
    message: &MessageRow,
    snoozed: &mut bool,
) -> Result<(), Gone> {
    let entry = render_message(views::message(message));
    batch.event_with_id(message.id.0, "entry", &entry);
    // The page marks what it shows read itself, and only while it is visible (admin/read_mark.rs).
    let ended_snooze = *snoozed && message.author == Author::Visitor;
    if message.author == Author::System || ended_snooze {
        send_aside(app, batch, who, message.conversation_id, snoozed).await?;
    }
    Ok(())
}

/// Tells the page that its visitor started a newer conversation, which both the side panel and
/// the reply box's hint (`closed_hint`) then name: at once when a live event said so (`known`),
/// else only if there is one (after a start or a replay, which may have missed the event).
async fn tell_newer(
    app: &AppState,
    batch: &mut Batch,
    who: &SignedIn,
    conversation: ConversationId,
    snoozed: &mut bool,
    known: bool,
) -> Result<(), Gone> {
    if !known {
        let other = app
            .chat
            .conversation_to_answer_instead_of(conversation)
            .await
            .map_err(|_| Gone)?;
        if other.is_none_or(|other| other <= conversation) {
            return Ok(());
        }
    }
    let aside = send_aside(app, batch, who, conversation, snoozed).await?;
    batch.event("closed_hint", &render_closed_hint(&aside));
    Ok(())
}

/// Sends the side panel as it is now (`aside`) and returns it; `snoozed` follows it.
async fn send_aside(
    app: &AppState,
    batch: &mut Batch,
    who: &SignedIn,
    conversation: ConversationId,
    snoozed: &mut bool,
) -> Result<porch_app::conversation::ConversationAsideView, Gone> {
    let view = app
        .chat
        .conversation_view(who.user.id, conversation)
        .await
        .map_err(|_| Gone)?;
    *snoozed = view.item.snoozed_until.is_some();
    let aside = views::aside(&view, who.user.id, &who.csrf);
    batch.event("aside", &render_conversation_aside(aside.clone()));
    Ok(aside)
}

async fn replay_conversation(
    app: &AppState,
    batch: &mut Batch,
    who: &SignedIn,
    (conversation, after): (ConversationId, MessageId),
    snoozed: &mut bool,
) -> Result<MessageId, Gone> {
    let messages = app
        .chat
        .conversation_messages_after(conversation, after)
        .await
        .map_err(|_| Gone)?;
    let mut covered = after;
    for message in &messages {
        add_entry(app, batch, who, message, snoozed).await?;
        covered = covered.max(message.id);
    }
    Ok(covered)
}

/// What an open conversation page shows when its visitor was erased.
const ERASED: &str = "This visitor's data was erased.";
/// What it shows when the stream finds the conversation missing without having heard why: it
/// was erased before the stream listened, among erasures it missed, or deleted with its site.
const GONE: &str =
    "This conversation no longer exists: its visitor's data was erased, or it was deleted.";

/// Whether `conversation` is still there, and then whether the side panel shows a snooze, and
/// whose conversation it is.
async fn still_there(
    app: &AppState,
    who: &SignedIn,
    conversation: ConversationId,
) -> Result<Option<(bool, VisitorId)>, Gone> {
    match app.chat.inbox_item(who.user.id, conversation).await {
        Ok(item) => Ok(Some((item.snoozed_until.is_some(), item.visitor_id))),
        Err(ChatError::NotFound(_)) => Ok(None),
        Err(_) => Err(Gone),
    }
}

/// Someone typing in the conversation a page shows: `typing` (`true` or `false`) for its
/// visitor, `colleague_typing` (`{"user", "name", "active"}`) for another agent writing a reply;
/// the page's own agent is not told of themselves.
fn typing_event(batch: &mut Batch, who: &SignedIn, by: &Typist, active: bool) {
    match by {
        Typist::Visitor => batch.event("typing", if active { "true" } else { "false" }),
        Typist::Agent { user, .. } if *user == who.user.id => {}
        Typist::Agent { user, name } => {
            let said = serde_json::json!({"user": user.0, "name": &**name, "active": active});
            batch.event("colleague_typing", &said.to_string());
        }
    }
}

async fn stream_conversation(
    app: &AppState,
    who: &SignedIn,
    conversation: ConversationId,
    after: MessageId,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), Gone> {
    let mut batch = Batch::default();
    batch.retry(RETRY);
    let mut erasures = app.chat.hub().subscribe_erasures();
    let mut subscription = app.chat.hub().subscribe_inbox();
    let mut tally = Tally::load(app, who.user.id, Some(conversation), None).await?;
    // Asked once subscribed: an erasure before that, between the page's load and its stream,
    // was never heard, and left nothing to replay. The page must learn of it all the same.
    // `snoozed`: whether the side panel the page shows has a snooze.
    let Some((mut snoozed, visitor)) = still_there(app, who, conversation).await? else {
        batch.event("gone", GONE);
        return batch.flush(tx).await;
    };
    let mut covered =
        replay_conversation(app, &mut batch, who, (conversation, after), &mut snoozed).await?;
    let mut last = covered;
    // A newer conversation started between the page's render and now (or while it reconnected).
    tell_newer(app, &mut batch, who, conversation, &mut snoozed, false).await?;
    loop {
        // The counts once a burst, after everything it changed.
        tally.send_counts(&mut batch);
        batch.flush(tx).await?;
        let first = tokio::select! {
            // Signals first: a message queued before an erasure must not be counted after it.
            biased;
            signal = subscription.recv() => signal,
            erasure = erasures.recv() => {
                // The page says so and stops listening (docs/admin.md#live-updates).
                match follow_erasure(app, &mut tally, erasure).await? {
                    Some(e) if e.conversations.contains(&conversation) => {
                        batch.event("erased", ERASED);
                        return batch.flush(tx).await;
                    }
                    // Erasures were missed: this conversation may have been among them.
                    None if still_there(app, who, conversation).await?.is_none() => {
                        batch.event("gone", GONE);
                        return batch.flush(tx).await;
                    }
                    _ => {}
                }
                continue;
            }
        };
        for signal in gather(first, &mut subscription).await {
            follow(app, &mut subscription, &mut tally, &mut batch, &signal).await?;
            match signal {
                InboxSignal::Resync => {
                    let from = (conversation, last);
                    covered = replay_conversation(app, &mut batch, who, from, &mut snoozed).await?;
                    last = last.max(covered);
                    tell_newer(app, &mut batch, who, conversation, &mut snoozed, false).await?;
                }
                InboxSignal::Event(event)
                    if event.message.conversation_id == conversation
                        && event.message.id > covered =>
                {
                    last = last.max(event.message.id);
                    add_entry(app, &mut batch, who, &event.message, &mut snoozed).await?;
                }
                // The visitor started a newer conversation: this one is no longer where they
                // answer, and both the panel and the reply box's hint say where that is.
                InboxSignal::Event(event)
                    if event.opened
                        && event.visitor == Some(visitor)
                        && event.message.conversation_id > conversation =>
                {
                    tell_newer(app, &mut batch, who, conversation, &mut snoozed, true).await?;
                }
                InboxSignal::Typing {
                    conversation: typing_in,
                    by,
                    active,
                } if typing_in == conversation => typing_event(&mut batch, who, &by, active),
                _ => {}
            }
        }
    }
}
