//! What to do with a Slack event, however it arrived (Events API or Socket Mode): a human's
//! reply in one of our threads becomes an agent message (or a private note) for the visitor;
//! Slack saying the app lost its access parks its integrations (`access.rs`); everything else is
//! ignored. A reply in a thread Porch never recorded is traced to its
//! conversation through the root's metadata; one that cannot be is logged and counted. A
//! reply's files come with it (`inbound_files.rs`).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

use crate::chat::{self, Agent, Chat, InboundReply, MessageBody};
use crate::jobs::{JobQueue, Outcome, SlackChannel};
use crate::metrics::Meters;
use crate::secrets::SecretKey;
use crate::store::{self, ConversationId, IntegrationId, Readers, Uploader, UserRow, Writer};

use super::access::{lost_access, park_app};
use super::deliver::classify;
use super::inbound_files::receive_files;
use super::{
    CallError, SlackApi, SlackIntegration, SlackUser, find_root, header_conversation,
    is_by_our_bot, to_plain_named, unnamed_mentions,
};

/// How long a Slack user's name and email are remembered.
const USER_CACHE_TTL: Duration = Duration::from_mins(10);
/// Slack wants an answer within 3 s; a name lookup must not use that up.
const USER_LOOKUP_TIMEOUT: Duration = Duration::from_millis(1500);
/// Same bound for reading the root of a thread Porch has no record of.
const ROOT_LOOKUP_TIMEOUT: Duration = Duration::from_millis(1500);
/// Prefix that makes a thread reply a private note.
const NOTE_PREFIX: &str = "note:";
/// Message subtypes that are a person writing (`me_message`: Slack's `/me`); edits, deletes,
/// joins and bot posts are not.
const HUMAN_SUBTYPES: &[&str] = &["file_share", "thread_broadcast", "me_message"];

/// What became of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// A new agent message or note was stored.
    Stored,
    /// The event was delivered before; nothing new was stored.
    Duplicate,
    /// Not a reply in one of our threads (or from a bot, an edit, …).
    Ignored,
    /// A reply in a thread Porch's bot started that could not be matched to a conversation:
    /// nothing was stored; it was logged at warn and counted
    /// (`porch_slack_unmapped_replies_total`).
    Unmapped,
    /// Slack said the app lost its access to the workspace; its integrations there were parked
    /// ([`super::access`]).
    LostAccess,
    /// The reply's thread could not be traced now (Slack did not answer in time, or answered
    /// with a passing error): nothing was stored, and the event must not be acknowledged, so
    /// Slack sends it again.
    Later,
}

/// Where a reply in a thread without a record belongs.
enum Traced {
    Conversation(ConversationId),
    /// Someone else's thread: not for Porch.
    NotOurs,
    /// Porch's (or maybe Porch's) thread, but no conversation can be named; says why.
    Unmapped(String),
    /// Slack could not say now whose thread it is; says why.
    Unavailable(String),
}

/// Slack's side of Porch: the Events API endpoint, the Socket Mode clients and the setup take
/// this narrow handle (the API client, a user cache, and what they store through), not the
/// whole application.
pub struct SlackInbound {
    pub api: SlackApi,
    users: Mutex<HashMap<(String, String), (Instant, SlackUser)>>,
    /// Wakes the Socket Mode supervisor when an integration was saved.
    pub rescan: Notify,
    /// Stores inbound replies as agent messages, and does what agents ask from Slack.
    pub(super) chat: Chat,
    pub(super) readers: Arc<Readers>,
    pub(super) writer: Arc<Writer>,
    /// Takes a fixed integration's blocked jobs.
    pub(super) jobs: JobQueue,
    /// Counts replies that match no conversation.
    meters: Arc<Meters>,
    /// Opens the integrations' sealed secrets (tokens, signing secrets).
    pub secret_key: Arc<SecretKey>,
}

