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
//! A read races the changes made while it runs: its snapshot may miss a message published
//! before the read finished. So a read first marks its conversations as being read; the changes
//! published meanwhile are collected on the mark, and when the read is kept the ones newer than
//! its snapshot are applied to it. (Only reads collect: a conversation nobody reads or follows
//! costs nothing.) A read marked again by a later read, or one whose conversation was forgotten
//! meanwhile, is not kept. Before reads collected, a read that raced a message was simply
//! dropped; under load most were, every event read again, and the box never caught up.

use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap;

use crate::hub::{Erasure, InboxEvent, InboxObserver, InboxSignal, ReadMark};
use crate::store::{AgentRead, ConversationId, LiveInboxRow, MessageId};
use crate::values::Author;

use super::live_items::LiveItem;

/// Conversations remembered. A busy box has a few thousand open at once; past this everything
/// is forgotten and read again once, which bounds the memory (a summary and its renderings are
/// a few KiB) without an eviction order to keep on the writer thread.
const KEPT: usize = 4096;

/// Changes collected for one read; a read that falls this far behind is not kept.
const COLLECTED: usize = 256;

/// The summaries, behind one short lock (taken on the writer thread for every message).
#[derive(Default)]
pub struct Summaries {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// Counts the reads begun, so that each has its own mark.
    clock: u64,
    /// Looked up by every agent's page for every event: ids are ours, so the fast hasher
    /// needs no defence against crafted keys.
    entries: FxHashMap<ConversationId, Entry>,
}

enum Entry {
    /// The conversation as of message `as_of`, with every change since applied.
    Known {
        item: Arc<LiveItem>,
        as_of: MessageId,
    },
    /// Being read by read number `read`; the changes published since it began, in order.
    Reading { read: u64, changes: Vec<Change> },
}

/// A change published while a read ran.
enum Change {
    Message(Arc<InboxEvent>),
    Read(ReadMark),
}

/// Which read a summary comes from: see [`Summaries::keep`].
#[derive(Debug, Clone, Copy)]
pub struct Ticket(u64);

impl Summaries {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // Every change is one map update, which a panic cannot leave half-done.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The conversation's summary, if it is known as of `event` or later.
    pub fn known(&self, conversation: ConversationId, event: MessageId) -> Option<Arc<LiveItem>> {
        match self.table().entries.get(&conversation) {
            Some(Entry::Known { item, as_of }) if *as_of >= event => Some(Arc::clone(item)),
            _ => None,
        }
    }

    /// Marks `conversations` as being read (those not known already), before the read begins.
    pub fn begin(&self, conversations: impl IntoIterator<Item = ConversationId>) -> Ticket {
        let mut table = self.table();
        table.clock += 1;
        let read = table.clock;
        for conversation in conversations {
            if !matches!(table.entries.get(&conversation), Some(Entry::Known { .. })) {
                let changes = Vec::new();
                table
                    .entries
                    .insert(conversation, Entry::Reading { read, changes });
            }
        }
        table.bound();
        Ticket(read)
    }

    /// Ends read `ticket` of `conversation`: keeps `item`, the summary it read, brought up to
    /// date with the changes published meanwhile, unless it cannot be (see the module's
    /// comment). `None`: the read found nothing, or failed.
    pub fn keep(&self, ticket: Ticket, conversation: ConversationId, item: Option<&Arc<LiveItem>>) {
        let mut table = self.table();
        match table.entries.get(&conversation) {
            Some(Entry::Reading { read, .. }) if *read == ticket.0 => {}
            _ => return,
        }
        let Some(Entry::Reading { changes, .. }) = table.entries.remove(&conversation) else {
            return;
        };
        let Some(item) = item else {
            return;
        };
        if changes.is_empty() {
            // The very item the read made, renderings and all.
            let as_of = item.row.newest;
            let item = Arc::clone(item);
            table
                .entries
                .insert(conversation, Entry::Known { item, as_of });
            return;
        }
        let mut row = item.row.clone();
        for change in &changes {
            let next = match change {
                // In the read's snapshot already.
                Change::Message(event) if event.message.id <= row.newest => continue,
                Change::Message(event) => followed(&row, event),
                Change::Read(mark) => Some(with_read(&row, *mark)),
            };
            let Some(next) = next else {
                return;
            };
            row = next;
        }
        let as_of = row.newest;
        let item = Arc::new(LiveItem::new(row));
        table
            .entries
            .insert(conversation, Entry::Known { item, as_of });
    }

