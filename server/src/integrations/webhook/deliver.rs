//! Outgoing webhooks: an event (`conversation.created`, `message.created`,
//! `conversation.assigned`, `conversation.closed`, `visitor.erased`) sent as a JSON `POST` to an admin's endpoint, signed
//! per Standard Webhooks v1 (`webhook-id`, `webhook-timestamp`, `webhook-signature`). One id,
//! one body: the `webhook-id` is derived from the job (a replay keeps the original's), and the
//! body is built from the facts the job took when the event happened plus rows that never
//! change, so every retry and replay sends the same bytes. Only the signature's timestamp is
//! the attempt's own, as receivers refuse one older than five minutes.
//! The client follows no redirects, resolves through the SSRF guard and reads at most
//! [`BODY_CAP`] bytes of an answer.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::attachments::file_json;
use crate::clock::now_ms;
use crate::store::{self, DeliveryMessage, IntegrationId, JobRow, UserId, WebhookConversation};

use super::{WebhookConfig, WebhookSecrets, signature_header};
use crate::integrations::delivery::{Found, args, blocked, failed, finish, integration_of, read};
use crate::integrations::{Destinations, open_secrets_as, send_error, ssrf};
use crate::jobs::{
    Attempt, ErasureNoticeArgs, MAX_DESTINATION_WAIT, Outcome, WebhookArgs, WebhookJobArgs,
    webhook_id,
};
use crate::secrets::SecretKey;

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

fn message_json(public_url: &str, m: &DeliveryMessage) -> Value {
    let files: Vec<_> = m
        .files
        .iter()
        .map(|f| file_json(public_url, m.conversation_id, f))
        .collect();
    json!({
        "id": m.id,
        "author": m.author.as_str(),
        "author_name": m.author_name,
        "body": m.body,
        "created_at": rfc3339(m.created_at),
        "attachments": files,
    })
}

/// The endpoint a delivery goes to.
struct Endpoint {
    config: WebhookConfig,
    secrets: WebhookSecrets,
    is_enabled: bool,
}

/// What a conversation's event reads from the database besides its endpoint.
struct Loaded {
    conversation: WebhookConversation,
    message: Option<DeliveryMessage>,
    assignee: Option<(UserId, String, String)>,
}

fn load_endpoint(
    conn: &rusqlite::Connection,
    key: &SecretKey,
    integration: IntegrationId,
) -> Result<Found<Endpoint>, store::Error> {
    let Some(row) = store::find_integration(conn, integration)? else {
        return Ok(Found::Gone("endpoint deleted"));
    };
    // Like Slack's and Discord's, an endpoint whose settings do not read waits blocked until an
    // admin saves it again (or rotates its secret, which a lost sealing key leaves unopenable).
    let Ok(config) = serde_json::from_str::<WebhookConfig>(&row.config) else {
        return Ok(Found::Invalid(
            "the endpoint's settings are unreadable (save it again)",
        ));
    };
    let Some(secrets) = open_secrets_as::<WebhookSecrets>(key, &row) else {
        return Ok(Found::Invalid(
            "the endpoint's signing secret does not open (rotate it)",
        ));
    };
    Ok(Found::Ready(Endpoint {
        config,
        secrets,
        is_enabled: row.is_enabled,
    }))
}

fn load(conn: &rusqlite::Connection, args: &WebhookArgs) -> Result<Found<Loaded>, store::Error> {
    let Some(conversation) = store::load_webhook_conversation(conn, args.conversation_id)? else {
        return Ok(Found::Gone("conversation deleted"));
    };
    let conversation = match &args.facts {
        Some(facts) => facts.clone().applied_to(conversation),
        None => conversation,
    };
    let message = match args.message_id {
        Some(id) => match store::load_delivery_message(conn, id)? {
            Some(m) => Some(m),
            None => return Ok(Found::Gone("message deleted")),
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
    Ok(Found::Ready(Loaded {
        conversation,
        message,
        assignee,
    }))
}

/// A conversation's event's `data`.
fn event_data(public_url: &str, event: &str, loaded: &Loaded) -> Value {
    let mut data = json!({"conversation": conversation_json(public_url, &loaded.conversation)});
    if let Some(message) = &loaded.message
        && event == "message.created"
    {
        data["message"] = message_json(public_url, message);
    }
    if event == "conversation.assigned" {
        data["assignee"] = loaded.assignee.as_ref().map_or(
            Value::Null,
            |(id, name, email)| json!({"id": id, "name": name, "email": email}),
        );
    }
    data
}

/// A `visitor.erased` notice's `data`: ids only, nothing of the person.
fn erasure_data(notice: &ErasureNoticeArgs) -> Value {
    json!({
        "visitor": {"id": notice.visitor_id},
        "site": {"key": notice.site_key, "name": notice.site_name},
        "conversation_ids": notice.conversation_ids,
    })
}

/// The JSON body: `{"type", "timestamp", "data"}` as Standard Webhooks recommends.
fn payload(event: &str, created_at: i64, data: Value) -> Value {
    let mut body = json!({"type": event, "timestamp": rfc3339(created_at)});
    body["data"] = data;
    body
}

/// Delivers a `webhook.deliver` job.
pub async fn deliver(destinations: &Destinations, job: &JobRow) -> Attempt {
    finish(post(destinations, job).await)
}

async fn post(destinations: &Destinations, job: &JobRow) -> Result<Attempt, Attempt> {
    let args: Arc<WebhookJobArgs> = Arc::new(args(job)?);
    let integration = integration_of(job)?;
    let (read_args, key) = (Arc::clone(&args), Arc::clone(&destinations.secret_key));
    let public_url = destinations.public_url.clone();
    let (endpoint, event, data) = read(&destinations.readers, move |c| {
        load_endpoint(c, &key, integration)?.and_then(|endpoint| match read_args.as_ref() {
            WebhookJobArgs::Conversation(args) => load(c, args)?.and_then(|loaded| {
                let data = event_data(&public_url, &args.event, &loaded);
                Ok(Found::Ready((endpoint, args.event.clone(), data)))
            }),
            WebhookJobArgs::Erasure(notice) => Ok(Found::Ready((
                endpoint,
                notice.event.clone(),
                erasure_data(notice),
            ))),
        })
    })
    .await?;
    if !endpoint.is_enabled {
        return Err(failed("the endpoint is disabled"));
    }
    let id = webhook_id(&args, job.id);
    let body = payload(&event, job.created_at, data);
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let now = now_ms();
    let timestamp = now / 1000;
    let signature = signature_header(&endpoint.secrets.signing(now), &id, timestamp, &body)
        .ok_or_else(|| blocked("the signing secret is not a whsec_ secret"))?;
    let url = reqwest::Url::parse(&endpoint.config.url)
        .map_err(|_| blocked("the endpoint URL is invalid"))?;
    ssrf::check_literal_host(&url, destinations.allow_private_networks)
        .map_err(|refused| guard_refused(&refused))?;
    let request = destinations
        .http
        .webhooks
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body);
    Ok(send(destinations, integration, job.attempt + 1, request).await)
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
                    error: send_error::describe(err),
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
        .map(|secs| Duration::from_secs(secs).min(MAX_DESTINATION_WAIT));
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
