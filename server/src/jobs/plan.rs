//! Job planning: which deliveries a change implies, and how each is queued (kind, lane, order
//! key, rate key, attempts, deadline, delay). The domain calls these inside the writer closure
//! that makes the change, so the jobs commit with it; the store only inserts and reads rows.

use std::time::Duration;

use rusqlite::Connection;
use serde::Deserialize;

use crate::store::{
    self, ActiveIntegration, ConversationId, IntegrationId, JobId, JobRow, MessageId, NewJob,
    SiteId, UserId,
};

use super::JobKind;
use super::args::{
    ConversationArgs, EmailArgs, MessageArgs, WebhookArgs, WebhookFacts, WebhookJobArgs, to_json,
};

/// The events an outgoing webhook endpoint can subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookEvent {
    ConversationCreated,
    MessageCreated,
    ConversationAssigned,
    ConversationClosed,
    VisitorErased,
}

impl WebhookEvent {
    pub const ALL: [WebhookEvent; 5] = [
        Self::ConversationCreated,
        Self::MessageCreated,
        Self::ConversationAssigned,
        Self::ConversationClosed,
        Self::VisitorErased,
    ];

    /// The event's name in payloads and subscriptions.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConversationCreated => "conversation.created",
            Self::MessageCreated => "message.created",
            Self::ConversationAssigned => "conversation.assigned",
            Self::ConversationClosed => "conversation.closed",
            Self::VisitorErased => "visitor.erased",
        }
    }

    /// The event a name stands for, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.as_str() == name)
    }
}

/// When a site's mails are due, from its `email` integration's settings (stored in ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmailDelays {
    /// A conversation nobody answered this long after it started goes into the agents' digest.
    pub unanswered_after: Duration,
    /// An agent's reply is mailed this long after it was sent, if the visitor is away then.
    pub reply_delay: Duration,
}

impl EmailDelays {
    pub const DEFAULT: Self = Self {
        unanswered_after: Duration::from_mins(5),
        reply_delay: Duration::from_secs(30),
    };

    /// The delays an `email` integration's stored settings give; defaults where absent.
    pub fn from_config(config: &str) -> Self {
        #[derive(Deserialize, Default)]
        struct Stored {
            unanswered_after_ms: Option<u64>,
            reply_delay_ms: Option<u64>,
        }
        let stored: Stored = serde_json::from_str(config).unwrap_or_default();
        Self {
            unanswered_after: stored
                .unanswered_after_ms
                .map_or(Self::DEFAULT.unanswered_after, Duration::from_millis),
            reply_delay: stored
                .reply_delay_ms
                .map_or(Self::DEFAULT.reply_delay, Duration::from_millis),
        }
    }
}

/// What a new message is, for planning its deliveries.
#[derive(Debug, Clone, Copy)]
pub struct NewMessage {
    pub site_id: SiteId,
    pub conversation_id: ConversationId,
    pub message_id: MessageId,
    /// The message opened the conversation (a visitor's first message).
    pub is_new_conversation: bool,
    pub now: i64,
}

/// The deliveries of a visitor's message: to an endpoint, the conversation's creation before
/// the message; the chat posts; and for a new conversation the agents' debounced "not answered
/// yet" mail.
pub fn plan_visitor_message(
    conn: &Connection,
    new: &NewMessage,
) -> Result<Vec<JobRow>, store::Error> {
    let integrations = store::list_active_integrations(conn, new.site_id)?;
    let mut jobs = Vec::new();
    if new.is_new_conversation {
        let created = Event::of(WebhookEvent::ConversationCreated, new);
        jobs.extend(webhook_jobs(conn, &integrations, &created)?);
    }
    jobs.extend(chat_jobs(conn, &integrations, new, None)?);
    jobs.extend(webhook_jobs(
        conn,
        &integrations,
        &Event::of(WebhookEvent::MessageCreated, new),
    )?);
    if new.is_new_conversation {
        jobs.extend(email_jobs(
            conn,
            &integrations,
            JobKind::EmailUnanswered,
            new.site_id,
            new.conversation_id,
            None,
            new.now,
        )?);
    }
    Ok(jobs)
}