    /// Forgets every summary and every read under way (a site's name may have changed).
    pub fn forget_all(&self) {
        self.table().entries.clear();
    }
}

impl Table {
    fn bound(&mut self) {
        if self.entries.len() > KEPT {
            self.entries.clear();
        }
    }

    /// Follows `change` in the conversation's summary, or collects it for the read under way;
    /// a summary that cannot follow it is forgotten, and so is a read that fell too far behind.
    fn change(&mut self, conversation: ConversationId, change: Change) {
        let Some(entry) = self.entries.get_mut(&conversation) else {
            return;
        };
        let next = match entry {
            Entry::Known { item, as_of } => match &change {
                // The summary was read after this message was stored.
                Change::Message(event) if event.message.id <= *as_of => return,
                Change::Message(event) => followed(&item.row, event),
                Change::Read(mark) => Some(with_read(&item.row, *mark)),
            },
            Entry::Reading { changes, .. } if changes.len() < COLLECTED => {
                changes.push(change);
                return;
            }
            Entry::Reading { .. } => None,
        };
        match next {
            Some(row) => {
                let as_of = row.newest;
                let item = Arc::new(LiveItem::new(row));
                *entry = Entry::Known { item, as_of };
            }
            None => {
                self.entries.remove(&conversation);
            }
        }
    }
}

/// The summary after the message of `event`, by the rules the store follows when it stores one
/// (`touch_conversation`, which also ends a snooze on a visitor's message, and the inbox item's
/// preview of visitor and agent messages). `None` when the message does not tell: a status line
/// (the status, assignee or snooze changed), or a message that came with the visitor's new name
/// or email.
fn followed(row: &LiveInboxRow, event: &InboxEvent) -> Option<LiveInboxRow> {
    let message = &event.message;
    if event.visitor_changed || message.author == Author::System {
        return None;
    }
    let mut next = row.clone();
    let item = &mut next.item;
    // As the store counts them: a message's files, when it has no text.
    let files = if message.body.is_empty() {
        i64::try_from(message.attachments.len()).unwrap_or(i64::MAX)
    } else {
        0
    };
    match message.author {
        Author::Visitor => {
            item.preview_author = Some(Author::Visitor);
            item.preview_body = Some(message.body.clone());
            item.preview_files = files;
            item.waiting_since = item.waiting_since.or(Some(message.created_at));
            item.is_unread = true;
            // The same write ended any snooze.
            item.snoozed_until = None;
            next.last_visitor_message = Some(message.id);
        }
        Author::Agent => {
            item.preview_author = Some(Author::Agent);
            item.preview_body = Some(message.body.clone());
            item.preview_files = files;
            item.waiting_since = None;
        }
        Author::Note | Author::System => {}
    }
    next.item.last_message_at = message.created_at;
    next.newest = message.id;
    Some(next)
}

/// The summary after `mark`, as the store records it (`upsert_conversation_read`,
/// `mark_conversation_unread`): a marker never moves back and a mark of unread only sets the
/// flag, so applying one twice is harmless.
fn with_read(row: &LiveInboxRow, mark: ReadMark) -> LiveInboxRow {
    let mut next = row.clone();
    let was = next.reads.iter().position(|read| read.user == mark.user);
    let mut read = was.map_or(
        AgentRead {
            user: mark.user,
            up_to: MessageId(0),
            is_marked_unread: false,
        },
        |at| next.reads.swap_remove(at),
    );
    if mark.is_unread {
        read.is_marked_unread = true;
    } else {
        read.up_to = read.up_to.max(mark.up_to);
        read.is_marked_unread = false;
    }
    next.reads.push(read);
    next
}

impl InboxObserver for Summaries {
    fn signal(&self, signal: &InboxSignal) {
        let (conversation, change) = match signal {
            InboxSignal::Event(event) => (
                event.message.conversation_id,
                Change::Message(Arc::clone(event)),
            ),
            InboxSignal::Read(mark) => (mark.conversation, Change::Read(*mark)),
            InboxSignal::Typing { .. } | InboxSignal::Resync => return,
        };
        self.table().change(conversation, change);
    }

