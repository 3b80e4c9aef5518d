//! Mails as jobs: an agent's reply to a visitor who left an address and is away, and the
//! transcript when a conversation closes (the agents' digest is in `digest`). Threaded per
//! conversation (`In-Reply-To`/`References`); visitor text is escaped in the HTML.

use std::fmt::Write as _;

use lettre::message::{Mailbox, MultiPart};

use super::mailer::{Mailer, SendError, escape_html, html_lines, html_page, indented, smtp_words};
use super::{agent_mail, digest};
use crate::clock::now_ms;
use crate::integrations::Destinations;
use crate::integrations::delivery::{args, blocked, failed, finish, retry};
use crate::jobs::{Attempt, EmailArgs, JobKind, Outcome};
use crate::store::{self, ConversationId, DeliveryMessage, JobRow, MessageId, MessageRow};
use crate::values::Author;

/// Maps an SMTP failure: 4xx, timeouts and network errors are retried; 5xx fails the mail;
/// a refused login blocks the email integration until an admin fixes the settings.
pub(super) fn classify(failure: &SendError) -> Outcome {
    // No answer in time is retried like any other passing failure.
    if let SendError::Smtp(err) = failure {
        let code = err.status().map(|c| c.to_string());
        if code
            .as_deref()
            .is_some_and(|c| c.starts_with("535") || c.starts_with("530"))
        {
            return Outcome::Blocked {
                error: format!("the SMTP server refused the login: {err}"),
            };
        }
        if err.is_permanent() {
            return Outcome::Failed {
                error: format!("the SMTP server refused the mail: {err}"),
            };
        }
    }
    Outcome::Retry {
        error: format!("SMTP: {}", smtp_words(failure)),
        not_before: None,
    }
}

fn done(note: &str) -> Attempt {
    Attempt::new(
        Outcome::Delivered {
            external_ref: Some(note.to_owned()),
        },
        None,
    )
}

/// Delivers an `email.*` job of `kind`.
pub async fn deliver(destinations: &Destinations, job: &JobRow, kind: JobKind) -> Attempt {
    finish(send(destinations, job, kind).await)
}

async fn send(
    destinations: &Destinations,
    job: &JobRow,
    kind: JobKind,
) -> Result<Attempt, Attempt> {
    let mailer = destinations
        .mailer
        .as_deref()
        .ok_or_else(|| blocked("email is not configured (PORCH_SMTP_URL, PORCH_MAIL_FROM)"))?;
    let args: EmailArgs = args(job)?;
    let note = match kind {
        JobKind::EmailUnanswered => digest::digest(destinations, mailer, job).await?,
        JobKind::EmailReply => {
            let message = args
                .message_id
                .ok_or_else(|| failed("the job names no message"))?;
            reply(destinations, mailer, message).await?
        }
        JobKind::EmailTranscript => {
            transcript(destinations, mailer, args.conversation_id, job).await?
        }
        JobKind::EmailAgent => {
            let message = args
                .message_id
                .ok_or_else(|| failed("the job names no message"))?;
            agent_mail::agent_mail(destinations, mailer, message).await?
        }
        other => return Err(failed(format!("{other} is not a mail"))),
    };
    Ok(done(&note))
}

/// An agent's reply to a visitor who left an address, unless the visitor has the widget open
/// (then they saw it live).
async fn reply(
    destinations: &Destinations,
    mailer: &Mailer,
    message: MessageId,
) -> Result<String, Attempt> {
    let loaded = destinations
        .readers
        .read(move |c| store::load_delivery_message(c, message))
        .await
        .map_err(retry)?;
    let Some(message) = loaded else {
        return Ok("message deleted".into());
    };
    if destinations.hub.is_visitor_connected(message.visitor_id) {
        return Ok("the visitor is online".into());
    }
    let Some(to) = visitor_mailbox(&message)? else {
        return Ok("the visitor left no address".into());
    };
    let agent = message
        .author_name
        .clone()
        .unwrap_or_else(|| "An agent".into());
    let text = format!(
        "{agent} replied to your conversation on {}:\n\n{}\n",
        message.site_name, message.body
    );
    let html = format!(
        "<p><b>{}</b> replied to your conversation on {}:</p><blockquote>{}</blockquote>",
        escape_html(&agent),
        escape_html(&message.site_name),
        html_lines(&message.body)
    );
    let subject = format!("New reply from {}", message.site_name);
    let thread = VisitorThread::of(destinations, message.conversation_id).await?;
    let id = mailer.visitor_mail_id(&format!("message-{}", message.id), &thread.token);
    send_to_visitor(mailer, id, &thread, to, subject, text, &html).await
}

/// A conversation's mail thread: its id and its token (made on the first mail, then kept).
pub(super) struct VisitorThread {
    conversation: ConversationId,
    pub(super) token: String,
}

impl VisitorThread {
    pub(super) async fn of(
        destinations: &Destinations,
        conversation: ConversationId,
    ) -> Result<Self, Attempt> {
        let candidate = hex::encode(rand::random::<[u8; 16]>());
        let token = destinations
            .writer
            .write(move |c| store::ensure_mail_thread(c, conversation, &candidate, now_ms()))
            .await
            .map_err(retry)?;
        Ok(Self {
            conversation,
            token,
        })
    }
}

