//! A conversation's status on its page: Close or Reopen in the side panel (or where the
//! visitor's newer conversation is), and the reply box's hint while it is closed.

use leptos::prelude::*;

use crate::conversation::OtherConversationView;
use crate::layout::CsrfField;

/// The visitor's conversation started after conversation `id`, the newest, if any.
pub(crate) fn newer_conversation(id: i64, others: &[OtherConversationView]) -> Option<i64> {
    others
        .iter()
        .map(|other| other.id)
        .find(|&other| other > id)
}

/// What the reply box says on a closed conversation (shown by the script while the side panel
/// says closed): a reply still reaches the visitor, but their answer goes elsewhere.
pub(crate) fn closed_hint(is_open: bool, newer: Option<i64>) -> impl IntoView {
    let text = match newer {
        Some(newer) => view! {
            "This conversation is closed and the visitor has started a newer one: answer in "
            <a href=format!("/conversations/{newer}")>{format!("Conversation {newer}")}</a>
            ". A reply here reaches the visitor, but their answer goes there."
        }
        .into_any(),
        None => view! {
            "This conversation is closed. A reply still reaches the visitor, but their answer \
             starts a new conversation: reopen it to continue here."
        }
        .into_any(),
    };
    view! { <p class="notice notice-warning" id="closed-hint" hidden=is_open>{text}</p> }
}

/// Close, or Reopen, or where the visitor's newer conversation is (reopening would be refused).
pub(crate) fn status_form(
    id: i64,
    csrf: &str,
    is_open: bool,
    others: &[OtherConversationView],
) -> impl IntoView + use<> {
    if is_open {
        view! {
            <form method="post" action=format!("/conversations/{id}/close") data-shortcut="close">
                <CsrfField token=csrf.to_owned()/>
                <button type="submit" class="button">"Close conversation"</button>
            </form>
        }
        .into_any()
    } else if let Some(newer) = newer_conversation(id, others) {
        // Reopening would be refused: the visitor's next messages go to the newer one.
        view! {
            <p class="hint">"The visitor has started a newer conversation: "
                <a href=format!("/conversations/{newer}")>{format!("Conversation {newer}")}</a>"."</p>
        }
        .into_any()
    } else {
        view! {
            <form method="post" action=format!("/conversations/{id}/reopen")>
                <CsrfField token=csrf.to_owned()/>
                <button type="submit" class="button">"Reopen conversation"</button>
            </form>
        }
        .into_any()
    }
}
