//! One mail from the mailbox, parsed (mail-parser) and judged: posted as the visitor's message
//! when it answers one of Porch's mails (a token in `In-Reply-To`/`References`) and comes from
//! the visitor's saved address; otherwise refused or skipped with a reason admins see.

use mail_parser::{HeaderValue, MessageParser, MimeHeaders as _, PartType};
use sha2::{Digest as _, Sha256};

use super::text::{html_to_text, strip_quoted};
use crate::chat::{ClientId, MailReply, MessageBody};
use crate::store::{InboundMailRow, MailOutcome, MailThreadRow};

/// Mails above this size are not downloaded, only recorded as skipped: a reply is text, and
/// anything this large is attachments Porch would drop anyway.
pub const MAX_MAIL_BYTES: u32 = 4 * 1024 * 1024;

/// The length of a conversation's mail token (hex of 128 random bits).
const TOKEN_LEN: usize = 32;

/// What the reader needs from a mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    /// `<Message-ID>`, or `sha256:…` of the raw mail when it has none.
    pub id: String,
    /// The `From` address, lower case.
    pub sender: String,
    pub subject: String,
    /// Conversation tokens named by `In-Reply-To` and `References`, nearest first.
    pub tokens: Vec<String>,
    /// `Auto-Submitted` (other than `no`) or `Precedence: bulk/junk/list/auto_reply`.
    pub is_automatic: bool,
    /// The new text (quoted history stripped); `None` when the mail has no text part.
    pub text: Option<String>,
    /// Another author the header names beside `sender` (a second `From` address, or a `Sender`
    /// that is someone else): only the visitor may write into their conversation.
    pub other_author: Option<String>,
    /// The receiving server's `Authentication-Results` (the topmost) says `dmarc=fail`: the
    /// `From` domain's owner disowns the mail.
    pub fails_dmarc: bool,
    /// Files the mail carried; they are not posted.
    pub attachments: usize,
}

/// Parses a raw mail (or only its header, for one too large to download).
///
/// # Errors
/// The reason it cannot be read: not a mail at all, or no sender address.
pub fn parse_mail(raw: &[u8], domain: &str) -> Result<Mail, String> {
    let message = MessageParser::default()
        .parse(raw)
        .filter(|m| !m.parts.is_empty() && !m.parts[0].headers.is_empty())
        .ok_or("not a mail (no header could be parsed)")?;
    let id = message.message_id().map_or_else(
        || format!("sha256:{}", hex::encode(Sha256::digest(raw))),
        |id| format!("<{id}>"),
    );
    let sender = message
        .from()
        .and_then(|from| from.first())
        .and_then(|addr| addr.address())
        .map(str::to_lowercase)
        .ok_or("no sender address (From)")?;
    let other_author = message
        .header_values("From")
        .chain(message.header_values("Sender"))
        .filter_map(HeaderValue::as_address)
        .flat_map(|address| address.iter())
        .filter_map(|addr| addr.address().map(str::to_lowercase))
        .find(|address| *address != sender);
    let mut tokens = Vec::new();
    for header in [message.in_reply_to(), message.references()] {
        for id in header.as_text_list().unwrap_or_default().iter().rev() {
            if let Some(token) = porch_token(id, domain) {
                tokens.push(token.to_owned());
            }
        }
    }
    let header_text = |name: &str| {
        message
            .header_raw(name)
            .map(|v| v.trim().to_ascii_lowercase())
    };
    // Only the topmost: the one the mailbox's own server added (a sender's own claim of
    // `fail` below it would only refuse their own mail). `header_raw` reads the lowest.
    let fails_dmarc = message
        .header_values("Authentication-Results")
        .next()
        .and_then(HeaderValue::as_text)
        .is_some_and(|v| {
            v.to_ascii_lowercase()
                .split([';', ' ', '\t', '\r', '\n'])
                .any(|part| part == "dmarc=fail")
        });
    let is_automatic = header_text("Auto-Submitted").is_some_and(|v| v != "no")
        || header_text("Precedence")
            .is_some_and(|v| matches!(v.as_str(), "bulk" | "junk" | "list" | "auto_reply"));
    let text = message
        .text_body
        .first()
        .and_then(|&part| message.part(part))
        .and_then(|part| match &part.body {
            PartType::Text(text) => Some(strip_quoted(text)),
            PartType::Html(html) => Some(strip_quoted(&html_to_text(html))),
            _ => None,
        })
        .or_else(|| {
            // A lone HTML part that mail-parser did not list as a text body.
            message
                .parts
                .iter()
                .find(|p| p.is_content_type("text", "html"))
                .and_then(|p| p.text_contents())
                .map(|html| strip_quoted(&html_to_text(html)))
        });
    Ok(Mail {
        id,
        sender,
        subject: message.subject().unwrap_or_default().to_owned(),
        tokens,
        is_automatic,
        text,
        other_author,
        fails_dmarc,
        attachments: message.attachment_count(),
    })
}

