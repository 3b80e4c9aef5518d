//! The live inbox's summary of each conversation it showed recently, kept current from the
//! hub's signals, so that an event in a conversation already shown costs no database read
//! (docs/capacity.md, "Agents watching, round four").
//!
//! The hub tells its observer every message as the writer commits it, in commit order, and every
//! read mark and erasure. A summary read once plus the messages since is what the database would
//! answer, for what a message tells: the preview, the last activity, the wait and the visitor's
//! newest message. What a message does not tell drops the summary, and the next event reads it
//! again: a status line (the status or assignee changed), a message that came with the visitor's
//! new name or email, an erasure, and a site's new settings ([`Summaries::forget_all`]).
//!
//! A read can race a change: it may begin before a message commits and finish after the message
//! was published, and then its summary misses the message. So every change is stamped with a
//! clock, a read takes the clock before it begins, and its summary is kept only if nothing
//! touched that conversation since.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::hub::{Erasure, InboxEvent, InboxObserver, InboxSignal, ReadMark};
use crate::store::{ConversationId, LiveInboxRow, MessageId};
use crate::values::Author;

use super::live_items::LiveItem;

/// Conversations remembered. A busy box has a few thousand open at once; past this everything
/// is forgotten and read again once, which bounds the memory (a summary and its renderings are
/// a few KiB) without an eviction order to keep on the writer thread.
const KEPT: usize = 4096;

/// The summaries, behind one short lock (taken on the writer thread for every message).
#[derive(Default)]
pub struct Summaries {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// Counts the changes seen.
    clock: u64,
    /// Reads that began before this cannot be kept: everything was forgotten since.
    floor: u64,
    entries: HashMap<ConversationId, Entry>,
}

enum Entry {
    /// The conversation as of message `as_of`, with every change since applied.
    Known {
        item: Arc<LiveItem>,
        as_of: MessageId,
    },
    /// Changed at this tick while its summary was not known or could not be followed.
    Touched(u64),
}

/// When a read began: see [`Summaries::keep`].
#[derive(Debug, Clone, Copy)]
pub struct Ticket(u64);

impl Summaries {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // Every change is one map insert, which a panic cannot leave half-done.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The conversation's summary, if it is known as of `event` or later.
    pub fn known(&self, conversation: ConversationId, event: MessageId) -> Option<Arc<LiveItem>> {
        match self.table().entries.get(&conversation) {
            Some(Entry::Known { item, as_of }) if *as_of >= event => Some(Arc::clone(item)),
            _ => None,
        }
    }

    /// Taken before reading a summary from the database.
    pub fn ticket(&self) -> Ticket {
        Ticket(self.table().clock)
    }

    /// Keeps a summary read after `ticket` was taken, unless its conversation changed since
    /// (the read may have missed that change) or a newer summary is kept already.
    pub fn keep(&self, ticket: Ticket, item: &Arc<LiveItem>) {
        let mut table = self.table();
        if ticket.0 < table.floor {
            return;
        }
        let conversation = item.row.item.id;
        let untouched = match table.entries.get(&conversation) {
            None => true,
            Some(Entry::Touched(at)) => *at <= ticket.0,
            Some(Entry::Known { .. }) => false,
        };
        if untouched {
            table.entries.insert(
                conversation,
                Entry::Known {
                    item: Arc::clone(item),
                    as_of: item.row.newest,
                },
            );
            table.bound();
        }
    }

    /// Forgets every summary (a site's name may have changed).
    pub fn forget_all(&self) {
        self.table().forget_all();
    }
}

impl Table {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn forget_all(&mut self) {
        self.floor = self.tick();
        self.entries.clear();
    }

    fn bound(&mut self) {
        if self.entries.len() > KEPT {
            self.forget_all();
        }
    }

    /// Replaces the conversation's summary with `follow(summary)`, or marks it touched when it
    /// is not known or `follow` cannot tell.
    fn change(
        &mut self,
        conversation: ConversationId,
        follow: impl FnOnce(&LiveInboxRow) -> Option<LiveInboxRow>,
    ) {
        let now = self.tick();
        let next = match self.entries.get(&conversation) {
            Some(Entry::Known { item, .. }) => follow(&item.row).map(|row| Entry::Known {
                as_of: row.newest,
                item: Arc::new(LiveItem::new(row)),
            }),
            _ => None,
        };
        self.entries
            .insert(conversation, next.unwrap_or(Entry::Touched(now)));
        self.bound();
    }

