//! Storage for the destinations beyond Slack: Discord forum threads, outgoing webhook events
//! (enqueued in the transaction that causes them) and the webhook delivery log.

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::jobs::{COLUMNS, NewJob, UNFINISHED_JOBS_OF_INTEGRATION, from_row, insert_job};
use super::{ConversationId, Error, IntegrationId, JobId, JobRow, MessageId, SiteId, UserId};

/// Attempts of a webhook delivery: the Standard Webhooks schedule has eight (immediately, 5 s,
/// 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — about 27.6 hours).
pub const WEBHOOK_MAX_ATTEMPTS: u32 = 8;
/// A webhook delivery is given up after this long even if attempts remain (the schedule plus
/// slack for pauses).
pub const WEBHOOK_DEADLINE_MS: i64 = 30 * 3600 * 1000;

/// The events an endpoint can subscribe to.
pub const WEBHOOK_EVENTS: &[&str] = &[
    "conversation.created",
    "message.created",
    "conversation.assigned",
    "conversation.closed",
];

/// What a webhook event refers to; stored as the job's arguments with the event's
/// [`WebhookFacts`].
#[derive(Debug, Clone, Copy)]
pub struct WebhookEvent<'a> {
    pub event: &'a str,
    pub conversation_id: ConversationId,
    pub message_id: Option<MessageId>,
    pub assignee_id: Option<UserId>,
    pub now: i64,
}

/// The parts of a webhook payload that can change after the event (the conversation's status
/// and assignee, the visitor's details, the site's name), as they were when it happened. They
/// are stored in the job's arguments, so every attempt and every replay of the event sends the
/// same body under the same `webhook-id`; what never changes (ids, times, a message's text and
/// author) is read when delivering. Absent values are left out of the JSON to keep the per-job
/// arguments small: a new conversation's facts are about 90 bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookFacts {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<i64>,
    /// The assignee's id, name and email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<(UserId, String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visitor_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visitor_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visitor_page: Option<String>,
    pub site_name: String,
}

