//! Storage for email: the visitor's address from the widget's offline capture, the email jobs a
//! site's `email` integration implies (debounced unanswered-conversation alert, reply to a
//! visitor who is away, transcript on close), and what those mails are built from.

use rusqlite::{Connection, params};

use super::jobs::{COLUMNS, from_row};
use super::{ConversationId, Error, JobRow, MessageId, SiteId, VisitorId};

/// Attempts of an email delivery (SMTP 4xx and network errors are retried).
const EMAIL_MAX_ATTEMPTS: u32 = 10;
/// An email a day late helps nobody.
const EMAIL_DEADLINE_MS: i64 = 24 * 3600 * 1000;
/// Defaults of a site's email settings.
pub const DEFAULT_UNANSWERED_AFTER_MS: i64 = 5 * 60 * 1000;
pub const DEFAULT_REPLY_DELAY_MS: i64 = 30 * 1000;

/// Stores the address a visitor left in the widget.
pub fn set_visitor_email(conn: &Connection, visitor: VisitorId, email: &str) -> Result<(), Error> {
    conn.prepare_cached("UPDATE visitors SET email = ?2 WHERE id = ?1")?
        .execute(params![visitor, email])?;
    Ok(())
}

/// Writes the email job `kind` (`email.unanswered`, `email.reply`, `email.transcript`) for each
/// enabled `email` integration of the site, in the caller's transaction. The alert is debounced:
/// one per conversation (`unique_key`), due when the site's `unanswered_after_ms` has passed,
/// and a site's alerts run one at a time (`order_key`), so two cannot list the same
/// conversation.
/// Mails to the visitor are only written when the visitor left an address.
pub fn enqueue_email_jobs(
    conn: &Connection,
    site_id: SiteId,
    kind: &str,
    conversation: ConversationId,
    message: Option<MessageId>,
    now: i64,
) -> Result<Vec<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "INSERT OR IGNORE INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key, \
                                     unique_key, max_attempts, run_at, deadline_at, created_at) \
         SELECT 'email', ?1, json_object('conversation_id', ?2, 'message_id', ?3), i.id, \
                CASE i.status WHEN 'broken' THEN 'blocked' ELSE 'queued' END, \
                CASE ?1 WHEN 'email.unanswered' THEN 'alert:site:' || ?9 ELSE 'mail:conv:' || ?2 END, 'email', \
                CASE ?1 WHEN 'email.unanswered' THEN 'alert:conv:' || ?2 END, \
                ?4, ?5 + CASE ?1 \
                    WHEN 'email.unanswered' THEN coalesce(json_extract(i.config, '$.unanswered_after_ms'), ?7) \
                    WHEN 'email.reply' THEN coalesce(json_extract(i.config, '$.reply_delay_ms'), ?8) \
                    ELSE 0 END, \
                ?5 + ?6, ?5 \
           FROM integrations i \
          WHERE i.site_id = ?9 AND i.is_enabled = 1 AND i.kind = 'email' \
            AND (?1 = 'email.unanswered' OR EXISTS (\
                 SELECT 1 FROM conversations c JOIN visitors v ON v.id = c.visitor_id \
                  WHERE c.id = ?2 AND v.email IS NOT NULL)) \
         RETURNING {COLUMNS}"
    ))?;
    let rows = stmt
        .query_map(
            params![
                kind,
                conversation,
                message,
                EMAIL_MAX_ATTEMPTS,
                now,
                EMAIL_DEADLINE_MS,
                DEFAULT_UNANSWERED_AFTER_MS,
                DEFAULT_REPLY_DELAY_MS,
                site_id
            ],
            from_row,
        )?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// A conversation waiting for its first agent reply, for the digest.
#[derive(Debug, Clone)]
pub struct UnansweredRow {
    pub id: ConversationId,
    pub created_at: i64,
    pub visitor_name: Option<String>,
    pub visitor_email: Option<String>,
    pub visitor_page: Option<String>,
    pub first_message: String,
}

/// Open conversations of the site created before `cutoff` with no agent reply and no alert
/// sent yet, oldest first.
pub fn list_unanswered(
    conn: &Connection,
    site_id: SiteId,
    cutoff: i64,
    limit: u32,
) -> Result<Vec<UnansweredRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.created_at, v.name, v.email, v.last_page, \
                coalesce((SELECT body FROM messages WHERE conversation_id = c.id AND author = 'visitor' \
                          ORDER BY id LIMIT 1), '') \
           FROM conversations c JOIN visitors v ON v.id = c.visitor_id \
          WHERE c.site_id = ?1 AND c.status = 'open' AND c.created_at <= ?2 \
            AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.author = 'agent') \
            AND NOT EXISTS (SELECT 1 FROM email_alerts a WHERE a.conversation_id = c.id) \
          ORDER BY c.id LIMIT ?3",
    )?;
    Ok(stmt
        .query_map(params![site_id, cutoff, limit], |r| {
            Ok(UnansweredRow {
                id: r.get(0)?,
                created_at: r.get(1)?,
                visitor_name: r.get(2)?,
                visitor_email: r.get(3)?,
                visitor_page: r.get(4)?,
                first_message: r.get(5)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// Records that a digest named these conversations.
pub fn insert_email_alerts(
    conn: &Connection,
    conversations: &[ConversationId],
    now: i64,
) -> Result<(), Error> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR IGNORE INTO email_alerts (conversation_id, sent_at) VALUES (?1, ?2)",
    )?;
    for id in conversations {
        stmt.execute(params![id, now])?;
    }
    Ok(())
}

/// Addresses of the enabled agents and admins.
pub fn list_agent_emails(conn: &Connection) -> Result<Vec<String>, Error> {
    let mut stmt =
        conn.prepare_cached("SELECT email FROM users WHERE is_disabled = 0 ORDER BY id")?;
    Ok(stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}