/// The deliveries of an agent's reply: the chat posts (not back to `origin`, the Slack channel
/// it was typed in), webhooks, and the mail to a visitor who left an address.
pub fn plan_agent_message(
    conn: &Connection,
    new: &NewMessage,
    origin: Option<&SlackChannel>,
) -> Result<Vec<JobRow>, store::Error> {
    agent_message_jobs(conn, new, origin, JobKind::EmailReply)
}

/// The deliveries of a mail an agent wrote to the visitor: those of any reply, except that the
/// mail is `email.agent`, due at once whether the visitor is online or not (the agent chose to
/// email), instead of the delayed "reply while away".
pub fn plan_agent_email(conn: &Connection, new: &NewMessage) -> Result<Vec<JobRow>, store::Error> {
    agent_message_jobs(conn, new, None, JobKind::EmailAgent)
}

fn agent_message_jobs(
    conn: &Connection,
    new: &NewMessage,
    origin: Option<&SlackChannel>,
    mail: JobKind,
) -> Result<Vec<JobRow>, store::Error> {
    let integrations = store::list_active_integrations(conn, new.site_id)?;
    let mut jobs = chat_jobs(conn, &integrations, new, origin)?;
    jobs.extend(webhook_jobs(
        conn,
        &integrations,
        &Event::of(WebhookEvent::MessageCreated, new),
    )?);
    jobs.extend(email_jobs(
        conn,
        &integrations,
        mail,
        new.site_id,
        new.conversation_id,
        Some(new.message_id),
        new.now,
    )?);
    Ok(jobs)
}

/// A change of a conversation's status or assignee, or of its visitor's name or email (which
/// the Slack thread header shows).
#[derive(Debug, Clone, Copy)]
pub enum ConversationChange {
    Assigned(UserId),
    Unassigned,
    Closed,
    Reopened,
    VisitorChanged,
}

/// The deliveries of a change of status or assignee, with the conversation's facts as of now
/// (the caller changes the conversation first, then plans): the webhook events endpoints
/// subscribe to (assigned, closed), the transcript mail on closing, and the Slack thread
/// headers to rewrite.
pub fn plan_conversation_change(
    conn: &Connection,
    conversation_id: ConversationId,
    change: ConversationChange,
    now: i64,
) -> Result<Vec<JobRow>, store::Error> {
    let Some(conversation) = store::find_conversation(conn, conversation_id)? else {
        return Ok(Vec::new());
    };
    let site_id = conversation.site_id;
    let integrations = store::list_active_integrations(conn, site_id)?;
    let mut jobs = slack_header_jobs(conn, &integrations, conversation_id, now)?;
    let (event, assignee_id) = match change {
        ConversationChange::Assigned(user) => (WebhookEvent::ConversationAssigned, Some(user)),
        ConversationChange::Closed => (WebhookEvent::ConversationClosed, None),
        ConversationChange::Unassigned
        | ConversationChange::Reopened
        | ConversationChange::VisitorChanged => return Ok(jobs),
    };
    let event = Event {
        kind: event,
        conversation_id,
        message_id: None,
        assignee_id,
        now,
    };
    jobs.extend(webhook_jobs(conn, &integrations, &event)?);
    if matches!(change, ConversationChange::Closed) {
        jobs.extend(email_jobs(
            conn,
            &integrations,
            JobKind::EmailTranscript,
            site_id,
            conversation_id,
            None,
            now,
        )?);
    }
    Ok(jobs)
}

