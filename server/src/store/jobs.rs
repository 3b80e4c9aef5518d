//! The `jobs` and `job_attempts` tables: durable deliveries. The runner keeps the ready set in
//! memory; these functions are its durable record (see docs/jobs.md).

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{ConversationId, Error, IntegrationId, JobId, MessageId};

/// An integration's unfinished jobs, written so that SQLite uses `jobs_integration_unfinished`:
/// the `state IN (…)` term repeats the partial index's condition, which SQLite matches literally.
pub(super) const UNFINISHED_JOBS_OF_INTEGRATION: &str =
    "integration_id = ?1 AND state IN ('queued', 'running', 'blocked')";

/// A job as the runner needs it.
#[derive(Debug, Clone)]
pub struct JobRow {
    pub id: JobId,
    pub lane: String,
    pub kind: String,
    pub args: String,
    pub integration_id: Option<IntegrationId>,
    pub state: String,
    pub order_key: Option<String>,
    pub rate_key: Option<String>,
    pub attempt: u32,
    pub max_attempts: u32,
    pub run_at: i64,
    pub deadline_at: Option<i64>,
    pub is_uncertain: bool,
    pub last_error: Option<String>,
    pub created_at: i64,
}

pub(super) const COLUMNS: &str = "id, lane, kind, args, integration_id, state, order_key, rate_key, attempt, \
    max_attempts, run_at, deadline_at, is_uncertain, last_error, created_at";

pub(super) fn from_row(row: &Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: row.get(0)?,
        lane: row.get(1)?,
        kind: row.get(2)?,
        args: row.get(3)?,
        integration_id: row.get(4)?,
        state: row.get(5)?,
        order_key: row.get(6)?,
        rate_key: row.get(7)?,
        attempt: row.get(8)?,
        max_attempts: row.get(9)?,
        run_at: row.get(10)?,
        deadline_at: row.get(11)?,
        is_uncertain: row.get(12)?,
        last_error: row.get(13)?,
        created_at: row.get(14)?,
    })
}

/// A job about to be written (the planner in `jobs` decides every field). Jobs are written with
/// plain `INSERT … VALUES` and read back from what was written: an `INSERT … SELECT … RETURNING`
/// builds an ephemeral table per statement, which cost about a tenth of the server's CPU at
/// 5,000 messages a second with Slack.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub lane: &'static str,
    pub kind: &'static str,
    pub args: String,
    pub integration_id: Option<IntegrationId>,
    /// A broken integration's jobs start `blocked`.
    pub is_blocked: bool,
    pub order_key: Option<String>,
    pub rate_key: Option<String>,
    /// At most one unfinished job has it (a debounce): a second is not written.
    pub unique_key: Option<String>,
    pub max_attempts: u32,
    pub run_at: i64,
    pub deadline_at: Option<i64>,
    pub created_at: i64,
}

/// Writes `job` in the caller's transaction and returns it as the runner sees it; `None` when an
/// unfinished job already has its `unique_key`.
pub fn insert_job(conn: &Connection, job: &NewJob) -> Result<Option<JobRow>, Error> {
    let state = if job.is_blocked { "blocked" } else { "queued" };
    // A job that starts blocked (its integration is broken) carries the integration's reason, as
    // the jobs it blocked did, so a list of blocked jobs says why each one waits.
    let written = conn
        .prepare_cached(
            "INSERT INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key, \
                               unique_key, max_attempts, run_at, deadline_at, created_at, \
                               last_error) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, \
                     CASE WHEN ?5 = 'blocked' \
                          THEN (SELECT last_error FROM integrations WHERE id = ?4) END) \
             ON CONFLICT DO NOTHING RETURNING id, last_error",
        )?
        .query_row(
            params![
                job.lane,
                job.kind,
                job.args,
                job.integration_id,
                state,
                job.order_key,
                job.rate_key,
                job.unique_key,
                job.max_attempts,
                job.run_at,
                job.deadline_at,
                job.created_at
            ],
            |r| Ok((r.get::<_, JobId>(0)?, r.get::<_, Option<String>>(1)?)),
        )
        .optional()?;
    let Some((id, last_error)) = written else {
        return Ok(None);
    };
    Ok(Some(JobRow {
        id,
        lane: job.lane.to_owned(),
        kind: job.kind.to_owned(),
        args: job.args.clone(),
        integration_id: job.integration_id,
        state: state.to_owned(),
        order_key: job.order_key.clone(),
        rate_key: job.rate_key.clone(),
        attempt: 0,
        max_attempts: job.max_attempts,
        run_at: job.run_at,
        deadline_at: job.deadline_at,
        is_uncertain: false,
        last_error,
        created_at: job.created_at,
    }))
}

