//! One agent's unread counts on a live page, and the alerts ("a visitor wrote") it sends. Loaded
//! once when the stream connects (and again after a `Resync`), then kept from the hub's events in
//! memory: a visitor message or a read mark costs no database read; only a status line (assign,
//! close, reopen: human-rate) reads its one conversation again. The counts themselves are kept
//! as each conversation changes, never recounted: every agent's stream follows every message,
//! and recounting an inbox of thousands of unread chats per message per agent is what kept a
//! team of 20 from keeping up (docs/capacity.md, "Agents watching"). For the same reason an
//! alert is made once per message for every agent (it says the same to each), and a message
//! costs each agent two lookups in one map with a fast hasher. See "Never miss a chat" in
//! docs/admin.md for what counts as unread.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::sse::{self, Batch};
use super::views::visitor_label;
use crate::hub::{Erasure, InboxEvent, InboxSignal, ReadMark};
use crate::state::AppState;
use crate::store::{ConversationId, InboxItemRow, MessageId, MessageRow, UserId};
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

/// What should get the agent's attention (sound, desktop notification): a visitor message, or a
/// colleague giving them a conversation or taking one from them.
#[derive(Debug, Serialize)]
struct Alert<'a> {
    /// `message` (a visitor wrote), `assigned` (someone else assigned the conversation to the
    /// agent) or `unassigned` (someone else took it from them or unassigned it).
    kind: &'static str,
    conversation: ConversationId,
    message: MessageId,
    /// The message opened the conversation.
    is_new: bool,
    /// The message's first [`ALERT_CHARS`] characters; for a change of assignee, the visitor
    /// and the status line ("Visitor #3: Ben took this conversation").
    body: &'a str,
}

impl Alert<'_> {
    /// The `alert` event's data, framed.
    fn field(&self) -> String {
        // Serialising this plain struct cannot fail.
        sse::data_field(&serde_json::to_string(self).unwrap_or_default())
    }
}

/// The `alert` event's data for a visitor message, framed: the same for every agent it goes to.
fn alert_field(event: &InboxEvent) -> String {
    Alert {
        kind: "message",
        conversation: event.message.conversation_id,
        message: event.message.id,
        is_new: event.opened,
        body: first_chars(&event.message.body, ALERT_CHARS),
    }
    .field()
}

/// The `alert` event's data for a status line that changed whether an open conversation is
/// `me`'s (`before` and `after` are its assignees), unless `me` wrote the line: an agent hears
/// of a colleague giving them a conversation or taking it over while they may be answering it.
fn assignment_alert(
    me: UserId,
    event: &InboxEvent,
    item: &InboxItemRow,
    before: Option<UserId>,
) -> Option<String> {
    if event.by == Some(me) || item.status != "open" {
        return None;
    }
    let kind = match (before == Some(me), item.assignee_id == Some(me)) {
        (false, true) => "assigned",
        (true, false) => "unassigned",
        _ => return None,
    };
    let body = format!("{}: {}", visitor_label(item), event.message.body);
    let alert = Alert {
        kind,
        conversation: item.id,
        message: event.message.id,
        is_new: false,
        body: first_chars(&body, ALERT_CHARS),
    };
    Some(alert.field())
}

/// The stream stopped (the browser left) or could not load its starting point.
pub struct Gone;

/// An open conversation, as far as one agent's counts go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Open {
    assignee: Option<UserId>,
    /// The newest visitor message the agent has not seen, if any.
    unread: Option<MessageId>,
}

impl Open {
    /// Unassigned, or assigned to `me`: what the agent is alerted about and `needs` counts.
    fn is_for(self, me: UserId) -> bool {
        self.assignee.is_none_or(|user| user == me)
    }
}

/// What a conversation (`None`: not open) adds to `me`'s counts.
fn share(open: Option<Open>, me: UserId) -> Counts {
    let mut share = Counts::default();
    if let Some(open) = open.filter(|open| open.unread.is_some()) {
        share.open = 1;
        match open.assignee {
            None => share.unassigned = 1,
            Some(user) if user == me => share.mine = 1,
            Some(_) => {}
        }
        share.needs = share.mine + share.unassigned;
    }
    share
}

