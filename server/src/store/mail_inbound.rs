//! Storage for mail replies: the per-conversation token in the `Message-ID`s of Porch's mails to
//! a visitor (`mail_threads`), and the record of every mail the IMAP reader took from the
//! mailbox (`mail_inbound`), which is also what makes a reply post exactly once.

use rusqlite::{Connection, OptionalExtension, params};

use super::{ConversationId, Error, MessageId, VisitorId};

/// Returns the conversation's mail token, storing `candidate` if it has none yet (a retried or
/// concurrent send then uses the first one, so a mail's `Message-ID` never changes).
pub fn ensure_mail_thread(
    conn: &Connection,
    conversation: ConversationId,
    candidate: &str,
    now: i64,
) -> Result<String, Error> {
    conn.prepare_cached(
        "INSERT INTO mail_threads (conversation_id, token, created_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (conversation_id) DO NOTHING",
    )?
    .execute(params![conversation, candidate, now])?;
    Ok(conn
        .prepare_cached("SELECT token FROM mail_threads WHERE conversation_id = ?1")?
        .query_row([conversation], |r| r.get(0))?)
}

/// The conversation a mail token belongs to, with what a reply is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailThreadRow {
    pub conversation_id: ConversationId,
    pub visitor_id: VisitorId,
    pub site_id: super::SiteId,
    /// The address the visitor left, if they still have one.
    pub visitor_email: Option<String>,
}

/// The conversation behind a mail token, if any.
pub fn find_mail_thread(conn: &Connection, token: &str) -> Result<Option<MailThreadRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT c.id, c.visitor_id, c.site_id, v.email FROM mail_threads t \
               JOIN conversations c ON c.id = t.conversation_id \
               JOIN visitors v ON v.id = c.visitor_id \
              WHERE t.token = ?1",
        )?
        .query_row([token], |r| {
            Ok(MailThreadRow {
                conversation_id: r.get(0)?,
                visitor_id: r.get(1)?,
                site_id: r.get(2)?,
                visitor_email: r.get(3)?,
            })
        })
        .optional()?)
}

/// What became of an inbound mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailOutcome {
    /// Posted as the visitor's message.
    Posted,
    /// Not a reply to one of our mails, or not from the visitor.
    Refused,
    /// Unreadable, too large, automatic or empty.
    Skipped,
}

impl MailOutcome {
    /// The stored (and shown) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Posted => "posted",
            Self::Refused => "refused",
            Self::Skipped => "skipped",
        }
    }
}

/// One inbound mail, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundMailRow {
    /// The mail's `Message-ID` (or a digest of the raw mail when it has none).
    pub mail_id: String,
    pub sender: String,
    pub subject: String,
    pub conversation_id: Option<ConversationId>,
    pub message_id: Option<MessageId>,
    pub outcome: String,
    pub reason: String,
    pub received_at: i64,
}

/// Records an inbound mail; false (and nothing written) if a mail with its id was recorded
/// before, which is how a re-read mail is recognised.
pub fn insert_inbound_mail(conn: &Connection, row: &InboundMailRow) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO mail_inbound (mail_id, sender, subject, conversation_id, message_id, \
                                       outcome, reason, received_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (mail_id) DO NOTHING",
        )?
        .execute(params![
            row.mail_id,
            row.sender,
            row.subject,
            row.conversation_id,
            row.message_id,
            row.outcome,
            row.reason,
            row.received_at
        ])?
        == 1)
}

/// Whether a mail with this id was recorded already.
pub fn has_inbound_mail(conn: &Connection, mail_id: &str) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM mail_inbound WHERE mail_id = ?1)")?
        .query_row([mail_id], |r| r.get(0))?)
}

/// The latest inbound mails, newest first, for the email page.
pub fn list_inbound_mail(conn: &Connection, limit: u32) -> Result<Vec<InboundMailRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT mail_id, sender, subject, conversation_id, message_id, outcome, reason, \
                received_at \
           FROM mail_inbound ORDER BY id DESC LIMIT ?1",
    )?;
    Ok(stmt
        .query_map([limit], |r| {
            Ok(InboundMailRow {
                mail_id: r.get(0)?,
                sender: r.get(1)?,
                subject: r.get(2)?,
                conversation_id: r.get(3)?,
                message_id: r.get(4)?,
                outcome: r.get(5)?,
                reason: r.get(6)?,
                received_at: r.get(7)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// Forgets inbound mails received before `cutoff` (their senders are personal data; a mail that
/// old is long marked seen in the mailbox).
pub fn delete_inbound_mail_before(conn: &Connection, cutoff: i64) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM mail_inbound WHERE received_at < ?1")?
        .execute([cutoff])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 'k', 'Shop', 0);
             INSERT INTO visitors (id, site_id, token_hash, email, first_seen_at, last_seen_at)
               VALUES (1, 1, x'00', 'ana@example.org', 0, 0);
             INSERT INTO conversations (id, site_id, visitor_id, created_at, last_message_at)
               VALUES (1, 1, 1, 0, 0);",
        )
        .expect("rows");
        conn
    }

    #[test]
    fn a_conversation_keeps_its_first_token() {
        let conn = conn();
        let first = ensure_mail_thread(&conn, ConversationId(1), "aaa", 1).expect("first");
        let second = ensure_mail_thread(&conn, ConversationId(1), "bbb", 2).expect("second");
        assert_eq!((first.as_str(), second.as_str()), ("aaa", "aaa"));
        let found = find_mail_thread(&conn, "aaa")
            .expect("find")
            .expect("a thread");
        assert_eq!(found.visitor_email.as_deref(), Some("ana@example.org"));
        assert_eq!(find_mail_thread(&conn, "bbb").expect("find"), None);
    }

    #[test]
    fn a_mail_is_recorded_once() {
        let conn = conn();
        let row = InboundMailRow {
            mail_id: "<m@x>".into(),
            sender: "ana@example.org".into(),
            subject: "Re: hi".into(),
            conversation_id: None,
            message_id: None,
            outcome: MailOutcome::Refused.as_str().into(),
            reason: "why".into(),
            received_at: 5,
        };
        assert!(insert_inbound_mail(&conn, &row).expect("insert"));
        assert!(!insert_inbound_mail(&conn, &row).expect("again"));
        assert!(has_inbound_mail(&conn, "<m@x>").expect("has"));
        assert_eq!(list_inbound_mail(&conn, 10).expect("list"), vec![row]);
        assert_eq!(delete_inbound_mail_before(&conn, 6).expect("delete"), 1);
    }
}