/// One header update per enabled Slack integration of the site, in the conversation's order
/// with its posts (so it never overtakes the post that starts the thread) and paced with them.
/// Several changes in a row may leave several queued: each shows the state as it is when it
/// runs, so the last one leaves the header right.
fn slack_header_jobs(
    conn: &Connection,
    integrations: &[ActiveIntegration],
    conversation_id: ConversationId,
    now: i64,
) -> Result<Vec<JobRow>, store::Error> {
    let args = to_json(&ConversationArgs { conversation_id });
    let mut jobs = Vec::new();
    for slack in integrations.iter().filter(|i| i.kind == "slack") {
        let job = NewJob {
            order_key: Some(conversation_order(conversation_id, slack.id)),
            ..new_job(
                JobKind::SlackHeader,
                args.clone(),
                slack.id,
                slack.is_broken,
                slack_channel_key(&slack.config),
                now,
            )
        };
        jobs.extend(store::insert_job(conn, &job)?);
    }
    Ok(jobs)
}

/// Queues a finished webhook delivery again as a new job with the same arguments, the same
/// `webhook-id` (so receivers can recognise the replay) and the same creation time (the
/// payload's `timestamp` is the event's), keeping the original's log. `None` if there is no
/// such finished delivery of that endpoint.
pub fn plan_webhook_replay(
    conn: &Connection,
    integration: IntegrationId,
    job: JobId,
    now: i64,
) -> Result<Option<JobRow>, store::Error> {
    let Some(original) = store::find_job(conn, job)? else {
        return Ok(None);
    };
    let is_replayable = original.integration_id == Some(integration)
        && original.kind == JobKind::WebhookDeliver.as_str()
        && matches!(original.state.as_str(), "done" | "failed" | "blocked");
    if !is_replayable {
        return Ok(None);
    }
    let Ok(mut args) = serde_json::from_str::<WebhookJobArgs>(&original.args) else {
        return Ok(None);
    };
    args.replay_of(webhook_id(&args, original.id));
    let kind = JobKind::WebhookDeliver;
    // An endpoint that is off or broken takes nothing now: the replay waits for it, blocked.
    let waits = !store::integration_takes_deliveries(conn, integration)?;
    store::insert_job(
        conn,
        &NewJob {
            // A replay is outside the conversation's order: it may overtake newer events.
            order_key: None,
            created_at: original.created_at,
            ..new_job(
                kind,
                to_json(&args),
                integration,
                waits,
                original.rate_key,
                now,
            )
        },
    )
}

/// The `webhook-id` of a delivery: a replay's is the original's.
pub fn webhook_id(args: &WebhookJobArgs, job: JobId) -> String {
    args.replayed_id()
        .map_or_else(|| format!("msg_porch_{job}"), str::to_owned)
}

/// A webhook event about to be planned.
struct Event {
    kind: WebhookEvent,
    conversation_id: ConversationId,
    message_id: Option<MessageId>,
    assignee_id: Option<UserId>,
    now: i64,
}

impl Event {
    fn of(kind: WebhookEvent, message: &NewMessage) -> Self {
        Self {
            kind,
            conversation_id: message.conversation_id,
            message_id: Some(message.message_id),
            assignee_id: None,
            now: message.now,
        }
    }
}

/// One post per enabled Slack and Discord integration, kept in order per conversation and
/// integration, paced per Slack channel (or per Discord webhook).
fn chat_jobs(
    conn: &Connection,
    integrations: &[ActiveIntegration],
    new: &NewMessage,
    origin: Option<&SlackChannel>,
) -> Result<Vec<JobRow>, store::Error> {
    let args = to_json(&MessageArgs {
        message_id: new.message_id,
    });
    let came_from = origin.map(SlackChannel::rate_key);
    let mut jobs = Vec::new();
    for integration in integrations {
        let (kind, rate_key) = match integration.kind.as_str() {
            "slack" => (JobKind::SlackPost, slack_channel_key(&integration.config)),
            "discord" => (JobKind::DiscordPost, Some(discord_rate_key(integration.id))),
            _ => continue,
        };
        if kind == JobKind::SlackPost && came_from.is_some() && rate_key == came_from {
            continue;
        }
        let job = NewJob {
            order_key: Some(conversation_order(new.conversation_id, integration.id)),
            ..new_job(
                kind,
                args.clone(),
                integration.id,
                integration.is_broken,
                rate_key,
                new.now,
            )
        };
        jobs.extend(store::insert_job(conn, &job)?);
    }
    Ok(jobs)
}

