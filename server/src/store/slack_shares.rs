//! The `slack_file_shares` table (`migrations/0027_slack_file_shares.sql`): what a Slack post of
//! a message with attachments has done so far, and the attachments such a post shares.

use rusqlite::{Connection, params};

use super::{Error, IntegrationId, MessageId};

/// The part of a post that is its text; other parts are attachments' public ids.
pub const SLACK_TEXT_PART: &str = "text";

/// An attachment of a message, as a delivery shares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageFile {
    /// The row id, which names its chunks.
    pub row: i64,
    pub public_id: String,
    pub name: String,
}

/// The message's attachments, in the order the message shows them.
pub fn list_message_files(
    conn: &Connection,
    message: MessageId,
) -> Result<Vec<MessageFile>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, public_id, name FROM attachments WHERE message_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([message], |r| {
        Ok(MessageFile {
            row: r.get(0)?,
            public_id: r.get(1)?,
            name: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The parts of the message's post already done in this integration, with Slack's reference.
pub fn list_slack_shares(
    conn: &Connection,
    integration: IntegrationId,
    message: MessageId,
) -> Result<Vec<(String, String)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT part, slack_ref FROM slack_file_shares WHERE integration_id = ?1 AND message_id = ?2",
    )?;
    let rows = stmt.query_map(params![integration, message], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Records a part as done; a second record of the same part keeps the first.
pub fn insert_slack_share(
    conn: &Connection,
    integration: IntegrationId,
    message: MessageId,
    part: &str,
    slack_ref: &str,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO slack_file_shares (integration_id, message_id, part, slack_ref, \
         done_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![integration, message, part, slack_ref, now])?;
    Ok(())
}