/// One job, if it still exists.
pub fn find_job(conn: &Connection, id: JobId) -> Result<Option<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"))?;
    Ok(stmt.query_row([id], from_row).optional()?)
}

/// At start-up: jobs left `running` by a crash go back to the queue, flagged as possibly
/// delivered already. Returns how many.
pub fn requeue_running_jobs(conn: &Connection, now: i64) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE jobs SET state = 'queued', is_uncertain = 1, run_at = ?1 WHERE state = 'running'",
        )?
        .execute([now])?)
}

/// Jobs in a state (for the API), newest first.
pub fn list_jobs_in_state(
    conn: &Connection,
    state: &str,
    before: Option<JobId>,
    limit: u32,
) -> Result<Vec<(JobRow, Option<String>)>, Error> {
    // `external_ref` only here: a `JobRow` is held for every queued job, and only the API's
    // list shows what a destination answered.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, external_ref FROM jobs WHERE state = ?1 AND id < ?2 \
         ORDER BY id DESC LIMIT ?3"
    ))?;
    let before = before.map_or(i64::MAX, |id| id.0);
    Ok(stmt
        .query_map(params![state, before, limit], |row| {
            Ok((from_row(row)?, row.get(15)?))
        })?
        .collect::<Result<_, _>>()?)
}

/// Jobs in a state that also meet `filter` (SQL over `jobs j`, never user input), newest first.
fn jobs_in_state(
    conn: &Connection,
    state: &str,
    filter: &str,
    limit: u32,
) -> Result<Vec<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM jobs j WHERE state = ?1 AND {filter} ORDER BY id DESC LIMIT ?2"
    ))?;
    Ok(stmt
        .query_map(params![state, limit], from_row)?
        .collect::<Result<_, _>>()?)
}

/// Test messages answer "does it work now?" on their page; they are not deliveries, so they do
/// not count towards an integration's health, are not listed on the Deliveries page and are not
/// sent again by "retry all". Test kinds are the ones named `*.test` (a unit test of `JobKind`
/// holds every kind to that). For queries that name `jobs` as `j`.
pub(super) const NOT_A_TEST: &str = "j.kind NOT LIKE '%.test'";

/// The condition of the `jobs_unfinished` partial index, repeated before a `state = ?` of
/// running, blocked or failed jobs: SQLite uses a partial index only when the query states its
/// condition, and does not infer it from a bound value, so without it those counts scan every
/// job kept, done ones included.
const UNFINISHED: &str = "state IN ('running', 'failed', 'blocked')";

/// How many deliveries are in `state` (blocked or failed; test messages left out), counted up to
/// `cap` at most: a backlog of a million blocked jobs is not walked to say it is more than the
/// page shows.
pub fn count_deliveries_in_state(conn: &Connection, state: &str, cap: u32) -> Result<u32, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT count(*) FROM (SELECT 1 FROM jobs j WHERE {UNFINISHED} AND state = ?1 \
             AND {NOT_A_TEST} LIMIT ?2)"
        ))?
        .query_row(params![state, cap], |r| r.get(0))?)
}

