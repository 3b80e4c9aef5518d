//! A mail an agent wrote to a visitor from the conversation page (`email.agent`): the agent's
//! message as the text, the subject they typed, threaded under the conversation's mail token so
//! the visitor's answer is read back into the conversation by the IMAP reader.

use super::deliver::{VisitorThread, send_to_visitor, visitor_mailbox};
use super::mailer::{Mailer, escape_html, html_lines};
use crate::integrations::Destinations;
use crate::integrations::delivery::{failed, retry};
use crate::jobs::Attempt;
use crate::store::{self, MessageId};

/// Sends the agent's mail, whether the visitor is online or not (the agent chose to email);
/// returns the SMTP server's answer. Every attempt sends the same mail under the same
/// `Message-ID`.
pub(super) async fn agent_mail(
    destinations: &Destinations,
    mailer: &Mailer,
    message: MessageId,
) -> Result<String, Attempt> {
    let loaded = destinations
        .readers
        .read(move |c| {
            let Some(message) = store::load_delivery_message(c, message)? else {
                return Ok(None);
            };
            let subject = store::find_outbound_mail_subject(c, message.id)?;
            Ok(Some((message, subject)))
        })
        .await
        .map_err(retry)?;
    let Some((message, subject)) = loaded else {
        return Ok("message deleted".into());
    };
    let subject = subject.ok_or_else(|| failed("the message is not a mail (no subject)"))?;
    let to = visitor_mailbox(&message)?.ok_or_else(|| failed("the visitor left no address"))?;
    let agent = message
        .author_name
        .clone()
        .unwrap_or_else(|| "An agent".into());
    // An answer is read back only where a mailbox is read; elsewhere nobody would see it.
    let invite = if mailer.reads_replies() {
        "Answer this mail to reply in the conversation."
    } else {
        ""
    };
    let text = format!(
        "{}\n\n-- \n{agent}, {}\n{invite}\n",
        message.body, message.site_name
    );
    let html = format!(
        "<p>{}</p><p>-- <br>{}, {}<br>{invite}</p>",
        html_lines(&message.body),
        escape_html(&agent),
        escape_html(&message.site_name)
    );
    let thread = VisitorThread::of(destinations, message.conversation_id).await?;
    let id = mailer.visitor_mail_id(&format!("message-{}", message.id), &thread.token);
    send_to_visitor(mailer, id, &thread, to, subject, text, &html).await
}
