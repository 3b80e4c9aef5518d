//! Outgoing webhooks: an event (`conversation.created`, `message.created`,
//! `conversation.assigned`, `conversation.closed`) sent as a JSON `POST` to an admin's endpoint, signed
//! per Standard Webhooks v1 (`webhook-id`, `webhook-timestamp`, `webhook-signature`). One id,
//! one body: the `webhook-id` is derived from the job (a replay keeps the original's), and the
//! body is built from the facts the job took when the event happened plus rows that never
//! change, so every retry and replay sends the same bytes. Only the signature's timestamp is
//! the attempt's own, as receivers refuse one older than five minutes.
//! The client follows no redirects, resolves through the SSRF guard and reads at most
//! [`BODY_CAP`] bytes of an answer.

use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::clock::now_ms;
use crate::store::{
    self, ConversationId, DeliveryMessage, IntegrationId, JobRow, MessageId, UserId,
    WebhookConversation, WebhookFacts,
};

use super::destinations::Destinations;
use super::outcome::{Attempt, Outcome};
use super::ssrf;

/// Bytes of an endpoint's answer read at most (kept for the delivery log as an excerpt).
pub const BODY_CAP: usize = 4096;
/// Characters of the answer kept in the delivery log.
const EXCERPT: usize = 512;
/// Wait before the retry after attempt n (1-based): the Standard Webhooks schedule after its
/// first, immediate attempt.
const SCHEDULE: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_mins(5),
    Duration::from_mins(30),
    Duration::from_hours(2),
    Duration::from_hours(5),
    Duration::from_hours(10),
    Duration::from_hours(10),
];
/// How long the previous secret keeps signing after a rotation, so receivers can switch over.
pub const ROTATION_OVERLAP_MS: i64 = 24 * 3600 * 1000;

/// An endpoint's non-secret settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WebhookConfig {
    pub url: String,
    pub events: Vec<String>,
}

/// An endpoint's signing secrets (`whsec_…`). `Debug` never prints them.
#[derive(Clone, Serialize, Deserialize)]
pub struct WebhookSecrets {
    pub secret: String,
    /// The secret before the last rotation, still used to sign until `previous_until`.
    #[serde(default)]
    pub previous: Option<String>,
    #[serde(default)]
    pub previous_until: Option<i64>,
}

impl std::fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSecrets")
            .field("secret", &"<redacted>")
            .field("previous", &self.previous.as_ref().map(|_| "<redacted>"))
            .field("previous_until", &self.previous_until)
            .finish()
    }
}

impl WebhookSecrets {
    /// The secrets to sign with at `now`: the current one, and the previous one during the
    /// overlap after a rotation.
    pub fn signing(&self, now: i64) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(previous), Some(until)) = (&self.previous, self.previous_until)
            && now < until
        {
            secrets.push(previous);
        }
        secrets
    }

    /// A rotation: a fresh secret, the current one kept for the overlap.
    #[must_use]
    pub fn rotated(&self, now: i64) -> Self {
        Self {
            secret: new_secret(),
            previous: Some(self.secret.clone()),
            previous_until: Some(now + ROTATION_OVERLAP_MS),
        }
    }
}

/// A new signing secret: 32 random bytes, shown as `whsec_` + base64.
pub fn new_secret() -> String {
    format!("whsec_{}", STANDARD.encode(rand::random::<[u8; 32]>()))
}

/// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the key inside `whsec_<base64>`;
/// `None` if the secret is not of that form.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The `webhook-signature` header: one signature per secret, space-separated.
pub fn signature_header(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let signatures: Option<Vec<String>> = secrets
        .iter()
        .map(|secret| sign(secret, id, timestamp, body))
        .collect();
    Some(signatures?.join(" "))
}

#[derive(Debug, Deserialize)]
struct Args {
    event: String,
    conversation_id: ConversationId,
    #[serde(default)]
    message_id: Option<MessageId>,
    #[serde(default)]
    assignee_id: Option<UserId>,
    /// Set on replays: the original delivery's id.
    #[serde(default)]
    webhook_id: Option<String>,
    /// What could change after the event, as it was then. Absent from jobs written by an older
    /// Porch, which took none: those are built from the rows as they are when delivering.
    #[serde(default)]
    facts: Option<WebhookFacts>,
}

fn rfc3339(ms: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(at).to_string()
}