/// Writes one `webhook.deliver` job per enabled webhook endpoint of the site subscribed to the
/// event, in the caller's transaction, with the event's [`WebhookFacts`] as of now (so the
/// caller changes the conversation first, then enqueues). Deliveries of one conversation to one
/// endpoint stay in order; a broken endpoint's job starts `blocked`.
pub fn enqueue_webhook_event(
    conn: &Connection,
    site_id: SiteId,
    event: &WebhookEvent<'_>,
) -> Result<Vec<JobRow>, Error> {
    // One statement finds the endpoints and reads the facts. `CROSS JOIN` makes SQLite walk the
    // site's endpoints first, so a site without one (the common case at high message rates)
    // reads no conversation, visitor or site row at all.
    let rows = conn
        .prepare_cached(
            "SELECT i.id, i.status = 'broken', c.status, c.closed_at, u.id, u.name, u.email, \
                    v.name, v.email, v.last_page, s.name \
               FROM integrations i \
              CROSS JOIN conversations c \
               JOIN visitors v ON v.id = c.visitor_id \
               JOIN sites s ON s.id = c.site_id \
               LEFT JOIN users u ON u.id = c.assignee_id \
              WHERE i.site_id = ?1 AND i.is_enabled = 1 AND i.kind = 'webhook' \
                AND EXISTS (SELECT 1 FROM json_each(i.config, '$.events') e WHERE e.value = ?2) \
                AND c.id = ?3",
        )?
        .query_map(params![site_id, event.event, event.conversation_id], |r| {
            let assignee_id: Option<UserId> = r.get(4)?;
            let facts = WebhookFacts {
                status: r.get(2)?,
                closed_at: r.get(3)?,
                assignee: match assignee_id {
                    Some(id) => Some((id, r.get(5)?, r.get(6)?)),
                    None => None,
                },
                visitor_name: r.get(7)?,
                visitor_email: r.get(8)?,
                visitor_page: r.get(9)?,
                site_name: r.get(10)?,
            };
            Ok((r.get::<_, IntegrationId>(0)?, r.get::<_, bool>(1)?, facts))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let Some((_, _, facts)) = rows.first() else {
        return Ok(Vec::new());
    };
    let args = serde_json::json!({
        "event": event.event,
        "conversation_id": event.conversation_id,
        "message_id": event.message_id,
        "assignee_id": event.assignee_id,
        "facts": facts,
    })
    .to_string();
    rows.iter()
        .map(|(integration, is_broken, _)| {
            insert_job(
                conn,
                NewJob {
                    lane: "webhook",
                    kind: "webhook.deliver".to_owned(),
                    args: args.clone(),
                    integration_id: Some(*integration),
                    is_blocked: *is_broken,
                    order_key: Some(format!("conv:{}:int:{integration}", event.conversation_id)),
                    rate_key: Some(format!("webhook:{integration}")),
                    max_attempts: WEBHOOK_MAX_ATTEMPTS,
                    run_at: event.now,
                    deadline_at: Some(event.now + WEBHOOK_DEADLINE_MS),
                    created_at: event.now,
                },
            )
        })
        .collect()
}

/// Enqueues a conversation event (assigned, closed) for the conversation's site: webhook
/// deliveries, and the transcript mail on closing.
pub fn enqueue_conversation_event(
    conn: &Connection,
    event: &WebhookEvent<'_>,
) -> Result<Vec<JobRow>, Error> {
    let site: Option<SiteId> = conn
        .prepare_cached("SELECT site_id FROM conversations WHERE id = ?1")?
        .query_row([event.conversation_id], |r| r.get(0))
        .optional()?;
    let Some(site) = site else {
        return Ok(Vec::new());
    };
    let mut jobs = enqueue_webhook_event(conn, site, event)?;
    if event.event == "conversation.closed" {
        // The visitor who left an address gets the transcript.
        jobs.extend(super::mail::enqueue_email_jobs(
            conn,
            site,
            "email.transcript",
            event.conversation_id,
            None,
            event.now,
        )?);
    }
    Ok(jobs)
}

/// Queues a finished webhook delivery again as a new job with the same arguments, the same
/// `webhook-id` (so receivers can recognise the replay) and the same creation time (the
/// payload's `timestamp` is the event's), keeping the original's log.
pub fn replay_webhook_job(
    conn: &Connection,
    integration: IntegrationId,
    job: JobId,
    now: i64,
) -> Result<Option<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "INSERT INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key, \
                           max_attempts, run_at, deadline_at, created_at) \
         SELECT lane, kind, \
                json_set(args, '$.webhook_id', coalesce(json_extract(args, '$.webhook_id'), 'msg_porch_' || id)), \
                integration_id, 'queued', NULL, rate_key, ?3, ?4, ?4 + ?5, created_at \
           FROM jobs \
          WHERE id = ?1 AND integration_id = ?2 AND kind = 'webhook.deliver' \
            AND state IN ('done', 'failed', 'blocked') \
         RETURNING {COLUMNS}"
    ))?;
    Ok(stmt
        .query_row(
            params![
                job,
                integration,
                WEBHOOK_MAX_ATTEMPTS,
                now,
                WEBHOOK_DEADLINE_MS
            ],
            from_row,
        )
        .optional()?)
}

/// One attempt in an endpoint's delivery log.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeliveryLogRow {
    pub job_id: JobId,
    pub event: Option<String>,
    pub job_state: String,
    pub attempt: u32,
    pub started_at: i64,
    pub latency_ms: i64,
    pub outcome: String,
    pub http_status: Option<u16>,
    pub error: Option<String>,
}

