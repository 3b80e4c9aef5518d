//! One agent's unread counts on a live page, and the alerts ("a visitor wrote") it sends. Loaded
//! once when the stream connects (and again after a `Resync`), then kept from the hub's events in
//! memory: a visitor message or a read mark costs no database read; only a status line (assign,
//! close, reopen: human-rate) reads its one conversation again. See "Never miss a chat" in
//! docs/admin.md for what counts as unread.

use std::collections::HashMap;

use serde::Serialize;

use super::sse::Batch;
use crate::hub::{InboxSignal, ReadMark};
use crate::state::AppState;
use crate::store::{ConversationId, MessageId, MessageRow, UserId};
use crate::values::Author;

/// Longest alert text, in characters (a desktop notification shows about two lines).
const ALERT_CHARS: usize = 140;

/// Unread open conversations, per inbox tab; `needs` (unassigned or mine) is the count in the
/// tab title, the favicon and the navigation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub open: usize,
    pub mine: usize,
    pub unassigned: usize,
    pub needs: usize,
}

/// A visitor message that should get the agent's attention (sound, desktop notification).
#[derive(Debug, Serialize)]
struct Alert {
    conversation: ConversationId,
    message: MessageId,
    /// The message opened the conversation.
    is_new: bool,
    body: String,
}

/// The stream stopped (the browser left) or could not load its starting point.
pub struct Gone;

/// One agent's view of every open conversation, as far as unread counts go.
pub struct Tally {
    me: UserId,
    /// The conversation this stream's page shows: its messages are read as they arrive (the
    /// page marks them read), so they never count.
    viewing: Option<ConversationId>,
    /// Open conversations and their assignee.
    open: HashMap<ConversationId, Option<UserId>>,
    /// Open conversations with a visitor message the agent has not seen: the newest one's id.
    unread: HashMap<ConversationId, MessageId>,
    /// The counts last sent, so an unchanged count is not sent again.
    sent: Option<Counts>,
}

impl Tally {
    /// Reads where `me` stands now.
    pub async fn load(
        app: &AppState,
        me: UserId,
        viewing: Option<ConversationId>,
    ) -> Result<Self, Gone> {
        let mut tally = Self {
            me,
            viewing,
            open: HashMap::new(),
            unread: HashMap::new(),
            sent: None,
        };
        tally.reload(app).await?;
        Ok(tally)
    }

    async fn reload(&mut self, app: &AppState) -> Result<(), Gone> {
        let rows = app
            .chat
            .open_conversation_reads(self.me)
            .await
            .map_err(|_| Gone)?;
        self.open = rows.iter().map(|r| (r.id, r.assignee_id)).collect();
        self.unread = rows
            .iter()
            .filter(|r| Some(r.id) != self.viewing)
            .filter_map(|r| r.unread_up_to.map(|id| (r.id, id)))
            .collect();
        self.sent = None;
        Ok(())
    }

    fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for id in self.unread.keys() {
            counts.open += 1;
            match self.open.get(id) {
                Some(None) => counts.unassigned += 1,
                Some(Some(user)) if *user == self.me => counts.mine += 1,
                _ => {}
            }
        }
        counts.needs = counts.mine + counts.unassigned;
        counts
    }

    /// Follows one hub signal: updates the counts, adds them to `batch` if they changed (and
    /// first of all, after loading), and an `alert` for a visitor message the agent should see.
    ///
    /// # Errors
    /// `Gone` when a reload failed.
    pub async fn follow(
        &mut self,
        app: &AppState,
        batch: &mut Batch,
        signal: &InboxSignal,
    ) -> Result<(), Gone> {
        match signal {
            InboxSignal::Event(event) => {
                let message = &event.message;
                match message.author {
                    Author::Visitor => {
                        if let Some(alert) = self.on_visitor_message(message) {
                            add_json(batch, "alert", &alert);
                        }
                    }
                    Author::System => self.on_status_line(app, message).await?,
                    Author::Agent | Author::Note => {}
                }
            }
            InboxSignal::Read(mark) => self.on_read(*mark),
            InboxSignal::VisitorTyping { .. } => {}
            InboxSignal::Resync => self.reload(app).await?,
        }
        self.send_counts(batch);
        Ok(())
    }

    /// Adds the counts to `batch` unless the browser already has them.
    pub fn send_counts(&mut self, batch: &mut Batch) {
        let counts = self.counts();
        if self.sent != Some(counts) {
            self.sent = Some(counts);
            add_json(batch, "counts", &counts);
        }
    }

    fn on_visitor_message(&mut self, message: &MessageRow) -> Option<Alert> {
        let id = message.conversation_id;
        // A visitor message in a conversation that is not open here opened it: a closed one
        // never takes messages (the next one starts a new conversation).
        let is_new = !self.open.contains_key(&id);
        let assignee = *self.open.entry(id).or_insert(None);
        if Some(id) != self.viewing {
            let newest = self.unread.entry(id).or_insert(message.id);
            *newest = (*newest).max(message.id);
        }
        let for_me = assignee.is_none() || assignee == Some(self.me);
        for_me.then(|| Alert {
            conversation: id,
            message: message.id,
            is_new,
            body: message.body.chars().take(ALERT_CHARS).collect(),
        })
    }

    async fn on_status_line(&mut self, app: &AppState, line: &MessageRow) -> Result<(), Gone> {
        let id = line.conversation_id;
        let item = match app.chat.inbox_item(self.me, id).await {
            Ok(item) => item,
            Err(crate::chat::Error::NotFound(_)) => {
                self.open.remove(&id);
                self.unread.remove(&id);
                return Ok(());
            }
            Err(_) => return Err(Gone),
        };
        if item.status == "open" {
            self.open.insert(id, item.assignee_id);
            // The line is newer than any unread visitor message, so reading up to it clears it.
            if item.is_unread && Some(id) != self.viewing {
                self.unread.entry(id).or_insert(line.id);
            } else {
                self.unread.remove(&id);
            }
        } else {
            self.open.remove(&id);
            self.unread.remove(&id);
        }
        Ok(())
    }

    fn on_read(&mut self, mark: ReadMark) {
        if mark.user == self.me
            && self
                .unread
                .get(&mark.conversation)
                .is_some_and(|newest| *newest <= mark.up_to)
        {
            self.unread.remove(&mark.conversation);
        }
    }
}

fn add_json<T: Serialize>(batch: &mut Batch, name: &str, data: &T) {
    // Serialising these plain structs cannot fail.
    let data = serde_json::to_string(data).unwrap_or_default();
    batch.event(name, &data);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(me: i64) -> Tally {
        Tally {
            me: UserId(me),
            viewing: None,
            open: HashMap::new(),
            unread: HashMap::new(),
            sent: None,
        }
    }

    fn visitor_message(id: i64, conversation: i64) -> MessageRow {
        MessageRow {
            id: MessageId(id),
            conversation_id: ConversationId(conversation),
            author: Author::Visitor,
            author_name: None,
            client_id: None,
            body: "hello".into(),
            created_at: 0,
            attachments: Vec::new(),
        }
    }

    #[test]
    fn a_new_conversation_counts_as_unassigned_and_alerts() {
        let mut t = tally(1);
        let row = visitor_message(10, 5);
        let alert = t.on_visitor_message(&row).map(|a| a.is_new);
        assert_eq!(alert, Some(true));
        assert_eq!(
            t.counts(),
            Counts {
                open: 1,
                mine: 0,
                unassigned: 1,
                needs: 1
            }
        );
    }

    #[test]
    fn someone_elses_conversation_counts_as_open_only_and_does_not_alert() {
        let mut t = tally(1);
        t.open.insert(ConversationId(5), Some(UserId(2)));
        let row = visitor_message(10, 5);
        assert!(t.on_visitor_message(&row).is_none());
        assert_eq!(t.counts().open, 1);
        assert_eq!(t.counts().needs, 0);
    }

    #[test]
    fn a_read_mark_clears_only_what_it_covers_and_only_for_its_agent() {
        let mut t = tally(1);
        let row = visitor_message(10, 5);
        t.on_visitor_message(&row);
        let mark = |user, up_to| ReadMark {
            user: UserId(user),
            conversation: ConversationId(5),
            up_to: MessageId(up_to),
        };
        t.on_read(mark(2, 10));
        t.on_read(mark(1, 9));
        assert_eq!(t.counts().needs, 1);
        t.on_read(mark(1, 10));
        assert_eq!(t.counts().needs, 0);
    }

    #[test]
    fn the_conversation_on_screen_never_counts_but_still_alerts() {
        let mut t = tally(1);
        t.viewing = Some(ConversationId(5));
        let row = visitor_message(10, 5);
        assert!(t.on_visitor_message(&row).is_some());
        assert_eq!(t.counts().needs, 0);
    }
}
