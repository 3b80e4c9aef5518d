//! Delivering a message to Slack: the conversation's first post starts a thread (a short header
//! with a link to the inbox), every message is a reply in it. Built when delivered, from the
//! message as stored; visitor text is escaped; unfurls are off. A header attempt is recorded
//! before it leaves, so a later attempt looks for it in the channel before posting another. A
//! message's files follow its text into the thread (`share.rs`).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::integrations::Destinations;
use crate::integrations::delivery::{
    Found, args, author_label, find_post, finish, integration_of, read, retry,
};
use crate::jobs::{Attempt, MessageArgs, Outcome};
use crate::secrets::SecretKey;
use crate::store::{
    self, ConversationId, DeliveryMessage, IntegrationId, JobRow, MessageFile, MessageId,
    WebhookConversation,
};
use crate::values::Author;

use super::header::header;
use super::share::{FilePost, post_with_files};
use super::{CallError, HeaderSearch, SlackIntegration, escape, find_headers};

/// Slack errors that only an admin can fix (token, scopes, channel).
const BLOCKING: &[&str] = &[
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "missing_scope",
    "no_permission",
    "channel_not_found",
    "not_in_channel",
    "is_archived",
    "ekm_access_denied",
    "org_login_required",
    "team_added_to_org",
];
/// Slack errors worth retrying; `fatal_error` may have had an effect, which at-least-once
/// delivery accepts.
const TRANSIENT: &[&str] = &[
    "fatal_error",
    "internal_error",
    "request_timeout",
    "service_unavailable",
];
/// Attempts during which a channel history that cannot be read for a passing reason (timeout,
/// 5xx) is waited for before the header is posted regardless: a possible duplicate header
/// (whose replies still reach the visitor) is better than a conversation that never reaches Slack.
const HISTORY_PATIENCE: u32 = 3;

/// Maps a failed Slack call to what the runner should do.
pub fn classify(error: &CallError) -> Outcome {
    match error {
        CallError::RateLimited { retry_after } => Outcome::RateLimited {
            retry_after: *retry_after,
        },
        CallError::Slack { error, .. } if BLOCKING.contains(&error.as_str()) => Outcome::Blocked {
            error: format!("Slack refused: {error}"),
        },
        CallError::Slack { error, .. } if TRANSIENT.contains(&error.as_str()) => Outcome::Retry {
            error: format!("Slack answered {error}"),
            not_before: None,
        },
        CallError::Slack { error, .. } => Outcome::Failed {
            error: format!("Slack refused the message: {error}"),
        },
        CallError::Http { status: 401 | 403 } => Outcome::Blocked {
            error: error.to_string(),
        },
        CallError::Http { status } if *status >= 500 || *status == 408 => Outcome::Retry {
            error: error.to_string(),
            not_before: None,
        },
        CallError::Http { .. } => Outcome::Failed {
            error: error.to_string(),
        },
        CallError::Network(_) => Outcome::Retry {
            error: error.to_string(),
            not_before: None,
        },
    }
}

/// A message as a reply in the conversation's thread.
fn reply(channel: &str, thread_ts: &str, message: &DeliveryMessage) -> Value {
    let username = author_label(message);
    json!({
        "channel": channel,
        "thread_ts": thread_ts,
        "text": escape(&message.body),
        "username": username,
        "icon_emoji": if message.author == Author::Agent { ":headphones:" } else { ":speech_balloon:" },
        "unfurl_links": false,
        "unfurl_media": false,
        // Marks our own posts (with our message id) so they are never taken for agent replies
        // and a duplicate can be recognised.
        "metadata": {"event_type": "porch_message", "event_payload": {"message_id": message.id.0, "author": message.author.as_str()}},
    })
}

/// Delivers a `slack.post` job.
pub async fn deliver_post(destinations: &Destinations, job: &JobRow) -> Attempt {
    finish(post(destinations, job).await)
}

