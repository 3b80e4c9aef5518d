//! One agent's unread counts on a live page, and the alerts ("a visitor wrote") it sends. Loaded
//! once when the stream connects (and again after a `Resync`), then kept from the hub's events in
//! memory: a visitor message or a read mark costs no database read; only a status line (assign,
//! close, reopen, snooze: human-rate, though a bulk action or many snoozes ending at one 9:00
//! make a burst of up to a few hundred) reads its one conversation again. The counts themselves are kept
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
use crate::store::{ConversationId, InboxItemRow, MessageId, MessageRow, SiteId, UserId};
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

/// What should get the agent's attention (sound, desktop notification): a visitor message, a
/// colleague giving them a conversation or taking one from them, or a snooze running out.
#[derive(Debug, Serialize)]
struct Alert<'a> {
    /// `message` (a visitor wrote), `assigned` (someone else assigned the conversation to the
    /// agent), `unassigned` (someone else took it from them or unassigned it) or `woke` (its
    /// snooze ran out, and it is the agent's or nobody's).
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
/// Or for the line of a snooze that ran out on a conversation that is `me`'s or nobody's.
fn status_alert(
    me: UserId,
    event: &InboxEvent,
    item: &InboxItemRow,
    before: Option<UserId>,
) -> Option<String> {
    if event.by == Some(me) || item.status != "open" {
        return None;
    }
    let kind = if event.woke {
        if !item.is_active() || item.assignee_id.is_some_and(|user| user != me) {
            return None;
        }
        "woke"
    } else {
        match (before == Some(me), item.assignee_id == Some(me)) {
            (false, true) => "assigned",
            (true, false) => "unassigned",
            _ => return None,
        }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Open {
    site: SiteId,
    assignee: Option<UserId>,
    /// The newest visitor message the agent has not seen, if any.
    unread: Option<MessageId>,
    /// Snoozed: kept (its assignee is the one a later change compares with) but not counted.
    snoozed: bool,
}

impl Open {
    /// A conversation of `site` nobody has, read, not snoozed.
    fn new(site: SiteId) -> Self {
        Self {
            site,
            assignee: None,
            unread: None,
            snoozed: false,
        }
    }

    /// Unassigned, or assigned to `me`: what the agent is alerted about and `needs` counts.
    fn is_for(self, me: UserId) -> bool {
        self.assignee.is_none_or(|user| user == me)
    }
}

/// What a conversation (`None`: not open) adds to `me`'s counts: nothing while it is snoozed.
fn share(open: Option<Open>, me: UserId) -> Counts {
    let mut share = Counts::default();
    if let Some(open) = open.filter(|open| open.unread.is_some() && !open.snoozed) {
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
    /// page marks them read), so it is kept like the others but left out of the counts, and
    /// sent apart as `here` (see [`CountsEvent`]).
    viewing: Option<ConversationId>,
    /// Open conversations. Ids are ours and sequential, never chosen by a client, so the fast
    /// hasher needs no defence against crafted keys.
    open: FxHashMap<ConversationId, Open>,
    /// The counts of `open` as it stands, kept by [`Self::change`].
    counts: Counts,
    /// The site an inbox filtered to one site shows, whose own counts its tabs show
    /// (`site_counts`, kept alongside).
    scope: Option<SiteId>,
    site_counts: Counts,
    /// The counts last sent, so an unchanged count is not sent again.
    sent: Option<CountsEvent>,
}

/// The `counts` event's data. On a conversation page, `here` is what its own conversation adds
/// now (zero once it is read, here or anywhere): the server leaves it out of the counts (the
/// page reads its messages as they arrive), but a visitor message that arrives while the tab is
/// in the background stays unread until the tab is shown, and only the page knows when that is,
/// so it adds `here` itself meanwhile (server/assets/admin/inbox.js).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
struct CountsEvent {
    #[serde(flatten)]
    counts: Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    here: Option<Counts>,
    /// On an inbox filtered to one site, that site's counts, for its tabs.
    #[serde(skip_serializing_if = "Option::is_none")]
    site: Option<SiteCounts>,
}

/// One site's counts, with the site's id (a tab that passes them on says whose they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
struct SiteCounts {
    id: SiteId,
    #[serde(flatten)]
    counts: Counts,
}

impl Tally {
    /// Reads where `me` stands now, for a page showing conversation `viewing`, or an inbox
    /// filtered to site `scope`.
    pub async fn load(
        app: &AppState,
        me: UserId,
        viewing: Option<ConversationId>,
        scope: Option<SiteId>,
    ) -> Result<Self, Gone> {
        let mut tally = Self {
            me,
            viewing,
            open: FxHashMap::default(),
            counts: Counts::default(),
            scope,
            site_counts: Counts::default(),
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
        self.open = rows
            .iter()
            .map(|r| {
                let open = Open {
                    site: r.site_id,
                    assignee: r.assignee_id,
                    unread: r.unread_up_to,
                    snoozed: r.is_snoozed,
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
        let (mut counts, mut site_counts) = (Counts::default(), Counts::default());
        for (&id, open) in &self.open {
            if Some(id) == self.viewing {
                continue;
            }
            let share = share(Some(*open), self.me);
            counts.apply(share, true);
            if Some(open.site) == self.scope {
                site_counts.apply(share, true);
            }
        }
        (self.counts, self.site_counts) = (counts, site_counts);
    }

    /// Sets conversation `id` to what `edit` makes of it (`None`: not open) and keeps the
    /// counts.
    fn change(&mut self, id: ConversationId, edit: impl FnOnce(Option<Open>) -> Option<Open>) {
        let before = self.open.get(&id).copied();
        let after = edit(before);
        if after == before {
            return;
        }
        // The conversation on screen is kept, but counted apart (`here`).
        if Some(id) != self.viewing {
            for (open, more) in [(before, false), (after, true)] {
                let share = share(open, self.me);
                self.counts.apply(share, more);
                if open.is_some_and(|open| Some(open.site) == self.scope) {
                    self.site_counts.apply(share, more);
                }
            }
        }
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
                        if self.on_visitor_message(event.site_id, message) {
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
            InboxSignal::Typing { .. } => {}
            InboxSignal::Resync => self.reload(app).await?,
        }
        Ok(())
    }

    /// Adds the counts to `batch` unless the browser already has them (first of all, after
    /// loading).
    pub fn send_counts(&mut self, batch: &mut Batch) {
        let event = CountsEvent {
            counts: self.counts,
            here: self
                .viewing
                .map(|id| share(self.open.get(&id).copied(), self.me)),
            site: self.scope.map(|id| SiteCounts {
                id,
                counts: self.site_counts,
            }),
        };
        if self.sent != Some(event) {
            self.sent = Some(event);
            // Serialising this plain struct cannot fail.
            batch.event("counts", &serde_json::to_string(&event).unwrap_or_default());
        }
    }

    /// Counts a visitor message; whether the agent is to be alerted about it. A visitor
    /// message in a conversation not open here opened it: a closed one never takes messages
    /// (the next one starts a new conversation).
    fn on_visitor_message(&mut self, site: SiteId, message: &MessageRow) -> bool {
        let me = self.me;
        let mut for_me = false;
        self.change(message.conversation_id, |before| {
            let mut open = before.unwrap_or(Open::new(site));
            // The message ended any snooze, in its own write.
            open.snoozed = false;
            open.unread = Some(open.unread.map_or(message.id, |u| u.max(message.id)));
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
            .and_then(|item| status_alert(self.me, event, item, before));
        self.change(id, |before| {
            let item = item.filter(|item| item.status == "open")?;
            // The line is newer than any unread visitor message, so reading up to it clears it.
            let unread = item
                .is_unread
                .then(|| before.and_then(|open| open.unread).unwrap_or(line.id));
            Some(Open {
                site: item.site_id,
                assignee: item.assignee_id,
                unread,
                snoozed: item.snoozed_until.is_some(),
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
    /// message) or marked it unread (it counts again; on its own page, only in `here`).
    fn on_read(&mut self, mark: ReadMark) {
        if mark.user != self.me {
            return;
        }
        self.change(mark.conversation, |before| {
            before.map(|open| match open.unread {
                // A visitor message counted meanwhile stays the newest unread.
                unread if mark.is_unread => Open {
                    unread: Some(unread.map_or(mark.up_to, |newest| newest.max(mark.up_to))),
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
#[path = "tally_tests.rs"]
mod tests;
