//! Queries and writes of the admin inbox: a conversation's summary per agent (site, visitor,
//! preview, unread state), read markers, assignment, closing and reopening. The list itself
//! (filters, orders, pages) is `inbox_list.rs`.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::values::Author;

use super::tags::tags_of_c;
use super::{ConversationId, Error, MessageId, SiteId, TagRow, UserId, VisitorId};

/// A conversation as one agent sees it in the inbox list.
#[derive(Debug, Clone)]
pub struct InboxItemRow {
    pub id: ConversationId,
    pub site_id: SiteId,
    pub site_name: String,
    pub visitor_id: VisitorId,
    pub visitor_name: Option<String>,
    pub visitor_email: Option<String>,
    pub status: String,
    pub assignee_id: Option<UserId>,
    pub assignee_name: Option<String>,
    pub created_at: i64,
    pub last_message_at: i64,
    /// When the visitor's oldest unanswered message came in (`None`: answered, or no message).
    pub waiting_since: Option<i64>,
    /// The newest message the visitor could see (visitor or agent), for the preview.
    pub preview_author: Option<Author>,
    pub preview_body: Option<String>,
    /// The files of that message when it has no text (0 when it has).
    pub preview_files: i64,
    /// A visitor message arrived after this agent last read the conversation.
    pub is_unread: bool,
    /// Open but snoozed until then (Unix ms): out of the Open list and the unread counts.
    pub snoozed_until: Option<i64>,
    /// Its tags, by name.
    pub tags: Vec<TagRow>,
}

impl InboxItemRow {
    /// Open and not snoozed: in the Open list, and counted as unread when it is.
    pub fn is_active(&self) -> bool {
        self.status == "open" && self.snoozed_until.is_none()
    }
}

// :reader = the agent reading (bound first, so also ?1). The preview skips notes and system lines: it shows the conversation.
pub(super) const SELECT_ITEM: &str = concat!(
    "SELECT c.id, c.site_id, s.name, c.visitor_id, v.name, v.email, \
    c.status, c.assignee_id, a.name, c.created_at, c.last_message_at, lm.author, lm.body, \
    c.waiting_since, EXISTS (SELECT 1 FROM messages um WHERE um.conversation_id = c.id AND um.author = 'visitor' \
        AND um.id > coalesce((SELECT iif(r.is_marked_unread, 0, r.last_read_id) FROM conversation_reads r \
                              WHERE r.user_id = :reader AND r.conversation_id = c.id), 0)), \
    c.snoozed_until, ",
    tags_of_c!(),
    ", \
    iif(lm.body = '', (SELECT count(*) FROM attachments f WHERE f.message_id = lm.id), 0) \
    FROM conversations c \
    JOIN sites s ON s.id = c.site_id \
    JOIN visitors v ON v.id = c.visitor_id \
    LEFT JOIN users a ON a.id = c.assignee_id \
    LEFT JOIN messages lm ON lm.id = (SELECT pm.id FROM messages pm \
        WHERE pm.conversation_id = c.id AND pm.author IN ('visitor', 'agent') \
        ORDER BY pm.id DESC LIMIT 1)"
);

pub(super) fn item_from_row(row: &Row<'_>) -> rusqlite::Result<InboxItemRow> {
    Ok(InboxItemRow {
        id: row.get(0)?,
        site_id: row.get(1)?,
        site_name: row.get(2)?,
        visitor_id: row.get(3)?,
        visitor_name: row.get(4)?,
        visitor_email: row.get(5)?,
        status: row.get(6)?,
        assignee_id: row.get(7)?,
        assignee_name: row.get(8)?,
        created_at: row.get(9)?,
        last_message_at: row.get(10)?,
        preview_author: row.get(11)?,
        preview_body: row.get(12)?,
        waiting_since: row.get(13)?,
        is_unread: row.get(14)?,
        snoozed_until: row.get(15)?,
        tags: super::tags::tags_from_json(row, 16)?,
        preview_files: row.get(17)?,
    })
}

