//! Jobs a person asks for rather than a conversation implies: an admin's test post or test mail,
//! and the invitation and password-reset mails. Queued like every other delivery, so they go
//! through the same lanes, pacing, retries and delivery log.

use rusqlite::Connection;

use crate::store::{self, IntegrationId, JobRow, NewJob};

use super::JobKind;
use super::args::{AccountLinkArgs, TestMailArgs, to_json};
use super::plan::{discord_rate_key, millis, new_job};

/// A mail that belongs to no integration (SMTP is the server's own setting).
fn server_mail(kind: JobKind, args: String, now: i64) -> NewJob {
    NewJob {
        integration_id: None,
        rate_key: None,
        order_key: None,
        unique_key: None,
        is_blocked: false,
        lane: kind.lane().as_str(),
        kind: kind.as_str(),
        args,
        max_attempts: kind.max_attempts(),
        run_at: now,
        deadline_at: Some(now + millis(kind.deadline())),
        created_at: now,
    }
}

// Each returns the job written (`None` only for a job with a `unique_key` already taken, which
// these never have).

/// Queues a test post to a Discord integration, paced with its other posts. A broken
/// integration's test runs anyway: it is how an admin finds out whether a fix worked.
pub fn plan_discord_test(
    conn: &Connection,
    integration: IntegrationId,
    now: i64,
) -> Result<Option<JobRow>, store::Error> {
    let kind = JobKind::DiscordTest;
    store::forget_earlier_tests(conn, kind.as_str(), Some(integration))?;
    let job = new_job(
        kind,
        "{}".to_owned(),
        integration,
        false,
        Some(discord_rate_key(integration)),
        now,
    );
    store::insert_job(conn, &job)
}

/// Queues a test mail to `to` through the configured SMTP server.
pub fn plan_test_mail(
    conn: &Connection,
    to: &str,
    now: i64,
) -> Result<Option<JobRow>, store::Error> {
    let args = to_json(&TestMailArgs { to: to.to_owned() });
    store::forget_earlier_tests(conn, JobKind::EmailTest.as_str(), None)?;
    store::insert_job(conn, &server_mail(JobKind::EmailTest, args, now))
}

/// Queues an invitation or password-reset mail, retried on the email lane's schedule.
pub fn plan_account_link_mail(
    conn: &Connection,
    link: &AccountLinkArgs,
    now: i64,
) -> Result<Option<JobRow>, store::Error> {
    store::insert_job(
        conn,
        &server_mail(JobKind::EmailAccountLink, to_json(link), now),
    )
}