    fn erased(&self, erasure: &Erasure) {
        // A read under way is forgotten too: it must not bring the visitor back.
        let mut table = self.table();
        for conversation in &erasure.conversations {
            table.entries.remove(conversation);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::store::{InboxItemRow, MessageRow, SiteId, UserId, VisitorId};

    const C: ConversationId = ConversationId(7);

    /// A conversation's summary as of message `newest`, for tests.
    pub(in crate::chat) fn row(newest: i64) -> LiveInboxRow {
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
                snoozed_until: None,
                tags: Vec::new(),
                preview_files: 0,
            },
            last_visitor_message: Some(MessageId(newest)),
            newest: MessageId(newest),
            reads: Vec::new(),
        }
    }

    fn message(id: i64, author: Author, body: &str) -> InboxEvent {
        InboxEvent::new(
            SiteId(1),
            Arc::new(MessageRow {
                id: MessageId(id),
                conversation_id: C,
                author,
                author_name: None,
                client_id: None,
                body: body.into(),
                created_at: id * 10,
                attachments: Vec::new(),
            }),
        )
    }

    fn event(id: i64, author: Author, body: &str) -> InboxSignal {
        InboxSignal::Event(Arc::new(message(id, author, body)))
    }

    fn read_by(user: i64, up_to: i64) -> InboxSignal {
        InboxSignal::Read(ReadMark {
            user: UserId(user),
            conversation: C,
            up_to: MessageId(up_to),
            is_unread: false,
        })
    }

    fn marked_unread_by(user: i64, visitor_message: i64) -> InboxSignal {
        InboxSignal::Read(ReadMark {
            is_unread: true,
            ..match read_by(user, visitor_message) {
                InboxSignal::Read(mark) => mark,
                _ => unreachable!(),
            }
        })
    }

    /// A read of the summary as of message `newest`, kept at once.
    fn kept(summaries: &Summaries, newest: i64) {
        let ticket = summaries.begin([C]);
        summaries.keep(ticket, C, Some(&Arc::new(LiveItem::new(row(newest)))));
    }

    fn preview(summaries: &Summaries, event: i64) -> Option<String> {
        let item = summaries.known(C, MessageId(event))?;
        item.row.item.preview_body.clone()
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

        summaries.signal(&read_by(3, 5));
        let read = summaries.known(C, MessageId(5)).expect("followed");
        assert!(!read.row.is_unread_for(UserId(3)));
        assert!(read.row.is_unread_for(UserId(4)));

        // Marked unread, it is unread for that agent alone, until their next read; a read mark
        // published late (older than the marker) still clears the mark, as the store does.
        summaries.signal(&marked_unread_by(3, 5));
        let marked = summaries.known(C, MessageId(5)).expect("followed");
        assert!(marked.row.is_unread_for(UserId(3)));
        summaries.signal(&marked_unread_by(3, 5));
        summaries.signal(&read_by(3, 4));
        let read_again = summaries.known(C, MessageId(5)).expect("followed");
        assert!(!read_again.row.is_unread_for(UserId(3)));
        assert_eq!(read_again.row.reads.len(), 1);
    }

    #[test]
    fn a_visitor_message_ends_a_snooze_and_a_reply_does_not() {
        let mut snoozed = row(1);
        snoozed.item.snoozed_until = Some(99);
        let reply = followed(&snoozed, &message(2, Author::Agent, "later")).expect("told");
        assert_eq!(reply.item.snoozed_until, Some(99));
        let wrote = followed(&reply, &message(3, Author::Visitor, "hello?")).expect("told");
        assert_eq!(wrote.item.snoozed_until, None);
    }

    #[test]
    fn a_message_of_files_alone_is_previewed_by_their_number() {
        let mut files = message(2, Author::Agent, "");
        let file = |id: &str| crate::store::AttachmentMeta {
            id: id.into(),
            name: "photo.jpg".into(),
            content_type: "image/jpeg".into(),
            size: 1,
        };
        let mut row_of_files = (*files.message).clone();
        row_of_files.attachments = vec![file("att_a"), file("att_b")];
        files.message = Arc::new(row_of_files);
        let shown = followed(&row(1), &files).expect("told");
        assert_eq!(shown.item.preview_files, 2);
        let text = followed(&shown, &message(3, Author::Visitor, "thanks")).expect("told");
        assert_eq!(text.item.preview_files, 0);
    }

