//! A site's business hours (admins only): show, save and remove them. Each change is validated
//! (the form comes back with the error), audited, and drops the widget's cached copy of the site.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::layout::{Notice, Section};
use porch_app::site_hours::{
    HoursState, MailReplies, SiteHoursFormValues, SiteHoursView, render_site_hours,
};

use crate::audit::Actor;
use crate::chat::{self, SiteHoursInput};
use crate::http::ClientIp;
use crate::state::AppState;
use crate::store::{self, SiteRow};
use crate::values::{DAY_NAMES, HoursField, InvalidHours, day_and_date};

use super::auth::{NoFields, NoticeQuery};
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};
use super::sites::find_site;

/// The form's field names, Monday first (as `SiteHoursInput` names them).
const DAY_FIELDS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The id of the control a refusal is about; the out-of-hours choice is two radio buttons, and
/// the form's error stands for them (only a forged form sends another value).
fn field_id(field: HoursField) -> Option<&'static str> {
    match field {
        HoursField::TimeZone => Some("time_zone"),
        HoursField::Day(day) => DAY_FIELDS.get(day).copied(),
        HoursField::AwayMessage => Some("away_message"),
        HoursField::AwayMessages => Some("away_messages"),
        HoursField::OutOfHours => None,
        HoursField::ClosedFrom => Some("closed_from"),
        HoursField::ClosedThrough => Some("closed_through"),
    }
}

/// What the page says above the form, from the stored hours (not the form's).
struct PageState {
    has_hours: bool,
    state: HoursState,
    /// The first and last day of a closure set for later.
    holiday_ahead: Option<(String, String)>,
    mails_replies: MailReplies,
}

/// "Open now" or when a closed site opens (on the site's clock; the reader's is filled in by
/// the page's script), a closure set for later, and whether a visitor's address gets replies
/// by email (what "out of hours" offers depends on it).
async fn page_state(app: &AppState, site: &SiteRow) -> Result<PageState, PageError> {
    let hours = chat::find_site_hours(&app.readers, site.id).await?;
    let id = site.id;
    let email_on = app
        .readers
        .read(move |c| store::has_active_email(c, id))
        .await?;
    let now_ms = app.wall_clock.now_ms();
    let now = chat::availability(hours.as_ref(), now_ms);
    let holiday_through = hours
        .as_ref()
        .and_then(|h| h.closure_in_force(now_ms))
        .map(|closure| day_and_date(closure.through));
    let state = match (hours.is_some(), now.is_open, now.opens_at) {
        (false, ..) => HoursState::AlwaysOpen,
        (true, true, _) => HoursState::OpenNow,
        (true, false, Some(at)) => HoursState::ClosedUntil {
            at,
            site_local: hours
                .as_ref()
                .map(|h| h.hours.local_time(at))
                .unwrap_or_default(),
            holiday_through,
        },
        (true, false, None) => HoursState::ClosedForGood { holiday_through },
    };
    let holiday_ahead = hours
        .as_ref()
        .and_then(|h| h.closure_ahead(now_ms))
        .and_then(|closure| Some((day_and_date(closure.from?), day_and_date(closure.through))));
    let mails_replies = match (app.mailer.is_some(), email_on) {
        (false, _) => MailReplies::NotConfigured,
        (true, false) => MailReplies::SiteEmailOff,
        (true, true) => MailReplies::On,
    };
    Ok(PageState {
        has_hours: hours.is_some(),
        state,
        holiday_ahead,
        mails_replies,
    })
}

fn page(
    who: &SignedIn,
    site: &SiteRow,
    shown: PageState,
    input: &SiteHoursInput,
    notice: Option<Notice>,
) -> String {
    let days = DAY_FIELDS
        .into_iter()
        .zip(DAY_NAMES)
        .zip(input.days())
        .map(|((field, day), spans)| (field, day, spans))
        .collect();
    render_site_hours(SiteHoursView {
        nav: who.nav(Section::Sites),
        key: site.key.clone(),
        name: site.settings.name.clone(),
        has_hours: shown.has_hours,
        state: shown.state,
        holiday_ahead: shown.holiday_ahead,
        values: SiteHoursFormValues {
            time_zone: input.time_zone.clone(),
            days,
            away_message: input.away_message.clone(),
            away_messages: input.away_messages.clone(),
            out_of_hours: input.out_of_hours.clone(),
            closed_from: input.closed_from.clone(),
            closed_through: input.closed_through.clone(),
        },
        notice,
        mails_replies: shown.mails_replies,
    })
}

/// `GET /sites/{key}/hours`.
pub async fn hours_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    let hours = chat::find_site_hours(&app.readers, site.id).await?;
    let mut input = hours
        .as_ref()
        .map_or_else(SiteHoursInput::suggested, SiteHoursInput::from);
    // A closure whose last day is over closes nothing: the form offers none, rather than a
    // date its next save would refuse.
    if hours
        .as_ref()
        .is_some_and(|h| h.closure_has_passed(app.wall_clock.now_ms()))
    {
        input.closed_from.clear();
        input.closed_through.clear();
    }
    let notice = match query.notice.as_str() {
        "hours-saved" => Some(Notice::Success("Business hours saved.".to_owned())),
        "hours-removed" => Some(Notice::Success(
            "Business hours removed: the chat is always open.".to_owned(),
        )),
        _ => None,
    };
    let shown = page_state(&app, &site).await?;
    Ok(html(page(&who, &site, shown, &input, notice)))
}

/// `POST /sites/{key}/hours`: saves them, or shows the form again with what was wrong.
pub async fn save_hours(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<SiteHoursInput>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    let now = app.wall_clock.now_ms();
    let parsed = form.parse().and_then(|hours| {
        // A day already over would close nothing: a typo for a later one.
        if hours.closure_has_passed(now) {
            return Err(InvalidHours::new(
                HoursField::ClosedThrough,
                "Closed through: that day is over on the site's clock; choose today or a later \
                 day, or leave it empty.",
            ));
        }
        Ok(hours)
    });
    let hours = match parsed {
        Ok(hours) => hours,
        Err(invalid) => {
            let shown = page_state(&app, &site).await?;
            let notice = Some(match field_id(invalid.field) {
                Some(field) => Notice::Invalid {
                    field,
                    text: invalid.text,
                },
                None => Notice::Error(invalid.text),
            });
            let body = page(&who, &site, shown, &form, notice);
            return Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body));
        }
    };
    chat::save_site_hours(
        (&app.writer, &app.sites),
        &Actor::user(&who.user, ip),
        (site.id, &site.key, &site.settings.name),
        hours,
    )
    .await?;
    Ok(see_other(&format!("/sites/{key}/hours?notice=hours-saved")))
}

/// `POST /sites/{key}/hours/remove`: the site is always open again.
pub async fn remove_hours(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    chat::remove_site_hours(
        (&app.writer, &app.sites),
        &Actor::user(&who.user, ip),
        (site.id, &site.key, &site.settings.name),
    )
    .await?;
    Ok(see_other(&format!(
        "/sites/{key}/hours?notice=hours-removed"
    )))
}