/// Sends a mail to a visitor in their conversation's thread (replies go to the install's
/// address, where the IMAP reader, if configured, reads them back); returns the SMTP server's
/// answer.
pub(super) async fn send_to_visitor(
    mailer: &Mailer,
    message_id: String,
    thread: &VisitorThread,
    to: Mailbox,
    subject: String,
    text: String,
    html: &str,
) -> Result<String, Attempt> {
    let mail = mailer
        .builder(
            message_id,
            Some(mailer.visitor_mail_id(
                &format!("conversation-{}", thread.conversation),
                &thread.token,
            )),
        )
        .to(to)
        .reply_to(mailer.from.clone())
        .subject(Mailer::subject(&subject))
        .multipart(MultiPart::alternative_plain_html(text, html_page(html)))
        .map_err(|err| failed(err.to_string()))?;
    mailer
        .send(mail)
        .await
        .map_err(|err| Attempt::new(classify(&err), None))
}

/// A visitor's address as a mailbox. Parsed as the address it is (an RFC 5321 path, which the
/// widget checked it to be, a quoted local part such as `"john.doe"@example.org` included),
/// never as a `Name <address>` line, which would misread such an address.
pub(super) fn mailbox_of(email: &str) -> Option<Mailbox> {
    email
        .parse::<lettre::Address>()
        .ok()
        .map(|address| Mailbox::new(None, address))
}

/// Where a mail to the message's visitor goes: none when they left no address; a failed attempt,
/// shown and retryable, when the address they left cannot be mailed (every address taken now
/// can be, but an older version stored some that cannot), rather than a mail quietly not sent.
pub(super) fn visitor_mailbox(message: &DeliveryMessage) -> Result<Option<Mailbox>, Attempt> {
    let Some(email) = message.visitor_email.as_deref() else {
        return Ok(None);
    };
    mailbox_of(email)
        .map(Some)
        .ok_or_else(|| failed("the address the visitor left cannot be mailed"))
}

/// The conversation's visitor messages and agent replies up to the closing (the job's creation),
/// mailed to the visitor. A retry carries the same messages under the same `Message-ID`, even if
/// the conversation was reopened and written to meanwhile; closing it again is another job, so
/// another mail with its own `Message-ID`.
/// True while the closing a transcript job was made for stands: the conversation is closed, and
/// not by a later closing (a reopen and a close again make a job of their own). The job is made
/// with the closing, a moment after `closed_at` was taken.
fn is_still_closed(conversation: &store::ConversationRow, closing: i64) -> bool {
    conversation.closed_at.is_some_and(|at| at <= closing)
}

async fn transcript(
    destinations: &Destinations,
    mailer: &Mailer,
    conversation: ConversationId,
    job: &JobRow,
) -> Result<String, Attempt> {
    let closed_at = job.created_at;
    let loaded = destinations
        .readers
        .read(move |c| {
            let found = store::find_conversation(c, conversation)?;
            if found.is_some_and(|found| !is_still_closed(&found, closed_at)) {
                return Ok(None);
            }
            let rows = store::list_conversation_messages(c, conversation)?;
            let first = rows
                .iter()
                .find(|m| m.author == Author::Visitor)
                .map(|m| m.id);
            let context = match first {
                Some(id) => store::load_delivery_message(c, id)?,
                None => None,
            };
            Ok(Some((rows, context)))
        })
        .await
        .map_err(retry)?;
    let Some((rows, context)) = loaded else {
        return Ok("not sent: the conversation was reopened".into());
    };
    let Some(context) = context else {
        return Ok("no visitor message".into());
    };
    let Some(to) = visitor_mailbox(&context)? else {
        return Ok("the visitor left no address".into());
    };
    let visible: Vec<&MessageRow> = rows
        .iter()
        .filter(|m| {
            (m.author == Author::Visitor || m.author == Author::Agent) && m.created_at <= closed_at
        })
        .collect();
    let mut text = format!("Your conversation on {}:\n\n", context.site_name);
    let mut html = format!(
        "<p>Your conversation on {}:</p>",
        escape_html(&context.site_name)
    );
    for m in visible {
        let who = if m.author == Author::Agent {
            m.author_name.clone().unwrap_or_else(|| "Agent".into())
        } else {
            "You".to_owned()
        };
        // Its files named as every other mail names them (the transcript carries no files).
        let mut body = m.body.clone();
        store::add_file_lines(&mut body, &m.attachments);
        // The name alone on its line, the text indented under it: a visitor's "\n\nAna: …" stays
        // inside their own message instead of passing for an agent's reply.
        let _ = writeln!(text, "{who}:\n{}\n", indented(&body, "  "));
        let _ = write!(
            html,
            "<p><b>{}</b><br>{}</p>",
            escape_html(&who),
            html_lines(&body)
        );
    }
    let subject = format!("Your conversation on {}", context.site_name);
    let thread = VisitorThread::of(destinations, conversation).await?;
    let id = mailer.visitor_mail_id(&format!("transcript-{}", job.id), &thread.token);
    send_to_visitor(mailer, id, &thread, to, subject, text, &html).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape_html("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
    }
}
