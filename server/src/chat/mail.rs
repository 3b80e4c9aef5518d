//! A visitor's reply by email, posted as their message through the same writes as a widget
//! message (so every integration and open inbox sees it alike), exactly once per mail: the
//! mail's record in `mail_inbound` commits together with the message.

use std::sync::Arc;

use crate::store::{
    self, InboundMailRow, MailThreadRow, NewVisitorMessage, StoredVisitorMessage, VisitorDetails,
};
use crate::values::{ClientId, MessageBody};

use super::conversation::publish_visitor_message;
use super::writes::store_visitor_message;
use super::{Chat, Error};

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
                    store::reopen_conversation(c, conversation)?;
                    let (stored, jobs) = store_visitor_message(c, &new)?;
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
