//! Storage for the destinations beyond Slack: Discord forum threads, what webhook payloads
//! describe, and the webhook delivery log.

use rusqlite::{Connection, OptionalExtension, params};

use super::jobs::{NOT_A_TEST, UNFINISHED_JOBS_OF_INTEGRATION};
use super::{ConversationId, Error, IntegrationId, JobId, SiteId, UserId};

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

/// The columns of a [`DeliveryLogRow`], for `jobs j JOIN job_attempts a`.
const LOG_COLUMNS: &str = "j.id, json_extract(j.args, '$.event'), j.state, a.attempt, \
    a.started_at, a.finished_at - a.started_at, a.outcome, a.http_status, a.error";

fn log_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DeliveryLogRow> {
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
}

/// The newest attempts of an integration's deliveries, newest first.
pub fn list_delivery_log(
    conn: &Connection,
    integration: IntegrationId,
    limit: u32,
) -> Result<Vec<DeliveryLogRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {LOG_COLUMNS} FROM jobs j JOIN job_attempts a ON a.job_id = j.id \
          WHERE j.integration_id = ?1 ORDER BY j.id DESC, a.seq DESC LIMIT ?2"
    ))?;
    Ok(stmt
        .query_map(params![integration, limit], log_row)?
        .collect::<Result<_, _>>()?)
}

/// The newest attempt of an integration's deliveries, tests left out.
pub fn find_newest_delivery_attempt(
    conn: &Connection,
    integration: IntegrationId,
) -> Result<Option<DeliveryLogRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {LOG_COLUMNS} FROM jobs j JOIN job_attempts a ON a.job_id = j.id \
          WHERE j.integration_id = ?1 AND {NOT_A_TEST} ORDER BY j.id DESC, a.seq DESC LIMIT 1"
    ))?;
    Ok(stmt.query_row(params![integration], log_row).optional()?)
}

/// The last attempt of the integration's oldest delivery that waits to be tried again after an
/// error, or is being tried again (outcome `retry`; a 429's wait is pacing, not failure), tests
/// left out.
pub fn find_retrying_delivery(
    conn: &Connection,
    integration: IntegrationId,
) -> Result<Option<DeliveryLogRow>, Error> {
    let mut stmt = conn.prepare_cached(&retrying_sql())?;
    Ok(stmt.query_row(params![integration], log_row).optional()?)
}

/// The last attempt of the integration's delivery that was given up for good most recently,
/// tests left out. Failed jobs are few (each waits for an admin), so they are read through the
/// index of unfinished states rather than walking every job of the integration.
pub fn find_newest_failed_delivery(
    conn: &Connection,
    integration: IntegrationId,
) -> Result<Option<DeliveryLogRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {LOG_COLUMNS} FROM jobs j INDEXED BY jobs_unfinished \
           JOIN job_attempts a ON a.job_id = j.id \
          WHERE j.state IN ('running', 'failed', 'blocked') AND j.state = 'failed' \
            AND j.integration_id = ?1 AND {NOT_A_TEST} \
          ORDER BY a.started_at DESC LIMIT 1"
    ))?;
    Ok(stmt.query_row(params![integration], log_row).optional()?)
}

/// [`find_retrying_delivery`]'s query. The condition on `state` and `attempt`, written as the
/// partial index `jobs_integration_retrying` (0031) states it, is what lets SQLite use it.
fn retrying_sql() -> String {
    format!(
        "SELECT {LOG_COLUMNS} FROM jobs j JOIN job_attempts a ON a.job_id = j.id \
          WHERE j.integration_id = ?1 \
            AND ((j.state = 'queued' AND j.attempt > 0) OR (j.state = 'running' AND j.attempt > 1)) \
            AND {NOT_A_TEST} \
            AND a.seq = (SELECT max(b.seq) FROM job_attempts b WHERE b.job_id = j.id) \
            AND a.outcome = 'retry' \
          ORDER BY j.id LIMIT 1"
    )
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
    super::test_messages::fail_waiting_tests(conn, id, error, now)?;
    conn.prepare_cached(&format!(
        "UPDATE jobs SET state = 'blocked', last_error = ?2 \
          WHERE {UNFINISHED_JOBS_OF_INTEGRATION} AND state = 'queued'"
    ))?
    .execute(params![id, error])?;
    Ok(())
}

/// A site's integrations, oldest first (secrets are not read: they are never listed).
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
                secrets: crate::secrets::Sealed::from_stored(r.get(5)?),
                is_enabled: r.get(6)?,
                status: r.get(7)?,
                last_error: r.get(8)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// Deletes an integration; its jobs, their attempts and its Discord threads go with it
/// (`ON DELETE CASCADE`). Returns whether it existed.
pub fn delete_integration(conn: &Connection, id: IntegrationId) -> Result<bool, Error> {
    let deleted = conn
        .prepare_cached("DELETE FROM integrations WHERE id = ?1")?
        .execute([id])?;
    Ok(deleted == 1)
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

/// Forgets an integration's Discord threads: they belong to the channel of the webhook that
/// created them, and Discord refuses a `thread_id` of another channel.
pub fn forget_discord_threads(conn: &Connection, integration: IntegrationId) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM discord_threads WHERE integration_id = ?1")?
        .execute([integration])?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Judging health reads the few jobs that wait for another try, in id order, not every
    /// unfinished job of a backlog.
    #[test]
    fn the_retrying_delivery_is_found_through_its_own_index() {
        let conn = crate::store::migrated_in_memory();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", retrying_sql()))
            .expect("plan")
            .query_map([1], |r| r.get(3))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("plan rows");
        let plan = plan.join("; ");
        assert!(plan.contains("jobs_integration_retrying"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }
}
