//! Delivering a message to Discord through a channel webhook: executed with `?wait=true` so a
//! failure surfaces and the message id comes back; nothing may be mentioned
//! (`allowed_mentions: {"parse": []}`) and embeds are suppressed, so visitor text can neither
//! ping `@everyone` nor unfurl links; markdown in visitor text is escaped. In a forum channel each
//! conversation gets a thread: the first post names it (`thread_name`), later ones go to it
//! (`?thread_id=`). Text over 2,000 characters is split. 429 pauses this webhook only, and
//! `X-RateLimit-Remaining: 0` paces it until the bucket resets.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::store::{self, DeliveryMessage, IntegrationId, JobRow, MessageId};
use crate::values::Author;

use super::text::{CONTENT_LIMIT, escape, split};
use crate::integrations::delivery::{
    Found, args, author_label, find_post, finish, integration_of, marked_visitor_name, read,
    visitor_label,
};
use crate::integrations::{Destinations, open_secrets_as};
use crate::jobs::{Attempt, MessageArgs, Outcome};
use crate::secrets::SecretKey;

/// Discord's limit on `username`.
const NAME_LIMIT: usize = 80;
/// Discord's limit on `thread_name` (a channel's name).
const THREAD_NAME_LIMIT: usize = 100;
/// The most of a thread's name the visitor's part takes, so the site's name always shows (a
/// forum channel may carry several sites).
const THREAD_VISITOR_LIMIT: usize = 48;
/// `SUPPRESS_EMBEDS` (1 << 2): links in visitor text do not unfurl.
pub(super) const SUPPRESS_EMBEDS: u32 = 1 << 2;
/// Used when a 429 carries no readable `retry_after`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// Longest pause between the parts of one split message taken inside the delivery.
const MAX_INLINE_PAUSE: Duration = Duration::from_secs(5);

/// A Discord integration's non-secret settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DiscordConfig {
    /// The webhook posts into a forum channel: one thread per conversation.
    pub is_forum: bool,
    /// The webhook's id (the URL's token is the secret part).
    pub webhook_id: String,
}

/// The webhook URL carries its token, so it is a secret. `Debug` never prints it.
#[derive(Clone, Serialize, Deserialize)]
pub struct DiscordSecrets {
    pub webhook_url: String,
}

impl std::fmt::Debug for DiscordSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordSecrets")
            .field("webhook_url", &"<redacted>")
            .finish()
    }
}

/// Substrings Discord refuses anywhere in a webhook username, compared without case.
const REFUSED_IN_NAME: [&str; 2] = ["discord", "clyde"];
/// Whole usernames Discord refuses, compared without case.
const REFUSED_NAMES: [&str; 3] = ["everyone", "here", "system message"];
/// Used when nothing acceptable is left of a name.
const FALLBACK_NAME: &str = "Visitor";

/// A display name Discord accepts, so a name never fails a delivery: every case of
/// [`REFUSED_IN_NAME`] removed, never one of [`REFUSED_NAMES`], whitespace collapsed, at most
/// [`NAME_LIMIT`] characters, never empty.
fn display_name(name: &str) -> String {
    let mut chars: Vec<char> = name.chars().collect();
    // Removing one occurrence can join the letters around it into another ("disdiscordcord").
    while let Some((at, len)) = REFUSED_IN_NAME.iter().find_map(|banned| {
        let len = banned.len();
        chars
            .windows(len)
            .position(|w| {
                w.iter()
                    .zip(banned.chars())
                    .all(|(c, b)| c.eq_ignore_ascii_case(&b))
            })
            .map(|at| (at, len))
    }) {
        chars.drain(at..at + len);
    }
    let collapsed = chars
        .into_iter()
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let cleaned: String = collapsed.chars().take(NAME_LIMIT).collect();
    let cleaned = cleaned.trim_end();
    if cleaned.is_empty()
        || REFUSED_NAMES
            .iter()
            .any(|refused| cleaned.eq_ignore_ascii_case(refused))
    {
        FALLBACK_NAME.to_owned()
    } else {
        cleaned.to_owned()
    }
}