fn conversation_json(public_url: &str, c: &WebhookConversation) -> Value {
    json!({
        "id": c.id,
        "status": c.status,
        "created_at": rfc3339(c.created_at),
        "closed_at": c.closed_at.map(rfc3339),
        "url": format!("{public_url}/conversations/{}", c.id),
        "site": {"key": c.site_key, "name": c.site_name},
        "visitor": {"id": c.visitor_id, "name": c.visitor_name, "email": c.visitor_email, "page": c.visitor_page},
        "assignee": c.assignee.as_ref().map(|(id, name, email)| json!({"id": id, "name": name, "email": email})),
    })
}

fn message_json(m: &DeliveryMessage) -> Value {
    json!({
        "id": m.id,
        "author": m.author,
        "author_name": m.author_name,
        "body": m.body,
        "created_at": rfc3339(m.created_at),
    })
}

/// Everything a delivery reads from the database.
struct Loaded {
    config: WebhookConfig,
    secrets: WebhookSecrets,
    is_enabled: bool,
    conversation: WebhookConversation,
    message: Option<DeliveryMessage>,
    assignee: Option<(UserId, String, String)>,
}

fn load(
    conn: &rusqlite::Connection,
    integration: IntegrationId,
    args: &Args,
) -> Result<Result<Loaded, &'static str>, store::Error> {
    let Some(row) = store::find_integration(conn, integration)? else {
        return Ok(Err("endpoint deleted"));
    };
    let (Ok(config), Ok(secrets)) = (
        serde_json::from_str::<WebhookConfig>(&row.config),
        serde_json::from_str::<WebhookSecrets>(&row.secrets),
    ) else {
        return Ok(Err("the endpoint's settings are unreadable"));
    };
    let Some(conversation) = store::load_webhook_conversation(conn, args.conversation_id)? else {
        return Ok(Err("conversation deleted"));
    };
    let conversation = match &args.facts {
        Some(facts) => conversation.as_of(facts.clone()),
        None => conversation,
    };
    let message = match args.message_id {
        Some(id) => match store::load_delivery_message(conn, id)? {
            Some(m) => Some(m),
            None => return Ok(Err("message deleted")),
        },
        None => None,
    };
    // The assignee an `assigned` event names is the conversation's assignee right after the
    // change, which the facts hold.
    let assignee = match (&args.facts, args.assignee_id) {
        (Some(_), _) => conversation.assignee.clone(),
        (None, Some(id)) => {
            store::find_user_contact(conn, id)?.map(|(name, email)| (id, name, email))
        }
        (None, None) => None,
    };
    Ok(Ok(Loaded {
        config,
        secrets,
        is_enabled: row.is_enabled,
        conversation,
        message,
        assignee,
    }))
}

/// The JSON body: `{"type", "timestamp", "data"}` as Standard Webhooks recommends.
fn payload(public_url: &str, event: &str, created_at: i64, loaded: &Loaded) -> Value {
    let mut data = json!({"conversation": conversation_json(public_url, &loaded.conversation)});
    if let Some(message) = &loaded.message
        && event == "message.created"
    {
        data["message"] = message_json(message);
    }
    if event == "conversation.assigned" {
        data["assignee"] = loaded.assignee.as_ref().map_or(
            Value::Null,
            |(id, name, email)| json!({"id": id, "name": name, "email": email}),
        );
    }
    json!({"type": event, "timestamp": rfc3339(created_at), "data": data})
}

fn failed(error: impl Into<String>) -> Attempt {
    Attempt::new(
        Outcome::Failed {
            error: error.into(),
        },
        None,
    )
}

/// Delivers a `webhook.deliver` job.
pub async fn deliver(destinations: &Destinations, job: &JobRow) -> Attempt {
    let Ok(args) = serde_json::from_str::<Args>(&job.args) else {
        return failed("unreadable job arguments");
    };
    let Some(integration) = job.integration_id else {
        return failed("the job names no endpoint");
    };
    let args = std::sync::Arc::new(args);
    let read_args = std::sync::Arc::clone(&args);
    let loaded = match destinations
        .readers
        .read(move |c| load(c, integration, &read_args))
        .await
    {
        Ok(Ok(loaded)) => loaded,
        Ok(Err(gone)) => return failed(format!("nothing to deliver: {gone}")),
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
    if !loaded.is_enabled {
        return failed("the endpoint is disabled");
    }
    let id = args
        .webhook_id
        .clone()
        .unwrap_or_else(|| format!("msg_porch_{}", job.id));
    let body = payload(
        &destinations.public_url,
        &args.event,
        job.created_at,
        &loaded,
    );
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let now = now_ms();
    let timestamp = now / 1000;
    let Some(signature) = signature_header(&loaded.secrets.signing(now), &id, timestamp, &body)
    else {
        return Attempt::new(
            Outcome::Blocked {
                error: "the signing secret is not a whsec_ secret".into(),
            },
            None,
        );
    };
    let Ok(url) = reqwest::Url::parse(&loaded.config.url) else {
        return Attempt::new(
            Outcome::Blocked {
                error: "the endpoint URL is invalid".into(),
            },
            None,
        );
    };
    if let Err(refused) = ssrf::check_literal_host(&url, destinations.allow_private_networks) {
        return guard_refused(&refused);
    }
    let request = destinations
        .webhooks
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body);
    send(destinations, integration, job.attempt + 1, request).await
}

