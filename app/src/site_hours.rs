//! A site's business hours (admins only): the time zone, each day's opening spans, the away
//! message and what the chat does while closed; and the card on the site page that leads here.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, document, field_marks};
use crate::time::format_time;

/// The form's values, as typed (or as stored).
#[derive(Debug, Clone, Default)]
pub struct SiteHoursFormValues {
    pub time_zone: String,
    /// Monday first: (field name, day name, spans as typed).
    pub days: Vec<(&'static str, &'static str, String)>,
    pub away_message: String,
    /// The away message in other languages, one a line as `de: …`.
    pub away_messages: String,
    /// `email` or `accept`.
    pub out_of_hours: String,
    /// The first day of a closure, `YYYY-MM-DD`, or empty (from the save).
    pub closed_from: String,
    /// The last day of a closure, `YYYY-MM-DD`, or empty.
    pub closed_through: String,
}

/// The business-hours page of a site.
#[derive(Debug, Clone)]
pub struct SiteHoursView {
    pub nav: Nav,
    pub key: String,
    pub name: String,
    /// True when the site has hours stored (the "Remove hours" button shows).
    pub has_hours: bool,
    /// Open now or when it opens, for the admin to check the zone.
    pub state: HoursState,
    /// The first and last day of a closure set for later, as written beside the zone.
    pub holiday_ahead: Option<(String, String)>,
    pub values: SiteHoursFormValues,
    pub notice: Option<Notice>,
    /// Whether a visitor's address gets replies by email: without it the widget asks for none
    /// and promises none, which the page says, with the reason.
    pub mails_replies: MailReplies,
}

/// Whether replies can go to visitors by email, and if not, what is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailReplies {
    On,
    /// SMTP is configured; the site's email is off.
    SiteEmailOff,
    /// The server has no SMTP settings, so no site can send mail.
    NotConfigured,
}

/// Whether the chat is open now, by the site's hours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoursState {
    /// No hours stored.
    AlwaysOpen,
    OpenNow,
    /// Closed; opens `at` (Unix milliseconds), which is `site_local` on the site's clock
    /// (`Monday 2 March 2026 13:00 Europe/Berlin`).
    ClosedUntil {
        at: i64,
        site_local: String,
        /// The last day of the closure (a holiday) that closes it, as written beside the zone.
        holiday_through: Option<String>,
    },
    /// Closed, and no span opens it (after the closure, if one closes it).
    ClosedForGood {
        holiday_through: Option<String>,
    },
}

/// "Closed now" or, during a closure, which day it lasts through: an admin checking the page
/// should see why the chat is closed on a weekday its hours say is open.
fn closed_now(holiday_through: Option<String>) -> String {
    match holiday_through {
        Some(day) => format!("Closed through {day} (holiday)"),
        None => "Closed now".to_owned(),
    }
}

fn state_view(state: HoursState) -> AnyView {
    match state {
        HoursState::AlwaysOpen => "No business hours: the chat is always open.".into_any(),
        HoursState::OpenNow => "Open now.".into_any(),
        // The reader's time beside the site's: hours typed as 13:00 Berlin would otherwise read
        // as a mistake to an admin elsewhere ("opens 12:00 PM").
        HoursState::ClosedUntil {
            at,
            site_local,
            holiday_through,
        } => {
            let (iso, text) = format_time(at);
            let lead = format!("{}; opens {site_local} (", closed_now(holiday_through));
            view! { {lead}<time datetime=iso data-with-day="">{text}</time>" your time)." }
                .into_any()
        }
        HoursState::ClosedForGood { holiday_through } => {
            format!("{}, with no opening times.", closed_now(holiday_through)).into_any()
        }
    }
}

/// The site page's card that leads here.
pub fn business_hours_link(key: &str) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="business-hours-title">
            <h2 id="business-hours-title">"Business hours"</h2>
            <p class="hint">"Say when you answer live; out of hours the chat shows an away \
                message and offers replies by email."</p>
            <a class="button" href=format!("/sites/{key}/hours")>"Business hours"</a>
        </section>
    }
}

/// Above the out-of-hours choice, when replies cannot go by email: that the choice waits for
/// email (it is kept for then, not applied), why, and where to fix it.
fn mail_replies_hint(mails_replies: MailReplies, key: &str) -> Option<AnyView> {
    match mails_replies {
        MailReplies::On => None,
        MailReplies::SiteEmailOff => Some(
            view! {
                <p class="hint warning" id="mail-replies-hint" data-mail-replies="site-off">
                    "Email is off for this site, so for now the chat does neither: it asks for \
                     no address and promises no reply by email. The choice below is kept for \
                     when it is on, on the site's "
                    <a href=format!("/sites/{key}/email")>"Email page"</a>"."
                </p>
            }
            .into_any(),
        ),
        MailReplies::NotConfigured => Some(
            view! {
                <p class="hint warning" id="mail-replies-hint" data-mail-replies="no-smtp">
                    "Email is not configured on this server, so for now the chat does neither: \
                     it asks for no address and promises no reply by email; the choice below is \
                     kept for when email is set up. Set "
                    <code>"PORCH_SMTP_URL"</code>" and "<code>"PORCH_MAIL_FROM"</code>
                    " and restart Porch ("<a href="/docs/configuration.md">"configuration"</a>
                    "), then turn email on on the site's "
                    <a href=format!("/sites/{key}/email")>"Email page"</a>"."
                </p>
            }
            .into_any(),
        ),
    }
}

