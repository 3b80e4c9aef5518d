//! Storage for the mails agents start to a visitor: which agent messages were sent by email,
//! and their subjects (the message row holds the text).

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error, MessageId};

/// Marks an agent message as a mail to the visitor with `subject`.
pub fn insert_outbound_mail(
    conn: &Connection,
    message: MessageId,
    subject: &str,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO mail_outbound (message_id, subject, created_at) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![message, subject, now])?;
    Ok(())
}

/// The subject of an agent message sent by email, if it was one.
pub fn find_outbound_mail_subject(
    conn: &Connection,
    message: MessageId,
) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT subject FROM mail_outbound WHERE message_id = ?1")?
        .query_row([message], |r| r.get(0))
        .optional()?)
}

/// The conversation's messages sent by email, with their subjects, oldest first.
pub fn list_outbound_mails(
    conn: &Connection,
    conversation: ConversationId,
) -> Result<Vec<(MessageId, String)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT o.message_id, o.subject FROM mail_outbound o \
           JOIN messages m ON m.id = o.message_id \
          WHERE m.conversation_id = ?1 ORDER BY o.message_id",
    )?;
    let rows = stmt
        .query_map([conversation], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