/// The conversation token in one of our `Message-ID`s (`porch.{what}.{token}@{domain}`).
fn porch_token<'a>(id: &'a str, domain: &str) -> Option<&'a str> {
    let id = id.trim().trim_start_matches('<').trim_end_matches('>');
    let (local, host) = id.rsplit_once('@')?;
    if !host.eq_ignore_ascii_case(domain) || !local.starts_with("porch.") {
        return None;
    }
    let (_, token) = local.rsplit_once('.')?;
    (token.len() == TOKEN_LEN && token.bytes().all(|b| b.is_ascii_hexdigit())).then_some(token)
}

/// What to do with a mail.
#[derive(Debug)]
pub enum Verdict {
    Post(Box<MailReply>),
    /// Refused or skipped: only recorded, with the reason.
    Record(InboundMailRow),
}

/// A record of `mail` with its outcome.
pub fn record(mail: &Mail, outcome: MailOutcome, reason: String, now: i64) -> InboundMailRow {
    InboundMailRow {
        mail_id: mail.id.clone(),
        sender: mail.sender.clone(),
        subject: mail.subject.clone(),
        conversation_id: None,
        message_id: None,
        outcome: outcome.as_str().to_owned(),
        reason,
        received_at: now,
    }
}

/// The record of a mail that cannot be read, under a digest of its bytes (the same mail read
/// again is recognised).
pub fn unreadable(raw: &[u8], reason: &str, now: i64) -> InboundMailRow {
    InboundMailRow {
        mail_id: format!("sha256:{}", hex::encode(Sha256::digest(raw))),
        sender: String::new(),
        subject: String::new(),
        conversation_id: None,
        message_id: None,
        outcome: MailOutcome::Skipped.as_str().to_owned(),
        reason: format!("unreadable: {reason}"),
        received_at: now,
    }
}

