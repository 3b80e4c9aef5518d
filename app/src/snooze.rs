//! The side panel's *Snooze* (docs/admin.md, "Snooze"): how long for, or when it ends and
//! *Unsnooze*.

use leptos::prelude::*;

use crate::layout::{CsrfField, field_marks};
use crate::time::time_view;

/// The side panel's choices: a number of minutes, or `tomorrow` and `monday` (9:00 in the
/// agent's time zone, which the page sends as `time_zone`), or `custom` (the date and time of
/// the field beside); `admin/snooze.rs` reads them.
pub const SNOOZE_CHOICES: [(&str, &str); 8] = [
    ("60", "for 1 hour"),
    ("240", "for 4 hours"),
    ("tomorrow", "until tomorrow, 9:00"),
    ("1440", "for 1 day"),
    ("4320", "for 3 days"),
    ("monday", "until Monday, 9:00"),
    ("10080", "for 1 week"),
    ("custom", "until a date and time…"),
];

/// The custom end's field: a refused snooze marks it and gives it the focus.
pub const SNOOZE_UNTIL_FIELD: &str = "snooze-until";
/// The choice's field, marked when the choice itself is refused.
pub const SNOOZE_MINUTES_FIELD: &str = "snooze-minutes";

/// Snoozing an open conversation, or the end of its snooze and *Unsnooze*. `typed_until`: a
/// refused "until a date and time…" and what its field held, chosen and given back.
fn snooze_form(
    id: i64,
    csrf: String,
    (snoozed_until, typed_until): (Option<i64>, Option<String>),
) -> impl IntoView {
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
    let custom = typed_until.is_some();
    let options = SNOOZE_CHOICES
        .into_iter()
        .map(|(value, label)| {
            view! { <option value=value selected=custom && value == "custom">{label}</option> }
        })
        .collect_view();
    let marked = custom.then_some(SNOOZE_UNTIL_FIELD);
    view! {
        <form method="post" action=format!("/conversations/{id}/snooze") class="inline-form snooze"
            data-shortcut="snooze">
            <CsrfField token=csrf/>
            // The agent's time zone, set by time.js as the form is sent (UTC without it).
            <input type="hidden" name="time_zone" value="UTC" data-browser-zone/>
            <label for="snooze-minutes">"Snooze"</label>
            <div class="inline-controls">
                <select id=SNOOZE_MINUTES_FIELD name="minutes">{options}</select>
                // Shown while "until a date and time…" is chosen (admin.css), in the agent's own
                // time zone like the other choices; on a line of its own before the button, so
                // the field comes before what sends it.
                <div class="snooze-custom">
                    <label for="snooze-until">"Until (your time)"</label>
                    <input type="datetime-local" id="snooze-until" name="until" value={typed_until}
                        {..field_marks(marked, SNOOZE_UNTIL_FIELD, None)}/>
                </div>
                <button type="submit" class="button">"Snooze"</button>
            </div>
        </form>
    }
    .into_any()
}

/// The side panel's *Snooze* section, for an open conversation: the end of its snooze, or the
/// form (see [`snooze_form`]).
pub(crate) fn snooze_panel(
    id: i64,
    csrf: String,
    is_open: bool,
    snooze: (Option<i64>, Option<String>),
) -> Option<impl IntoView> {
    is_open.then(|| {
        view! {
            <section class="panel">
                <h2>"Snooze"</h2>
                {snooze_form(id, csrf, snooze)}
            </section>
        }
    })
}