/// How many jobs are in each unfinished state, in the order queued, running, blocked, failed
/// (for `/metrics`), each counted from its partial index (`jobs_queued`, `jobs_unfinished`),
/// never by walking the jobs kept after they were done. Failed ones leave test messages out, as the Deliveries page does:
/// a failed test stays until the next test and is no delivery given up.
pub fn count_jobs_by_state(conn: &Connection) -> Result<Vec<(&'static str, i64)>, Error> {
    let count = |sql: &str, state: &'static str| -> Result<(&'static str, i64), Error> {
        let n = conn.prepare_cached(sql)?.query_row([state], |r| r.get(0))?;
        Ok((state, n))
    };
    let queued = "SELECT count(*) FROM jobs WHERE state = ?1";
    let unfinished = format!("SELECT count(*) FROM jobs WHERE {UNFINISHED} AND state = ?1");
    let deliveries =
        format!("SELECT count(*) FROM jobs j WHERE {UNFINISHED} AND state = ?1 AND {NOT_A_TEST}");
    Ok(vec![
        count(queued, "queued")?,
        count(&unfinished, "running")?,
        count(&unfinished, "blocked")?,
        count(&deliveries, "failed")?,
    ])
}

/// A job with what it is about, for people: its destination, the destination's site and the
/// conversation (a chat post names its message, other jobs the conversation).
#[derive(Debug, Clone)]
pub struct JobInContext {
    pub job: JobRow,
    /// The integration's name ("Slack", "Webhook", …), if the job has one.
    pub destination: Option<String>,
    pub site_name: Option<String>,
    pub conversation_id: Option<ConversationId>,
    /// How many times it was tried, 429s and tries before a manual retry included (the job's
    /// `attempt` is the budget's count, which a retry starts again).
    pub tries: u32,
}

/// The deliveries in a state (test messages left out), newest first, each with its context.
pub fn list_deliveries_in_state_with_context(
    conn: &Connection,
    state: &str,
    limit: u32,
) -> Result<Vec<JobInContext>, Error> {
    let jobs = jobs_in_state(conn, state, NOT_A_TEST, limit)?;
    let mut destination = conn.prepare_cached(
        "SELECT i.name, s.name FROM integrations i JOIN sites s ON s.id = i.site_id WHERE i.id = ?1",
    )?;
    let mut conversation = conn.prepare_cached(
        "SELECT coalesce(json_extract(?1, '$.conversation_id'), \
                (SELECT conversation_id FROM messages WHERE id = json_extract(?1, '$.message_id')))",
    )?;
    let mut tries =
        conn.prepare_cached("SELECT coalesce(max(seq), 0) FROM job_attempts WHERE job_id = ?1")?;
    jobs.into_iter()
        .map(|job| {
            let (destination, site_name) = match job.integration_id {
                Some(id) => destination
                    .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?
                    .map_or((None, None), |(d, s)| (Some(d), Some(s))),
                None => (None, None),
            };
            let conversation_id = conversation.query_row([&job.args], |r| r.get(0))?;
            let tries = tries.query_row([job.id], |r| r.get(0))?;
            Ok(JobInContext {
                job,
                destination,
                site_name,
                conversation_id,
                tries,
            })
        })
        .collect()
}

/// Marks queued jobs as running and counts the attempt; returns those it moved, in the order of
/// `ids`. A job that is no longer queued (its integration was blocked or disabled meanwhile) is
/// left as it is.
pub fn mark_jobs_running(conn: &Connection, ids: &[JobId]) -> Result<Vec<JobId>, Error> {
    let mut stmt = conn.prepare_cached(
        "UPDATE jobs SET state = 'running', attempt = attempt + 1 WHERE id = ?1 AND state = 'queued'",
    )?;
    let mut marked = Vec::with_capacity(ids.len());
    for id in ids {
        if stmt.execute([id])? == 1 {
            marked.push(*id);
        }
    }
    Ok(marked)
}

/// How a delivery attempt ended, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobUpdate {
    Done {
        external_ref: Option<String>,
    },
    /// Try again at `run_at`; the attempt counted.
    Retry {
        run_at: i64,
    },
    /// Paused by the destination's rate limit: try again at `run_at`; the attempt did not count.
    Snooze {
        run_at: i64,
    },
    Failed,
    Blocked,
}

