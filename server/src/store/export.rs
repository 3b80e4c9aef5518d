//! Reading everything Porch holds about a person (a visitor) for an export or an erasure plan,
//! and every conversation in id order for the full export. The rows; the JSON is `privacy`'s.

use rusqlite::{Connection, Row};

use super::messages::list_conversation_messages;
use super::{ConversationId, Error, JobId, MessageId, MessageRow, VisitorId};

/// A visitor with what identifies them and how much they wrote.
#[derive(Debug, Clone)]
pub struct VisitorRecord {
    pub id: VisitorId,
    pub site_key: String,
    pub site_name: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub first_page: Option<String>,
    pub last_page: Option<String>,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
    pub first_seen_at: i64,
    pub last_seen_at: i64,
    pub referrer: Option<String>,
    pub language: Option<String>,
    pub time_zone: Option<String>,
    /// The site's user id of a verified known visitor, and what a page claimed unverified.
    pub user_id: Option<String>,
    pub claimed_user_id: Option<String>,
    pub claimed_name: Option<String>,
    pub claimed_email: Option<String>,
    /// The pre-chat form's question as asked, and the visitor's answer.
    pub prechat_question: Option<String>,
    pub prechat_answer: Option<String>,
    /// Their conversations, and every message in them (agents' replies included).
    pub conversations: i64,
    pub messages: i64,
}

/// A conversation with all its messages.
#[derive(Debug, Clone)]
pub struct ConversationRecord {
    pub id: ConversationId,
    pub site_key: String,
    pub visitor_id: VisitorId,
    pub status: String,
    pub created_at: i64,
    pub last_message_at: i64,
    pub closed_at: Option<i64>,
    pub messages: Vec<MessageRow>,
    /// The subjects of the messages an agent sent by email ("Email the visitor").
    pub mail_subjects: Vec<(MessageId, String)>,
    /// The agents' tags on it, by name (`None`: left out, as from the visitor's own download).
    pub tags: Option<Vec<String>>,
}

/// A delivery job that names one of a visitor's conversations or messages.
#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: JobId,
    pub kind: String,
    pub state: String,
    pub attempt: u32,
    /// The job's stored arguments (JSON text): ids, and for webhooks the facts sent.
    pub args: String,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const VISITOR: &str = "SELECT v.id, s.key, s.name, v.name, v.email, v.first_page, v.last_page, \
    v.user_agent, v.ip, v.first_seen_at, v.last_seen_at, v.referrer, v.language, v.time_zone, \
    v.user_id, v.claimed_user_id, v.claimed_name, v.claimed_email, \
    v.prechat_question, v.prechat_answer, \
    (SELECT count(*) FROM conversations c WHERE c.visitor_id = v.id), \
    (SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id \
      WHERE c.visitor_id = v.id) \
    FROM visitors v JOIN sites s ON s.id = v.site_id";

fn visitor_from_row(r: &Row<'_>) -> rusqlite::Result<VisitorRecord> {
    Ok(VisitorRecord {
        id: r.get(0)?,
        site_key: r.get(1)?,
        site_name: r.get(2)?,
        name: r.get(3)?,
        email: r.get(4)?,
        first_page: r.get(5)?,
        last_page: r.get(6)?,
        user_agent: r.get(7)?,
        ip: r.get(8)?,
        first_seen_at: r.get(9)?,
        last_seen_at: r.get(10)?,
        referrer: r.get(11)?,
        language: r.get(12)?,
        time_zone: r.get(13)?,
        user_id: r.get(14)?,
        claimed_user_id: r.get(15)?,
        claimed_name: r.get(16)?,
        claimed_email: r.get(17)?,
        prechat_question: r.get(18)?,
        prechat_answer: r.get(19)?,
        conversations: r.get(20)?,
        messages: r.get(21)?,
    })
}

/// The visitors who gave this email address (any case), across sites, oldest first: as their
/// address, or as one a page claimed for them without a valid `user_hash` (still their data).
/// The claimed one has no index: a privacy lookup is rare, and reads the table once.
pub fn find_visitors_by_email(conn: &Connection, email: &str) -> Result<Vec<VisitorRecord>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "{VISITOR} WHERE v.email = ?1 COLLATE NOCASE OR v.claimed_email = ?1 COLLATE NOCASE \
         ORDER BY v.id LIMIT 100"
    ))?;
    Ok(stmt
        .query_map([email.trim()], visitor_from_row)?
        .collect::<Result<_, _>>()?)
}

