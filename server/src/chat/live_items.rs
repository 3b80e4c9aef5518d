//! The conversations behind recent inbox events, shared by every agent's live inbox stream.
//! Without it each open inbox read and rendered every event itself, so each watching agent
//! added a database read and a render to every visitor message. With it a conversation already
//! shown is followed in memory (`live_summaries.rs`) and costs no read at all; the first stream
//! to reach a burst of events reads the others' conversations in one go, the other streams wait
//! for that read, and each distinct rendering is made once (see [`LiveItem::rendering`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::OnceCell;

use crate::store::{self, ConversationId, LiveInboxRow, MessageId, Readers};

use super::Error;
use super::live_summaries::Summaries;

/// Events remembered. Streams reach an event within moments of each other, so this only has
/// to cover how far the slowest stream may trail the fastest: the hub's queue of a stream (one
/// further behind is dropped and replays from the database), and the burst it is working on.
const REMEMBERED: usize = 2 * crate::hub::INBOX_QUEUE;

/// Distinct renderings one conversation can have in the live inbox (see the admin's live view).
pub const RENDERINGS: usize = 8;

/// A conversation as of an event, and the renderings made of it so far.
#[derive(Debug)]
pub struct LiveItem {
    pub row: LiveInboxRow,
    renderings: [OnceLock<Arc<str>>; RENDERINGS],
}

impl LiveItem {
    pub fn new(row: LiveInboxRow) -> Self {
        Self {
            row,
            renderings: Default::default(),
        }
    }

    /// Rendering number `variant` (`< RENDERINGS`), made by `render` on first use. The caller
    /// numbers its renderings so that one number always means the same output.
    pub fn rendering(&self, variant: usize, render: impl FnOnce() -> String) -> Arc<str> {
        match self.renderings.get(variant) {
            Some(slot) => Arc::clone(slot.get_or_init(|| render().into())),
            None => render().into(),
        }
    }
}

/// The events of one burst, read together: one trip to a reader connection for all of them
/// instead of one each (the hand-off to a blocking thread costs more than the reads). `None`
/// in the map: the conversation no longer exists.
struct Group {
    wanted: Vec<(MessageId, ConversationId)>,
    read: OnceCell<HashMap<MessageId, Option<Arc<LiveItem>>>>,
}

impl Group {
    /// The conversations as of their events (or later): read by the first caller, shared with
    /// the rest, who wait for it, and kept in `summaries`. A failed read is not remembered, so
    /// the next caller retries.
    async fn items(
        &self,
        readers: &Arc<Readers>,
        summaries: &Summaries,
    ) -> Result<&HashMap<MessageId, Option<Arc<LiveItem>>>, Error> {
        self.read
            .get_or_try_init(|| async {
                let ticket = summaries.begin(self.wanted.iter().map(|(_, c)| *c));
                let wanted = self.wanted.clone();
                let read = readers
                    .read(move |c| {
                        wanted
                            .into_iter()
                            .map(|(event, conversation)| {
                                let row = store::find_live_inbox_row(c, conversation)?;
                                Ok((event, conversation, row))
                            })
                            .collect::<Result<Vec<_>, store::Error>>()
                    })
                    .await;
                let rows = match read {
                    Ok(rows) => rows,
                    Err(err) => {
                        for (_, conversation) in &self.wanted {
                            summaries.keep(ticket, *conversation, None);
                        }
                        return Err(err.into());
                    }
                };
                Ok::<_, Error>(
                    rows.into_iter()
                        .map(|(event, conversation, row)| {
                            let item = row.map(|row| Arc::new(LiveItem::new(row)));
                            summaries.keep(ticket, conversation, item.as_ref());
                            (event, item)
                        })
                        .collect(),
                )
            })
            .await
    }
}

/// The shared reads, keyed by the event's message id (which names its conversation), and the
/// summaries that make most reads unnecessary.
#[derive(Default)]
pub struct LiveItems {
    recent: Mutex<Recent>,
    summaries: Arc<Summaries>,
}

