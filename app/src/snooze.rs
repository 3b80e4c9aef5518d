//! The side panel's *Snooze* (docs/admin.md, "Snooze"): how long for, or when it ends and
//! *Unsnooze*.

use leptos::prelude::*;

use crate::layout::CsrfField;
use crate::time::time_view;

/// How long a conversation can be snoozed for from its side panel, in minutes.
pub const SNOOZE_CHOICES: [(u32, &str); 5] = [
    (60, "1 hour"),
    (4 * 60, "4 hours"),
    (24 * 60, "1 day"),
    (3 * 24 * 60, "3 days"),
    (7 * 24 * 60, "1 week"),
];

/// Snoozing an open conversation, or the end of its snooze and *Unsnooze*.
fn snooze_form(id: i64, csrf: String, snoozed_until: Option<i64>) -> impl IntoView {
    if let Some(until) = snoozed_until {
        return view! {
            <form method="post" action=format!("/conversations/{id}/unsnooze") class="snooze">
                <CsrfField token=csrf/>
                <p>"Snoozed until "{time_view(until)}", or until the visitor writes."</p>
                <button type="submit" class="button">"Unsnooze"</button>
            </form>
        }
        .into_any();
    }
    let options = SNOOZE_CHOICES
        .into_iter()
        .map(|(minutes, label)| view! { <option value=minutes>{label}</option> })
        .collect_view();
    view! {
        <form method="post" action=format!("/conversations/{id}/snooze") class="inline-form snooze"
            data-shortcut="snooze">
            <CsrfField token=csrf/>
            <label for="snooze-minutes">"Snooze for"</label>
            <div class="inline-controls">
                <select id="snooze-minutes" name="minutes">{options}</select>
                <button type="submit" class="button">"Snooze"</button>
            </div>
        </form>
    }
    .into_any()
}

/// The side panel's *Snooze* section, for an open conversation.
pub(crate) fn snooze_panel(
    id: i64,
    csrf: String,
    is_open: bool,
    snoozed_until: Option<i64>,
) -> Option<impl IntoView> {
    is_open.then(|| {
        view! {
            <section class="panel">
                <h2>"Snooze"</h2>
                {snooze_form(id, csrf, snoozed_until)}
            </section>
        }
    })
}