async fn post(destinations: &Destinations, job: &JobRow) -> Result<Attempt, Attempt> {
    let MessageArgs { message_id } = args(job)?;
    let integration = integration_of(job)?;
    let key = Arc::clone(&destinations.secret_key);
    let Loaded {
        slack,
        message,
        thread,
        files,
        done,
    } = read(&destinations.readers, move |c| {
        load(c, &key, integration, message_id)
    })
    .await?;
    let api = &destinations.slack;
    let token = &slack.secrets.bot_token;
    let channel = &slack.config.channel_id;
    let (thread_ts, posted_header) = match thread {
        Thread::Started(ts) => (ts, false),
        Thread::ToStart(conversation) => {
            start_thread(destinations, &slack, &conversation, job.attempt).await?
        }
    };
    // The header was a post of its own: the channel's pace is charged for it (unless the reply
    // was refused with a 429, which Slack does not count, so the header used the job's start).
    let charged = |attempt: Attempt| match attempt.outcome {
        Outcome::RateLimited { .. } => attempt,
        _ if posted_header => attempt.with_extra_calls(1),
        _ => attempt,
    };
    let body = reply(channel, &thread_ts, &message);
    if !files.is_empty() {
        let post = FilePost {
            integration,
            message: message_id,
            slack: &slack,
            thread_ts: &thread_ts,
            reply: &body,
            files,
            done: done.into_iter().collect(),
        };
        return post_with_files(destinations, post)
            .await
            .map(charged)
            .map_err(charged);
    }
    Ok(charged(match api.post_message(token, &body).await {
        Ok(ts) => Attempt::new(
            Outcome::Delivered {
                external_ref: Some(ts),
            },
            Some(200),
        ),
        Err(err) => Attempt::new(classify(&err), err.http_status()),
    }))
}

/// Finds or posts the conversation's header and remembers its `ts` as the thread for this
/// channel; says whether it posted one (rather than adopting an earlier one).
///
/// The attempt is committed before the post leaves. If an earlier attempt was recorded (it may
/// have reached Slack although Porch never saw the answer: a timeout, a crash), the channel's
/// history is searched for a header with this conversation's metadata first, and the oldest one
/// found is adopted instead of posting another.
async fn start_thread(
    destinations: &Destinations,
    slack: &SlackIntegration,
    facts: &WebhookConversation,
    attempt: u32,
) -> Result<(String, bool), Attempt> {
    let conversation = facts.id;
    let (team, channel_id) = (
        slack.config.team_id.clone(),
        slack.config.channel_id.clone(),
    );
    let start = destinations
        .writer
        .write(move |c| store::begin_slack_thread(c, conversation, &team, &channel_id, now_ms()))
        .await
        .map_err(|err| retry(format!("could not record the header attempt: {err}")))?;
    // Whether no earlier attempt can have posted a header: then a refusal of this one proves
    // there is none, and the next attempt need not search the history. After an unsure attempt
    // it stays unsure, even when the history shows nothing: that post may still land.
    let is_absent = start.is_first;
    if !start.is_first {
        let token = &slack.secrets.bot_token;
        let search = find_headers(
            &destinations.slack,
            token,
            &slack.config,
            conversation,
            start.attempted_at,
        )
        .await;
        match search {
            Ok(HeaderSearch { mut headers, .. }) if !headers.is_empty() => {
                let oldest = headers.remove(0);
                let thread = save_thread(destinations, slack, conversation, oldest, headers);
                return Ok((thread.await?, false));
            }
            // No earlier attempt reached Slack (as far as its history shows): post.
            Ok(HeaderSearch {
                is_complete: true, ..
            }) => {}
            Ok(HeaderSearch { .. }) => tracing::warn!(
                conversation = %conversation,
                "the Slack channel has too many posts since the header was first attempted to \
                 search them all; posting the header, which may duplicate an earlier one"
            ),
            Err(err) => {
                let outcome = classify(&err);
                match outcome {
                    Outcome::RateLimited { .. } => {
                        return Err(Attempt::new(outcome, err.http_status()));
                    }
                    Outcome::Retry { .. } if attempt < HISTORY_PATIENCE => {
                        return Err(Attempt::new(
                            Outcome::Retry {
                                error: format!(
                                    "could not search the channel for an earlier header: {err}"
                                ),
                                not_before: None,
                            },
                            err.http_status(),
                        ));
                    }
                    // Never block on the history (a missing `channels:history` scope, …).
                    _ => {
                        let hint = if matches!(err, CallError::Slack { .. }) {
                            " (the app needs channels:history or groups:history)"
                        } else {
                            ""
                        };
                        tracing::warn!(
                            conversation = %conversation,
                            error = %err,
                            "could not read the Slack channel's history{hint}; posting the \
                             header, which may duplicate an earlier one"
                        );
                    }
                }
            }
        }
    }
    let ts = post_header(destinations, slack, facts, is_absent).await?;
    let thread = save_thread(destinations, slack, conversation, ts, Vec::new()).await?;
    Ok((thread, true))
}

