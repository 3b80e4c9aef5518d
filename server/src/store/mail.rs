//! Storage for email: the visitor's address from the widget's offline capture, and what the
//! mails (the agents' digest, replies to a visitor who is away, transcripts) are built from.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error, MessageId, SiteId, VisitorId, add_file_lines, message_files};

/// Stores the address a visitor left in the widget: whether it changed what was stored, or
/// `None` when the visitor is not there (erased meanwhile).
pub fn set_visitor_email(
    conn: &Connection,
    visitor: VisitorId,
    email: &str,
) -> Result<Option<bool>, Error> {
    let stored: Option<Option<String>> = conn
        .prepare_cached("SELECT email FROM visitors WHERE id = ?1")?
        .query_row([visitor], |r| r.get(0))
        .optional()?;
    let Some(stored) = stored else {
        return Ok(None);
    };
    if stored.as_deref() == Some(email) {
        return Ok(Some(false));
    }
    conn.prepare_cached("UPDATE visitors SET email = ?2 WHERE id = ?1")?
        .execute(params![visitor, email])?;
    Ok(Some(true))
}

/// Whether the visitor of a conversation left an address (mails to the visitor need one).
pub fn has_visitor_email(conn: &Connection, conversation: ConversationId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM conversations c JOIN visitors v ON v.id = c.visitor_id \
                             WHERE c.id = ?1 AND v.email IS NOT NULL)",
        )?
        .query_row([conversation], |r| r.get(0))?)
}

/// A site's name (the digest names the site), if it still exists.
pub fn find_site_name(conn: &Connection, site_id: SiteId) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT name FROM sites WHERE id = ?1")?
        .query_row([site_id], |r| r.get(0))
        .optional()?)
}

/// A conversation waiting for its first agent reply, for the digest.
#[derive(Debug, Clone)]
pub struct UnansweredRow {
    pub id: ConversationId,
    pub created_at: i64,
    pub visitor_id: i64,
    pub visitor_name: Option<String>,
    pub visitor_email: Option<String>,
    pub visitor_page: Option<String>,
    /// The visitor's first message, its files named after its text (`[file: …]`, as other
    /// mails show them): a conversation opened with files only is not an empty quote.
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
                f.id, v.id, coalesce(f.body, '') \
           FROM conversations c JOIN visitors v ON v.id = c.visitor_id \
           LEFT JOIN messages f ON f.id = (SELECT id FROM messages WHERE conversation_id = c.id \
                                            AND author = 'visitor' ORDER BY id LIMIT 1) \
          WHERE c.site_id = ?1 AND c.status = 'open' AND c.created_at <= ?2 \
            AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.author = 'agent') \
            AND NOT EXISTS (SELECT 1 FROM email_alerts a WHERE a.conversation_id = c.id) \
          ORDER BY c.id LIMIT ?3",
    )?;
    let rows: Vec<(UnansweredRow, Option<MessageId>)> = stmt
        .query_map(params![site_id, cutoff, limit], |r| {
            let row = UnansweredRow {
                id: r.get(0)?,
                created_at: r.get(1)?,
                visitor_name: r.get(2)?,
                visitor_email: r.get(3)?,
                visitor_page: r.get(4)?,
                first_message: r.get(7)?,
                visitor_id: r.get(6)?,
            };
            Ok((row, r.get(5)?))
        })?
        .collect::<Result<_, _>>()?;
    rows.into_iter()
        .map(|(mut row, first)| {
            if let Some(id) = first {
                add_file_lines(&mut row.first_message, &message_files(conn, id)?);
            }
            Ok(row)
        })
        .collect()
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

/// Addresses of the enabled agents and admins who have joined: an invitation not taken up (a
/// mistyped address, someone who never came) gets no visitor's words by mail.
pub fn list_agent_emails(conn: &Connection) -> Result<Vec<String>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT email FROM users WHERE is_disabled = 0 AND {} ORDER BY id",
        super::users::HAS_JOINED
    ))?;
    Ok(stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}
