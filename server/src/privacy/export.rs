//! Finding a person and exporting what Porch holds about them (docs/privacy.md): the visitor
//! row, every conversation with every message, and the delivery jobs naming them, as one JSON
//! document; a readable text transcript for the widget; and one NDJSON line per conversation for
//! the full export. The format is versioned (`porch_export: 1`) and documented.

use std::fmt::Write as _;

use rusqlite::Connection;
use serde_json::{Value, json};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::store::{
    self, AttachmentMeta, ConversationRecord, JobRecord, MessageRow, VisitorId, VisitorRecord,
};
use crate::values::{Author, is_visitor_email};

/// The version of the export format, first in every document and line.
pub const EXPORT_VERSION: u32 = 1;

/// How a person is looked up: the address they left, or their visitor id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonQuery {
    Email(String),
    Visitor(VisitorId),
}

impl PersonQuery {
    /// `someone@example.com` is an address; `42` or `v42` a visitor id; anything else nothing.
    /// An address is taken as a request names it too (`Ann <ann@example.com>`, `mailto:…`, a
    /// sentence's final `.`).
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        if raw.contains('@') {
            return Some(Self::Email(address_in(raw).to_owned()));
        }
        let digits = raw.strip_prefix(['v', 'V']).unwrap_or(raw);
        digits
            .parse::<i64>()
            .ok()
            .filter(|id| *id > 0)
            .map(|id| Self::Visitor(VisitorId(id)))
    }
}

impl PersonQuery {
    /// Whether this finding nobody may be a typing mistake rather than the answer: an address no
    /// visitor could leave today (`a@`, `a b@example.com`). It is still looked up, as an address
    /// kept under an older, looser rule may be; a search that finds nobody with it is refused
    /// instead of answered "nobody", as if no data were held.
    pub fn may_be_mistyped(&self) -> bool {
        matches!(self, Self::Email(address) if !is_visitor_email(address))
    }
}

/// The address in `raw` as people write one: inside the last `<…>`, after `mailto:`, without a
/// sentence's final dot.
fn address_in(raw: &str) -> &str {
    // "… <ann@example.com>." as a sentence ends it.
    let raw = raw.trim_end_matches('.');
    let inner = match (raw.rfind('<'), raw.strip_suffix('>')) {
        (Some(start), Some(within)) => &within[start + 1..],
        _ => raw,
    };
    let inner = inner.trim();
    let bare = match inner.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("mailto:") => &inner[7..],
        _ => inner,
    };
    bare.trim_end_matches('.')
}

/// The visitors a query finds (an address may belong to several, on several sites).
///
/// # Errors
/// A failed read.
pub fn find_people(
    conn: &Connection,
    query: &PersonQuery,
) -> Result<Vec<VisitorRecord>, store::Error> {
    match query {
        PersonQuery::Email(email) => store::find_visitors_by_email(conn, email),
        PersonQuery::Visitor(id) => {
            Ok(store::find_visitor_record(conn, *id)?.into_iter().collect())
        }
    }
}

/// Everything about one visitor, read in one go.
#[derive(Debug, Clone)]
pub struct PersonData {
    pub visitor: VisitorRecord,
    pub conversations: Vec<ConversationRecord>,
    pub jobs: Vec<JobRecord>,
    /// The bytes of every file in their conversations and of their uploads no message took.
    pub files: Vec<(AttachmentMeta, Vec<u8>)>,
}

impl PersonData {
    /// Reads everything about `visitor`; `None` if there is no such visitor.
    ///
    /// # Errors
    /// A failed read.
    pub fn read(conn: &Connection, visitor: VisitorId) -> Result<Option<Self>, store::Error> {
        let Some(record) = store::find_visitor_record(conn, visitor)? else {
            return Ok(None);
        };
        Ok(Some(Self {
            conversations: store::list_visitor_conversations(conn, visitor)?,
            jobs: store::list_visitor_jobs(conn, visitor)?,
            files: store::list_visitor_files(conn, visitor)?,
            visitor: record,
        }))
    }