/// Posts the conversation's header; returns its `ts`. When no earlier attempt can have posted
/// one (`is_absent`) and Slack refuses this one in a way that proves nothing was posted (a 429,
/// an error code other than a passing one, a 4xx), the attempt is forgotten, so the retry posts
/// at once instead of first reading the channel's history (a call with a rate limit of its own,
/// for nothing).
async fn post_header(
    destinations: &Destinations,
    slack: &SlackIntegration,
    facts: &WebhookConversation,
    is_absent: bool,
) -> Result<String, Attempt> {
    let parent = header(&destinations.public_url, &slack.config.channel_id, facts);
    let posted = destinations
        .slack
        .post_message(&slack.secrets.bot_token, &parent)
        .await;
    let err = match posted {
        Ok(ts) => return Ok(ts),
        Err(err) => err,
    };
    let outcome = classify(&err);
    if is_absent && !matches!(outcome, Outcome::Retry { .. }) {
        let (conversation, team, channel) = (
            facts.id,
            slack.config.team_id.clone(),
            slack.config.channel_id.clone(),
        );
        let forgotten = destinations
            .writer
            .write_deferred(move |c| {
                store::forget_slack_thread_start(c, conversation, &team, &channel)
            })
            .await;
        // Kept, the retry only reads the history first, as after any unsure attempt.
        if let Err(error) = forgotten {
            tracing::debug!(%conversation, %error, "could not forget a refused header attempt");
        }
    }
    Err(Attempt::new(outcome, err.http_status()))
}

/// Stores `first` as the conversation's thread (unless one is stored already) and every other
/// header as a further root, so replies in any of them reach the conversation. Returns the thread
/// to post into.
async fn save_thread(
    destinations: &Destinations,
    slack: &SlackIntegration,
    conversation: ConversationId,
    first: String,
    others: Vec<String>,
) -> Result<String, Attempt> {
    let (team, channel) = (
        slack.config.team_id.clone(),
        slack.config.channel_id.clone(),
    );
    destinations
        .writer
        .write(move |c| {
            store::insert_slack_thread(c, conversation, &team, &channel, &first)?;
            let thread = store::find_slack_thread(c, conversation, &team, &channel)?
                .unwrap_or_else(|| first.clone());
            for ts in std::iter::once(&first)
                .chain(&others)
                .filter(|ts| **ts != thread)
            {
                store::insert_slack_thread_root(c, conversation, &team, &channel, ts)?;
            }
            Ok(thread)
        })
        .await
        .map_err(|err| retry(format!("could not save the thread: {err}")))
}

/// The conversation's thread in this channel, or (to start one) the conversation as it is now.
enum Thread {
    Started(String),
    ToStart(Box<WebhookConversation>),
}

/// What a post needs: the integration's settings, the message, the conversation's thread in
/// this channel, the message's files and the parts of its post already done.
struct Loaded {
    slack: SlackIntegration,
    message: DeliveryMessage,
    thread: Thread,
    files: Vec<MessageFile>,
    done: Vec<(String, String)>,
}

fn load(
    conn: &rusqlite::Connection,
    key: &SecretKey,
    integration: IntegrationId,
    message: MessageId,
) -> Result<Found<Loaded>, store::Error> {
    find_post(conn, integration, message)?.and_then(|(row, message)| {
        let Some(slack) = SlackIntegration::open(key, &row) else {
            return Ok(Found::Invalid("the Slack settings are incomplete"));
        };
        let thread = store::find_slack_thread(
            conn,
            message.conversation_id,
            &slack.config.team_id,
            &slack.config.channel_id,
        )?;
        let thread = match thread {
            Some(ts) => Thread::Started(ts),
            None => match store::load_webhook_conversation(conn, message.conversation_id)? {
                Some(conversation) => Thread::ToStart(Box::new(conversation)),
                None => return Ok(Found::Gone("conversation deleted")),
            },
        };
        let files = store::list_message_files(conn, message.id)?;
        let done = if files.is_empty() {
            Vec::new()
        } else {
            store::list_slack_shares(conn, integration, message.id)?
        };
        Ok(Found::Ready(Loaded {
            slack,
            message,
            thread,
            files,
            done,
        }))
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn slack_errors_map_to_runner_actions() {
        let slack = |e: &str| CallError::Slack {
            error: e.into(),
            status: 200,
        };
        assert!(matches!(
            classify(&slack("invalid_auth")),
            Outcome::Blocked { .. }
        ));
        assert!(matches!(
            classify(&slack("channel_not_found")),
            Outcome::Blocked { .. }
        ));
        assert!(matches!(
            classify(&slack("internal_error")),
            Outcome::Retry { .. }
        ));
        assert!(matches!(
            classify(&slack("msg_too_long")),
            Outcome::Failed { .. }
        ));
        assert!(matches!(
            classify(&CallError::Http { status: 503 }),
            Outcome::Retry { .. }
        ));
        assert_eq!(
            classify(&CallError::RateLimited {
                retry_after: Duration::from_secs(3)
            }),
            Outcome::RateLimited {
                retry_after: Duration::from_secs(3)
            }
        );
    }
}
