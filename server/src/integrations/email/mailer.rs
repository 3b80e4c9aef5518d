//! The SMTP transport (lettre, a connection per mail), built once from `PORCH_SMTP_URL` and
//! `PORCH_MAIL_FROM`: every mail comes from the install's address, carries
//! `Auto-Submitted: auto-generated` and a stable `Message-ID`, with a text and an HTML part.
//! Also the mails to team members: account links (invitations, password resets) and tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::accounts::{INVITE_LIFETIME, RESET_LIFETIME};
use crate::clock::now_ms;
use crate::jobs::{AccountLink, AccountLinkArgs};
use crate::store::JobId;
use crate::values::{lines_as_shown, listed_in_words};

/// The SMTP server as the email page shows it: never the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpSummary {
    pub host: String,
    pub port: u16,
    /// `implicit TLS`, `STARTTLS (required)`, `STARTTLS (if offered)` or `none`.
    pub tls: &'static str,
    /// The URL carries a user name and password.
    pub has_login: bool,
    /// `PORCH_MAIL_FROM`.
    pub sender: String,
}

impl SmtpSummary {
    /// Reads `PORCH_SMTP_URL` the way lettre does (the same default ports per mode).
    fn of(smtp_url: &str, from: &Mailbox) -> Option<Self> {
        let url = reqwest::Url::parse(smtp_url).ok()?;
        let tls_param = url
            .query_pairs()
            .find(|(k, _)| k == "tls")
            .map(|(_, v)| v.into_owned());
        let (tls, default_port) = match (url.scheme(), tls_param.as_deref()) {
            ("smtps", _) => ("implicit TLS", 465),
            ("smtp", Some("required")) => ("STARTTLS (required)", 587),
            ("smtp", Some("opportunistic")) => ("STARTTLS (if offered)", 587),
            _ => ("none", 25),
        };
        Some(Self {
            host: url.host_str()?.to_owned(),
            port: url.port().unwrap_or(default_port),
            tls,
            has_login: url.password().is_some(),
            sender: from.to_string(),
        })
    }
}

/// How long a mail's whole SMTP exchange may take. lettre's own timeout bounds the TCP connect
/// only, so a server that accepts and then says nothing (a tarpit, a half-open firewall) held the
/// mail, and one of the email lane's places, for as long as it kept the socket open. Each mail
/// has a connection of its own (no pool), so one cut off here is closed with it. Cut off after
/// its data was sent, a mail the server did accept is sent again by the retry (a duplicate, the
/// price of never losing one; docs/integrations/email.md).
const SEND_DEADLINE: Duration = Duration::from_mins(1);
/// The API's test mail is answered within the request's own time (15 s by default).
const TEST_DEADLINE: Duration = Duration::from_secs(10);

/// Why a mail was not sent.
#[derive(Debug)]
pub(super) enum SendError {
    /// What lettre said: the server's answer, or no connection.
    Smtp(lettre::transport::smtp::Error),
    /// The exchange did not end within its deadline.
    NoAnswer,
}