#[derive(Default)]
struct Recent {
    groups: HashMap<MessageId, Arc<Group>>,
    order: VecDeque<MessageId>,
}

impl LiveItems {
    /// What must follow the hub's signals to keep the summaries current.
    pub fn summaries(&self) -> &Arc<Summaries> {
        &self.summaries
    }

    /// The group that reads `event`: the one already planned, else a new one for every event of
    /// `burst` that has none yet and whose conversation is not followed (`event` among them).
    fn group(&self, event: MessageId, burst: &[(MessageId, ConversationId)]) -> Arc<Group> {
        let Ok(mut recent) = self.recent.lock() else {
            // A poisoned lock only loses the sharing, never the event.
            return Arc::new(Group {
                wanted: burst.iter().filter(|(e, _)| *e == event).copied().collect(),
                read: OnceCell::new(),
            });
        };
        if let Some(group) = recent.groups.get(&event) {
            return Arc::clone(group);
        }
        let wanted: Vec<_> = burst
            .iter()
            .filter(|(e, c)| {
                *e == event
                    || (!recent.groups.contains_key(e) && self.summaries.known(*c, *e).is_none())
            })
            .copied()
            .collect();
        let group = Arc::new(Group {
            wanted,
            read: OnceCell::new(),
        });
        for (e, _) in &group.wanted {
            if recent.order.len() == REMEMBERED
                && let Some(oldest) = recent.order.pop_front()
            {
                recent.groups.remove(&oldest);
            }
            recent.order.push_back(*e);
            recent.groups.insert(*e, Arc::clone(&group));
        }
        group
    }

    /// The conversation as of event `event` (or later): followed in memory, or read with the
    /// events of `burst` (those the caller is about to ask for, `event` among them).
    pub async fn get(
        &self,
        readers: &Arc<Readers>,
        (event, conversation): (MessageId, ConversationId),
        burst: &[(MessageId, ConversationId)],
    ) -> Result<Option<Arc<LiveItem>>, Error> {
        if let Some(item) = self.summaries.known(conversation, event) {
            return Ok(Some(item));
        }
        let group = self.group(event, burst);
        let items = group.items(readers, &self.summaries).await?;
        Ok(items.get(&event).cloned().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendering_is_made_once_per_variant() {
        let item = LiveItem::new(super::super::live_summaries::tests::row(1));
        let mut made = 0;
        for _ in 0..3 {
            item.rendering(2, || {
                made += 1;
                "two".into()
            });
        }
        assert_eq!(made, 1);
        assert_eq!(&*item.rendering(3, || "three".into()), "three");
    }

    fn burst(ids: std::ops::RangeInclusive<i64>) -> Vec<(MessageId, ConversationId)> {
        ids.map(|id| (MessageId(id), ConversationId(id))).collect()
    }

    #[test]
    fn a_burst_is_read_as_one_group_and_a_later_burst_adds_only_new_events() {
        let items = LiveItems::default();
        let first = items.group(MessageId(1), &burst(1..=3));
        assert_eq!(first.wanted.len(), 3);
        assert!(Arc::ptr_eq(
            &first,
            &items.group(MessageId(3), &burst(1..=3))
        ));
        // Another stream's burst overlapping the first: only 4 and 5 are new.
        let second = items.group(MessageId(4), &burst(2..=5));
        let wanted: Vec<_> = second.wanted.iter().map(|(e, _)| e.0).collect();
        assert_eq!(wanted, [4, 5]);
        assert!(Arc::ptr_eq(
            &first,
            &items.group(MessageId(2), &burst(2..=5))
        ));
    }

    #[test]
    fn old_events_are_forgotten() {
        let items = LiveItems::default();
        let first = items.group(MessageId(1), &burst(1..=1));
        let last = i64::try_from(REMEMBERED).unwrap_or(i64::MAX) + 1;
        for id in 2..=last {
            items.group(MessageId(id), &burst(id..=id));
        }
        assert!(!Arc::ptr_eq(
            &first,
            &items.group(MessageId(1), &burst(1..=1))
        ));
    }
}
