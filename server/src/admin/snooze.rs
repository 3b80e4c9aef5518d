//! Snoozing from the inbox (docs/admin.md, "Snooze"): the side panel's *Snooze* and
//! *Unsnooze*, and when a chosen snooze ends, in the agent's own time zone (also for the bulk
//! form's snoozes).

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use jiff::civil::{DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use porch_app::conversation::Refused;
use porch_app::snooze::{SNOOZE_MINUTES_FIELD, SNOOZE_UNTIL_FIELD};
use serde::Deserialize;

use crate::chat::Invalid;
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{self, ConversationId};

use super::actions::Answer;
use super::auth::NoFields;
use super::session::Posted;

#[derive(Debug, Deserialize)]
pub struct SnoozeForm {
    /// How long, in minutes, or `tomorrow`, `monday` or `custom` (the side panel's choices,
    /// `app/src/snooze.rs`).
    #[serde(default)]
    minutes: String,
    /// With `custom`: the date and time it ends, as `<input type="datetime-local">` sends it
    /// (`2026-12-10T14:30`), in the agent's time zone.
    #[serde(default)]
    until: String,
    /// The agent's IANA time zone, for `tomorrow`, `monday` and `custom` (sent by the browser).
    #[serde(default)]
    time_zone: String,
}

const MINUTE_MS: i64 = 60_000;

/// When a snooze chosen at `now` ends: `minutes` from now, or (`tomorrow`, `monday`) 9:00
/// tomorrow or on the next Monday (a week ahead on a Monday), or (`custom`) the date and time
/// `until`, in the agent's `time_zone` with its daylight-saving rules (UTC for a name it does
/// not know; a time that a change skips is read as after it, one it repeats as the earlier).
/// `None` for anything else.
pub(super) fn snooze_end(minutes: &str, until: &str, time_zone: &str, now: i64) -> Option<i64> {
    let zone = TimeZone::get(time_zone.trim()).unwrap_or(TimeZone::UTC);
    if minutes.trim() == "custom" {
        // Exactly what the field sends (with or without seconds): an offset or a zone name in
        // it would say another time zone than the agent's.
        let until = until.trim();
        let civil = DateTime::strptime("%Y-%m-%dT%H:%M:%S", until)
            .or_else(|_| DateTime::strptime("%Y-%m-%dT%H:%M", until))
            .ok()?;
        let end = civil.to_zoned_datetime(zone).ok()?;
        return Some(end.timestamp().as_millisecond());
    }
    let today = Timestamp::from_millisecond(now)
        .ok()?
        .to_zoned_datetime(zone.clone())
        .date();
    let days_ahead: i64 = match minutes.trim() {
        "tomorrow" => 1,
        "monday" => 7 - i64::from(today.weekday().to_monday_zero_offset()),
        other => {
            let minutes = other.parse::<i64>().ok().filter(|m| *m > 0)?;
            return Some(now.saturating_add(minutes.saturating_mul(MINUTE_MS)));
        }
    };
    let morning = today
        .checked_add(days_ahead.days())
        .ok()?
        .to_datetime(Time::new(9, 0, 0, 0).ok()?)
        .to_zoned_datetime(zone)
        .ok()?;
    Some(morning.timestamp().as_millisecond())
}

/// `POST /conversations/{id}/snooze`: out of the Open list and the counts until the snooze ends
/// or the visitor writes (docs/admin.md, "Snooze").
pub async fn snooze(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, form }: Posted<SnoozeForm>,
) -> Response {
    let answer = Answer::new(&headers, id);
    // A refusal comes back on the page, "until a date and time…" chosen again with what its
    // field held, or the choice marked.
    let custom = form.minutes.trim() == "custom";
    let kept = if custom {
        (
            SNOOZE_UNTIL_FIELD,
            Some(Refused::SnoozeUntil(form.until.clone())),
        )
    } else {
        (SNOOZE_MINUTES_FIELD, None)
    };
    let Some(until) = snooze_end(&form.minutes, &form.until, &form.time_zone, now_ms()) else {
        let why = if custom {
            "Choose the date and time the snooze ends."
        } else {
            "Choose how long to snooze for."
        };
        let err = crate::chat::Error::Invalid(Invalid::from(why)).into();
        return answer.refused_on_page(&app, &who, err, kept).await;
    };
    match app
        .chat
        .snooze_conversation(ConversationId(id), &who.user, until, store::Resnooze::Keep)
        .await
    {
        Ok(true) => answer.done("snoozed"),
        Err(err @ crate::chat::Error::Invalid(_)) => {
            answer.refused_on_page(&app, &who, err.into(), kept).await
        }
        // Closed, or snoozed already (a colleague, another tab): the page shows which.
        Ok(false) => {
            let page = format!("/conversations/{id}");
            match app.chat.inbox_item(who.user.id, ConversationId(id)).await {
                Ok(item) if item.status == "closed" => answer.conflict(
                    &page,
                    "not_open",
                    "Only an open conversation can be snoozed, and this one is closed.",
                ),
                Ok(item) if item.snoozed_until.is_some() => answer.conflict(
                    &page,
                    "snoozed_already",
                    "It is snoozed already: unsnooze it first to choose another end.",
                ),
                // Its snooze ended between the two reads.
                Ok(_) => answer.conflict(&page, "changed", "It changed meanwhile: try again."),
                Err(err) => answer.refused(err.into()),
            }
        }
        Err(err) => answer.refused(err.into()),
    }
}