/// The SMTP transport and the install's sender address.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    /// What the email page shows of the server.
    pub summary: Option<SmtpSummary>,
    pub(super) from: Mailbox,
    /// Right-hand side of our `Message-ID`s.
    pub(super) domain: String,
    /// Whether a mailbox is read for visitors' answers (`PORCH_IMAP_URL`, or the one the email
    /// page saved), as the mail reader keeps it: only then may a mail invite one.
    reads_replies: Arc<AtomicBool>,
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
            .build();
        let domain = from.email.domain().to_owned();
        Ok(Self {
            transport,
            summary: SmtpSummary::of(smtp_url, &from),
            from,
            domain,
            reads_replies: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Whether visitors' answers by mail are read back into their conversations now.
    pub fn reads_replies(&self) -> bool {
        self.reads_replies.load(Ordering::Relaxed)
    }

    /// The flag behind [`Self::reads_replies`], for the mail reader to keep.
    pub(super) fn replies_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.reads_replies)
    }

    /// A `Message-ID` of a mail to a conversation's visitor: `what` (`conversation-7` for the
    /// thread root, `message-42`, `transcript-9`) and the conversation's mail token, which a
    /// reply's `In-Reply-To`/`References` must name to be read back into the conversation.
    pub fn visitor_mail_id(&self, what: &str, token: &str) -> String {
        format!("<porch.{what}.{token}@{}>", self.domain)
    }

    /// The domain of Porch's `Message-ID`s (`PORCH_MAIL_FROM`'s).
    pub fn domain(&self) -> &str {
        &self.domain
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

    /// A `Subject` as typed: a word like `=?utf-8?q?…?=` would be decoded by mail programs as
    /// an encoded word (RFC 2047) into other text, even a line break, so a word joiner (U+2060,
    /// invisible) goes between its `=` and `?`; the word then has a character beyond ASCII, and
    /// lettre encodes it as a whole, to be shown as written.
    pub(super) fn subject(text: &str) -> String {
        text.replace("=?", "=\u{2060}?")
    }

    /// Sends `message`; the server's answer in words.
    pub(super) async fn send(&self, message: Message) -> Result<String, SendError> {
        self.send_within(message, SEND_DEADLINE).await
    }

    async fn send_within(&self, message: Message, deadline: Duration) -> Result<String, SendError> {
        let response = tokio::time::timeout(deadline, self.transport.send(message))
            .await
            .map_err(|_| SendError::NoAnswer)?
            .map_err(SendError::Smtp)?;
        Ok(response.message().collect::<Vec<_>>().join(" "))
    }

    /// The admin's test mail to `to`.
    ///
    /// # Errors
    /// `to` is not an address.
    pub(super) fn test_message(&self, to: &str) -> Result<Message, String> {
        let to: Mailbox = to.parse().map_err(|err| format!("not an address: {err}"))?;
        let id = format!("<porch.test-{}@{}>", now_ms(), self.domain);
        self.builder(id, None)
            .to(to)
            .subject("Porch test email")
            .multipart(MultiPart::alternative_plain_html(
                "Porch can send email.".to_owned(),
                "<p>Porch can send email.</p>".to_owned(),
            ))
            .map_err(|err| err.to_string())
    }

    /// The admin's test mail, sent at once (the API's test; the admin page queues a job).
    pub async fn send_test(&self, to: &str) -> Result<(), String> {
        let message = self.test_message(to)?;
        self.send_within(message, TEST_DEADLINE)
            .await
            .map(|_| ())
            .map_err(|err| smtp_words(&err))
    }

    /// An invitation or password-reset mail. Its `Message-ID` is the job's, so a retry after
    /// an uncertain send is recognisable as the same mail.
    ///
    /// # Errors
    /// The address does not parse.
    pub(super) fn account_link_message(
        &self,
        job: JobId,
        link: &AccountLinkArgs,
    ) -> Result<Message, String> {
        let name = link.name.as_str();
        // Names are refused with control characters, but one stored before that rule must not
        // break the header (lettre panics on a line break in a display name).
        let printable: String = name.chars().filter(|c| !c.is_control()).collect();
        let to = Mailbox::new(
            Some(printable).filter(|n| !n.trim().is_empty()),
            link.email
                .parse()
                .map_err(|err| format!("not an address: {err}"))?,
        );
        let by = link.made_by.as_deref().unwrap_or("An admin of your team");
        let (subject, what, after) = match &link.link {
            AccountLink::Invitation => (
                "You are invited to Porch",
                format!(
                    "{by} invited you to answer chats{} in Porch, your team's live chat. Choose \
                     a password here",
                    invited_for(&link.sites)
                ),
                None,
            ),
            AccountLink::PasswordReset => (
                "Reset your Porch password",
                format!("{by} made you a link to choose a new Porch password. Choose it here"),
                None,
            ),
            AccountLink::RequestedInvitation => (
                "You are invited to Porch",
                "You are invited to answer chats in Porch, and someone asked for a password for \
                 this address on the sign-in page. Choose one here"
                    .to_owned(),
                Some(
                    "If it was not you, ignore this mail. This link replaces any earlier \
                     invitation link for this address.",
                ),
            ),
            AccountLink::RequestedReset => (
                "Reset your Porch password",
                "Someone asked to reset the password of your Porch account. If that was you, \
                 choose a new one here"
                    .to_owned(),
                Some("If it was not you, ignore this mail: your password stays as it is."),
            ),
            AccountLink::SingleSignOn { label } => (
                "How you sign in to Porch",
                format!(
                    "Someone asked to reset the password of your Porch account. It has no \
                     password: you sign in with single sign-on, with the button \u{201c}{label}\
                     \u{201d} on the sign-in page"
                ),
                Some(
                    "If you need a password, ask an admin of your team. If it was not you, \
                     ignore this mail.",
                ),
            ),
        };
        // The sign-in page's address is no link to a password: nothing to say about its use. A
        // link says how long it lasts, as the admin's page does (docs/admin.md, "Team").
        let hours = |lifetime: std::time::Duration| lifetime.as_secs() / 3600;
        let about = match link.link {
            AccountLink::SingleSignOn { .. } => String::new(),
            AccountLink::Invitation | AccountLink::RequestedInvitation => format!(
                " (the link works once, for {} days)",
                hours(INVITE_LIFETIME) / 24
            ),
            AccountLink::PasswordReset | AccountLink::RequestedReset => format!(
                " (the link works once, for {} hours)",
                hours(RESET_LIFETIME)
            ),
        };
        let url = link.url.as_str();
        let text_after = after.map(|a| format!("\n{a}\n")).unwrap_or_default();
        let text = format!("Hello {name},\n\n{what}{about}:\n\n{url}\n{text_after}");
        let html = format!(
            "<p>Hello {},</p><p>{}{about}:</p><p><a href=\"{url}\">{url}</a></p>{}",
            escape_html(name),
            escape_html(&what),
            after.map(|a| format!("<p>{a}</p>")).unwrap_or_default(),
            url = escape_html(url),
        );
        let id = format!("<porch.account-{job}@{}>", self.domain);
        self.builder(id, None)
            .to(to)
            .subject(Self::subject(subject))
            .multipart(MultiPart::alternative_plain_html(text, html_page(&html)))
            .map_err(|err| err.to_string())
    }
}