/// A Discord integration's posts (and tests) are paced per webhook.
pub(super) fn discord_rate_key(integration: IntegrationId) -> String {
    format!("discord:{integration}")
}

/// A Slack integration's posts are paced per channel (Slack's limit is about one message a second
/// per channel), whichever integrations post there. `None` when its settings are incomplete: its
/// delivery then blocks it with a clear error.
fn slack_channel_key(config: &str) -> Option<String> {
    serde_json::from_str::<SlackChannel>(config)
        .ok()
        .map(|channel| channel.rate_key())
}

/// A Slack channel, as a Slack integration's settings name it. An agent's reply typed in one of
/// its threads is already there: no Slack integration that posts to it gets the reply again,
/// whichever integration's Events URL the reply came to (one Slack app may serve several).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SlackChannel {
    pub team_id: String,
    pub channel_id: String,
}

impl SlackChannel {
    fn rate_key(&self) -> String {
        format!("slack:{}:{}", self.team_id, self.channel_id)
    }
}

/// The site's enabled webhook endpoints that subscribe to `event`.
pub(super) fn subscribed_endpoints(
    integrations: &[ActiveIntegration],
    event: WebhookEvent,
) -> Vec<&ActiveIntegration> {
    #[derive(Deserialize)]
    struct Subscription {
        #[serde(default)]
        events: Vec<String>,
    }
    integrations
        .iter()
        .filter(|i| i.kind == "webhook")
        .filter(|i| {
            serde_json::from_str::<Subscription>(&i.config)
                .is_ok_and(|s| s.events.iter().any(|e| e == event.as_str()))
        })
        .collect()
}

/// One delivery per enabled endpoint subscribed to the event, with the conversation's facts
/// as of now; an endpoint hears of one conversation's events in order.
fn webhook_jobs(
    conn: &Connection,
    integrations: &[ActiveIntegration],
    event: &Event,
) -> Result<Vec<JobRow>, store::Error> {
    let endpoints = subscribed_endpoints(integrations, event.kind);
    // Most sites have no endpoint: then the conversation is not read at all.
    if endpoints.is_empty() {
        return Ok(Vec::new());
    }
    let Some(conversation) = store::load_webhook_conversation(conn, event.conversation_id)? else {
        return Ok(Vec::new());
    };
    let args = to_json(&WebhookArgs {
        event: event.kind.as_str().to_owned(),
        conversation_id: event.conversation_id,
        message_id: event.message_id,
        assignee_id: event.assignee_id,
        facts: Some(WebhookFacts::of(&conversation)),
        webhook_id: None,
    });
    let mut jobs = Vec::with_capacity(endpoints.len());
    for endpoint in endpoints {
        let job = NewJob {
            order_key: Some(conversation_order(event.conversation_id, endpoint.id)),
            ..new_job(
                JobKind::WebhookDeliver,
                args.clone(),
                endpoint.id,
                endpoint.is_broken,
                Some(format!("webhook:{}", endpoint.id)),
                event.now,
            )
        };
        jobs.extend(store::insert_job(conn, &job)?);
    }
    Ok(jobs)
}