/// One conversation as `reader` sees it in the inbox list.
pub fn find_inbox_item(
    conn: &Connection,
    reader: UserId,
    id: ConversationId,
) -> Result<Option<InboxItemRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("{SELECT_ITEM} WHERE c.id = ?2"))?;
    Ok(stmt
        .query_row(params![reader, id], item_from_row)
        .optional()?)
}

/// Another conversation of the same visitor, for the conversation page's side panel.
#[derive(Debug, Clone)]
pub struct OtherConversationRow {
    pub id: ConversationId,
    pub status: String,
    pub created_at: i64,
    /// The visitor's first message, cut to a line's worth (`None`: the visitor wrote nothing).
    pub opening: Option<String>,
}

/// Characters of a conversation's opening message the side panel shows.
const OPENING_CHARS: i64 = 120;

/// Up to `limit` other conversations of `visitor` besides `except`, the newest first. A known
/// visitor is one row whatever the browser, so this spans their devices too.
pub fn list_other_conversations_of_visitor(
    conn: &Connection,
    visitor: VisitorId,
    except: ConversationId,
    limit: usize,
) -> Result<Vec<OtherConversationRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.status, c.created_at, \
             (SELECT substr(m.body, 1, ?4) FROM messages m \
              WHERE m.conversation_id = c.id AND m.author = 'visitor' ORDER BY m.id LIMIT 1) \
         FROM conversations c WHERE c.visitor_id = ?1 AND c.id <> ?2 ORDER BY c.id DESC LIMIT ?3",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![visitor, except, limit, OPENING_CHARS], |row| {
        Ok(OtherConversationRow {
            id: row.get(0)?,
            status: row.get(1)?,
            created_at: row.get(2)?,
            opening: row.get(3)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What the conversation page shows about the visitor.
#[derive(Debug, Clone)]
pub struct VisitorDetailsRow {
    pub first_page: Option<String>,
    pub last_page: Option<String>,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
    pub first_seen_at: i64,
    pub last_seen_at: i64,
    pub referrer: Option<String>,
    pub language: Option<String>,
    pub time_zone: Option<String>,
    /// The pre-chat form's question as asked, and the visitor's answer.
    pub prechat: Option<(String, String)>,
}

/// The visitor's recorded details.
pub fn find_visitor_details(
    conn: &Connection,
    id: VisitorId,
) -> Result<Option<VisitorDetailsRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT first_page, last_page, user_agent, ip, first_seen_at, last_seen_at, \
                referrer, language, time_zone, prechat_question, prechat_answer \
         FROM visitors WHERE id = ?1",
    )?;
    Ok(stmt
        .query_row([id], |r| {
            Ok(VisitorDetailsRow {
                first_page: r.get(0)?,
                last_page: r.get(1)?,
                user_agent: r.get(2)?,
                ip: r.get(3)?,
                first_seen_at: r.get(4)?,
                last_seen_at: r.get(5)?,
                referrer: r.get(6)?,
                language: r.get(7)?,
                time_zone: r.get(8)?,
                prechat: r
                    .get::<_, Option<String>>(9)?
                    .zip(r.get::<_, Option<String>>(10)?),
            })
        })
        .optional()?)
}

