//! The `messages` table, and the composite writes that store a message together with what it
//! implies (visitor row, conversation) in the writer's transaction.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::values::{Author, ClientId, MessageBody};

use super::attachments::{
    AttachmentMeta, Uploader, attach_to_message, can_take_visitor_uploads, fill_attachments,
};
use super::conversations::{open_conversation, touch_conversation};
use super::identity::record_visitor_identity;
use super::prechat::record_visitor_prechat;
use super::visitors::{VisitorDetails, refresh_visitor, upsert_visitor};
use super::{ConversationId, Error, MessageId, SiteId, UserId, VisitorId};

/// A message as shown to visitors and agents.
#[derive(Debug, Clone)]
pub struct MessageRow {
    pub id: MessageId,
    pub conversation_id: ConversationId,
    pub author: Author,
    pub author_name: Option<String>,
    pub client_id: Option<String>,
    pub body: String,
    pub created_at: i64,
    /// Files the message carries, in the order the sender gave them.
    pub attachments: Vec<AttachmentMeta>,
}

const COLUMNS: &str =
    "m.id, m.conversation_id, m.author, m.author_name, m.client_id, m.body, m.created_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        id: row.get(0)?,
        conversation_id: row.get(1)?,
        author: row.get(2)?,
        author_name: row.get(3)?,
        client_id: row.get(4)?,
        body: row.get(5)?,
        created_at: row.get(6)?,
        attachments: Vec::new(),
    })
}

/// A visitor message to store; the visitor row and conversation are created as needed.
#[derive(Debug, Clone)]
pub struct NewVisitorMessage {
    pub site_id: SiteId,
    /// Known once the visitor has written before; saves the visitor upsert on the hot path.
    pub visitor_id: Option<VisitorId>,
    pub token_hash: [u8; 32],
    /// What this browser's uploads are stored under: its token's own hash, which differs from
    /// `token_hash` for a verified user (stored under their user id, the same on every browser).
    pub upload_hash: [u8; 32],
    pub details: VisitorDetails,
    pub client_id: ClientId,
    pub body: MessageBody,
    /// Public ids of the visitor's uploads this message takes.
    pub attachments: Vec<String>,
    pub now: i64,
}

/// The stored visitor message, or the earlier one with the same `client_id`.
#[derive(Debug, Clone)]
pub struct StoredVisitorMessage {
    pub id: MessageId,
    pub visitor_id: VisitorId,
    pub conversation_id: ConversationId,
    pub created_at: i64,
    /// A conversation was opened by this message.
    pub is_new_conversation: bool,
    /// The `client_id` was used before: nothing new was stored, `id` is the first row's.
    pub is_duplicate: bool,
    /// What the message's attachments show (empty for a resend: it was published before).
    pub attachments: Vec<AttachmentMeta>,
}

