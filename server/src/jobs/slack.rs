//! Delivering a message to Slack: the conversation's first post starts a thread (a short header
//! with a link to the inbox), every message is a reply in it. Built when delivered, from the
//! message as stored; visitor text is escaped; unfurls are off.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::slack::{CallError, SlackIntegration, escape};
use crate::store::{self, DeliveryMessage, IntegrationId, JobRow, MessageId};

use super::destinations::Destinations;
use super::outcome::{Attempt, Outcome};

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

fn visitor_label(message: &DeliveryMessage) -> String {
    message
        .visitor_name
        .clone()
        .or_else(|| message.visitor_email.clone())
        .unwrap_or_else(|| format!("Visitor #{}", message.visitor_id))
}

/// The thread's first post: who, where, and a link to the conversation in the inbox.
fn header(public_url: &str, channel: &str, message: &DeliveryMessage) -> Value {
    let mut text = format!(
        "New conversation on *{}* from {}",
        escape(&message.site_name),
        escape(&visitor_label(message))
    );
    if let Some(page) = &message.visitor_page {
        let _ = write!(text, "\nPage: {}", escape(page));
    }
    let _ = write!(
        text,
        "\n<{public_url}/conversations/{}|Open in Porch> · reply in this thread to answer; \
         start a reply with `note:` for a private note",
        message.conversation_id
    );
    json!({
        "channel": channel,
        "text": text,
        "unfurl_links": false,
        "unfurl_media": false,
        "metadata": {"event_type": "porch_conversation", "event_payload": {"conversation_id": message.conversation_id.0}},
    })
}

/// A message as a reply in the conversation's thread.
fn reply(channel: &str, thread_ts: &str, message: &DeliveryMessage) -> Value {
    let username = if message.author == "agent" {
        format!(
            "{} (Porch)",
            message.author_name.as_deref().unwrap_or("Agent")
        )
    } else {
        visitor_label(message)
    };
    json!({
        "channel": channel,
        "thread_ts": thread_ts,
        "text": escape(&message.body),
        "username": username,
        "icon_emoji": if message.author == "agent" { ":headphones:" } else { ":speech_balloon:" },
        "unfurl_links": false,
        "unfurl_media": false,
        // Marks our own posts (with our message id) so they are never taken for agent replies
        // and a duplicate can be recognised.
        "metadata": {"event_type": "porch_message", "event_payload": {"message_id": message.id.0, "author": message.author}},
    })
}

#[derive(serde::Deserialize)]
struct Args {
    message_id: MessageId,
}

/// Delivers a `slack.post` job.
pub async fn deliver_post(destinations: &Destinations, job: &JobRow) -> Attempt {
    let Ok(args) = serde_json::from_str::<Args>(&job.args) else {
        return Attempt::new(
            Outcome::Failed {
                error: "unreadable job arguments".into(),
            },
            None,
        );
    };
    let Some(integration_id) = job.integration_id else {
        return Attempt::new(
            Outcome::Failed {
                error: "the job names no integration".into(),
            },
            None,
        );
    };
    let loaded = destinations
        .readers
        .read(move |c| load(c, integration_id, args.message_id))
        .await;
    let (slack, message, thread) = match loaded {
        Ok(Loaded::Ready {
            slack,
            message,
            thread,
        }) => (slack, message, thread),
        Ok(Loaded::Gone(what)) => {
            // Nothing left to deliver: the message or the integration was deleted.
            return Attempt::new(
                Outcome::Failed {
                    error: format!("nothing to deliver: {what}"),
                },
                None,
            );
        }
        Ok(Loaded::Invalid) => {
            return Attempt::new(
                Outcome::Blocked {
                    error: "the Slack settings are incomplete".into(),
                },
                None,
            );
        }
        Err(err) => {
            return Attempt::new(
                Outcome::Retry {
                    error: err.to_string(),
                    not_before: None,
                },
                None,
            );
        }
    };
    let api = &destinations.slack;
    let token = &slack.secrets.bot_token;
    let channel = &slack.config.channel_id;
    let thread_ts = match thread {
        Some(ts) => ts,
        None => match start_thread(destinations, &slack, &message).await {
            Ok(ts) => ts,
            Err(attempt) => return attempt,
        },
    };
    match api
        .post_message(token, &reply(channel, &thread_ts, &message))
        .await
    {
        Ok(ts) => Attempt::new(
            Outcome::Delivered {
                external_ref: Some(ts),
            },
            Some(200),
        ),
        Err(err) => Attempt::new(classify(&err), err.http_status()),
    }
}

/// Posts the conversation's header and remembers its `ts` as the thread for this channel.
async fn start_thread(
    destinations: &Destinations,
    slack: &SlackIntegration,
    message: &DeliveryMessage,
) -> Result<String, Attempt> {
    let channel = &slack.config.channel_id;
    let parent = header(&destinations.public_url, channel, message);
    let ts = destinations
        .slack
        .post_message(&slack.secrets.bot_token, &parent)
        .await
        .map_err(|err| Attempt::new(classify(&err), err.http_status()))?;
    let (conversation, team, channel_id, saved_ts) = (
        message.conversation_id,
        slack.config.team_id.clone(),
        channel.clone(),
        ts.clone(),
    );
    destinations
        .writer
        .write(move |c| store::insert_slack_thread(c, conversation, &team, &channel_id, &saved_ts))
        .await
        .map_err(|err| {
            let error = format!("could not save the thread: {err}");
            Attempt::new(
                Outcome::Retry {
                    error,
                    not_before: None,
                },
                None,
            )
        })?;
    Ok(ts)
}

#[allow(clippy::large_enum_variant)] // built once per delivery
enum Loaded {
    Ready {
        slack: SlackIntegration,
        message: DeliveryMessage,
        thread: Option<String>,
    },
    Gone(&'static str),
    Invalid,
}

fn load(
    conn: &rusqlite::Connection,
    integration: IntegrationId,
    message: MessageId,
) -> Result<Loaded, store::Error> {
    let Some(row) = store::find_integration(conn, integration)? else {
        return Ok(Loaded::Gone("integration deleted"));
    };
    let Some(message) = store::load_delivery_message(conn, message)? else {
        return Ok(Loaded::Gone("message deleted"));
    };
    let Some(slack) = SlackIntegration::parse(&row.config, &row.secrets) else {
        return Ok(Loaded::Invalid);
    };
    let thread = store::find_slack_thread(
        conn,
        message.conversation_id,
        &slack.config.team_id,
        &slack.config.channel_id,
    )?;
    Ok(Loaded::Ready {
        slack,
        message,
        thread,
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
