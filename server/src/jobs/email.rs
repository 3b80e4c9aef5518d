//! Email over SMTP (lettre, pooled connections): the digest of conversations nobody answered in
//! time (to agents, one mail each per run, never one per message; in `digest`), an agent's reply to a visitor who
//! left an address and is away, and the transcript when a conversation closes. Mails come from
//! the install's address, carry `Auto-Submitted: auto-generated`, stable `Message-ID`s threaded
//! per conversation (`In-Reply-To`/`References`), a text and an HTML part, and visitor text is
//! escaped in the HTML.

use std::fmt::Write as _;
use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::PoolConfig;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::clock::now_ms;
use crate::store::{self, ConversationId, DeliveryMessage, JobRow, MessageId, MessageRow};
use crate::values::Author;

use super::destinations::Destinations;
use super::outcome::{Attempt, Outcome};

mod digest;

/// The SMTP transport and the install's sender address.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// Right-hand side of our `Message-ID`s.
    domain: String,
}

impl Mailer {
    /// From `PORCH_SMTP_URL` and `PORCH_MAIL_FROM`.
    pub fn new(smtp_url: &str, from: &str) -> anyhow::Result<Self> {
        let from: Mailbox = from
            .parse()
            .map_err(|err| anyhow::anyhow!("PORCH_MAIL_FROM is not an address: {err}"))?;
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url)
            .map_err(|err| anyhow::anyhow!("PORCH_SMTP_URL is not an SMTP URL: {err}"))?
            .timeout(Some(Duration::from_secs(30)))
            .pool_config(PoolConfig::new().max_size(4))
            .build();
        let domain = from.email.domain().to_owned();
        Ok(Self {
            transport,
            from,
            domain,
        })
    }

    /// The thread root of a conversation's mails.
    pub fn conversation_id_header(&self, conversation: ConversationId) -> String {
        format!("<porch.conversation-{conversation}@{}>", self.domain)
    }

    /// A mail from the install, automatic, threaded under `thread` if given.
    fn builder(
        &self,
        message_id: String,
        thread: Option<String>,
    ) -> lettre::message::MessageBuilder {
        let mut builder = Message::builder()
            .from(self.from.clone())
            .message_id(Some(message_id))
            .header(AutoSubmitted);
        if let Some(thread) = thread {
            builder = builder.in_reply_to(thread.clone()).references(thread);
        }
        builder
    }

    async fn send(&self, message: Message) -> Result<String, lettre::transport::smtp::Error> {
        let response = self.transport.send(message).await?;
        Ok(response.message().collect::<Vec<_>>().join(" "))
    }

    /// The admin's test-send: a short mail to `to`.
    pub async fn send_test(&self, to: &str) -> Result<(), String> {
        let to: Mailbox = to.parse().map_err(|err| format!("not an address: {err}"))?;
        let id = format!("<porch.test-{}@{}>", now_ms(), self.domain);
        let message = self
            .builder(id, None)
            .to(to)
            .subject("Porch test email")
            .multipart(MultiPart::alternative_plain_html(
                "Porch can send email.".to_owned(),
                "<p>Porch can send email.</p>".to_owned(),
            ))
            .map_err(|err| err.to_string())?;
        self.send(message)
            .await
            .map(|_| ())
            .map_err(|err| err.to_string())
    }
}

/// Which account link a mail carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountLink {
    Invitation,
    PasswordReset,
}

/// Mails an invitation or password-reset link to a team member, if email is configured
/// (`PORCH_SMTP_URL`, `PORCH_MAIL_FROM`). Sent at once rather than through a job: the link's
/// token must not be stored (only its hash is), and the admin sees the link on the team page
/// anyway if the mail does not go. Returns whether it was sent.
pub async fn mail_account_link(
    config: &crate::config::Config,
    name: &str,
    email: &str,
    kind: AccountLink,
    url: &str,
) -> bool {
    let (Some(smtp), Some(from)) = (&config.smtp_url, &config.mail_from) else {
        return false;
    };
    let sent = match Mailer::new(smtp.expose(), from) {
        Ok(mailer) => tokio::time::timeout(
            Duration::from_secs(15),
            mailer.send_account_link(name, email, kind, url),
        )
        .await
        .unwrap_or_else(|_| Err("timed out".into())),
        Err(err) => Err(err.to_string()),
    };
    match sent {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, ?kind, "could not mail an account link");
            false
        }
    }
}

impl Mailer {
    /// The invitation or reset mail itself.
    pub async fn send_account_link(
        &self,
        name: &str,
        email: &str,
        kind: AccountLink,
        url: &str,
    ) -> Result<(), String> {
        let to = Mailbox::new(
            Some(name.to_owned()),
            email
                .parse()
                .map_err(|err| format!("not an address: {err}"))?,
        );
        let (subject, what) = match kind {
            AccountLink::Invitation => (
                "You are invited to Porch",
                "You are invited to answer chats in Porch. Choose a password here",
            ),
            AccountLink::PasswordReset => (
                "Reset your Porch password",
                "Choose a new Porch password here",
            ),
        };
        let text = format!("Hello {name},\n\n{what} (the link works once and expires):\n\n{url}\n");
        let html = format!(
            "<p>Hello {},</p><p>{what} (the link works once and expires):</p>\
             <p><a href=\"{url}\">{url}</a></p>",
            escape_html(name),
            url = escape_html(url),
        );
        let id = format!(
            "<porch.account-{}-{}@{}>",
            now_ms(),
            rand::random::<u32>(),
            self.domain
        );
        let message = self
            .builder(id, None)
            .to(to)
            .subject(subject)
            .multipart(MultiPart::alternative_plain_html(text, html_page(&html)))
            .map_err(|err| err.to_string())?;
        self.send(message)
            .await
            .map(|_| ())
            .map_err(|err| err.to_string())
    }
}