/// One finished attempt.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub job_id: JobId,
    pub update: JobUpdate,
    pub started_at: i64,
    pub finished_at: i64,
    pub http_status: Option<u16>,
    pub error: Option<String>,
}

/// Records a `Retry` or `Snooze` (a 429, which gives its attempt back) at `run_at`: queued, or
/// blocked when its integration stopped taking deliveries while the attempt ran (an admin turned
/// it off, another delivery's answer blocked it), so it waits for the turn-on or the fix with the
/// integration's other jobs, which then sends it at once, instead of going out past a
/// turned-off integration when its time comes. One being resumed (`?5`, [`super::RESUMING`])
/// takes deliveries: its jobs run while the resume pages through the rest, and a retry keeps its
/// wait. A test message is failed instead: it reports what happened and never goes out at the fix
/// (see `test_messages`). Either way its error becomes the integration's (`turned off`, the block's
/// reason), the one the admin acts on; the attempt's own stays in its `job_attempts` row. `true`
/// when it was not queued.
fn record_try_again(conn: &Connection, record: &AttemptRecord, run_at: i64) -> Result<bool, Error> {
    let given_back = i64::from(matches!(record.update, JobUpdate::Snooze { .. }));
    let state: Option<String> = conn
        .prepare_cached(
            "UPDATE jobs SET state = CASE WHEN integration_id IS NULL \
                 OR EXISTS (SELECT 1 FROM integrations i WHERE i.id = jobs.integration_id \
                            AND i.is_enabled = 1 AND (i.status = 'ok' OR i.last_error = ?5)) \
                 THEN 'queued' WHEN kind LIKE '%.test' THEN 'failed' ELSE 'blocked' END, \
             run_at = ?2, last_error = ?3, attempt = max(attempt - ?4, 0) WHERE id = ?1 \
             RETURNING state",
        )?
        .query_row(
            params![
                record.job_id,
                run_at,
                record.error,
                given_back,
                super::RESUMING
            ],
            |r| r.get(0),
        )
        .optional()?;
    let not_queued = state.as_deref().is_some_and(|state| state != "queued");
    if not_queued {
        conn.prepare_cached(
            "UPDATE jobs SET finished_at = iif(state = 'failed', ?2, finished_at), \
             last_error = coalesce((SELECT i.last_error FROM integrations i \
                                    WHERE i.id = jobs.integration_id), last_error) \
             WHERE id = ?1",
        )?
        .execute(params![record.job_id, record.finished_at])?;
    }
    Ok(not_queued)
}

/// Records finished attempts: the job's new state and a new row in `job_attempts` for each
/// (every try is kept, a rate-limited one too; its `attempt` is the budget's count, which a
/// 429 gives back, so the try after it shows the same number). Returns the jobs to be tried
/// again that were not queued (see [`record_try_again`]).
pub fn record_attempts(conn: &Connection, records: &[AttemptRecord]) -> Result<Vec<JobId>, Error> {
    let mut not_retried = Vec::new();
    // The next `seq` is a seek in the primary key, right where the new row goes.
    let mut attempt_row = conn.prepare_cached(
        "INSERT INTO job_attempts (job_id, seq, attempt, started_at, finished_at, outcome, http_status, error) \
         SELECT id, coalesce((SELECT a.seq FROM job_attempts a WHERE a.job_id = ?1 \
                               ORDER BY a.seq DESC LIMIT 1), 0) + 1, \
                attempt, ?2, ?3, ?4, ?5, ?6 FROM jobs WHERE id = ?1",
    )?;
    for record in records {
        let id = record.job_id;
        let outcome = match record.update {
            JobUpdate::Done { .. } => "delivered",
            JobUpdate::Retry { .. } => "retry",
            JobUpdate::Snooze { .. } => "rate_limited",
            JobUpdate::Failed => "failed",
            JobUpdate::Blocked => "blocked",
        };
        attempt_row.execute(params![
            id,
            record.started_at,
            record.finished_at,
            outcome,
            record.http_status,
            record.error
        ])?;
        match &record.update {
            JobUpdate::Done { external_ref } => conn
                .prepare_cached(
                    "UPDATE jobs SET state = 'done', finished_at = ?2, external_ref = ?3, \
                     last_error = NULL WHERE id = ?1",
                )?
                .execute(params![id, record.finished_at, external_ref])?,
            JobUpdate::Retry { run_at } | JobUpdate::Snooze { run_at } => {
                if record_try_again(conn, record, *run_at)? {
                    not_retried.push(id);
                }
                continue;
            }
            JobUpdate::Failed => conn
                .prepare_cached("UPDATE jobs SET state = 'failed', finished_at = ?2, last_error = ?3 WHERE id = ?1")?
                .execute(params![id, record.finished_at, record.error])?,
            JobUpdate::Blocked => conn
                .prepare_cached("UPDATE jobs SET state = 'blocked', last_error = ?2 WHERE id = ?1")?
                .execute(params![id, record.error])?,
        };
    }
    Ok(not_retried)
}

