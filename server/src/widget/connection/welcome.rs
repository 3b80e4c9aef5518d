//! The `welcome` frame: the token checked (or a new one), the site as the widget shows it and the
//! first page of what the visitor missed, the rest after it. A child of `connection`, so it works
//! on the connection's own state.

use crate::chat::{HistoryPage, hash_token};
use crate::store::{self, MessageId, MessageRow};

use super::super::identity::visitor_hash;
use super::super::protocol::{MessageFrame, ServerFrame, VERSION};
use super::super::receipts;
use super::{Closed, Connection};

impl Connection {
    /// Checks the token and sends `welcome` with the first page of what the visitor missed,
    /// then the rest as `message` frames, oldest first. The subscription comes before the
    /// read: a message committed meanwhile is in the read, in the subscription, or in both
    /// (then `sent_up_to` drops the repeat), never in neither.
    pub(super) async fn welcome(&mut self, token: &str, last_id: MessageId) -> Result<(), Closed> {
        let token = if self.app.tokens.verify(&self.site.key, token) {
            token.to_owned()
        } else {
            self.app.tokens.issue(&self.site.key)
        };
        self.token_hash = visitor_hash(&self.site.key, self.context.identity.as_ref(), &token);
        // Uploads (`POST /widget/attachments`) carry the token alone, so they are this
        // browser's, even for a verified user.
        self.upload_hash = hash_token(&token);
        self.visitor_key = u64::from_le_bytes(self.token_hash[..8].try_into().unwrap_or([0; 8]));
        let first = match self.follow_visitor().await? {
            Some(visitor) => {
                let page = self.history_page(visitor.id, last_id).await?;
                // A `last_id` beyond every stored id (a client's bug: counting acks, say)
                // would hold back each live message with a lower id: start from the newest.
                if let Some(newest) = page.newest_id {
                    self.sent_up_to = self.sent_up_to.min(newest);
                }
                page
            }
            None => {
                // Nothing is stored for a visitor not stored yet: any `last_id` is beyond it.
                self.sent_up_to = MessageId(0);
                HistoryPage {
                    messages: Vec::new(),
                    has_more: false,
                    newest_id: None,
                }
            }
        };
        let fitting = &first.messages[..fitting_welcome(&first.messages)];
        let more = first.has_more || fitting.len() < first.messages.len();
        let site = &self.site;
        // Read at each welcome, not cached with the site: turning email on or off takes effect
        // for the next visitor to connect. A failed read only means no offer of email.
        let site_id = site.id;
        let mails_replies = self.app.mailer.is_some()
            && self
                .app
                .readers
                .read(move |c| store::has_active_email(c, site_id))
                .await
                .is_ok_and(|on| on);
        let frame = ServerFrame::Welcome {
            v: VERSION,
            token: &token,
            site: super::super::welcome_site::site_info(
                site,
                (self.app.chat.hub().has_inbox_subscribers(), mails_replies),
                self.app.wall_clock.now_ms(),
                self.asks_prechat,
            ),
            messages: fitting.iter().map(MessageFrame::from).collect(),
            more,
        };
        let text = frame.to_json();
        self.send(text).await?;
        if let Some(last) = fitting.last() {
            self.sent_up_to = self.sent_up_to.max(last.id);
        }
        if let Some(visitor) = self.visitor_id.filter(|_| more) {
            self.send_after(visitor).await?;
        }
        for text in receipts::on_resume(&self.app.chat, self.visitor_id).await {
            self.send(text).await?;
        }
        Ok(())
    }
}

/// Bytes of messages a `welcome` carries at most: every frame must fit the connection's write
/// buffer (`MAX_WRITE_BUFFER`, 256 KiB) whole, and 500 messages of 4,000 characters would not.
const WELCOME_MESSAGE_BYTES: usize = 128 * 1024;

/// How many of `messages`, from the first, fit in a `welcome` (at least one: a single message
/// is far below the budget); the rest follow as `message` frames.
fn fitting_welcome(messages: &[MessageRow]) -> usize {
    let mut bytes = 0;
    messages
        .iter()
        .position(|row| {
            bytes += MessageFrame::from(row).to_json().len();
            bytes > WELCOME_MESSAGE_BYTES
        })
        .map_or(messages.len(), |over| over.max(1))
}
