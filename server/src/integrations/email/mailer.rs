//! The SMTP transport (lettre, pooled connections), built once from `PORCH_SMTP_URL` and
//! `PORCH_MAIL_FROM`: every mail comes from the install's address, carries
//! `Auto-Submitted: auto-generated` and a stable `Message-ID`, with a text and an HTML part.
//! Also the account-link mails (invitations, password resets), sent at once.

use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::PoolConfig;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::clock::now_ms;
use crate::store::ConversationId;

/// The SMTP transport and the install's sender address.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    pub(super) from: Mailbox,
    /// Right-hand side of our `Message-ID`s.
    pub(super) domain: String,
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
    pub(super) fn builder(
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

    pub(super) async fn send(
        &self,
        message: Message,
    ) -> Result<String, lettre::transport::smtp::Error> {
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
    mailer: Option<&Mailer>,
    name: &str,
    email: &str,
    kind: AccountLink,
    url: &str,
) -> bool {
    let Some(mailer) = mailer else {
        return false;
    };
    let sent = tokio::time::timeout(
        Duration::from_secs(15),
        mailer.send_account_link(name, email, kind, url),
    )
    .await
    .unwrap_or_else(|_| Err("timed out".into()));
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

pub(super) fn html_page(body: &str) -> String {
    format!("<!doctype html><html><body style=\"font-family: sans-serif\">{body}</body></html>")
}