/// `POST /conversations/{id}/unsnooze`: back in Open now.
pub async fn unsnooze(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let answer = Answer::new(&headers, id);
    match app
        .chat
        .unsnooze_conversation(ConversationId(id), &who.user)
        .await
    {
        Ok(true) => answer.done("unsnoozed"),
        // Its time ran out, or the visitor wrote, or a colleague unsnoozed it meanwhile.
        Ok(false) => answer.conflict(
            &format!("/conversations/{id}"),
            "not_snoozed",
            "It is not snoozed any more.",
        ),
        Err(err) => answer.refused(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`snooze_end`] of a choice that is not `custom`.
    fn snooze_end_in(minutes: &str, time_zone: &str, now: i64) -> Option<i64> {
        snooze_end(minutes, "", time_zone, now)
    }

    const DAY_MS: i64 = 24 * 60 * MINUTE_MS;

    #[test]
    fn a_snooze_ends_after_its_minutes_or_at_nine_where_the_agent_is() {
        // Wednesday 2 December 2026, 22:30 UTC.
        let now = 1_796_250_600_000;
        assert_eq!(snooze_end_in("60", "", now), Some(now + 3_600_000));
        // Tomorrow at 9:00 UTC: Thursday 3 December.
        assert_eq!(snooze_end_in("tomorrow", "", now), Some(1_796_288_400_000));
        // In Tokyo it is already Thursday 07:30: tomorrow is Friday 9:00 there, Friday 00:00 UTC.
        assert_eq!(
            snooze_end_in("tomorrow", "Asia/Tokyo", now),
            Some(1_796_342_400_000)
        );
        // In New York it is Wednesday 17:30: Thursday 9:00 there is 14:00 UTC.
        assert_eq!(
            snooze_end_in("tomorrow", "America/New_York", now),
            Some(1_796_306_400_000)
        );
        // Monday 7 December, 9:00 UTC.
        assert_eq!(snooze_end_in("monday", "", now), Some(1_796_634_000_000));
        // A zone it does not know: UTC.
        assert_eq!(
            snooze_end_in("tomorrow", "Mars/Olympus", now),
            snooze_end_in("tomorrow", "", now)
        );
        for refused in ["", "0", "-5", "soon"] {
            assert_eq!(snooze_end_in(refused, "", now), None, "{refused:?}");
        }
    }

    #[test]
    fn on_a_monday_the_next_monday_is_a_week_ahead() {
        // Monday 7 December 2026, 08:00 UTC.
        let monday = 1_796_630_400_000;
        assert_eq!(
            snooze_end_in("monday", "", monday),
            Some(monday + 7 * DAY_MS + 3_600_000)
        );
    }

    #[test]
    fn nine_oclock_is_kept_across_a_change_of_daylight_saving() {
        // Friday 30 October 2026, 14:00 UTC (10:00 in New York, still on summer time); Monday
        // 2 November is on winter time (UTC-5), so its 9:00 is 14:00 UTC.
        let friday = 1_793_368_800_000;
        assert_eq!(
            snooze_end_in("monday", "America/New_York", friday),
            Some(1_793_628_000_000)
        );
    }

    #[test]
    fn a_chosen_date_and_time_is_read_where_the_agent_is() {
        // Wednesday 2 December 2026, 22:30 UTC.
        let now = 1_796_250_600_000;
        // 10 December 14:30 in New York (UTC-5) is 19:30 UTC.
        assert_eq!(
            snooze_end("custom", "2026-12-10T14:30", "America/New_York", now),
            Some(1_796_931_000_000)
        );
        assert_eq!(
            snooze_end("custom", "2026-12-10T19:30", "", now),
            Some(1_796_931_000_000)
        );
        for refused in [
            "",
            "tomorrow",
            "2026-13-01T10:00",
            "10 Dec",
            "2026-12-10T14:30+05:00",
            "2026-12-10T14:30[Europe/Paris]",
        ] {
            assert_eq!(
                snooze_end("custom", refused, "UTC", now),
                None,
                "{refused:?}"
            );
        }
    }
}
