//! The `read` and `closed` frames (docs/widget-protocol.md): live from the hub, and once more
//! right after `welcome` for a visitor who comes back, so a widget that was away still shows
//! "Seen" and the closed notice. A failed read of them is logged, never fatal: they are hints.

use crate::chat::Chat;
use crate::hub::VisitorEvent;
use crate::store::VisitorId;

use super::protocol::ServerFrame;
use super::typing::VisitorTyping;

/// The frames a (re)connecting visitor's widget gets after `welcome`, about their newest
/// conversation: `read` when an agent has seen one of their messages, `closed` when it is closed.
pub(super) async fn on_resume(chat: &Chat, visitor: Option<VisitorId>) -> Vec<String> {
    let Some(visitor) = visitor else {
        return Vec::new();
    };
    let receipts = match chat.visitor_receipts(visitor).await {
        Ok(receipts) => receipts,
        Err(err) => {
            tracing::warn!(error = %err, "could not read a visitor's receipts");
            return Vec::new();
        }
    };
    let read = receipts.seen_up_to.map(|up_to| ServerFrame::Read { up_to });
    let closed = receipts
        .closed
        .map(|(conversation_id, id)| ServerFrame::Closed {
            conversation_id,
            id,
        });
    read.into_iter()
        .chain(closed)
        .map(|f| f.to_json())
        .collect()
}

/// The frame for a live `Read`, `Closed` or `Reopened` event (`None` for any other event). A
/// closed conversation is no longer the one the visitor's typing goes to, and their next message
/// starts a new one (which the brakes count as such); a reopened one is theirs again.
pub(super) fn frame(
    event: &VisitorEvent,
    typing: &mut VisitorTyping,
    has_conversation: &mut bool,
) -> Option<String> {
    let frame = match *event {
        VisitorEvent::Read { up_to } => ServerFrame::Read { up_to },
        VisitorEvent::Closed { conversation, line } => {
            if typing.conversation == Some(conversation) {
                typing.conversation = None;
                *has_conversation = false;
            }
            ServerFrame::Closed {
                conversation_id: conversation,
                id: line,
            }
        }
        VisitorEvent::Reopened { conversation, line } => {
            typing.conversation = Some(conversation);
            *has_conversation = true;
            ServerFrame::Reopened {
                conversation_id: conversation,
                id: line,
            }
        }
        _ => return None,
    };
    Some(frame.to_json())
}