/// " for Shop and Café" in an invitation: the sites an invited person will answer for, so that
/// the mail reads as the business's; the first three, then how many more.
fn invited_for(sites: &[String]) -> String {
    const NAMED: usize = 3;
    match sites.len() {
        0 => String::new(),
        n if n <= NAMED => format!(" for {}", listed_in_words(sites)),
        n => {
            let more = n - NAMED;
            let noun = if more == 1 { "site" } else { "sites" };
            format!(
                " for {}, {}, {} and {more} more {noun}",
                sites[0], sites[1], sites[2]
            )
        }
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

/// `text` with `prefix` before every line, for the text part of a mail (see [`indented`]).
pub use crate::values::indented;

/// Text for a mail's HTML part: escaped, each line break (as [`indented`] counts them) a `<br>`,
/// so its lines stand as the text part shows them.
pub fn html_lines(text: &str) -> String {
    lines_as_shown(text)
        .into_iter()
        .map(escape_html)
        .collect::<Vec<_>>()
        .join("<br>")
}

/// An SMTP failure in words. The server's own answer (`permanent error (550): …`) is kept as
/// lettre says it; a failure before any answer (no connection, a refused certificate, no
/// STARTTLS) is said the way HTTP destinations' are, rather than as lettre's chain
/// ("Connection error: Connection error: invalid peer certificate: Other(OtherError(…))").
pub(super) fn smtp_words(err: &SendError) -> String {
    let err = match err {
        SendError::Smtp(err) => err,
        SendError::NoAnswer => return crate::integrations::send_error::described("", true),
    };
    if err.status().is_some() {
        return err.to_string();
    }
    let chain = crate::integrations::send_error::error_chain(err);
    if chain.contains("STARTTLS is not supported") {
        return "the SMTP server does not offer STARTTLS, and the SMTP URL requires TLS".to_owned();
    }
    crate::integrations::send_error::described(&chain, err.is_timeout())
}

pub(super) fn html_page(body: &str) -> String {
    format!("<!doctype html><html><body style=\"font-family: sans-serif\">{body}</body></html>")
}

#[cfg(test)]
mod tests {
    use super::{html_lines, invited_for};

    #[test]
    fn an_invitation_names_three_sites_then_how_many_more() {
        let sites = |n: usize| (1..=n).map(|i| format!("S{i}")).collect::<Vec<_>>();
        assert_eq!(invited_for(&sites(0)), "");
        assert_eq!(invited_for(&sites(1)), " for S1");
        assert_eq!(invited_for(&sites(3)), " for S1, S2 and S3");
        assert_eq!(invited_for(&sites(4)), " for S1, S2, S3 and 1 more site");
        assert_eq!(invited_for(&sites(5)), " for S1, S2, S3 and 2 more sites");
    }

    #[test]
    fn every_break_a_mail_client_may_show_is_a_break_in_html() {
        assert_eq!(
            html_lines("a\r\nb\rc\u{2028}<d>\u{2029}e\nf"),
            "a<br>b<br>c<br>&lt;d&gt;<br>e<br>f"
        );
    }
}