/// The conversations that got a message with an id above `after`, and the newest such id.
pub fn list_conversations_changed_after(
    conn: &Connection,
    after: MessageId,
) -> Result<Vec<(ConversationId, MessageId)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT conversation_id, max(id) FROM messages WHERE id > ?1 \
         GROUP BY conversation_id ORDER BY max(id)",
    )?;
    Ok(stmt
        .query_map([after], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// An open conversation as one agent's unread counts see it.
#[derive(Debug, Clone, Copy)]
pub struct OpenConversationRead {
    pub id: ConversationId,
    pub site_id: SiteId,
    pub assignee_id: Option<UserId>,
    /// The newest visitor message the agent has not seen (`None`: read).
    pub unread_up_to: Option<MessageId>,
    /// Snoozed: it counts for nothing until the snooze ends.
    pub is_snoozed: bool,
}

/// Every open conversation (snoozed ones included, marked), with its assignee and the newest
/// visitor message `reader` has not seen.
pub fn list_open_conversation_reads(
    conn: &Connection,
    reader: UserId,
) -> Result<Vec<OpenConversationRead>, Error> {
    // The newest visitor message is found walking the conversation's messages back from the
    // newest (it is almost always among the last few), not by `max()` over all of them: this
    // runs for every open conversation whenever a live page starts or catches up.
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.assignee_id, (SELECT m.id FROM messages m \
             WHERE m.conversation_id = c.id AND m.author = 'visitor' ORDER BY m.id DESC LIMIT 1), \
             (SELECT iif(r.is_marked_unread, 0, r.last_read_id) FROM conversation_reads r \
              WHERE r.user_id = ?1 AND r.conversation_id = c.id), c.snoozed_until IS NOT NULL, \
             c.site_id \
         FROM conversations c WHERE c.status = 'open'",
    )?;
    Ok(stmt
        .query_map([reader], |r| {
            let newest: Option<MessageId> = r.get(2)?;
            let read: Option<MessageId> = r.get(3)?;
            Ok(OpenConversationRead {
                id: r.get(0)?,
                site_id: r.get(5)?,
                assignee_id: r.get(1)?,
                unread_up_to: newest.filter(|newest| Some(*newest) > read),
                is_snoozed: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// The newest message id (0 when there are none): where a live stream starts.
pub fn find_last_message_id(conn: &Connection) -> Result<MessageId, Error> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(id), 0) FROM messages")?
        .query_row([], |r| r.get(0))?)
}

/// Records that `user` has read the conversation up to `message` (the marker never moves
/// backwards; a mark of unread is cleared); returns the marker as stored.
pub fn upsert_conversation_read(
    conn: &Connection,
    user: UserId,
    id: ConversationId,
    message: MessageId,
) -> Result<MessageId, Error> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO conversation_reads (user_id, conversation_id, last_read_id) \
             VALUES (?1, ?2, ?3) ON CONFLICT (user_id, conversation_id) \
             DO UPDATE SET last_read_id = max(last_read_id, excluded.last_read_id), \
                           is_marked_unread = 0 \
             RETURNING last_read_id",
        )?
        .query_row(params![user, id, message], |r| r.get(0))?)
}

/// The conversation's newest visitor message, found walking back from its newest message.
pub(super) fn find_newest_visitor_message(
    conn: &Connection,
    id: ConversationId,
) -> Result<Option<MessageId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM messages WHERE conversation_id = ?1 AND author = 'visitor' \
             ORDER BY id DESC LIMIT 1",
        )?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// Marks the conversation unread for `user` (docs/admin.md, "Unread"), leaving their marker
/// where it is; returns its newest visitor message, the one now unread, or `None` when it has
/// none (or does not exist).
pub fn mark_conversation_unread(
    conn: &Connection,
    user: UserId,
    id: ConversationId,
) -> Result<Option<MessageId>, Error> {
    let newest = find_newest_visitor_message(conn, id)?;
    if newest.is_some() {
        conn.prepare_cached(
            "INSERT INTO conversation_reads (user_id, conversation_id, last_read_id, is_marked_unread) \
             VALUES (?1, ?2, 0, 1) ON CONFLICT (user_id, conversation_id) \
             DO UPDATE SET is_marked_unread = 1",
        )?
        .execute(params![user, id])?;
    }
    Ok(newest)
}

/// Sets or clears the conversation's assignee; returns false if it was already so, or if it is
/// not assigned as `expected`.
pub fn update_conversation_assignee(
    conn: &Connection,
    id: ConversationId,
    assignee: Option<UserId>,
    expected: Expected,
) -> Result<bool, Error> {
    let (check, was) = match expected {
        Expected::Any => (false, None),
        Expected::Is(was) => (true, was),
    };
    Ok(conn
        .prepare_cached(
            "UPDATE conversations SET assignee_id = ?2 \
              WHERE id = ?1 AND assignee_id IS NOT ?2 AND (NOT ?3 OR assignee_id IS ?4)",
        )?
        .execute(params![id, assignee, check, was])?
        == 1)
}