    fn message(&mut self, event: &InboxEvent) {
        let message = &event.message;
        if let Some(Entry::Known { as_of, .. }) = self.entries.get(&message.conversation_id)
            && *as_of >= message.id
        {
            // The summary was read after this message was stored.
            return;
        }
        self.change(message.conversation_id, |row| {
            if event.visitor_changed {
                return None;
            }
            followed(row, message)
        });
    }

    fn read(&mut self, mark: ReadMark) {
        self.change(mark.conversation, |row| {
            let mut next = row.clone();
            match next.reads.iter_mut().find(|(user, _)| *user == mark.user) {
                Some((_, up_to)) => *up_to = (*up_to).max(mark.up_to),
                None => next.reads.push((mark.user, mark.up_to)),
            }
            Some(next)
        });
    }
}

/// The summary after `message`, by the rules the store follows when it stores one
/// (`touch_conversation`, and the inbox item's preview of visitor and agent messages). `None`
/// for a status line: what it changed is not in the message.
fn followed(row: &LiveInboxRow, message: &crate::store::MessageRow) -> Option<LiveInboxRow> {
    let mut next = row.clone();
    let item = &mut next.item;
    match message.author {
        Author::Visitor => {
            item.preview_author = Some(Author::Visitor);
            item.preview_body = Some(message.body.clone());
            item.waiting_since = item.waiting_since.or(Some(message.created_at));
            item.is_unread = true;
            next.last_visitor_message = Some(message.id);
        }
        Author::Agent => {
            item.preview_author = Some(Author::Agent);
            item.preview_body = Some(message.body.clone());
            item.waiting_since = None;
        }
        Author::Note => {}
        Author::System => return None,
    }
    next.item.last_message_at = message.created_at;
    next.newest = message.id;
    Some(next)
}

impl InboxObserver for Summaries {
    fn signal(&self, signal: &InboxSignal) {
        match signal {
            InboxSignal::Event(event) => self.table().message(event),
            InboxSignal::Read(mark) => self.table().read(*mark),
            InboxSignal::VisitorTyping { .. } | InboxSignal::Resync => {}
        }
    }

