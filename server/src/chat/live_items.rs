//! The conversations behind recent inbox events, read once and shared by every agent's live
//! inbox stream. Without it each open inbox read and rendered every event itself, so each
//! watching agent added a database read and a render to every visitor message; with it the
//! first stream to reach an event reads the conversation, the others wait for that read, and
//! each distinct rendering is made once (see [`LiveItem::rendering`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::OnceCell;

use crate::store::{self, ConversationId, LiveInboxRow, MessageId, Readers};

use super::Error;

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
    /// Rendering number `variant` (`< RENDERINGS`), made by `render` on first use. The caller
    /// numbers its renderings so that one number always means the same output.
    pub fn rendering(&self, variant: usize, render: impl FnOnce() -> String) -> Arc<str> {
        match self.renderings.get(variant) {
            Some(slot) => Arc::clone(slot.get_or_init(|| render().into())),
            None => render().into(),
        }
    }
}

/// `None`: the conversation no longer exists.
type Slot = Arc<OnceCell<Option<Arc<LiveItem>>>>;

/// The shared reads, keyed by the event's message id (which names its conversation).
#[derive(Default)]
pub struct LiveItems {
    recent: Mutex<Recent>,
}

#[derive(Default)]
struct Recent {
    slots: HashMap<MessageId, Slot>,
    order: VecDeque<MessageId>,
}

impl LiveItems {
    fn slot(&self, event: MessageId) -> Slot {
        let Ok(mut recent) = self.recent.lock() else {
            // A poisoned lock only loses the sharing, never the event.
            return Slot::default();
        };
        if let Some(slot) = recent.slots.get(&event) {
            return Arc::clone(slot);
        }
        if recent.order.len() == REMEMBERED
            && let Some(oldest) = recent.order.pop_front()
        {
            recent.slots.remove(&oldest);
        }
        recent.order.push_back(event);
        Arc::clone(recent.slots.entry(event).or_default())
    }

    /// The conversation as of event `event` (or later): read by the first caller, shared with
    /// the rest. A failed read is not remembered, so the next caller tries again.
    pub async fn get(
        &self,
        readers: &Arc<Readers>,
        conversation: ConversationId,
        event: MessageId,
    ) -> Result<Option<Arc<LiveItem>>, Error> {
        let slot = self.slot(event);
        let item = slot
            .get_or_try_init(|| async {
                let row = readers
                    .read(move |c| store::find_live_inbox_row(c, conversation))
                    .await?;
                Ok::<_, Error>(row.map(|row| {
                    Arc::new(LiveItem {
                        row,
                        renderings: Default::default(),
                    })
                }))
            })
            .await?;
        Ok(item.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendering_is_made_once_per_variant() {
        let item = LiveItem {
            row: LiveInboxRow {
                item: crate::store::InboxItemRow {
                    id: ConversationId(1),
                    site_id: crate::store::SiteId(1),
                    site_name: "Shop".into(),
                    visitor_id: crate::store::VisitorId(1),
                    visitor_name: None,
                    visitor_email: None,
                    status: "open".into(),
                    assignee_id: None,
                    assignee_name: None,
                    created_at: 0,
                    last_message_at: 0,
                    waiting_since: None,
                    preview_author: None,
                    preview_body: None,
                    is_unread: false,
                },
                last_visitor_message: None,
                reads: Vec::new(),
            },
            renderings: Default::default(),
        };
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

    #[test]
    fn old_events_are_forgotten() {
        let items = LiveItems::default();
        let first = items.slot(MessageId(1));
        assert!(Arc::ptr_eq(&first, &items.slot(MessageId(1))));
        for id in 2..=i64::try_from(REMEMBERED).unwrap_or(i64::MAX) + 1 {
            items.slot(MessageId(id));
        }
        assert!(!Arc::ptr_eq(&first, &items.slot(MessageId(1))));
    }
}
