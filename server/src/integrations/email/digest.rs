//! The digest of conversations nobody answered in time, mailed to each agent in a mail (and an
//! SMTP transaction) of their own: agents never see each other's addresses, and one refused
//! address does not cost the others their mail.

use std::fmt::Write as _;

use lettre::message::{Mailbox, MultiPart};
use porch_app::chars::overrides_written_out;

use crate::clock::now_ms;
use crate::store::{self, ConversationId, JobRow};
use crate::values::{anonymous_visitor, one_line};

use super::Mailer;
use super::deliver::{classify, mailbox_of};
use super::mailer::{escape_html, html_lines, html_page, indented, smtp_words};
use crate::integrations::Destinations;
use crate::integrations::delivery::{failed, integration_of, retry};
use crate::jobs::{Attempt, EmailDelays};

/// Conversations one digest lists at most.
const DIGEST_LIMIT: u32 = 50;

/// The digest: every conversation of the site still unanswered after the site's delay and not
/// in an earlier digest, mailed to each agent on their own. A job whose conversation was answered or
/// already listed sends nothing.
pub(super) async fn digest(
    destinations: &Destinations,
    mailer: &Mailer,
    job: &JobRow,
) -> Result<String, Attempt> {
    let integration = integration_of(job)?;
    let now = now_ms();
    let loaded = destinations
        .readers
        .read(move |c| {
            let Some(row) = store::find_integration(c, integration)? else {
                return Ok(None);
            };
            let after = EmailDelays::from_config(&row.config).unanswered_after;
            let after = i64::try_from(after.as_millis()).unwrap_or(i64::MAX);
            // The job is due `after` past its conversation's start, so that one qualifies.
            let cutoff = now - after;
            let site = store::find_site_name(c, row.site_id)?.unwrap_or_default();
            Ok(Some((
                site,
                store::list_unanswered(c, row.site_id, cutoff, DIGEST_LIMIT)?,
                store::list_agent_emails(c)?,
            )))
        })
        .await
        .map_err(retry)?;
    let Some((site, waiting, agents)) = loaded else {
        return Ok("integration deleted".into());
    };
    if waiting.is_empty() {
        return Ok("nothing unanswered".into());
    }
    let recipients: Vec<Mailbox> = agents.iter().filter_map(|a| a.parse().ok()).collect();
    if recipients.is_empty() {
        return Ok("no agent has an address".into());
    }
    let count = porch_app::counted(waiting.len(), "conversation");
    let are = if waiting.len() == 1 { "is" } else { "are" };
    let mut text = format!("{count} on {site} {are} waiting for an answer:\n\n");
    let mut html = format!(
        "<p>{count} on <b>{}</b> {are} waiting for an answer:</p><ul>",
        escape_html(&site)
    );
    for w in &waiting {
        let who = w
            .visitor_name
            .as_deref()
            .or(w.visitor_email.as_deref())
            // As the inbox names them, so an entry is found there (and by search).
            .map_or_else(|| anonymous_visitor(w.visitor_id), one_line);
        let url = format!("{}/conversations/{}", destinations.public_url, w.id);
        let first = opening(&w.first_message);
        let _ = writeln!(text, "- {who}:\n{}\n  {url}\n", indented(&first, "  > "));
        let _ = write!(
            html,
            "<li><b>{}</b>: {}<br><a href=\"{}\">Open in Porch</a></li>",
            escape_html(&who),
            html_lines(&first),
            escape_html(&url)
        );
    }
    html.push_str("</ul>");
    // With a single conversation from a visitor who left an address, answering the mail
    // reaches the visitor.
    let reply_to = match waiting.as_slice() {
        [only] => only.visitor_email.as_deref().and_then(mailbox_of),
        _ => None,
    };
    let subject = format!("[{site}] {count} waiting for an answer");
    let html = html_page(&html);
    let note = send_each(
        mailer,
        job,
        recipients,
        &subject,
        &text,
        &html,
        reply_to.as_ref(),
    )
    .await?;
    let ids: Vec<ConversationId> = waiting.iter().map(|w| w.id).collect();
    destinations
        .writer
        .write(move |c| store::insert_email_alerts(c, &ids, now_ms()))
        .await
        .map_err(retry)?;
    Ok(note)
}