/// A forum thread's name: "Visitor · Site", the visitor's part cleaned as a username is, so a
/// name of nothing but "Clyde" still gives "Visitor · Shop", and cut to
/// [`THREAD_VISITOR_LIMIT`] so the site's name fits in Discord's limit after it.
fn thread_name(visitor: &str, site: &str) -> String {
    let cut: String = display_name(visitor)
        .chars()
        .take(THREAD_VISITOR_LIMIT)
        .collect();
    // Marked after the clean-up and the cut, as a post's username is: "Ana (Porch)discord" is
    // "Ana (Porch)", and a cut may leave "… (Porch".
    let shown = marked_visitor_name(cut.trim_end(), THREAD_VISITOR_LIMIT);
    let name = format!("{shown} · {site}");
    name.chars().take(THREAD_NAME_LIMIT).collect()
}

/// The body of one post.
fn post_body(message: &DeliveryMessage, content: &str, thread_name: Option<&str>) -> Value {
    // A visitor's name is marked on what Discord will show: its clean-up of names could
    // otherwise turn "Ana (Porch)discord" into an agent's "Ana (Porch)" after the check.
    let shown = display_name(&author_label(message));
    let username = if message.author == Author::Agent {
        shown
    } else {
        marked_visitor_name(&shown, NAME_LIMIT)
    };
    let mut body = json!({
        "content": content,
        "username": username,
        "allowed_mentions": {"parse": []},
        "flags": SUPPRESS_EMBEDS,
    });
    if let Some(name) = thread_name {
        body["thread_name"] = json!(name);
    }
    body
}

/// What one webhook execution came back with.
#[derive(Debug)]
pub(super) struct Posted {
    pub(super) message_id: String,
    channel_id: String,
    /// The bucket is empty: wait this long before the next request.
    pub(super) pause: Option<Duration>,
}

/// A failed execution, classified.
#[derive(Debug)]
pub(super) struct PostError {
    pub(super) outcome: Outcome,
    pub(super) status: Option<u16>,
}

fn header_secs(headers: &reqwest::header::HeaderMap, name: &str) -> Option<Duration> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

/// Executes the webhook once.
pub(super) async fn execute(
    http: &reqwest::Client,
    webhook_url: &str,
    thread_id: Option<&str>,
    body: &Value,
) -> Result<Posted, PostError> {
    let mut url = reqwest::Url::parse(webhook_url).map_err(|_| PostError {
        outcome: Outcome::Blocked {
            error: "the webhook URL is invalid".into(),
        },
        status: None,
    })?;
    url.query_pairs_mut().append_pair("wait", "true");
    if let Some(thread) = thread_id {
        url.query_pairs_mut().append_pair("thread_id", thread);
    }
    let request = http.post(url).timeout(Duration::from_secs(15)).json(body);
    let response = request.send().await.map_err(|err| PostError {
        outcome: Outcome::Retry {
            // The URL holds the webhook's token: never in an error that is stored or shown.
            error: format!(
                "no answer from Discord: {}",
                crate::integrations::send_error::describe(err)
            ),
            not_before: None,
        },
        status: None,
    })?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    let pause = (headers
        .get("x-ratelimit-remaining")
        .and_then(|v| v.to_str().ok())
        == Some("0"))
    .then(|| header_secs(&headers, "x-ratelimit-reset-after"))
    .flatten();
    let fail = |outcome| PostError {
        outcome,
        status: Some(status),
    };
    match status {
        200..=299 => {
            let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            Ok(Posted {
                message_id: answer["id"].as_str().unwrap_or_default().to_owned(),
                channel_id: answer["channel_id"].as_str().unwrap_or_default().to_owned(),
                pause,
            })
        }
        429 => {
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let retry_after = body["retry_after"]
                .as_f64()
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                .or_else(|| header_secs(&headers, "retry-after"))
                .unwrap_or(DEFAULT_RETRY_AFTER);
            Err(fail(Outcome::RateLimited { retry_after }))
        }
        // "If a webhook returns a 404 status you should not attempt to use it again."
        401 | 403 | 404 => Err(fail(Outcome::Blocked {
            error: format!(
                "Discord answered HTTP {status}: the webhook was deleted or its token is wrong"
            ),
        })),
        408 | 500..=599 => Err(fail(Outcome::Retry {
            error: format!("Discord answered HTTP {status}"),
            not_before: None,
        })),
        _ => Err(fail(Outcome::Failed {
            error: format!(
                "Discord refused the message (HTTP {status}): {}",
                text.chars().take(300).collect::<String>()
            ),
        })),
    }
}

/// Delivers a `discord.post` job.
pub async fn deliver_post(destinations: &Destinations, job: &JobRow) -> Attempt {
    finish(post(destinations, job).await)
}