impl SlackInbound {
    pub fn new(
        api: SlackApi,
        chat: Chat,
        readers: Arc<Readers>,
        writer: Arc<Writer>,
        jobs: JobQueue,
        meters: Arc<Meters>,
        secret_key: Arc<SecretKey>,
    ) -> Self {
        Self {
            api,
            users: Mutex::new(HashMap::new()),
            rescan: Notify::new(),
            chat,
            readers,
            writer,
            jobs,
            meters,
            secret_key,
        }
    }

    /// The Slack user's name and email, from the cache or `users.info`; `None` if Slack does not
    /// answer in time (the reply is then attributed to the name in the event, if any).
    async fn lookup_user(&self, slack: &SlackIntegration, user: &str) -> Option<SlackUser> {
        let key = (slack.config.team_id.clone(), user.to_owned());
        if let Ok(cache) = self.users.lock()
            && let Some((at, found)) = cache.get(&key)
            && at.elapsed() < USER_CACHE_TTL
        {
            return Some(found.clone());
        }
        let lookup = self.api.user_info(&slack.secrets.bot_token, user);
        let found = tokio::time::timeout(USER_LOOKUP_TIMEOUT, lookup)
            .await
            .ok()?
            .ok()?;
        if let Ok(mut cache) = self.users.lock() {
            cache.retain(|_, (at, _)| at.elapsed() < USER_CACHE_TTL);
            cache.insert(key, (Instant::now(), found.clone()));
        }
        Some(found)
    }
}

/// Handles one `event_callback` envelope for a Slack integration.
///
/// # Errors
/// Storage errors; the caller then answers so that Slack retries.
pub async fn handle_event_callback(
    inbound: &SlackInbound,
    integration_id: IntegrationId,
    slack: &SlackIntegration,
    envelope: &Value,
) -> Result<Handled, chat::Error> {
    let event = &envelope["event"];
    let text = |key: &str| event[key].as_str();
    let is_ours = envelope["team_id"].as_str() == Some(slack.config.team_id.as_str());
    if is_ours && let Some(reason) = lost_access(event, &slack.config.bot_user_id) {
        park_app(inbound, slack, (envelope["event_id"].as_str(), reason)).await?;
        return Ok(Handled::LostAccess);
    }
    let is_message = text("type") == Some("message");
    let is_from_bot = event.get("bot_id").is_some_and(|b| !b.is_null())
        || text("user") == Some(slack.config.bot_user_id.as_str());
    let is_human = text("subtype").is_none_or(|s| HUMAN_SUBTYPES.contains(&s));
    let (Some(event_id), Some(user), Some(channel), Some(thread_ts), Some(ts)) = (
        envelope["event_id"].as_str(),
        text("user"),
        text("channel"),
        text("thread_ts"),
        text("ts"),
    ) else {
        return Ok(Handled::Ignored);
    };
    // A thread's parent has thread_ts == ts; only replies count.
    if !is_ours || !is_message || is_from_bot || !is_human || thread_ts == ts {
        return Ok(Handled::Ignored);
    }
    let (team, channel_id, thread) = (
        slack.config.team_id.clone(),
        channel.to_owned(),
        thread_ts.to_owned(),
    );
    let recorded = inbound
        .readers
        .read(move |c| store::find_conversation_by_slack_thread(c, &team, &channel_id, &thread))
        .await?;
    let conversation_id = match recorded {
        Some(id) => id,
        None => match trace_thread(inbound, slack, event, channel, thread_ts).await? {
            Traced::Conversation(id) => id,
            Traced::NotOurs => return Ok(Handled::Ignored),
            Traced::Unmapped(reason) => {
                inbound
                    .meters
                    .slack_unmapped_replies
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    integration = %integration_id,
                    channel,
                    thread_ts,
                    event_id,
                    reason,
                    "a Slack reply in a thread Porch started matches no conversation; it was not \
                     delivered to the visitor"
                );
                return Ok(Handled::Unmapped);
            }
            Traced::Unavailable(reason) => {
                tracing::warn!(
                    integration = %integration_id,
                    channel,
                    thread_ts,
                    event_id,
                    reason,
                    "could not trace a Slack reply's thread now; the event is left unacknowledged \
                     so Slack sends it again"
                );
                return Ok(Handled::Later);
            }
        },
    };

    let raw = text("text").unwrap_or_default();
    let plain = to_plain_named(raw, &mention_names(inbound, slack, raw).await);
    let trimmed = plain.trim_start();
    let (is_note, body) = match trimmed.get(..NOTE_PREFIX.len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case(NOTE_PREFIX) => {
            (true, &trimmed[NOTE_PREFIX.len()..])
        }
        _ => (false, trimmed),
    };
    let reply = Reply {
        channel: SlackChannel {
            team_id: slack.config.team_id.clone(),
            channel_id: channel.to_owned(),
        },
        event_id,
        ts,
        conversation_id,
        user,
        body,
        is_note,
    };
    post_reply(inbound, slack, event, reply).await
}