/// The newest attempts of an integration's deliveries, newest first.
pub fn list_delivery_log(
    conn: &Connection,
    integration: IntegrationId,
    limit: u32,
) -> Result<Vec<DeliveryLogRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT j.id, json_extract(j.args, '$.event'), j.state, a.attempt, a.started_at, \
                a.finished_at - a.started_at, a.outcome, a.http_status, a.error \
           FROM jobs j JOIN job_attempts a ON a.job_id = j.id \
          WHERE j.integration_id = ?1 \
          ORDER BY j.id DESC, a.seq DESC LIMIT ?2",
    )?;
    Ok(stmt
        .query_map(params![integration, limit], |r| {
            Ok(DeliveryLogRow {
                job_id: r.get(0)?,
                event: r.get(1)?,
                job_state: r.get(2)?,
                attempt: r.get(3)?,
                started_at: r.get(4)?,
                latency_ms: r.get(5)?,
                outcome: r.get(6)?,
                http_status: r.get(7)?,
                error: r.get(8)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// Turns an integration off for good (a webhook endpoint answered 410 Gone): no new jobs are
/// written for it and its queued ones are blocked.
pub fn disable_integration(
    conn: &Connection,
    id: IntegrationId,
    error: &str,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE integrations SET is_enabled = 0, status = 'broken', last_error = ?2, \
                updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![id, error, now])?;
    conn.prepare_cached(&format!(
        "UPDATE jobs SET state = 'blocked', last_error = ?2 \
          WHERE {UNFINISHED_JOBS_OF_INTEGRATION} AND state = 'queued'"
    ))?
    .execute(params![id, error])?;
    Ok(())
}

/// A site's integrations, oldest first (secrets are left empty: they are never listed).
pub fn list_site_integrations(
    conn: &Connection,
    site_id: SiteId,
) -> Result<Vec<super::IntegrationRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, site_id, kind, name, config, '', is_enabled, status, last_error \
           FROM integrations WHERE site_id = ?1 ORDER BY id",
    )?;
    Ok(stmt
        .query_map([site_id], |r| {
            Ok(super::IntegrationRow {
                id: r.get(0)?,
                site_id: r.get(1)?,
                kind: r.get(2)?,
                name: r.get(3)?,
                config: r.get(4)?,
                secrets: r.get(5)?,
                is_enabled: r.get(6)?,
                status: r.get(7)?,
                last_error: r.get(8)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// Turns an integration back on after an admin fixed it (its blocked jobs are resumed
/// separately).
pub fn enable_integration(conn: &Connection, id: IntegrationId, now: i64) -> Result<(), Error> {
    conn.prepare_cached("UPDATE integrations SET is_enabled = 1, updated_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])?;
    Ok(())
}

/// The Discord thread of a conversation for an integration (forum channels).
pub fn find_discord_thread(
    conn: &Connection,
    conversation: ConversationId,
    integration: IntegrationId,
) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT thread_id FROM discord_threads WHERE conversation_id = ?1 AND integration_id = ?2",
        )?
        .query_row(params![conversation, integration], |r| r.get(0))
        .optional()?)
}

/// Remembers the thread a conversation's first post created.
pub fn insert_discord_thread(
    conn: &Connection,
    conversation: ConversationId,
    integration: IntegrationId,
    thread_id: &str,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO discord_threads (conversation_id, integration_id, thread_id) \
         VALUES (?1, ?2, ?3)",
    )?
    .execute(params![conversation, integration, thread_id])?;
    Ok(())
}

/// A conversation as webhook payloads describe it.
#[derive(Debug, Clone)]
pub struct WebhookConversation {
    pub id: ConversationId,
    pub status: String,
    pub created_at: i64,
    pub closed_at: Option<i64>,
    pub site_key: String,
    pub site_name: String,
    pub visitor_id: i64,
    pub visitor_name: Option<String>,
    pub visitor_email: Option<String>,
    pub visitor_page: Option<String>,
    pub assignee: Option<(UserId, String, String)>,
}

impl WebhookConversation {
    /// The conversation as it was when an event happened.
    #[must_use]
    pub fn as_of(self, facts: WebhookFacts) -> Self {
        Self {
            status: facts.status,
            closed_at: facts.closed_at,
            site_name: facts.site_name,
            visitor_name: facts.visitor_name,
            visitor_email: facts.visitor_email,
            visitor_page: facts.visitor_page,
            assignee: facts.assignee,
            ..self
        }
    }
}

/// The conversation and its context as they are now, if it still exists.
pub fn load_webhook_conversation(
    conn: &Connection,
    id: ConversationId,
) -> Result<Option<WebhookConversation>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.status, c.created_at, c.closed_at, s.key, s.name, v.id, v.name, v.email, \
                v.last_page, u.id, u.name, u.email \
           FROM conversations c \
           JOIN sites s ON s.id = c.site_id \
           JOIN visitors v ON v.id = c.visitor_id \
           LEFT JOIN users u ON u.id = c.assignee_id \
          WHERE c.id = ?1",
    )?;
    Ok(stmt
        .query_row([id], |r| {
            let assignee_id: Option<UserId> = r.get(10)?;
            Ok(WebhookConversation {
                id: r.get(0)?,
                status: r.get(1)?,
                created_at: r.get(2)?,
                closed_at: r.get(3)?,
                site_key: r.get(4)?,
                site_name: r.get(5)?,
                visitor_id: r.get(6)?,
                visitor_name: r.get(7)?,
                visitor_email: r.get(8)?,
                visitor_page: r.get(9)?,
                assignee: match assignee_id {
                    Some(id) => Some((id, r.get(11)?, r.get(12)?)),
                    None => None,
                },
            })
        })
        .optional()?)
}

/// A user's name and email (the assignee named by an `assigned` event).
pub fn find_user_contact(conn: &Connection, id: UserId) -> Result<Option<(String, String)>, Error> {
    Ok(conn
        .prepare_cached("SELECT name, email FROM users WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}