/// A private address refused by the SSRF guard, whether the URL names it or a name resolves to
/// it: only an admin can fix the URL (or allow private networks), so retrying for a day would
/// only hide the reason. The integration is blocked with it.
fn guard_refused(refused: &ssrf::Refused) -> Attempt {
    Attempt::new(
        Outcome::Blocked {
            error: format!("refused by the SSRF guard: {refused}"),
        },
        None,
    )
}

/// Sends the request and classifies the answer: 2xx delivered; 410 disables the endpoint; an
/// address refused by the guard's resolver blocks it;
/// anything else (3xx included: redirects are not followed) is retried on the schedule, later
/// if the endpoint's `Retry-After` says so.
async fn send(
    destinations: &Destinations,
    integration: IntegrationId,
    tries: u32,
    request: reqwest::RequestBuilder,
) -> Attempt {
    let schedule = SCHEDULE
        .get(
            usize::try_from(tries)
                .unwrap_or(usize::MAX)
                .saturating_sub(1),
        )
        .copied()
        .unwrap_or(Duration::from_hours(10));
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(err) => {
            if let Some(refused) = ssrf::private_refusal(&err) {
                return guard_refused(refused);
            }
            return Attempt::new(
                Outcome::Retry {
                    // An endpoint URL may carry a secret in its query: keep it out.
                    error: format!("no answer: {}", error_chain(&err.without_url())),
                    not_before: Some(schedule),
                },
                None,
            );
        }
    };
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let excerpt = read_capped(&mut response).await;
    let code = status.as_u16();
    let outcome = if status.is_success() {
        Outcome::Delivered { external_ref: None }
    } else if code == 410 {
        let error = "the endpoint answered 410 Gone: disabled".to_owned();
        let saved = error.clone();
        if let Err(err) = destinations
            .writer
            .write(move |c| store::disable_integration(c, integration, &saved, now_ms()))
            .await
        {
            tracing::warn!(%integration, error = %err, "could not disable a gone endpoint");
        }
        Outcome::Blocked { error }
    } else {
        let what = if status.is_redirection() {
            "a redirect (not followed)".to_owned()
        } else {
            format!("HTTP {code}")
        };
        let error = if excerpt.is_empty() {
            what
        } else {
            format!("{what}: {excerpt}")
        };
        Outcome::Retry {
            error,
            not_before: Some(schedule.max(retry_after.unwrap_or_default())),
        }
    };
    Attempt::new(outcome, Some(code))
}

/// Reads at most [`BODY_CAP`] bytes of the answer and returns a short excerpt of it; the rest
/// is never read (the connection is dropped).
async fn read_capped(response: &mut reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < BODY_CAP {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(BODY_CAP);
    String::from_utf8_lossy(&body)
        .chars()
        .take(EXCERPT)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// The error and its causes, so "error sending request" says why (refused address, timeout).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_standard_webhooks_example() {
        // The example in the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body).as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    #[test]
    fn rotation_signs_with_both_secrets_during_the_overlap() {
        let first = WebhookSecrets {
            secret: new_secret(),
            previous: None,
            previous_until: None,
        };
        let rotated = first.rotated(1000);
        assert_eq!(rotated.signing(1000).len(), 2);
        assert_eq!(rotated.signing(1000)[1], first.secret);
        assert_eq!(rotated.signing(1000 + ROTATION_OVERLAP_MS).len(), 1);
        let header = signature_header(&rotated.signing(1000), "msg_1", 5, b"{}").expect("sign");
        assert_eq!(header.split(' ').count(), 2);
    }
}