/// The visitor with this id, if any.
pub fn find_visitor_record(
    conn: &Connection,
    visitor: VisitorId,
) -> Result<Option<VisitorRecord>, Error> {
    let mut stmt = conn.prepare_cached(&format!("{VISITOR} WHERE v.id = ?1"))?;
    let mut rows = stmt.query_map([visitor], visitor_from_row)?;
    Ok(rows.next().transpose()?)
}

/// The visitor whose token hashes to `token_hash`, if they ever wrote.
pub fn find_visitor_record_by_token_hash(
    conn: &Connection,
    token_hash: &[u8],
) -> Result<Option<VisitorRecord>, Error> {
    let mut stmt = conn.prepare_cached(&format!("{VISITOR} WHERE v.token_hash = ?1"))?;
    let mut rows = stmt.query_map([token_hash], visitor_from_row)?;
    Ok(rows.next().transpose()?)
}

const CONVERSATION: &str = "SELECT c.id, s.key, c.visitor_id, c.status, c.created_at, \
    c.last_message_at, c.closed_at FROM conversations c JOIN sites s ON s.id = c.site_id";

fn conversation_from_row(r: &Row<'_>) -> rusqlite::Result<ConversationRecord> {
    Ok(ConversationRecord {
        id: r.get(0)?,
        site_key: r.get(1)?,
        visitor_id: r.get(2)?,
        status: r.get(3)?,
        created_at: r.get(4)?,
        last_message_at: r.get(5)?,
        closed_at: r.get(6)?,
        messages: Vec::new(),
        mail_subjects: Vec::new(),
        tags: None,
    })
}

fn with_messages(
    conn: &Connection,
    mut conversations: Vec<ConversationRecord>,
) -> Result<Vec<ConversationRecord>, Error> {
    for conversation in &mut conversations {
        conversation.messages = list_conversation_messages(conn, conversation.id)?;
        conversation.mail_subjects = super::list_outbound_mails(conn, conversation.id)?;
        let tags = super::list_conversation_tags(conn, conversation.id)?;
        conversation.tags = Some(tags.into_iter().map(|tag| tag.name).collect());
    }
    Ok(conversations)
}

/// A visitor's conversations with their messages, oldest first.
pub fn list_visitor_conversations(
    conn: &Connection,
    visitor: VisitorId,
) -> Result<Vec<ConversationRecord>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "{CONVERSATION} WHERE c.visitor_id = ?1 ORDER BY c.id"
    ))?;
    let rows = stmt
        .query_map([visitor], conversation_from_row)?
        .collect::<Result<_, _>>()?;
    with_messages(conn, rows)
}

/// The ids of a visitor's conversations.
pub fn list_visitor_conversation_ids(
    conn: &Connection,
    visitor: VisitorId,
) -> Result<Vec<ConversationId>, Error> {
    let mut stmt =
        conn.prepare_cached("SELECT id FROM conversations WHERE visitor_id = ?1 ORDER BY id")?;
    Ok(stmt
        .query_map([visitor], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Up to `limit` conversations with ids above `after`, with their messages, in id order (the
/// full export pages through with the last id it got).
pub fn list_conversations_after(
    conn: &Connection,
    after: ConversationId,
    limit: u32,
) -> Result<Vec<ConversationRecord>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "{CONVERSATION} WHERE c.id > ?1 ORDER BY c.id LIMIT ?2"
    ))?;
    let rows = stmt
        .query_map(rusqlite::params![after, limit], conversation_from_row)?
        .collect::<Result<_, _>>()?;
    with_messages(conn, rows)
}

/// The jobs that name one of the visitor's conversations or messages, oldest first.
pub fn list_visitor_jobs(conn: &Connection, visitor: VisitorId) -> Result<Vec<JobRecord>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, kind, state, attempt, args, last_error, created_at, finished_at FROM jobs \
          WHERE json_extract(args, '$.conversation_id') IN \
                  (SELECT id FROM conversations WHERE visitor_id = ?1) \
             OR json_extract(args, '$.message_id') IN \
                  (SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id \
                    WHERE c.visitor_id = ?1) \
          ORDER BY id",
    )?;
    Ok(stmt
        .query_map([visitor], |r| {
            Ok(JobRecord {
                id: r.get(0)?,
                kind: r.get(1)?,
                state: r.get(2)?,
                attempt: r.get(3)?,
                args: r.get(4)?,
                last_error: r.get(5)?,
                created_at: r.get(6)?,
                finished_at: r.get(7)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}