/// Judges a parsed mail against the conversation its token names (`thread`, if any).
pub fn judge(mail: &Mail, thread: Option<MailThreadRow>, now: i64) -> Verdict {
    let refuse = |reason: String| Verdict::Record(record(mail, MailOutcome::Refused, reason, now));
    let skip =
        |reason: &str| Verdict::Record(record(mail, MailOutcome::Skipped, reason.into(), now));
    if mail.is_automatic {
        return skip("an automatic reply (Auto-Submitted or Precedence)");
    }
    if mail.tokens.is_empty() {
        return refuse(
            "not a reply to a Porch mail (no Porch Message-ID in In-Reply-To or References)".into(),
        );
    }
    let Some(thread) = thread else {
        return refuse(
            "its Porch Message-ID names no conversation here (deleted, or never one of ours)"
                .into(),
        );
    };
    let Some(visitor_email) = thread.visitor_email.as_deref() else {
        return refuse("the visitor of that conversation has no saved address".into());
    };
    if !visitor_email.eq_ignore_ascii_case(&mail.sender) {
        return refuse(format!(
            "sent from {}, not from the visitor's address {visitor_email}",
            mail.sender
        ));
    }
    if let Some(other) = &mail.other_author {
        return refuse(format!(
            "it names another author too ({other} beside {}): only the visitor writes here",
            mail.sender
        ));
    }
    if mail.fails_dmarc {
        return refuse(
            "the receiving mail server found its From forged (dmarc=fail in Authentication-Results)"
                .into(),
        );
    }
    let Some(text) = mail.text.as_deref().filter(|t| !t.is_empty()) else {
        return skip("no new text (only quoted history, or no text part)");
    };
    let Ok(body) = MessageBody::parse(&MessageBody::clip(text)) else {
        return skip("no new text (only quoted history, or no text part)");
    };
    let digest = hex::encode(Sha256::digest(mail.id.as_bytes()));
    let Ok(client_id) = ClientId::parse(&format!("mail-{}", &digest[..40])) else {
        return skip("unreachable: the mail's client id is malformed");
    };
    let reason = match mail.attachments {
        0 => "posted".to_owned(),
        n => format!("posted, without its {n} attached file(s): files are not taken from mail"),
    };
    let mut posted = record(mail, MailOutcome::Posted, reason, now);
    posted.conversation_id = Some(thread.conversation_id);
    Verdict::Post(Box::new(MailReply {
        thread,
        record: posted,
        client_id,
        body,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ConversationId, SiteId, VisitorId};

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn thread(email: Option<&str>) -> MailThreadRow {
        MailThreadRow {
            conversation_id: ConversationId(7),
            visitor_id: VisitorId(3),
            site_id: SiteId(1),
            visitor_email: email.map(str::to_owned),
        }
    }

    fn mail(from: &str, extra: &str, body: &str) -> Vec<u8> {
        format!(
            "From: Ana <{from}>\r\nTo: chat@porch.test\r\nSubject: Re: New reply\r\n\
             Message-ID: <reply-1@example.org>\r\n\
             In-Reply-To: <porch.message-9.{TOKEN}@porch.test>\r\n\
             References: <porch.conversation-7.{TOKEN}@porch.test> <porch.message-9.{TOKEN}@porch.test>\r\n\
             {extra}Content-Type: text/plain; charset=utf-8\r\n\r\n{body}"
        )
        .into_bytes()
    }

    #[test]
    fn a_reply_from_the_visitor_is_posted_without_its_quote() {
        let raw = mail(
            "Ana@Example.org",
            "",
            "Blue, please.\r\n\r\nOn Tue, Shop <chat@porch.test> wrote:\r\n> Which colour?\r\n",
        );
        let parsed = parse_mail(&raw, "porch.test").expect("parsed");
        assert_eq!(parsed.id, "<reply-1@example.org>");
        assert_eq!(parsed.tokens, vec![TOKEN, TOKEN, TOKEN]);
        match judge(&parsed, Some(thread(Some("ana@example.org"))), 5) {
            Verdict::Post(reply) => {
                assert_eq!(reply.body.as_str(), "Blue, please.");
                assert_eq!(reply.record.conversation_id, Some(ConversationId(7)));
            }
            Verdict::Record(row) => panic!("not posted: {}", row.reason),
        }
    }

    #[test]
    fn another_sender_is_refused_with_the_reason() {
        let parsed =
            parse_mail(&mail("mallory@evil.test", "", "hi"), "porch.test").expect("parsed");
        let Verdict::Record(row) = judge(&parsed, Some(thread(Some("ana@example.org"))), 5) else {
            panic!("posted a forged sender");
        };
        assert_eq!(row.outcome, "refused");
        assert!(row.reason.contains("mallory@evil.test"), "{}", row.reason);
    }

    #[test]
    fn other_domains_guessed_tokens_and_automatic_replies_are_not_posted() {
        assert_eq!(
            porch_token(&format!("porch.message-9.{TOKEN}@other.test"), "porch.test"),
            None
        );
        assert_eq!(
            porch_token("porch.conversation-7@porch.test", "porch.test"),
            None
        );
        let auto = mail(
            "ana@example.org",
            "Auto-Submitted: auto-replied\r\n",
            "Away",
        );
        let parsed = parse_mail(&auto, "porch.test").expect("parsed");
        let Verdict::Record(row) = judge(&parsed, Some(thread(Some("ana@example.org"))), 5) else {
            panic!("posted an automatic reply");
        };
        assert_eq!(row.outcome, "skipped");
    }

    fn refusal(raw: &[u8]) -> String {
        let parsed = parse_mail(raw, "porch.test").expect("parsed");
        match judge(&parsed, Some(thread(Some("ana@example.org"))), 5) {
            Verdict::Record(row) => format!("{}: {}", row.outcome, row.reason),
            Verdict::Post(reply) => format!("posted: {}", reply.record.reason),
        }
    }

    #[test]
    fn a_second_author_or_a_forged_from_is_refused() {
        for (extra, from) in [
            ("Sender: mallory@evil.test\r\n", "ana@example.org"),
            ("From: mallory@evil.test\r\n", "ana@example.org"),
            ("", "ana@example.org>, Mallory <mallory@evil.test"),
        ] {
            let said = refusal(&mail(from, extra, "It is me"));
            assert!(said.starts_with("refused: "), "{extra}{from}: {said}");
            assert!(said.contains("mallory@evil.test"), "{said}");
        }
        // The mailbox's server (topmost) found it forged; one the sender wrote below is not read.
        let forged = "Authentication-Results: mx.porch.test; spf=fail; dmarc=fail header.from=example.org\r\n\
                      Authentication-Results: evil.test; dmarc=pass\r\n";
        let said = refusal(&mail("ana@example.org", forged, "It is me"));
        assert!(said.contains("dmarc=fail"), "{said}");
        let passed = "Authentication-Results: mx.porch.test; dmarc=pass\r\n\
                      Authentication-Results: evil.test; dmarc=fail\r\n";
        let said = refusal(&mail("ana@example.org", passed, "It is me"));
        assert_eq!(said, "posted: posted");
        let same = refusal(&mail(
            "ana@example.org",
            "Sender: ANA@example.org\r\n",
            "Me",
        ));
        assert_eq!(same, "posted: posted");
    }

    #[test]
    fn files_in_a_reply_are_named_in_its_record() {
        let raw = format!(
            "From: ana@example.org\r\nMessage-ID: <r2@example.org>\r\n\
             In-Reply-To: <porch.message-9.{TOKEN}@porch.test>\r\n\
             Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n\
             --b\r\nContent-Type: text/plain\r\n\r\nHere it is\r\n\
             --b\r\nContent-Type: application/pdf\r\n\
             Content-Disposition: attachment; filename=\"a.pdf\"\r\n\r\n%PDF-1.4\r\n--b--\r\n"
        );
        let said = refusal(raw.as_bytes());
        assert!(
            said.starts_with("posted: posted, without its 1 attached file"),
            "{said}"
        );
    }

    #[test]
    fn garbage_is_not_a_mail() {
        assert!(parse_mail(b"\x00\x01\x02", "porch.test").is_err());
        assert!(parse_mail(b"Subject: no sender\r\n\r\nhi", "porch.test").is_err());
    }
}