/// The closure's two dates: the first (optional) and the last day.
fn holiday_fields(from: &str, through: &str, refused: Option<&str>) -> impl IntoView {
    view! {
        <fieldset>
            <legend>"Holiday"</legend>
            <p class="hint" id="holiday-hint">"Optional: the chat is closed from the start of \
                the first day (or from now, without one) to the end of the last day on the \
                site's clock, whatever the opening times say, and shows the away message with \
                the day you are back. The opening times above are kept and apply again after \
                it. Empty both to open early."</p>
            <div class="field">
                <label for="closed_from">"Closed from"</label>
                <input id="closed_from" name="closed_from" type="date" value=from.to_owned()
                    {..field_marks(refused, "closed_from", Some("holiday-hint"))}/>
            </div>
            <div class="field">
                <label for="closed_through">"Closed through"</label>
                <input id="closed_through" name="closed_through" type="date" value=through.to_owned()
                    {..field_marks(refused, "closed_through", Some("holiday-hint"))}/>
            </div>
        </fieldset>
    }
}

/// Renders the business-hours page.
pub fn render_site_hours(view: SiteHoursView) -> String {
    let key = view.key;
    let csrf = view.nav.csrf.clone();
    let values = view.values;
    let is_email = values.out_of_hours != "accept";
    let mails_replies = view.mails_replies;
    let refused = view.notice.as_ref().and_then(Notice::field);
    let days = values
        .days
        .into_iter()
        .map(|(field, day, spans)| {
            view! {
                <div class="field">
                    <label for=field>{day}</label>
                    <input id=field name=field type="text" class="mono" value=spans
                        placeholder="closed" {..field_marks(refused, field, Some("spans-hint"))}/>
                </div>
            }
        })
        .collect_view();
    let remove = view.has_hours.then(|| {
        view! {
            <form method="post" action=format!("/sites/{key}/hours/remove")>
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button button-danger">"Remove hours (always open)"</button>
            </form>
        }
    });
    let title = format!("Business hours: {}", view.name);
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}")>"← "{view.name.clone()}</a></p>
            <h1>"Business hours"</h1>
            <p class="muted">"How the chat tells visitors when you answer, and what it does out \
                of hours: "<a href="/docs/widget.md#business-hours">"Business hours"</a>
                " in the widget guide."</p>
        </div>
        <NoticeBox notice=view.notice/>
        <p data-hours-state>{state_view(view.state)}</p>
        {view.holiday_ahead.map(|(from, through)| {
            let text = if from == through {
                format!("Closed for a holiday on {from}.")
            } else {
                format!("Closed for a holiday from {from} through {through}.")
            };
            view! { <p data-holiday-ahead>{text}</p> }
        })}
        <form method="post" action=format!("/sites/{key}/hours") class="card stack"
            aria-label="Business hours">
            <CsrfField token=csrf/>
            <div class="field">
                <label for="time_zone">"Time zone"</label>
                // Before any hours are saved the suggested zone is UTC; the page's script puts the
                // browser's own zone there instead (`data-guess-zone`, time.js).
                <input id="time_zone" name="time_zone" type="text" required maxlength="64"
                    value=values.time_zone data-guess-zone=(!view.has_hours).then_some("")
                    {..field_marks(refused, "time_zone", Some("time-zone-hint"))}/>
                <p class="hint" id="time-zone-hint">"An IANA name, such as Europe/Berlin or \
                    America/New_York. Opening times follow its daylight-saving changes."</p>
            </div>
            <fieldset>
                <legend>"Opening times"</legend>
                <p class="hint" id="spans-hint">"Spans like 09:00-12:00, 13:00-17:30; empty is \
                    closed all day. A span ending before it starts runs past midnight \
                    (22:00-02:00); 24:00 is midnight at the end of the day."</p>
                {days}
            </fieldset>
            {holiday_fields(&values.closed_from, &values.closed_through, refused)}
            <div class="field">
                <label for="away_message">"Away message"</label>
                <textarea id="away_message" name="away_message" rows="3" maxlength="500"
                    {..field_marks(refused, "away_message", None)}>{crate::textarea_text(&values.away_message)}</textarea>
                <p class="hint">"Shown in the chat while you are closed."</p>
            </div>
            <div class="field">
                <label for="away_messages">"Away message in other languages"</label>
                <textarea id="away_messages" name="away_messages" rows="3"
                    {..field_marks(refused, "away_messages", Some("away-messages-hint"))}>{crate::textarea_text(&values.away_messages)}</textarea>
                <p class="hint" id="away-messages-hint">"Optional, one a line with the language's code first ("
                    <code>"de: Wir sind gerade nicht da."</code>"). A widget in that language shows it \
                    instead of the away message above."</p>
            </div>
            <fieldset>
                <legend id="out-of-hours-label">"Out of hours"</legend>
                {mail_replies_hint(mails_replies, &key)}
                <div class="radios" role="radiogroup" aria-labelledby="out-of-hours-label"
                    aria-describedby=(mails_replies != MailReplies::On).then_some("mail-replies-hint")>
                    <label><input type="radio" name="out_of_hours" value="email" checked=is_email/>
                        " Ask for the visitor's email (chats are still taken)"</label>
                    <label><input type="radio" name="out_of_hours" value="accept" checked=!is_email/>
                        " Take chats with a \"we reply by email\" note"</label>
                </div>
            </fieldset>
            <button type="submit" class="button button-primary">"Save hours"</button>
        </form>
        {remove}
    };
    document(&title, Some(view.nav), true, content.into_any())
}
