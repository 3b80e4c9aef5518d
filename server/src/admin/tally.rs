//! One agent's unread counts on a live page, and the alerts ("a visitor wrote") it sends. Loaded
//! once when the stream connects (and again after a `Resync`), then kept from the hub's events in
//! memory: a visitor message or a read mark costs no database read; only a status line (assign,
//! close, reopen: human-rate) reads its one conversation again. The counts themselves are kept
//! as each conversation changes, never recounted: every agent's stream follows every message,
//! and recounting an inbox of thousands of unread chats per message per agent is what kept a
//! team of 20 from keeping up (docs/capacity.md, "Agents watching"). See "Never miss a chat" in
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

impl Counts {
    /// Adds (`more`) or takes away one conversation's share.
    fn apply(&mut self, share: Self, more: bool) {
        let step = |total: &mut usize, part: usize| {
            *total = if more {
                *total + part
            } else {
                total.saturating_sub(part)
            };
        };
        step(&mut self.open, share.open);
        step(&mut self.mine, share.mine);
        step(&mut self.unassigned, share.unassigned);
        step(&mut self.needs, share.needs);
    }
}

/// A visitor message that should get the agent's attention (sound, desktop notification).
#[derive(Debug, Serialize)]
struct Alert<'a> {
    conversation: ConversationId,
    message: MessageId,
    /// The message opened the conversation.
    is_new: bool,
    /// The message's first [`ALERT_CHARS`] characters.
    body: &'a str,
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
    /// The counts of `unread` as it stands, kept by [`Self::change`].
    counts: Counts,
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
            counts: Counts::default(),
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
        self.recount();
        self.sent = None;
        Ok(())
    }

    /// Counts everything again: after loading only.
    fn recount(&mut self) {
        let mut counts = Counts::default();
        for id in self.unread.keys() {
            counts.apply(self.share(*id), true);
        }
        self.counts = counts;
    }

    /// What conversation `id` adds to the counts.
    fn share(&self, id: ConversationId) -> Counts {
        let mut share = Counts::default();
        if self.unread.contains_key(&id) {
            share.open = 1;
            match self.open.get(&id) {
                Some(None) => share.unassigned = 1,
                Some(Some(user)) if *user == self.me => share.mine = 1,
                _ => {}
            }
            share.needs = share.mine + share.unassigned;
        }
        share
    }

    /// Applies `edit`, which may change only conversation `id`, and keeps the counts.
    fn change<T>(&mut self, id: ConversationId, edit: impl FnOnce(&mut Self) -> T) -> T {
        let before = self.share(id);
        let out = edit(self);
        let after = self.share(id);
        self.counts.apply(before, false);
        self.counts.apply(after, true);
        out
    }

    /// Follows one hub signal: updates the counts, and adds to `batch` an `alert` for a visitor
    /// message the agent should see. The counts are sent by [`Self::send_counts`], once a burst.
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
        Ok(())
    }

    /// Adds the counts to `batch` unless the browser already has them (first of all, after
    /// loading).
    pub fn send_counts(&mut self, batch: &mut Batch) {
        let counts = self.counts;
        if self.sent != Some(counts) {
            self.sent = Some(counts);
            add_json(batch, "counts", &counts);
        }
    }

    fn on_visitor_message<'m>(&mut self, message: &'m MessageRow) -> Option<Alert<'m>> {
        let id = message.conversation_id;
        // A visitor message in a conversation that is not open here opened it: a closed one
        // never takes messages (the next one starts a new conversation).
        let is_new = !self.open.contains_key(&id);
        let assignee = self.change(id, |t| {
            if Some(id) != t.viewing {
                let newest = t.unread.entry(id).or_insert(message.id);
                *newest = (*newest).max(message.id);
            }
            *t.open.entry(id).or_insert(None)
        });
        let for_me = assignee.is_none() || assignee == Some(self.me);
        for_me.then(|| Alert {
            conversation: id,
            message: message.id,
            is_new,
            body: first_chars(&message.body, ALERT_CHARS),
        })
    }

    async fn on_status_line(&mut self, app: &AppState, line: &MessageRow) -> Result<(), Gone> {
        let id = line.conversation_id;
        let item = match app.chat.inbox_item(self.me, id).await {
            Ok(item) => Some(item),
            Err(crate::chat::Error::NotFound(_)) => None,
            Err(_) => return Err(Gone),
        };
        self.change(id, |t| match item.filter(|item| item.status == "open") {
            Some(item) => {
                t.open.insert(id, item.assignee_id);
                // The line is newer than any unread visitor message, so reading up to it clears
                // it.
                if item.is_unread && Some(id) != t.viewing {
                    t.unread.entry(id).or_insert(line.id);
                } else {
                    t.unread.remove(&id);
                }
            }
            None => {
                t.open.remove(&id);
                t.unread.remove(&id);
            }
        });
        Ok(())
    }

    fn on_read(&mut self, mark: ReadMark) {
        if mark.user == self.me
            && self
                .unread
                .get(&mark.conversation)
                .is_some_and(|newest| *newest <= mark.up_to)
        {
            self.change(mark.conversation, |t| t.unread.remove(&mark.conversation));
        }
    }
}