/// One agent's view of every open conversation, as far as unread counts go.
pub struct Tally {
    me: UserId,
    /// The conversation this stream's page shows: its messages are read as they arrive (the
    /// page marks them read), so they never count.
    viewing: Option<ConversationId>,
    /// Open conversations. Ids are ours and sequential, never chosen by a client, so the fast
    /// hasher needs no defence against crafted keys.
    open: FxHashMap<ConversationId, Open>,
    /// The counts of `open` as it stands, kept by [`Self::change`].
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
            open: FxHashMap::default(),
            counts: Counts::default(),
            sent: None,
        };
        tally.reload(app).await?;
        Ok(tally)
    }

    /// Reads where the agent stands again (after missing signals or erasures).
    pub async fn reload(&mut self, app: &AppState) -> Result<(), Gone> {
        let rows = app
            .chat
            .open_conversation_reads(self.me)
            .await
            .map_err(|_| Gone)?;
        let viewing = self.viewing;
        self.open = rows
            .iter()
            .map(|r| {
                let unread = r.unread_up_to.filter(|_| Some(r.id) != viewing);
                let open = Open {
                    assignee: r.assignee_id,
                    unread,
                };
                (r.id, open)
            })
            .collect();
        self.recount();
        self.sent = None;
        Ok(())
    }

    /// Counts everything again: after loading only.
    fn recount(&mut self) {
        let mut counts = Counts::default();
        for open in self.open.values() {
            counts.apply(share(Some(*open), self.me), true);
        }
        self.counts = counts;
    }

    /// Sets conversation `id` to what `edit` makes of it (`None`: not open) and keeps the
    /// counts.
    fn change(&mut self, id: ConversationId, edit: impl FnOnce(Option<Open>) -> Option<Open>) {
        let before = self.open.get(&id).copied();
        let after = edit(before);
        if after == before {
            return;
        }
        self.counts.apply(share(before, self.me), false);
        self.counts.apply(share(after, self.me), true);
        match after {
            Some(open) => self.open.insert(id, open),
            None => self.open.remove(&id),
        };
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
                        if self.on_visitor_message(message) {
                            batch.framed_event(None, "alert", event.shared(alert_field));
                        }
                    }
                    Author::System => {
                        if let Some(alert) = self.on_status_line(app, event).await? {
                            batch.framed_event(None, "alert", &alert);
                        }
                    }
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
            // Serialising this plain struct cannot fail.
            batch.event(
                "counts",
                &serde_json::to_string(&counts).unwrap_or_default(),
            );
        }
    }

    /// Counts a visitor message; whether the agent is to be alerted about it. A visitor
    /// message in a conversation not open here opened it: a closed one never takes messages
    /// (the next one starts a new conversation).
    fn on_visitor_message(&mut self, message: &MessageRow) -> bool {
        let (me, counted) = (self.me, Some(message.conversation_id) != self.viewing);
        let mut for_me = false;
        self.change(message.conversation_id, |before| {
            let mut open = before.unwrap_or_default();
            if counted {
                open.unread = Some(open.unread.map_or(message.id, |u| u.max(message.id)));
            }
            for_me = open.is_for(me);
            Some(open)
        });
        for_me
    }

    /// Follows a status line's change of its conversation; the alert for the agent, if it gave
    /// them the conversation or took it from them.
    async fn on_status_line(
        &mut self,
        app: &AppState,
        event: &InboxEvent,
    ) -> Result<Option<String>, Gone> {
        let line = &event.message;
        let id = line.conversation_id;
        let item = match app.chat.inbox_item(self.me, id).await {
            Ok(item) => Some(item),
            Err(crate::chat::Error::NotFound(_)) => None,
            Err(_) => return Err(Gone),
        };
        let before = self.open.get(&id).and_then(|open| open.assignee);
        let alert = item
            .as_ref()
            .and_then(|item| assignment_alert(self.me, event, item, before));
        let counted = Some(id) != self.viewing;
        self.change(id, |before| {
            let item = item.filter(|item| item.status == "open")?;
            // The line is newer than any unread visitor message, so reading up to it clears it.
            let unread = (item.is_unread && counted)
                .then(|| before.and_then(|open| open.unread).unwrap_or(line.id));
            Some(Open {
                assignee: item.assignee_id,
                unread,
            })
        });
        Ok(alert)
    }

    /// Whether the agent has read all of conversation `id` (or it is not open).
    pub fn is_read(&self, id: ConversationId) -> bool {
        self.open.get(&id).is_none_or(|open| open.unread.is_none())
    }

    /// A visitor was erased: their conversations are gone, and with them what they counted.
    pub fn on_erased(&mut self, erasure: &Erasure) {
        for &id in &erasure.conversations {
            self.change(id, |_| None);
        }
    }

    /// The agent read a conversation (it leaves the counts if that covers its newest visitor
    /// message) or marked it unread (it counts again, unless it is the one on this page).
    fn on_read(&mut self, mark: ReadMark) {
        if mark.user != self.me {
            return;
        }
        let is_on_screen = self.viewing == Some(mark.conversation);
        self.change(mark.conversation, |before| {
            before.map(|open| match open.unread {
                _ if mark.is_unread && !is_on_screen => Open {
                    unread: Some(mark.up_to),
                    ..open
                },
                Some(newest) if !mark.is_unread && newest <= mark.up_to => Open {
                    unread: None,
                    ..open
                },
                _ => open,
            })
        });
    }
}