/// A human's reply in one of the conversation's threads, as the event names it.
struct Reply<'a> {
    /// Where it was typed (not necessarily the channel of the integration whose URL the event
    /// came to: one Slack app may serve several).
    channel: SlackChannel,
    event_id: &'a str,
    /// The message's id in its channel.
    ts: &'a str,
    conversation_id: ConversationId,
    /// The Slack user who wrote it.
    user: &'a str,
    /// The text without a `note:` prefix.
    body: &'a str,
    is_note: bool,
}

/// Stores a reply with its files (or, for files not passed on, a line naming each).
async fn post_reply(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    event: &Value,
    reply: Reply<'_>,
) -> Result<Handled, chat::Error> {
    let has_files = event["files"].as_array().is_some_and(|f| !f.is_empty());
    // A reply with nothing to pass on (`note:` alone, only invisible characters) is no message.
    let empty = |event_id: &str| {
        tracing::debug!(event_id, "a Slack reply with nothing in it was not stored");
        Ok(Handled::Ignored)
    };
    if reply.body.trim().is_empty() && !has_files {
        return empty(reply.event_id);
    }
    let agent = resolve_agent(inbound, slack, reply.user, event).await?;
    let conversation = inbound
        .chat
        .find_conversation(reply.conversation_id)
        .await?;
    let uploader = agent.user_id.map_or(Uploader::Integration, Uploader::Agent);
    let files = receive_files(
        inbound,
        slack,
        conversation.site_id,
        uploader,
        event,
        reply.is_note,
    )
    .await?;
    // Slack takes far longer messages than Porch's 4,000 characters, and its sender cannot be
    // told: the reply is cut, marked with "…", rather than lost.
    let text = MessageBody::clip(&files.text_with_notes(reply.body));
    let Ok(body) = MessageBody::parse_beside_attachments(&text, !files.ids.is_empty()) else {
        return empty(reply.event_id);
    };
    let reply = InboundReply {
        channel: reply.channel,
        event_id: reply.event_id.to_owned(),
        message_ts: reply.ts.to_owned(),
        conversation_id: reply.conversation_id,
        agent,
        body,
        is_note: reply.is_note,
        attachments: files.ids,
    };
    Ok(match inbound.chat.post_inbound_reply(reply).await? {
        Some(_) => Handled::Stored,
        None => Handled::Duplicate,
    })
}