/// The first `n` characters of `text` (a slice: every agent's stream alerts for every visitor
/// message, so no copy is made).
fn first_chars(text: &str, n: usize) -> &str {
    text.char_indices()
        .nth(n)
        .map_or(text, |(end, _)| &text[..end])
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
            counts: Counts::default(),
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
    fn an_alert_keeps_the_first_characters_whole() {
        assert_eq!(first_chars("héllo", 2), "hé");
        assert_eq!(first_chars("hi", 140), "hi");
        assert_eq!(first_chars("", 3), "");
    }

    #[test]
    fn a_new_conversation_counts_as_unassigned_and_alerts() {
        let mut t = tally(1);
        let row = visitor_message(10, 5);
        let alert = t.on_visitor_message(&row).map(|a| a.is_new);
        assert_eq!(alert, Some(true));
        assert_eq!(
            t.counts,
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
        assert_eq!(t.counts.open, 1);
        assert_eq!(t.counts.needs, 0);
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
        assert_eq!(t.counts.needs, 1);
        t.on_read(mark(1, 10));
        assert_eq!(t.counts.needs, 0);
    }

    #[test]
    fn the_conversation_on_screen_never_counts_but_still_alerts() {
        let mut t = tally(1);
        t.viewing = Some(ConversationId(5));
        let row = visitor_message(10, 5);
        assert!(t.on_visitor_message(&row).is_some());
        assert_eq!(t.counts.needs, 0);
    }

    #[test]
    fn kept_counts_equal_a_recount_after_any_change() {
        let mut t = tally(1);
        let mark = |conversation, up_to| ReadMark {
            user: UserId(1),
            conversation: ConversationId(conversation),
            up_to: MessageId(up_to),
        };
        for step in 0..200_i64 {
            let conversation = step % 7;
            match step % 5 {
                0 | 1 => {
                    t.on_visitor_message(&visitor_message(step, conversation));
                }
                2 => t.on_read(mark(conversation, step)),
                // Assigned to me, to someone else, or closed, as a status line would leave it.
                3 => t.change(ConversationId(conversation), |t| {
                    let assignee = [None, Some(UserId(1)), Some(UserId(2))]
                        [usize::try_from(step % 3).unwrap_or(0)];
                    t.open.insert(ConversationId(conversation), assignee);
                }),
                _ => t.change(ConversationId(conversation), |t| {
                    t.open.remove(&ConversationId(conversation));
                    t.unread.remove(&ConversationId(conversation));
                }),
            }
            let kept = t.counts;
            t.recount();
            assert_eq!(kept, t.counts, "after step {step}");
        }
        assert!(t.counts.open > 0, "the sequence leaves something unread");
    }
}