    /// What the visitor themselves may download from the widget: what the widget shows them
    /// (their messages and agents' replies), not agents' notes, status lines, tags or delivery
    /// jobs.
    #[must_use]
    pub fn as_seen_by_visitor(mut self) -> Self {
        for conversation in &mut self.conversations {
            conversation
                .messages
                .retain(|m| matches!(m.author, Author::Visitor | Author::Agent));
            // An agent's key is the team's (an integration's `Idempotency-Key` may carry its
            // own ids): the visitor's download keeps only their own messages' keys.
            for message in &mut conversation.messages {
                if message.author == Author::Agent {
                    message.client_id = None;
                }
            }
            conversation.tags = None;
        }
        self.jobs.clear();
        self
    }

    /// Messages in all the conversations.
    pub fn message_count(&self) -> usize {
        self.conversations.iter().map(|c| c.messages.len()).sum()
    }

    /// The export document (docs/privacy.md, "Export format").
    pub fn to_json(&self, now: i64) -> Value {
        let v = &self.visitor;
        json!({
            "porch_export": EXPORT_VERSION,
            "exported_at": now,
            "visitor": {
                "id": v.id,
                "site": {"key": v.site_key, "name": v.site_name},
                "name": v.name,
                "email": v.email,
                "first_page": v.first_page,
                "last_page": v.last_page,
                "user_agent": v.user_agent,
                "ip": v.ip,
                "referrer": v.referrer,
                "language": v.language,
                "time_zone": v.time_zone,
                "user_id": v.user_id,
                "claimed_user_id": v.claimed_user_id,
                "claimed_name": v.claimed_name,
                "claimed_email": v.claimed_email,
                "prechat_question": v.prechat_question,
                "prechat_answer": v.prechat_answer,
                "first_seen_at": v.first_seen_at,
                "last_seen_at": v.last_seen_at,
            },
            "conversations": self.conversations.iter().map(conversation_json).collect::<Vec<_>>(),
            "deliveries": self.jobs.iter().map(job_json).collect::<Vec<_>>(),
            "files": self.files.iter().map(|(meta, data)| json!({
                "id": meta.id,
                "name": meta.name,
                "type": meta.content_type,
                "size": meta.size,
                "data_base64": STANDARD.encode(data),
            })).collect::<Vec<_>>(),
        })
    }

    /// A readable transcript: the site, then each conversation's messages with UTC times.
    pub fn to_text(&self) -> String {
        let v = &self.visitor;
        let mut out = format!("Your conversations on {}\n", v.site_name);
        if let Some(email) = &v.email {
            // Not always left by the visitor: an agent may have set it from the conversation.
            let _ = writeln!(out, "Your email address with us: {email}");
        }
        for conversation in &self.conversations {
            let _ = writeln!(
                out,
                "\nConversation {} (started {}, {})",
                conversation.id,
                porch_app::format_time(conversation.created_at).1,
                conversation.status
            );
            for message in &conversation.messages {
                // A message's further lines are indented, so none can pass for a line of the
                // transcript's own ("[7 Dec 2026, 10:02 UTC] Ana: …").
                let _ = writeln!(
                    out,
                    "[{}] {}: {}",
                    porch_app::format_time(message.created_at).1,
                    speaker(message),
                    crate::values::continued(&message.body, "    ")
                );
                for file in &message.attachments {
                    let _ = writeln!(out, "    (file: {}, {} bytes)", file.name, file.size);
                }
            }
        }
        out
    }
}

/// Who a message is from, as the transcript shows it.
fn speaker(message: &MessageRow) -> String {
    match message.author {
        Author::Visitor => "You".to_owned(),
        Author::Agent => message
            .author_name
            .clone()
            .unwrap_or_else(|| "Agent".to_owned()),
        Author::Note | Author::System => "Porch".to_owned(),
    }
}