async fn post(destinations: &Destinations, job: &JobRow) -> Result<Attempt, Attempt> {
    let MessageArgs { message_id } = args(job)?;
    let integration = integration_of(job)?;
    let key = Arc::clone(&destinations.secret_key);
    let (config, secrets, message, mut thread) = read(&destinations.readers, move |c| {
        load(c, &key, integration, message_id)
    })
    .await?;
    let parts = split(&escape(&message.body), CONTENT_LIMIT);
    let mut last = None;
    let mut pause = None;
    for part in &parts {
        if let Some(wait) = pause.take() {
            // Between the parts of one message: wait for the bucket inside the delivery (bounded)
            // rather than fail half-way and post the first part twice on the retry.
            tokio::time::sleep(std::cmp::min(wait, MAX_INLINE_PAUSE)).await;
        }
        let thread_name = (config.is_forum && thread.is_none())
            .then(|| thread_name(&visitor_label(&message), &message.site_name));
        let body = post_body(&message, part, thread_name.as_deref());
        let posted = execute(
            &destinations.http.known_hosts,
            &secrets.webhook_url,
            thread.as_deref(),
            &body,
        )
        .await
        .map_err(|err| Attempt::new(err.outcome, err.status))?;
        if thread_name.is_some() {
            let (conversation, id) = (message.conversation_id, posted.channel_id.clone());
            destinations
                .writer
                .write(move |c| store::insert_discord_thread(c, conversation, integration, &id))
                .await
                .map_err(|err| {
                    Attempt::new(
                        Outcome::Retry {
                            error: format!("could not save the thread: {err}"),
                            not_before: None,
                        },
                        Some(200),
                    )
                })?;
            thread = Some(posted.channel_id.clone());
        }
        pause = posted.pause;
        // A 2xx without a message id (a proxy's plain "ok") leaves nothing to refer to: the
        // reference stays the last real id, or null, never "".
        if !posted.message_id.is_empty() {
            last = Some(posted.message_id);
        }
    }
    Ok(Attempt::new(Outcome::Delivered { external_ref: last }, Some(200)).paced(pause))
}

type Loaded = (
    DiscordConfig,
    DiscordSecrets,
    DeliveryMessage,
    Option<String>,
);

fn load(
    conn: &rusqlite::Connection,
    key: &SecretKey,
    integration: IntegrationId,
    message: MessageId,
) -> Result<Found<Loaded>, store::Error> {
    find_post(conn, integration, message)?.and_then(|(row, message)| {
        let (Ok(config), Some(secrets)) = (
            serde_json::from_str::<DiscordConfig>(&row.config),
            open_secrets_as::<DiscordSecrets>(key, &row),
        ) else {
            return Ok(Found::Invalid("the Discord settings are incomplete"));
        };
        let thread = if config.is_forum {
            store::find_discord_thread(conn, message.conversation_id, integration)?
        } else {
            None
        };
        Ok(Found::Ready((config, secrets, message, thread)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_avoid_what_discord_refuses() {
        assert_eq!(display_name("Discord fan"), "fan");
        assert_eq!(display_name("clyde"), "Visitor");
        assert_eq!(display_name("DisCord.Fan@example.org"), ".Fan@example.org");
        assert_eq!(display_name("my cLyDe and DISCORD"), "my and");
        assert_eq!(display_name("disdiscordcord"), "Visitor");
        assert_eq!(display_name("Everyone"), "Visitor");
        assert_eq!(display_name(" here "), "Visitor");
        assert_eq!(thread_name("  Clyde   DISCORD  ", "Shop"), "Visitor · Shop");
        assert_eq!(thread_name("Ann  Lee", "Shop"), "Ann Lee · Shop");
        assert_eq!(
            thread_name("Ana (Porch)discord", "Shop"),
            "Ana (Porch) (visitor) · Shop"
        );
        // A long name leaves room for the site's: agents tell a forum's sites apart.
        let long = thread_name(&format!("{}(", "\u{c4}".repeat(99)), "Acme");
        assert!(long.ends_with(" · Acme"), "{long}");
        assert!(long.chars().count() <= THREAD_NAME_LIMIT, "{long}");
        let marked = thread_name(&format!("{} (Porch)", "x".repeat(40)), "Acme");
        assert!(marked.ends_with(" (visitor) · Acme"), "{marked}");
        assert_eq!(
            thread_name("Ann", &"S".repeat(120)).chars().count(),
            THREAD_NAME_LIMIT
        );
        assert_eq!(display_name("here we go"), "here we go");
        assert_eq!(display_name(&"a".repeat(200)).len(), NAME_LIMIT);
    }
}