/// The first `n` characters of `text` (a slice: no copy is made).
fn first_chars(text: &str, n: usize) -> &str {
    text.char_indices()
        .nth(n)
        .map_or(text, |(end, _)| &text[..end])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::SiteId;

    fn tally(me: i64) -> Tally {
        Tally {
            me: UserId(me),
            viewing: None,
            open: FxHashMap::default(),
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

    fn assigned(t: &mut Tally, conversation: i64, assignee: Option<i64>) {
        t.change(ConversationId(conversation), |before| {
            Some(Open {
                assignee: assignee.map(UserId),
                ..before.unwrap_or_default()
            })
        });
    }

    #[test]
    fn an_alert_keeps_the_first_characters_whole() {
        assert_eq!(first_chars("héllo", 2), "hé");
        assert_eq!(first_chars("hi", 140), "hi");
        assert_eq!(first_chars("", 3), "");
    }

    #[test]
    fn an_alert_says_whether_the_message_opened_its_conversation() {
        let mut row = visitor_message(10, 5);
        row.body = "a\nb".repeat(100);
        let mut event = InboxEvent::new(SiteId(1), Arc::new(row));
        event.opened = true;
        let field = alert_field(&event);
        assert!(!field.trim_end().contains('\n'), "one data line: {field}");
        let json: serde_json::Value =
            serde_json::from_str(field.trim_start_matches("data: ").trim_end()).expect("JSON");
        assert_eq!(json["conversation"], 5);
        assert_eq!(json["message"], 10);
        assert_eq!(json["is_new"], true);
        assert_eq!(json["kind"], "message");
        assert_eq!(
            json["body"].as_str().map(|b| b.chars().count()),
            Some(ALERT_CHARS)
        );
    }

    #[test]
    fn a_colleague_giving_or_taking_a_conversation_alerts_but_ones_own_change_does_not() {
        let item = |status: &str, assignee: Option<i64>| InboxItemRow {
            id: ConversationId(5),
            site_id: SiteId(1),
            site_name: "Shop".into(),
            visitor_id: crate::store::VisitorId(9),
            visitor_name: Some("Dee".into()),
            visitor_email: None,
            status: status.into(),
            assignee_id: assignee.map(UserId),
            assignee_name: None,
            created_at: 0,
            last_message_at: 0,
            waiting_since: None,
            preview_author: None,
            preview_body: None,
            is_unread: false,
        };
        let line = |by: i64, body: &str| {
            let mut row = visitor_message(12, 5);
            (row.author, row.body) = (Author::System, body.into());
            let mut event = InboxEvent::new(SiteId(1), Arc::new(row));
            event.by = Some(UserId(by));
            event
        };
        let kind = |alert: Option<String>| {
            let json: serde_json::Value =
                serde_json::from_str(alert.as_deref()?.trim_start_matches("data: ").trim_end())
                    .expect("JSON");
            Some(json["kind"].as_str().expect("kind").to_owned())
        };
        let me = UserId(1);
        let taken = line(2, "Cy took this conversation");
        let alert = assignment_alert(me, &taken, &item("open", Some(2)), Some(me));
        assert!(
            alert
                .as_deref()
                .unwrap_or("")
                .contains("Dee: Cy took this conversation")
        );
        assert_eq!(kind(alert).as_deref(), Some("unassigned"));
        let given = line(2, "Cy assigned this conversation to Ana");
        let alert = assignment_alert(me, &given, &item("open", Some(1)), Some(UserId(2)));
        assert_eq!(kind(alert).as_deref(), Some("assigned"));
        // One's own change, a change between others, and closing one's conversation: nothing.
        let mine = line(1, "Ana took this conversation");
        assert_eq!(
            assignment_alert(me, &mine, &item("open", Some(1)), None),
            None
        );
        assert_eq!(
            assignment_alert(me, &taken, &item("open", Some(2)), Some(UserId(3))),
            None
        );
        let closed = line(2, "Cy closed this conversation");
        assert_eq!(
            assignment_alert(me, &closed, &item("closed", Some(1)), Some(me)),
            None
        );
    }

    #[test]
    fn a_new_conversation_counts_as_unassigned_and_alerts() {
        let mut t = tally(1);
        assert!(t.on_visitor_message(&visitor_message(10, 5)));
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
        assigned(&mut t, 5, Some(2));
        assert!(!t.on_visitor_message(&visitor_message(10, 5)));
        assert_eq!(t.counts.open, 1);
        assert_eq!(t.counts.needs, 0);
        assigned(&mut t, 5, Some(1));
        assert!(t.on_visitor_message(&visitor_message(11, 5)));
        assert_eq!((t.counts.mine, t.counts.needs), (1, 1));
    }

    #[test]
    fn an_erased_visitors_conversations_count_no_more() {
        let mut t = tally(1);
        t.on_visitor_message(&visitor_message(10, 5));
        t.on_visitor_message(&visitor_message(11, 6));
        assert_eq!((t.counts.open, t.counts.needs), (2, 2));
        t.on_erased(&Erasure {
            visitor: crate::store::VisitorId(3),
            conversations: vec![ConversationId(5)],
            by_the_visitor: false,
        });
        assert_eq!((t.counts.open, t.counts.needs), (1, 1));
    }

    #[test]
    fn a_read_mark_clears_only_what_it_covers_and_only_for_its_agent() {
        let mut t = tally(1);
        t.on_visitor_message(&visitor_message(10, 5));
        let mark = |user, up_to| ReadMark {
            user: UserId(user),
            conversation: ConversationId(5),
            up_to: MessageId(up_to),
            is_unread: false,
        };
        t.on_read(mark(2, 10));
        t.on_read(mark(1, 9));
        assert_eq!(t.counts.needs, 1);
        t.on_read(mark(1, 10));
        assert_eq!(t.counts.needs, 0);
        // Marked unread by another agent: nothing here; by this one: it counts again, until read.
        let unread = |user| ReadMark {
            is_unread: true,
            ..mark(user, 10)
        };
        t.on_read(unread(2));
        assert_eq!(t.counts.needs, 0);
        t.on_read(unread(1));
        assert_eq!(t.counts.needs, 1);
        t.on_read(mark(1, 10));
        assert_eq!(t.counts.needs, 0);
        // Read, the conversation is still open: someone else's next message does not alert.
        assigned(&mut t, 5, Some(2));
        assert!(!t.on_visitor_message(&visitor_message(11, 5)));
    }

    #[test]
    fn the_conversation_on_screen_never_counts_but_still_alerts() {
        let mut t = tally(1);
        t.viewing = Some(ConversationId(5));
        assert!(t.on_visitor_message(&visitor_message(10, 5)));
        assert_eq!(t.counts.needs, 0);
    }

    #[test]
    fn kept_counts_equal_a_recount_after_any_change() {
        let mut t = tally(1);
        let mark = |conversation, up_to| ReadMark {
            user: UserId(1),
            conversation: ConversationId(conversation),
            up_to: MessageId(up_to),
            is_unread: false,
        };
        for step in 0..200_i64 {
            let conversation = step % 7;
            match step % 5 {
                0 | 1 => {
                    t.on_visitor_message(&visitor_message(step, conversation));
                }
                2 => t.on_read(mark(conversation, step)),
                // Assigned to me, to someone else, or closed, as a status line would leave it.
                3 => {
                    let assignee = match step % 3 {
                        0 => None,
                        1 => Some(1),
                        _ => Some(2),
                    };
                    assigned(&mut t, conversation, assignee);
                }
                _ => t.change(ConversationId(conversation), |_| None),
            }
            let kept = t.counts;
            t.recount();
            assert_eq!(kept, t.counts, "after step {step}");
        }
        assert!(t.counts.open > 0, "the sequence leaves something unread");
    }
}
