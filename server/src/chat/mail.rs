//! Email as a channel, both ways: a visitor's reply by email, posted as their message through
//! the same writes as a widget message (so every integration and open inbox sees it alike),
//! exactly once per mail (the mail's record in `mail_inbound` commits together with the
//! message); and a mail an agent writes to the visitor, stored as the agent's message with its
//! `email.agent` job.

use std::sync::Arc;

use crate::clock::now_ms;
use crate::jobs::{ConversationChange, plan_conversation_change};
use crate::store::{
    self, ConversationId, InboundMailRow, MailThreadRow, NewAgentMessage, NewVisitorMessage,
    StoredVisitorMessage, VisitorDetails,
};
use crate::values::{ClientId, Invalid, MessageBody};

use super::conversation::{
    Agent, PostedMessage, agent_row, publish_agent_message, publish_visitor_message,
};
use super::writes::{AgentPosting, store_agent_mail, store_visitor_message};
use super::{Chat, Error};

/// Longest subject of a mail an agent writes, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// The subject of a mail an agent writes: trimmed, 1 to [`MAX_SUBJECT_CHARS`] characters, no
/// control characters (a line break would end the header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailSubject(String);

impl MailSubject {
    /// Trims white space at both ends and checks the length and characters.
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(Invalid::from("The subject is empty."));
        }
        if trimmed.chars().count() > MAX_SUBJECT_CHARS {
            return Err(Invalid::from("The subject is longer than 200 characters."));
        }
        // The Unicode line and paragraph separators break a line as a control character does.
        if trimmed.chars().any(crate::values::breaks_the_line) {
            return Err(Invalid::from("The subject must be one line."));
        }
        Ok(Self(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A checked mail reply, ready to post.
#[derive(Debug, Clone)]
pub struct MailReply {
    /// The conversation the mail answers and its visitor.
    pub thread: MailThreadRow,
    /// The record to keep (its conversation and message are filled in when posted).
    pub record: InboundMailRow,
    /// Derived from the mail's id: the visitor's `(visitor, client_id)` dedupe holds as well.
    pub client_id: ClientId,
    pub body: MessageBody,
}

impl Chat {
    /// Posts a mail reply as the visitor's message, reopening the conversation it answers if it
    /// was closed (unless the visitor has opened another since: then it goes there, as a widget
    /// message would). `None` when the mail was posted or recorded before.
    pub async fn post_mail_reply(
        &self,
        reply: MailReply,
    ) -> Result<Option<StoredVisitorMessage>, Error> {
        let new = NewVisitorMessage {
            site_id: reply.thread.site_id,
            visitor_id: Some(reply.thread.visitor_id),
            // Unused: the visitor exists, so nothing is upserted by token.
            token_hash: [0; 32],
            // Unused: a mail reply names no uploads.
            upload_hash: [0; 32],
            details: VisitorDetails::default(),
            client_id: reply.client_id,
            body: reply.body,
            attachments: Vec::new(),
            now: reply.record.received_at,
        };
        let published = new.clone();
        let hub = Arc::clone(&self.hub);
        let (conversation, mut record) = (reply.thread.conversation_id, reply.record);
        let stored = self
            .writer
            .write_then(
                move |c| {
                    if store::has_inbound_mail(c, &record.mail_id)? {
                        return Ok(None);
                    }
                    let reopened = store::reopen_conversation(c, conversation)?;
                    let (stored, mut jobs) = store_visitor_message(c, &new)?;
                    if reopened {
                        // Slack's thread header says "Closed" until rewritten, as for an agent's
                        // reopen (after the post, in the conversation's order).
                        let change = ConversationChange::Reopened;
                        jobs.extend(plan_conversation_change(c, conversation, change, new.now)?);
                    }
                    record.conversation_id = Some(stored.conversation_id);
                    record.message_id = Some(stored.id);
                    store::insert_inbound_mail(c, &record)?;
                    Ok(Some((stored, jobs)))
                },
                move |stored: &Option<(StoredVisitorMessage, Vec<store::JobRow>)>| {
                    if let Some((stored, _)) = stored {
                        publish_visitor_message(&hub, &published, stored, None);
                    }
                },
            )
            .await?;
        let Some((stored, jobs)) = stored else {
            return Ok(None);
        };
        self.jobs.submit(jobs);
        Ok(Some(stored))
    }

    /// Mails `body` to the conversation's visitor with `subject`: stored as `agent`'s message
    /// (shown live to the visitor and the inbox, posted to the chat integrations like any reply)
    /// marked as sent by email, with an `email.agent` job per enabled email integration, all in
    /// one transaction.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the visitor left no address or the site's email is not on.
    pub async fn email_visitor(
        &self,
        conversation_id: ConversationId,
        agent: &Agent,
        subject: MailSubject,
        body: MessageBody,
        client_id: Option<ClientId>,
    ) -> Result<PostedMessage, Error> {
        let conversation = self.find_conversation(conversation_id).await?;
        let new = NewAgentMessage {
            conversation_id,
            site_id: conversation.site_id,
            user_id: agent.user_id,
            author_name: agent.name.clone(),
            body,
            is_note: false,
            attachments: Vec::new(),
            client_id,
            now: now_ms(),
        };
        let (stored, published) = (new.clone(), new.clone());
        let hub = Arc::clone(&self.hub);
        let written = self
            .writer
            .write_then(
                move |c| store_agent_mail(c, &stored, subject.as_str()),
                move |written: &Result<AgentPosting, Error>| {
                    if let Ok(AgentPosting::Stored(stored, _)) = written {
                        publish_agent_message(&hub, &conversation, agent_row(stored, &published));
                    }
                },
            )
            .await?;
        Ok(self.posted(written?, &new))
    }

    /// Records a mail that is not posted (refused or skipped, with the reason admins see);
    /// false if it was recorded before.
    pub async fn record_inbound_mail(&self, record: InboundMailRow) -> Result<bool, Error> {
        Ok(self
            .writer
            .write(move |c| store::insert_inbound_mail(c, &record))
            .await?)
    }

    /// Forgets inbound mail records received before `cutoff` (ms).
    pub async fn forget_inbound_mail_before(&self, cutoff: i64) -> Result<usize, Error> {
        Ok(self
            .writer
            .write(move |c| store::delete_inbound_mail_before(c, cutoff))
            .await?)
    }
}