/// Who a change expects the conversation to be assigned to: a form shown with "Unassigned"
/// must not silently take a conversation from the colleague who took it meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Whoever has it (an API call, Slack's "take").
    Any,
    /// Exactly this assignee, `None` being nobody.
    Is(Option<UserId>),
}

/// The open conversations assigned to `user`, oldest first.
pub fn list_open_conversations_assigned_to(
    conn: &Connection,
    user: UserId,
) -> Result<Vec<ConversationId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM conversations WHERE assignee_id = ?1 AND status = 'open' ORDER BY id",
        )?
        .query_map([user], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Unassigns conversation `id` if it is open and `user`'s; returns false if not (any more).
pub fn unassign_open_conversation_of(
    conn: &Connection,
    id: ConversationId,
    user: UserId,
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE conversations SET assignee_id = NULL \
             WHERE id = ?1 AND assignee_id = ?2 AND status = 'open'",
        )?
        .execute(params![id, user])?
        == 1)
}

/// Closes an open conversation; returns false if it was not open.
pub fn close_conversation(conn: &Connection, id: ConversationId, now: i64) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE conversations SET status = 'closed', closed_at = ?2, snoozed_until = NULL \
             WHERE id = ?1 AND status = 'open'",
        )?
        .execute(params![id, now])?
        == 1)
}

/// Reopens a closed conversation; returns false if it is not closed, or not the visitor's newest
/// (once the visitor has written again, the old one stays closed, whatever became of the new one:
/// reopening it would leave the widget showing the newest one closed while the visitor's next
/// message joined an older one), or if the visitor has another open conversation (a visitor has
/// at most one). An assignee disabled meanwhile is let go: a reopened conversation is the team's
/// again, as a disabled user's open ones became when they were disabled.
pub fn reopen_conversation(conn: &Connection, id: ConversationId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE conversations SET status = 'open', closed_at = NULL, \
                 assignee_id = CASE WHEN EXISTS (SELECT 1 FROM users u \
                     WHERE u.id = conversations.assignee_id AND u.is_disabled = 1) \
                     THEN NULL ELSE assignee_id END \
             WHERE id = ?1 AND status = 'closed' AND NOT EXISTS (\
                 SELECT 1 FROM conversations o \
                 WHERE o.visitor_id = conversations.visitor_id \
                   AND (o.status = 'open' OR o.id > conversations.id))",
        )?
        .execute([id])?
        == 1)
}

/// Where a refused reopen of `id` sends the agent: the visitor's open conversation, or else
/// their newest one, if either is another than `id`.
pub fn find_conversation_to_answer_instead_of(
    conn: &Connection,
    id: ConversationId,
) -> Result<Option<ConversationId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT o.id FROM conversations c JOIN conversations o ON o.visitor_id = c.visitor_id \
             WHERE c.id = ?1 AND o.id != c.id \
             ORDER BY o.status = 'open' DESC, o.id DESC LIMIT 1",
        )?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// Stores a line of the conversation's own history ("Ana closed the conversation"), by `user`
/// under `author_name`, or by nobody (Porch itself: "Snooze ended"); visitors never see these.
/// Returns the new message's id, so live streams resume across it.
pub fn insert_system_message(
    conn: &Connection,
    id: ConversationId,
    user: Option<UserId>,
    author_name: Option<&str>,
    body: &str,
    now: i64,
) -> Result<MessageId, Error> {
    conn.prepare_cached(
        "INSERT INTO messages (conversation_id, author, user_id, author_name, body, created_at) \
         VALUES (?1, 'system', ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, user, author_name, body, now])?;
    Ok(MessageId(conn.last_insert_rowid()))
}