/// One conversation with its messages, as the export and the NDJSON lines carry it.
pub fn conversation_json(c: &ConversationRecord) -> Value {
    let mut json = json!({
        "id": c.id,
        "site": c.site_key,
        "visitor_id": c.visitor_id,
        "status": c.status,
        "created_at": c.created_at,
        "last_message_at": c.last_message_at,
        "closed_at": c.closed_at,
        "messages": c.messages.iter().map(|m| {
            let mut message = json!({
                "id": m.id,
                "author": m.author.as_str(),
                "author_name": m.author_name,
                // The sender's idempotency key (the widget's `client_id`, an API reply's
                // `Idempotency-Key`): a check for duplicates can use the export.
                "client_id": m.client_id,
                "body": m.body,
                "created_at": m.created_at,
                "attachments": m.attachments.iter().map(|a| json!({
                    "id": a.id, "name": a.name, "type": a.content_type, "size": a.size,
                })).collect::<Vec<_>>(),
            });
            // A reply an agent sent by email also has the subject they typed.
            if let Some((_, subject)) = c.mail_subjects.iter().find(|(id, _)| *id == m.id) {
                message["email_subject"] = json!(subject);
            }
            message
        }).collect::<Vec<_>>(),
    });
    if let Some(tags) = &c.tags {
        json["tags"] = json!(tags);
    }
    json
}

fn job_json(j: &JobRecord) -> Value {
    json!({
        "id": j.id,
        "kind": j.kind,
        "state": j.state,
        "attempt": j.attempt,
        "args": serde_json::from_str::<Value>(&j.args).unwrap_or(Value::Null),
        "last_error": j.last_error,
        "created_at": j.created_at,
        "finished_at": j.finished_at,
    })
}

/// One NDJSON line of the full export: a conversation with its visitor and messages.
pub fn ndjson_line(conn: &Connection, c: &ConversationRecord) -> Result<String, store::Error> {
    let visitor = store::find_visitor_record(conn, c.visitor_id)?;
    let mut line = conversation_json(c);
    line["porch_export"] = json!(EXPORT_VERSION);
    line["visitor"] = visitor.map_or(Value::Null, |v| {
        json!({"id": v.id, "name": v.name, "email": v.email, "first_page": v.first_page,
               "last_page": v.last_page, "user_agent": v.user_agent, "ip": v.ip,
               "referrer": v.referrer, "language": v.language, "time_zone": v.time_zone,
               "user_id": v.user_id, "claimed_user_id": v.claimed_user_id,
               "claimed_name": v.claimed_name, "claimed_email": v.claimed_email,
               "prechat_question": v.prechat_question, "prechat_answer": v.prechat_answer,
               "first_seen_at": v.first_seen_at, "last_seen_at": v.last_seen_at})
    });
    Ok(line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_an_address_or_a_visitor_id() {
        assert_eq!(
            PersonQuery::parse(" Ann@Example.com "),
            Some(PersonQuery::Email("Ann@Example.com".into()))
        );
        assert_eq!(
            PersonQuery::parse("v42"),
            Some(PersonQuery::Visitor(VisitorId(42)))
        );
        assert_eq!(
            PersonQuery::parse("42"),
            Some(PersonQuery::Visitor(VisitorId(42)))
        );
        assert_eq!(PersonQuery::parse("ann"), None);
        assert_eq!(PersonQuery::parse("0"), None);
        // An address as a request names it is that address.
        for named in [
            "Ann One <ann@example.com>",
            "<ann@example.com>",
            "mailto:ann@example.com",
            "MAILTO:ann@example.com",
            "ann@example.com.",
            "Ann One <ann@example.com>.",
        ] {
            assert_eq!(
                PersonQuery::parse(named),
                Some(PersonQuery::Email("ann@example.com".into())),
                "{named}"
            );
        }
        // A mistyped one is still looked up (an older rule may have kept it), and said to be.
        for mistyped in [
            "@",
            "a@",
            "a@@b.example",
            "a b@example.com",
            "ann@example",
            "<>@x",
        ] {
            let parsed = PersonQuery::parse(mistyped).expect(mistyped);
            assert!(parsed.may_be_mistyped(), "{mistyped}");
        }
        assert!(!PersonQuery::parse("ann@example.com").is_some_and(|q| q.may_be_mistyped()));
    }
}