    fn erased(&self, erasure: &Erasure) {
        // Marked, not removed: a read still under way must not bring one back.
        let mut table = self.table();
        for conversation in &erasure.conversations {
            let now = table.tick();
            table.entries.insert(*conversation, Entry::Touched(now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{InboxItemRow, MessageRow, SiteId, UserId, VisitorId};

    const C: ConversationId = ConversationId(7);

    fn row(newest: i64) -> LiveInboxRow {
        LiveInboxRow {
            item: InboxItemRow {
                id: C,
                site_id: SiteId(1),
                site_name: "Shop".into(),
                visitor_id: VisitorId(1),
                visitor_name: None,
                visitor_email: None,
                status: "open".into(),
                assignee_id: None,
                assignee_name: None,
                created_at: 0,
                last_message_at: 10,
                waiting_since: Some(10),
                preview_author: Some(Author::Visitor),
                preview_body: Some("first".into()),
                is_unread: true,
            },
            last_visitor_message: Some(MessageId(newest)),
            newest: MessageId(newest),
            reads: Vec::new(),
        }
    }

    fn event(id: i64, author: Author, body: &str) -> InboxSignal {
        InboxSignal::Event(InboxEvent {
            site_id: SiteId(1),
            message: Arc::new(MessageRow {
                id: MessageId(id),
                conversation_id: C,
                author,
                author_name: None,
                client_id: None,
                body: body.into(),
                created_at: id * 10,
                attachments: Vec::new(),
            }),
            visitor_changed: false,
        })
    }

    fn kept(summaries: &Summaries, newest: i64) {
        let ticket = summaries.ticket();
        summaries.keep(ticket, &Arc::new(LiveItem::new(row(newest))));
    }

    #[test]
    fn messages_are_followed_as_the_store_follows_them() {
        let summaries = Summaries::default();
        kept(&summaries, 1);
        summaries.signal(&event(2, Author::Agent, "reply"));
        let after_reply = summaries.known(C, MessageId(2)).expect("followed");
        assert_eq!(after_reply.row.item.preview_body.as_deref(), Some("reply"));
        assert_eq!(after_reply.row.item.waiting_since, None);
        assert_eq!(after_reply.row.item.last_message_at, 20);

        summaries.signal(&event(3, Author::Note, "private"));
        summaries.signal(&event(4, Author::Visitor, "again"));
        summaries.signal(&event(5, Author::Visitor, "and again"));
        let now = summaries.known(C, MessageId(5)).expect("followed");
        assert_eq!(now.row.item.preview_body.as_deref(), Some("and again"));
        // The wait starts at the first visitor message after the reply.
        assert_eq!(now.row.item.waiting_since, Some(40));
        assert_eq!(now.row.last_visitor_message, Some(MessageId(5)));
        assert_eq!(now.row.item.last_message_at, 50);

        summaries.signal(&InboxSignal::Read(ReadMark {
            user: UserId(3),
            conversation: C,
            up_to: MessageId(5),
        }));
        let read = summaries.known(C, MessageId(5)).expect("followed");
        assert!(!read.row.is_unread_for(UserId(3)));
        assert!(read.row.is_unread_for(UserId(4)));
    }

    #[test]
    fn what_a_message_does_not_tell_drops_the_summary() {
        let summaries = Summaries::default();
        kept(&summaries, 1);
        summaries.signal(&event(2, Author::System, "Ana closed the conversation"));
        assert!(summaries.known(C, MessageId(2)).is_none());

        kept(&summaries, 2);
        let InboxSignal::Event(mut named) = event(3, Author::Visitor, "I am Bo") else {
            unreachable!()
        };
        named.visitor_changed = true;
        summaries.signal(&InboxSignal::Event(named));
        assert!(summaries.known(C, MessageId(3)).is_none());

        kept(&summaries, 3);
        summaries.erased(&Erasure {
            visitor: VisitorId(1),
            conversations: vec![C],
        });
        assert!(summaries.known(C, MessageId(3)).is_none());

        kept(&summaries, 3);
        summaries.forget_all();
        assert!(summaries.known(C, MessageId(3)).is_none());
    }

    #[test]
    fn a_read_that_raced_a_change_is_not_kept() {
        let summaries = Summaries::default();
        // Read begun, then a message published before the read finished.
        let ticket = summaries.ticket();
        summaries.signal(&event(2, Author::Visitor, "missed"));
        summaries.keep(ticket, &Arc::new(LiveItem::new(row(1))));
        assert!(summaries.known(C, MessageId(1)).is_none());
        // A read begun after it is kept.
        kept(&summaries, 2);
        assert!(summaries.known(C, MessageId(2)).is_some());

        // Everything forgotten while a read was under way.
        let ticket = summaries.ticket();
        summaries.forget_all();
        summaries.keep(ticket, &Arc::new(LiveItem::new(row(2))));
        assert!(summaries.known(C, MessageId(2)).is_none());
    }

    #[test]
    fn a_message_the_read_already_saw_is_not_applied_twice() {
        let summaries = Summaries::default();
        kept(&summaries, 4);
        // Message 3 committed before the read but published after it: already in the summary.
        summaries.signal(&event(3, Author::Agent, "older"));
        let item = summaries.known(C, MessageId(4)).expect("kept");
        assert_eq!(item.row.item.preview_body.as_deref(), Some("first"));
    }

    #[test]
    fn memory_is_bounded() {
        let summaries = Summaries::default();
        for id in 0..=i64::try_from(KEPT).unwrap_or(i64::MAX) {
            summaries.signal(&InboxSignal::Read(ReadMark {
                user: UserId(1),
                conversation: ConversationId(id),
                up_to: MessageId(1),
            }));
        }
        assert!(summaries.table().entries.len() <= KEPT);
    }
}