    #[test]
    fn what_a_message_does_not_tell_drops_the_summary() {
        let summaries = Summaries::default();
        kept(&summaries, 1);
        summaries.signal(&event(2, Author::System, "Ana closed the conversation"));
        assert!(summaries.known(C, MessageId(2)).is_none());

        kept(&summaries, 2);
        let mut named = message(3, Author::Visitor, "I am Bo");
        named.visitor_changed = true;
        summaries.signal(&InboxSignal::Event(Arc::new(named)));
        assert!(summaries.known(C, MessageId(3)).is_none());

        kept(&summaries, 3);
        summaries.erased(&Erasure {
            visitor: VisitorId(1),
            conversations: vec![C],
            by_the_visitor: false,
        });
        assert!(summaries.known(C, MessageId(3)).is_none());

        kept(&summaries, 3);
        summaries.forget_all();
        assert!(summaries.known(C, MessageId(3)).is_none());
    }

    #[test]
    fn changes_published_during_a_read_are_applied_to_what_it_read() {
        let summaries = Summaries::default();
        let ticket = summaries.begin([C]);
        // Message 2 is in the read's snapshot, 3 came after it; Ana read up to 3 meanwhile.
        summaries.signal(&event(2, Author::Visitor, "seen by the read"));
        summaries.signal(&event(3, Author::Agent, "missed by the read"));
        summaries.signal(&read_by(1, 3));
        let mut snapshot = row(2);
        snapshot.item.preview_body = Some("seen by the read".into());
        summaries.keep(ticket, C, Some(&Arc::new(LiveItem::new(snapshot))));
        let item = summaries.known(C, MessageId(3)).expect("kept");
        assert_eq!(
            item.row.item.preview_body.as_deref(),
            Some("missed by the read")
        );
        assert_eq!(item.row.newest, MessageId(3));
        assert!(!item.row.is_unread_for(UserId(1)));
    }

    #[test]
    fn a_read_is_not_kept_when_it_cannot_be_brought_up_to_date() {
        let summaries = Summaries::default();
        // A status line after the read's snapshot.
        let ticket = summaries.begin([C]);
        summaries.signal(&event(2, Author::System, "Ana took it"));
        summaries.keep(ticket, C, Some(&Arc::new(LiveItem::new(row(1)))));
        assert!(preview(&summaries, 1).is_none());
        // A status line inside the snapshot is no reason to refuse it.
        let ticket = summaries.begin([C]);
        summaries.signal(&event(2, Author::System, "Ana took it"));
        summaries.keep(ticket, C, Some(&Arc::new(LiveItem::new(row(2)))));
        assert_eq!(preview(&summaries, 2).as_deref(), Some("first"));

        // Everything forgotten while a read was under way.
        summaries.forget_all();
        let ticket = summaries.begin([C]);
        summaries.forget_all();
        summaries.keep(ticket, C, Some(&Arc::new(LiveItem::new(row(2)))));
        assert!(preview(&summaries, 2).is_none());

        // A later read of the same conversation wins over an earlier one.
        let first = summaries.begin([C]);
        let second = summaries.begin([C]);
        summaries.keep(first, C, Some(&Arc::new(LiveItem::new(row(1)))));
        assert!(preview(&summaries, 1).is_none());
        summaries.keep(second, C, Some(&Arc::new(LiveItem::new(row(2)))));
        assert!(preview(&summaries, 2).is_some());

        // A read that fell too far behind.
        summaries.forget_all();
        let ticket = summaries.begin([C]);
        for id in 0..=i64::try_from(COLLECTED).unwrap_or(i64::MAX) {
            summaries.signal(&event(10 + id, Author::Visitor, "busy"));
        }
        summaries.keep(ticket, C, Some(&Arc::new(LiveItem::new(row(2)))));
        assert!(preview(&summaries, 2).is_none());
    }

    #[test]
    fn a_message_the_read_already_saw_is_not_applied_twice() {
        let summaries = Summaries::default();
        kept(&summaries, 4);
        // Message 3 committed before the read but published after it: already in the summary.
        summaries.signal(&event(3, Author::Agent, "older"));
        assert_eq!(preview(&summaries, 4).as_deref(), Some("first"));
    }

    #[test]
    fn only_read_conversations_are_remembered_and_memory_is_bounded() {
        let summaries = Summaries::default();
        summaries.signal(&event(1, Author::Visitor, "nobody reads this"));
        assert!(summaries.table().entries.is_empty());
        for id in 0..=i64::try_from(KEPT).unwrap_or(i64::MAX) {
            summaries.begin([ConversationId(id)]);
        }
        assert!(summaries.table().entries.len() <= KEPT);
    }
}