/// Finds the conversation of a thread Porch has no record of (a second header posted after a
/// timeout or crash, when the first could not be found) from its root's metadata, and records
/// the root so later replies need no lookup.
async fn trace_thread(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    event: &Value,
    channel: &str,
    thread_ts: &str,
) -> Result<Traced, chat::Error> {
    // Slack names the thread's author in every reply: a person's thread needs no lookup.
    let parent = event["parent_user_id"].as_str();
    if parent.is_some_and(|p| p != slack.config.bot_user_id) {
        return Ok(Traced::NotOurs);
    }
    let lookup = find_root(&inbound.api, &slack.secrets.bot_token, channel, thread_ts);
    let root = match tokio::time::timeout(ROOT_LOOKUP_TIMEOUT, lookup).await {
        Ok(Ok(Some(root))) => root,
        Ok(Ok(None)) if parent.is_none() => return Ok(Traced::NotOurs),
        Ok(Ok(None)) => return Ok(Traced::Unmapped("Slack has no such thread root".into())),
        // A passing failure (timeout, 5xx, rate limit, Slack's internal_error) is tried again
        // when Slack resends the event; a refusal (a missing scope) would be refused again.
        Ok(Err(err)) if is_passing(&err) => {
            return Ok(Traced::Unavailable(format!(
                "could not read the thread's root: {err}"
            )));
        }
        Ok(Err(err)) => {
            return Ok(Traced::Unmapped(format!(
                "could not read the thread's root (the app needs channels:history or \
                 groups:history): {err}"
            )));
        }
        Err(_) => {
            return Ok(Traced::Unavailable(
                "Slack did not answer in time with the thread's root".into(),
            ));
        }
    };
    let Some(conversation) = header_conversation(&root, &slack.config) else {
        return Ok(if is_by_our_bot(&root, &slack.config) {
            Traced::Unmapped("the thread's root carries no Porch conversation".into())
        } else {
            Traced::NotOurs
        });
    };
    let (team, channel_id, ts) = (
        slack.config.team_id.clone(),
        channel.to_owned(),
        thread_ts.to_owned(),
    );
    let recorded = inbound
        .writer
        .write(move |c| store::insert_slack_thread_root(c, conversation, &team, &channel_id, &ts))
        .await?;
    Ok(if recorded {
        tracing::info!(conversation = %conversation, thread_ts, "adopted an unrecorded Slack thread of the conversation");
        Traced::Conversation(conversation)
    } else {
        Traced::Unmapped(format!("conversation {conversation} no longer exists"))
    })
}

/// Whether a failed call may succeed when tried again: the same rule deliveries retry by.
fn is_passing(err: &CallError) -> bool {
    matches!(
        classify(err),
        Outcome::Retry { .. } | Outcome::RateLimited { .. }
    )
}

/// The names of the people a reply mentions by id, as the visitor knows them: a Porch agent's
/// name when the email matches, as for the reply's author, else the Slack display name. Looked
/// up together (each bounded by the lookup's timeout, cached); one Slack does not name stays an
/// id.
async fn mention_names(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    text: &str,
) -> Vec<(String, String)> {
    let lookups = unnamed_mentions(text).into_iter().map(|user| async move {
        let name = match porch_user(inbound, slack, user).await {
            Ok((_, Some(account))) => account.name,
            Ok((found, None)) => found?.display_name,
            Err(_) => inbound.lookup_user(slack, user).await?.display_name,
        };
        Some((user.to_owned(), name))
    });
    futures_util::future::join_all(lookups)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The agent behind a Slack user: the Porch user with the same email, else the Slack name.
async fn resolve_agent(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    user: &str,
    event: &Value,
) -> Result<Agent, chat::Error> {
    let profile_name = event["user_profile"]["display_name"]
        .as_str()
        .filter(|s| !s.is_empty())
        .or_else(|| event["user_profile"]["real_name"].as_str())
        .map(str::to_owned);
    let (found, account) = porch_user(inbound, slack, user).await?;
    if let Some(account) = account {
        return Ok(Agent {
            user_id: Some(account.id),
            name: account.name,
        });
    }
    let name = found
        .map(|u| u.display_name)
        .or(profile_name)
        .unwrap_or_else(|| "Slack user".to_owned());
    Ok(Agent {
        user_id: None,
        name,
    })
}

/// The Slack user as Slack describes them (`None` if Slack did not answer in time) and the
/// enabled Porch user with the same email (`users:read.email`), if there is one.
pub(super) async fn porch_user(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    user: &str,
) -> Result<(Option<SlackUser>, Option<UserRow>), chat::Error> {
    let found = inbound.lookup_user(slack, user).await;
    let Some(email) = found.as_ref().and_then(|u| u.email.clone()) else {
        return Ok((found, None));
    };
    let account = inbound
        .readers
        .read(move |c| store::find_user_by_email(c, &email))
        .await?
        .filter(|a| !a.is_disabled);
    Ok((found, account))
}