/// `Auto-Submitted: auto-generated` (RFC 3834): vacation responders do not answer.
#[derive(Debug, Clone, Copy)]
struct AutoSubmitted;

impl lettre::message::header::Header for AutoSubmitted {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "auto-generated".to_owned())
    }
}

/// Escapes text for HTML (shared with the admin UI's string-built markup).
pub use porch_app::escape_html;

fn html_page(body: &str) -> String {
    format!("<!doctype html><html><body style=\"font-family: sans-serif\">{body}</body></html>")
}

/// Maps an SMTP failure: 4xx, timeouts and network errors are retried; 5xx fails the mail;
/// a refused login blocks the email integration until an admin fixes the settings.
fn classify(err: &lettre::transport::smtp::Error) -> Outcome {
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
        Outcome::Failed {
            error: format!("the SMTP server refused the mail: {err}"),
        }
    } else {
        Outcome::Retry {
            error: format!("SMTP: {err}"),
            not_before: None,
        }
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

fn failed(error: impl Into<String>) -> Attempt {
    Attempt::new(
        Outcome::Failed {
            error: error.into(),
        },
        None,
    )
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(retry)`
fn retry(error: store::Error) -> Attempt {
    Attempt::new(
        Outcome::Retry {
            error: error.to_string(),
            not_before: None,
        },
        None,
    )
}

#[derive(serde::Deserialize)]
struct Args {
    conversation_id: ConversationId,
    #[serde(default)]
    message_id: Option<MessageId>,
}

/// Delivers an `email.*` job.
pub async fn deliver(destinations: &Destinations, job: &JobRow) -> Attempt {
    let Some(mailer) = destinations.mailer.as_deref() else {
        return Attempt::new(
            Outcome::Blocked {
                error: "email is not configured (PORCH_SMTP_URL, PORCH_MAIL_FROM)".into(),
            },
            None,
        );
    };
    let Ok(args) = serde_json::from_str::<Args>(&job.args) else {
        return failed("unreadable job arguments");
    };
    let sent = match job.kind.as_str() {
        "email.unanswered" => digest::digest(destinations, mailer, job).await,
        "email.reply" => match args.message_id {
            Some(message) => reply(destinations, mailer, message).await,
            None => return failed("the job names no message"),
        },
        "email.transcript" => transcript(destinations, mailer, args.conversation_id, job).await,
        other => return failed(format!("unknown email kind {other}")),
    };
    match sent {
        Ok(note) => done(&note),
        Err(attempt) => attempt,
    }
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
    let Some(to) = visitor_mailbox(&message) else {
        return Ok("the visitor left no valid address".into());
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
        escape_html(&message.body).replace('\n', "<br>")
    );
    let id = format!("<porch.message-{}@{}>", message.id, mailer.domain);
    let subject = format!("New reply from {}", message.site_name);
    send_to_visitor(
        mailer,
        id,
        message.conversation_id,
        to,
        subject,
        text,
        &html,
    )
    .await
}

/// Sends a mail to a visitor in their conversation's thread (replies go to the install's
/// address); returns the SMTP server's answer.
async fn send_to_visitor(
    mailer: &Mailer,
    message_id: String,
    conversation: ConversationId,
    to: Mailbox,
    subject: String,
    text: String,
    html: &str,
) -> Result<String, Attempt> {
    let mail = mailer
        .builder(
            message_id,
            Some(mailer.conversation_id_header(conversation)),
        )
        .to(to)
        .reply_to(mailer.from.clone())
        .subject(subject)
        .multipart(MultiPart::alternative_plain_html(text, html_page(html)))
        .map_err(|err| failed(err.to_string()))?;
    mailer
        .send(mail)
        .await
        .map_err(|err| Attempt::new(classify(&err), None))
}

fn visitor_mailbox(message: &DeliveryMessage) -> Option<Mailbox> {
    message.visitor_email.as_deref()?.parse().ok()
}

/// The conversation's visitor messages and agent replies up to the closing (the job's creation),
/// mailed to the visitor. A retry carries the same messages under the same `Message-ID`, even if
/// the conversation was reopened and written to meanwhile; closing it again is another job, so
/// another mail with its own `Message-ID`.
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
            let rows = store::list_conversation_messages(c, conversation)?;
            let first = rows
                .iter()
                .find(|m| m.author == Author::Visitor)
                .map(|m| m.id);
            let context = match first {
                Some(id) => store::load_delivery_message(c, id)?,
                None => None,
            };
            Ok((rows, context))
        })
        .await
        .map_err(retry)?;
    let (rows, Some(context)) = loaded else {
        return Ok("no visitor message".into());
    };
    let Some(to) = visitor_mailbox(&context) else {
        return Ok("the visitor left no valid address".into());
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
        let _ = writeln!(text, "{who}: {}\n", m.body);
        let _ = write!(
            html,
            "<p><b>{}</b><br>{}</p>",
            escape_html(&who),
            escape_html(&m.body).replace('\n', "<br>")
        );
    }
    let id = format!("<porch.transcript-{}@{}>", job.id, mailer.domain);
    let subject = format!("Your conversation on {}", context.site_name);
    send_to_visitor(mailer, id, conversation, to, subject, text, &html).await
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