/// Blocks every queued job of an integration (its destination refused us for a reason only an
/// admin can fix). Returns the ids blocked.
pub fn block_integration_jobs(
    conn: &Connection,
    integration_id: IntegrationId,
    error: &str,
    now: i64,
) -> Result<Vec<JobId>, Error> {
    super::test_messages::fail_waiting_tests(conn, integration_id, error, now)?;
    // Nor is a running test blocked: it records its own outcome (blocked, a crash before that
    // would leave it to go out at the fix).
    let mut stmt = conn.prepare_cached(&format!(
        "UPDATE jobs AS j SET state = 'blocked', last_error = ?2 \
          WHERE {UNFINISHED_JOBS_OF_INTEGRATION} AND state <> 'blocked' AND {NOT_A_TEST} \
          RETURNING id"
    ))?;
    Ok(stmt
        .query_map(params![integration_id, error], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Deletes up to `limit` finished jobs older than `before`; returns how many.
pub fn prune_done_jobs(conn: &Connection, before: i64, limit: u32) -> Result<usize, Error> {
    // Not test messages: the latest is shown on its page, and a new one replaces it
    // (`test_messages::forget_earlier_tests`).
    Ok(conn
        .prepare_cached(&format!(
            "DELETE FROM jobs WHERE id IN \
             (SELECT id FROM jobs j WHERE state = 'done' AND finished_at < ?1 AND {NOT_A_TEST} \
              LIMIT ?2)"
        ))?
        .execute(params![before, limit])?)
}

/// Where one message stands with one integration.
#[derive(Debug, Clone)]
pub struct MessageDelivery {
    pub message_id: MessageId,
    pub integration_kind: String,
    pub integration_name: String,
    /// The webhook event the job carries (`conversation.created`, `message.created`): one
    /// endpoint can take several for the same message. `None` for the other integrations.
    pub event: Option<String>,
    pub state: String,
    pub attempt: u32,
    pub last_error: Option<String>,
}

/// The deliveries of a conversation's messages that are still on record (delivered jobs are
/// pruned after the retention period).
pub fn list_conversation_deliveries(
    conn: &Connection,
    conversation_id: ConversationId,
) -> Result<Vec<MessageDelivery>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT json_extract(j.args, '$.message_id'), i.kind, i.name, json_extract(j.args, '$.event'), \
                j.state, j.attempt, j.last_error \
           FROM jobs j JOIN integrations i ON i.id = j.integration_id \
          WHERE json_extract(j.args, '$.message_id') IN \
                (SELECT id FROM messages WHERE conversation_id = ?1) \
            AND json_extract(j.args, '$.message_id') IS NOT NULL \
          ORDER BY j.id",
    )?;
    let rows = stmt
        .query_map([conversation_id], |r| {
            Ok(MessageDelivery {
                message_id: r.get(0)?,
                integration_kind: r.get(1)?,
                integration_name: r.get(2)?,
                event: r.get(3)?,
                state: r.get(4)?,
                attempt: r.get(5)?,
                last_error: r.get(6)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