/// The mail `kind` for each enabled `email` integration of the site. The digest is debounced:
/// one per conversation (`unique_key`), due when the site's `unanswered_after` has passed, and a
/// site's digests run one at a time (`order_key`), so two cannot list the same conversation.
/// Mails to the visitor are only written when the visitor left an address.
#[allow(clippy::too_many_arguments)]
fn email_jobs(
    conn: &Connection,
    integrations: &[ActiveIntegration],
    kind: JobKind,
    site_id: SiteId,
    conversation_id: ConversationId,
    message_id: Option<MessageId>,
    now: i64,
) -> Result<Vec<JobRow>, store::Error> {
    let mailers: Vec<&ActiveIntegration> =
        integrations.iter().filter(|i| i.kind == "email").collect();
    if mailers.is_empty() {
        return Ok(Vec::new());
    }
    let is_digest = kind == JobKind::EmailUnanswered;
    if !is_digest && !store::has_visitor_email(conn, conversation_id)? {
        return Ok(Vec::new());
    }
    let args = to_json(&EmailArgs {
        conversation_id,
        message_id,
    });
    let mut jobs = Vec::new();
    for mailer in mailers {
        let delays = EmailDelays::from_config(&mailer.config);
        let delay = match kind {
            JobKind::EmailUnanswered => delays.unanswered_after,
            // A closing waits as a reply does, so an Undo or a quick reopen sends nothing.
            JobKind::EmailReply | JobKind::EmailTranscript => delays.reply_delay,
            _ => Duration::ZERO,
        };
        let (order_key, unique_key) = if is_digest {
            (
                format!("alert:site:{site_id}"),
                Some(format!("alert:conv:{conversation_id}")),
            )
        } else {
            (format!("mail:conv:{conversation_id}"), None)
        };
        let due = now + millis(delay);
        let run_at = if is_digest {
            digest_time(due, delay)
        } else {
            due
        };
        // Due later, so its deadline counts from then (a delay may be longer than it).
        let job = NewJob {
            order_key: Some(order_key),
            unique_key,
            created_at: now,
            ..new_job(
                kind,
                args.clone(),
                mailer.id,
                mailer.is_broken,
                Some("email".to_owned()),
                run_at,
            )
        };
        jobs.extend(store::insert_job(conn, &job)?);
    }
    Ok(jobs)
}

/// When a digest of a conversation due at `due` goes out: at the next whole multiple of the
/// site's `delay` since the epoch. Every conversation due in between waits for the same moment
/// and the first of their jobs lists them all (the jobs run one at a time per site; the others
/// find them listed), so a site gets at most one digest per `delay`, and a conversation waits at
/// most `delay` more. Without it, each conversation's job ran as it came due and listed only
/// itself: a busy hour mailed every agent once per conversation.
fn digest_time(due: i64, delay: Duration) -> i64 {
    let every = millis(delay);
    if every == 0 {
        return due;
    }
    due.div_euclid(every) * every + if due.rem_euclid(every) == 0 { 0 } else { every }
}

/// A job of `kind` due now, with the kind's attempts and deadline; a broken integration's job
/// starts blocked.
pub(super) fn new_job(
    kind: JobKind,
    args: String,
    integration: IntegrationId,
    is_broken: bool,
    rate_key: Option<String>,
    now: i64,
) -> NewJob {
    NewJob {
        lane: kind.lane().as_str(),
        kind: kind.as_str(),
        args,
        integration_id: Some(integration),
        is_blocked: is_broken,
        order_key: None,
        rate_key,
        unique_key: None,
        max_attempts: kind.max_attempts(),
        run_at: now,
        deadline_at: Some(now + millis(kind.deadline())),
        created_at: now,
    }
}

/// Jobs of one conversation to one integration run in order.
fn conversation_order(conversation: ConversationId, integration: IntegrationId) -> String {
    format!("conv:{conversation}:int:{integration}")
}

pub(super) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_of_a_site_wait_for_the_next_multiple_of_its_delay() {
        let five_minutes = Duration::from_mins(5);
        let mark = 300_000 * 5_000_000;
        // Conversations coming due anywhere up to a mark share it; one due on it goes then.
        for due in [mark - 299_999, mark - 1_000, mark] {
            assert_eq!(digest_time(due, five_minutes), mark, "{due}");
        }
        assert_eq!(digest_time(mark + 1, five_minutes), mark + 300_000);
        // No delay: at once.
        assert_eq!(digest_time(mark + 1, Duration::ZERO), mark + 1);
    }
}