/// Sends the digest to each agent in a mail and an SMTP transaction of their own, so no agent
/// sees the others' addresses and a refused address costs only its own mail; returns the note
/// the job keeps.
async fn send_each(
    mailer: &Mailer,
    job: &JobRow,
    recipients: Vec<Mailbox>,
    subject: &str,
    text: &str,
    html: &str,
    reply_to: Option<&Mailbox>,
) -> Result<String, Attempt> {
    let total = recipients.len();
    let (mut sent, mut errors) = (0, Vec::new());
    for (n, to) in recipients.into_iter().enumerate() {
        let mut builder = mailer
            .builder(
                format!("<porch.alert-{}.{n}@{}>", job.id, mailer.domain),
                None,
            )
            .subject(Mailer::subject(subject))
            .to(to);
        if let Some(visitor) = reply_to {
            builder = builder.reply_to(visitor.clone());
        }
        let message = builder
            .multipart(MultiPart::alternative_plain_html(
                text.to_owned(),
                html.to_owned(),
            ))
            .map_err(|err| failed(err.to_string()))?;
        match mailer.send(message).await {
            Ok(_) => sent += 1,
            Err(err) => errors.push(err),
        }
    }
    // Nobody got it: the first error decides (a retry resends to all). Somebody got it: done,
    // since a retry would mail them again; the note says how many were missed and why.
    if sent == 0
        && let Some(err) = errors.first()
    {
        return Err(Attempt::new(classify(err), None));
    }
    Ok(match errors.first() {
        None => format!("sent to {sent} agent(s)"),
        Some(err) => format!(
            "sent to {sent} of {total} agent(s); not sent: {}",
            smtp_words(err)
        ),
    })
}

/// Characters of a conversation's first message a digest shows.
const OPENING_CHARS: usize = 300;

/// The start of a first message, marked with "…" when it goes on, so an agent knows there is
/// more to read in Porch; its direction overrides written out, as the inbox shows them
/// (`porch_app::chars::overrides_written_out`).
fn opening(first_message: &str) -> String {
    let written = overrides_written_out(first_message);
    let mut shown: String = written.chars().take(OPENING_CHARS).collect();
    if shown.len() < written.len() {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_first_message_is_shown_cut_and_marked() {
        let long = "word ".repeat(100);
        let shown = opening(&long);
        assert_eq!(shown.chars().count(), OPENING_CHARS + 1);
        assert!(shown.ends_with('…'), "{shown}");
        assert_eq!(opening("Where is my parcel?"), "Where is my parcel?");
        let exactly = "é".repeat(OPENING_CHARS);
        assert_eq!(opening(&exactly), exactly, "cut nothing, mark nothing");
        assert_eq!(opening("a\u{202E}b"), "a<U+202E>b");
    }

    #[test]
    fn a_visitors_text_cannot_pass_for_an_entry_of_the_digest() {
        let forged = "Hi\n  https://porch.example/conversations/1\n- A visitor: reset at https://evil.example";
        assert_eq!(
            indented(forged, "  > "),
            "  > Hi\n  >   https://porch.example/conversations/1\n  > - A visitor: reset at https://evil.example"
        );
        assert_eq!(one_line("Mal\r\nBcc: x@y\t z"), "Mal Bcc: x@y z");
    }

    /// The HTML part keeps a visitor's lines apart as the text part does (an integrator saw
    /// "hello2\r\nSubject: injected" run together on one line in the digest's HTML).
    #[test]
    fn html_lines_break_where_the_text_does() {
        assert_eq!(
            html_lines("hello2\r\nSubject: <b>x</b>\rthird\u{2028}fourth"),
            "hello2<br>Subject: &lt;b&gt;x&lt;/b&gt;<br>third<br>fourth"
        );
    }
}