/// True if the visitor already has a message with this `client_id` (a resend of it is answered
/// with its first ack, whatever the brakes say).
pub fn has_visitor_message(
    conn: &Connection,
    visitor_id: VisitorId,
    client_id: &str,
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM messages WHERE visitor_id = ?1 AND client_id = ?2")?
        .query_row(params![visitor_id, client_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Stores a visitor message: visitor, open conversation and message, deduplicated on
/// `(visitor, client_id)`. Runs inside the writer's transaction.
///
/// # Errors
/// [`Error::UnknownAttachment`], before anything is written, when an attachment is not this
/// visitor's free upload (the writer then has nothing to undo).
pub fn insert_visitor_message(
    conn: &Connection,
    new: &NewVisitorMessage,
) -> Result<StoredVisitorMessage, Error> {
    if !new.attachments.is_empty() && !can_take_visitor_uploads(conn, new)? {
        return Err(Error::UnknownAttachment);
    }
    let visitor_id = match new.visitor_id {
        Some(id) => {
            if !new.details.is_empty() {
                refresh_visitor(conn, id, &new.details.context, new.now)?;
            }
            id
        }
        None => upsert_visitor(conn, new.site_id, &new.token_hash, &new.details, new.now)?,
    };
    if let Some(identity) = &new.details.context.identity {
        record_visitor_identity(conn, visitor_id, identity)?;
    }
    if let Some(answers) = &new.details.context.prechat {
        record_visitor_prechat(conn, visitor_id, answers, new.now)?;
    }
    let earlier = conn
        .prepare_cached(
            "SELECT id, conversation_id, created_at FROM messages \
             WHERE visitor_id = ?1 AND client_id = ?2",
        )?
        .query_row(params![visitor_id, new.client_id], |r| {
            Ok((
                r.get::<_, MessageId>(0)?,
                r.get::<_, ConversationId>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .optional()?;
    if let Some((id, conversation_id, created_at)) = earlier {
        return Ok(StoredVisitorMessage {
            id,
            visitor_id,
            conversation_id,
            created_at,
            is_new_conversation: false,
            is_duplicate: true,
            attachments: Vec::new(),
        });
    }
    let (conversation_id, is_new_conversation) =
        open_conversation(conn, new.site_id, visitor_id, new.now)?;
    conn.prepare_cached(
        "INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, created_at) \
         VALUES (?1, 'visitor', ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        conversation_id,
        visitor_id,
        new.client_id,
        new.body,
        new.now
    ])?;
    let id = MessageId(conn.last_insert_rowid());
    if !is_new_conversation {
        touch_conversation(conn, conversation_id, Author::Visitor, new.now)?;
    }
    let attachments = if new.attachments.is_empty() {
        Vec::new()
    } else {
        let uploader = Uploader::Visitor(new.upload_hash);
        attach_to_message(
            conn,
            new.site_id,
            uploader,
            id,
            conversation_id,
            &new.attachments,
        )?
    };
    Ok(StoredVisitorMessage {
        id,
        visitor_id,
        conversation_id,
        created_at: new.now,
        is_new_conversation,
        is_duplicate: false,
        attachments,
    })
}

/// An agent's reply, or a private note, to store.
#[derive(Debug, Clone)]
pub struct NewAgentMessage {
    pub conversation_id: ConversationId,
    pub site_id: SiteId,
    pub user_id: Option<UserId>,
    pub author_name: String,
    pub body: MessageBody,
    /// A private note: agents see it, the visitor and the integrations never do.
    pub is_note: bool,
    /// Public ids of the agent's uploads this message takes (an agent without an account is
    /// an integration's, whose uploads are [`Uploader::Integration`]'s).
    pub attachments: Vec<String>,
    /// The agent's own id for this message (an API reply's `Idempotency-Key`, the inbox form's
    /// id), unique per agent, so that a resend after a lost answer finds the first.
    pub client_id: Option<ClientId>,
    pub now: i64,
}

impl NewAgentMessage {
    /// A reply is the agent's, a note is a note.
    pub fn author(&self) -> Author {
        if self.is_note {
            Author::Note
        } else {
            Author::Agent
        }
    }
}

/// A stored agent reply or note.
#[derive(Debug, Clone)]
pub struct StoredAgentMessage {
    pub id: MessageId,
    /// What the message's attachments show.
    pub attachments: Vec<AttachmentMeta>,
}

/// Stores an agent's reply or note.
///
/// # Errors
/// [`Error::UnknownAttachment`] when an attachment is not this agent's free upload.
pub fn insert_agent_message(
    conn: &Connection,
    new: &NewAgentMessage,
) -> Result<StoredAgentMessage, Error> {
    conn.prepare_cached(
        "INSERT INTO messages (conversation_id, author, user_id, author_name, client_id, body, \
         created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        new.conversation_id,
        new.author(),
        new.user_id,
        new.author_name,
        new.client_id,
        new.body,
        new.now
    ])?;
    let id = MessageId(conn.last_insert_rowid());
    touch_conversation(conn, new.conversation_id, new.author(), new.now)?;
    let attachments = if new.attachments.is_empty() {
        Vec::new()
    } else {
        // An agent without an account is an integration's (a Slack user's reply): its files
        // were stored by the integration.
        let uploader = new.user_id.map_or(Uploader::Integration, Uploader::Agent);
        attach_to_message(
            conn,
            new.site_id,
            uploader,
            id,
            new.conversation_id,
            &new.attachments,
        )?
    };
    Ok(StoredAgentMessage { id, attachments })
}

/// The message `user` stored under `client_id` earlier, with its files.
///
/// # Errors
/// A failing database.
pub fn find_agent_message_by_client_id(
    conn: &Connection,
    user: UserId,
    client_id: &ClientId,
) -> Result<Option<MessageRow>, Error> {
    let found = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages m WHERE m.user_id = ?1 AND m.client_id = ?2"
        ))?
        .query_row(params![user, client_id], from_row)
        .optional()?;
    let Some(row) = found else {
        return Ok(None);
    };
    let mut rows = [row];
    fill_attachments(conn, &mut rows)?;
    let [row] = rows;
    Ok(Some(row))
}

/// The visitor's messages and agent replies with an id above `after_id`, oldest first. Private
/// notes are never returned.
pub fn list_visitor_messages_after(
    conn: &Connection,
    visitor_id: VisitorId,
    after_id: MessageId,
    limit: u32,
) -> Result<Vec<MessageRow>, Error> {
    // Oldest first: a client that resumes from the highest id it received must get every
    // message after it, so a long gap is paged through from its start, never cut.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id \
         WHERE c.visitor_id = ?1 AND m.id > ?2 AND m.author IN ('visitor', 'agent') \
         ORDER BY m.id LIMIT ?3"
    ))?;
    let mut rows: Vec<MessageRow> = stmt
        .query_map(params![visitor_id, after_id, limit], from_row)?
        .collect::<Result<_, _>>()?;
    fill_attachments(conn, &mut rows)?;
    Ok(rows)
}

/// The id of the newest message stored (0 before the first).
pub fn find_newest_message_id(conn: &Connection) -> Result<MessageId, Error> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(id), 0) FROM messages")?
        .query_row([], |r| r.get(0))?)
}

/// Every message of a conversation, oldest first, private notes included.
pub fn list_conversation_messages(
    conn: &Connection,
    conversation_id: ConversationId,
) -> Result<Vec<MessageRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM messages m WHERE m.conversation_id = ?1 ORDER BY m.id"
    ))?;
    let mut rows: Vec<MessageRow> = stmt
        .query_map([conversation_id], from_row)?
        .collect::<Result<_, _>>()?;
    fill_attachments(conn, &mut rows)?;
    Ok(rows)
}

/// The conversation's messages with an id above `after`, oldest first, notes included (for
/// resuming an agent's live stream).
pub fn list_conversation_messages_after(
    conn: &Connection,
    conversation_id: ConversationId,
    after: MessageId,
) -> Result<Vec<MessageRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM messages m WHERE m.conversation_id = ?1 AND m.id > ?2 ORDER BY m.id"
    ))?;
    let mut rows: Vec<MessageRow> = stmt
        .query_map(params![conversation_id, after], from_row)?
        .collect::<Result<_, _>>()?;
    fill_attachments(conn, &mut rows)?;
    Ok(rows)
}
