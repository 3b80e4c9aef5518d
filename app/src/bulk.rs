//! Several conversations at once (docs/admin.md, "Several at once"): the inbox list's form that
//! applies one action to the rows ticked in it. Each row's checkbox belongs to this form by its
//! `form` attribute, so rows the live stream adds take part without being inside it. Without
//! bulk.js the form works as it is: tick, choose, *Apply*.

use leptos::prelude::*;

use crate::layout::CsrfField;

/// What can be done to the ticked rows: the `action` value and its label. The server
/// (`admin/bulk.rs`) reads the same values.
pub const BULK_ACTIONS: [(&str, &str); 6] = [
    ("close", "Close"),
    ("assign-me", "Assign to me"),
    ("unassign", "Unassign"),
    ("snooze-60", "Snooze for 1 hour"),
    ("snooze-tomorrow", "Snooze until tomorrow, 9:00"),
    ("unread", "Mark unread"),
];

/// Rows at most in one go. More than a page of the list (200), since a page watched live grows
/// past it (admin.md, "Live updates"); bulk.js reads it from the form's `data-max` and offers no
/// *Apply* past it, and the server refuses more.
pub const BULK_MAX_ROWS: usize = 500;

/// The form's `id`, which each row's checkbox names.
pub const BULK_FORM: &str = "bulk";

/// The form above the list. `back` is this page's address, where the answer returns. Hidden
/// while the list is empty (bulk.js shows it when rows arrive).
#[component]
pub fn BulkForm(csrf: String, back: String, hidden: bool) -> impl IntoView {
    let options = BULK_ACTIONS
        .into_iter()
        .map(|(value, label)| view! { <option value=value>{label}</option> })
        .collect_view();
    view! {
        <form id=BULK_FORM class="bulk" method="post" action="/inbox/bulk"
            aria-label="Selected conversations" hidden=hidden data-max=BULK_MAX_ROWS>
            <CsrfField token=csrf/>
            <input type="hidden" name="back" value=back/>
            // The agent's time zone, set by time.js as the form is sent (for "tomorrow").
            <input type="hidden" name="time_zone" value="UTC" data-browser-zone/>
            // Shown by bulk.js, which keeps it in step with the rows.
            <label class="bulk-all" hidden>
                <input type="checkbox" data-select-all/>" Select all"
            </label>
            <span class="bulk-count" data-selected role="status"></span>
            // Hidden by bulk.js while nothing is ticked, so the list starts higher.
            <span class="bulk-controls" data-bulk-controls>
                <label for="bulk-action">"With the selected"</label>
                <select id="bulk-action" name="action">{options}</select>
                <button type="submit" class="button">"Apply"</button>
            </span>
        </form>
    }
}

/// A row's checkbox, in the form above by its `form` attribute.
pub fn row_checkbox(id: i64, visitor: &str) -> impl IntoView + use<> {
    view! {
        <input type="checkbox" class="select" name="id" value=id form=BULK_FORM
            aria-label=format!("Select the conversation with {visitor}")/>
    }
}
