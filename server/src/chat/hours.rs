//! Business hours (docs/widget.md#business-hours): the admin's typed hours parsed into
//! [`SiteHours`], saved or removed (audited as `site.updated`, dropping the widget's cached copy
//! of the site), read back for the widget, and whether a site is open at an instant.

use std::sync::Arc;

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, Readers, SiteHoursRow, SiteId, Writer};
use crate::values::{
    AWAY_LINES, BusinessHours, Closure, HoursField, InvalidHours, OutOfHours, SiteHours,
    language_lines,
};

use super::Error;
use super::site::SiteDirectory;

/// Longest away message, in characters (as long as a greeting).
const MAX_AWAY_CHARS: usize = 500;

/// A site's hours as submitted on the hours page (every field a string, as in a form).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct SiteHoursInput {
    #[serde(default)]
    pub time_zone: String,
    #[serde(default)]
    pub monday: String,
    #[serde(default)]
    pub tuesday: String,
    #[serde(default)]
    pub wednesday: String,
    #[serde(default)]
    pub thursday: String,
    #[serde(default)]
    pub friday: String,
    #[serde(default)]
    pub saturday: String,
    #[serde(default)]
    pub sunday: String,
    #[serde(default)]
    pub away_message: String,
    /// The away message in other languages, one a line as `de: …`.
    #[serde(default)]
    pub away_messages: String,
    /// `email` or `accept`.
    #[serde(default)]
    pub out_of_hours: String,
    /// The first day of a closure, `YYYY-MM-DD` (a date input's value); empty: from the save.
    #[serde(default)]
    pub closed_from: String,
    /// The last day of a closure; empty for none.
    #[serde(default)]
    pub closed_through: String,
}

impl SiteHoursInput {
    /// What the page offers before a site has hours: weekdays 09:00 to 17:00 in UTC.
    pub fn suggested() -> Self {
        let weekday = "09:00-17:00".to_owned();
        Self {
            time_zone: "UTC".to_owned(),
            monday: weekday.clone(),
            tuesday: weekday.clone(),
            wednesday: weekday.clone(),
            thursday: weekday.clone(),
            friday: weekday,
            // No promise of an answer by email: the site may have no email (docs/widget.md).
            away_message: "We're away right now. Leave a message and we'll answer when we're back."
                .to_owned(),
            out_of_hours: OutOfHours::Email.as_str().to_owned(),
            ..Self::default()
        }
    }

    /// The seven days, Monday first.
    pub fn days(&self) -> [String; 7] {
        [
            &self.monday,
            &self.tuesday,
            &self.wednesday,
            &self.thursday,
            &self.friday,
            &self.saturday,
            &self.sunday,
        ]
        .map(String::clone)
    }

    /// Parses the form: a known time zone, valid spans on every day, an away message of at most
    /// 500 characters (and as many in other languages), and a choice for out of hours.
    pub fn parse(&self) -> Result<SiteHours, InvalidHours> {
        let hours = BusinessHours::parse(&self.time_zone, &self.days())?;
        let away_message = self.away_message.trim();
        if away_message.chars().count() > MAX_AWAY_CHARS {
            return Err(InvalidHours::new(
                HoursField::AwayMessage,
                format!("The away message must have at most {MAX_AWAY_CHARS} characters."),
            ));
        }
        let away_messages = AWAY_LINES
            .parse(&self.away_messages)
            .map_err(|invalid| InvalidHours::new(HoursField::AwayMessages, invalid.to_string()))?;
        Ok(SiteHours {
            hours,
            away_message: away_message.to_owned(),
            away_messages,
            out_of_hours: OutOfHours::parse(&self.out_of_hours)?,
            closure: Closure::parse(&self.closed_from, &self.closed_through)?,
        })
    }
}

impl From<&SiteHours> for SiteHoursInput {
    /// The input that would submit these hours unchanged (to fill the form).
    fn from(hours: &SiteHours) -> Self {
        let [
            monday,
            tuesday,
            wednesday,
            thursday,
            friday,
            saturday,
            sunday,
        ] = hours.hours.days_text();
        Self {
            time_zone: hours.hours.zone_name().to_owned(),
            monday,
            tuesday,
            wednesday,
            thursday,
            friday,
            saturday,
            sunday,
            away_message: hours.away_message.clone(),
            away_messages: language_lines(&hours.away_messages),
            out_of_hours: hours.out_of_hours.as_str().to_owned(),
            closed_from: day_text(hours.closure.and_then(|c| c.from)),
            closed_through: day_text(hours.closure.map(|c| c.through)),
        }
    }
}

/// Whether a site takes chats live right now, as `welcome.site` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Availability {
    pub is_open: bool,
    /// When a closed site opens next (Unix milliseconds); `None` while open or with no spans.
    pub opens_at: Option<i64>,
}

/// The availability of a site with these hours (`None`: no hours, always open) at `now_ms`.
/// During a closure (a holiday) the site is closed, and opens at the first moment after it that
/// its weekly hours are open.
pub fn availability(hours: Option<&SiteHours>, now_ms: i64) -> Availability {
    let closed = |opens_at| Availability {
        is_open: false,
        opens_at,
    };
    let open = Availability {
        is_open: true,
        opens_at: None,
    };
    let Some(h) = hours else {
        return open;
    };
    // The first open moment from `at` on (the end of a closure may fall inside open hours).
    let opening_from = |at: i64| {
        if h.hours.is_open(at) {
            Some(at)
        } else {
            h.hours.next_opening(at)
        }
    };
    match h.closure_window() {
        Some((start, end)) if start <= now_ms && now_ms < end => closed(opening_from(end)),
        _ if h.hours.is_open(now_ms) => open,
        // Closed by the weekly hours: the next opening, unless a closure set for later takes it.
        Some((start, end)) => closed(h.hours.next_opening(now_ms).and_then(|at| {
            if at < start || end <= at {
                Some(at)
            } else {
                opening_from(end)
            }
        })),
        None => closed(h.hours.next_opening(now_ms)),
    }
}

/// Parses a stored row; a row that no longer parses (a zone dropped from a later tz database)
/// is logged and treated as no hours, so the chat stays open rather than closed by mistake.
pub fn parse_stored_hours(site: SiteId, row: &SiteHoursRow) -> Option<SiteHours> {
    let mut lines = row.days.split('\n').map(str::to_owned);
    let mut day = || lines.next().unwrap_or_default();
    // Fields are evaluated in the order written: Monday first, as stored.
    let input = SiteHoursInput {
        time_zone: row.time_zone.clone(),
        monday: day(),
        tuesday: day(),
        wednesday: day(),
        thursday: day(),
        friday: day(),
        saturday: day(),
        sunday: day(),
        away_message: row.away_message.clone(),
        away_messages: row.away_messages.clone(),
        out_of_hours: row.out_of_hours.clone(),
        closed_from: row.closed_from.clone().unwrap_or_default(),
        closed_through: row.closed_through.clone().unwrap_or_default(),
    };
    input
        .parse()
        .inspect_err(|err| tracing::warn!(site = %site, %err, "stored business hours do not parse"))
        .ok()
}

/// A day as a date input shows it (`2026-12-31`), or empty.
fn day_text(day: Option<jiff::civil::Date>) -> String {
    day.map(|day| day.to_string()).unwrap_or_default()
}

/// The site's hours, if it has any (for the hours page).
pub async fn find_site_hours(
    readers: &Arc<Readers>,
    site: SiteId,
) -> Result<Option<SiteHours>, Error> {
    let row = readers
        .read(move |c| store::find_site_hours(c, site))
        .await?;
    Ok(row.and_then(|row| parse_stored_hours(site, &row)))
}

/// Saves the site's hours, records `site.updated` (detail `{"hours": "saved", ...}`) and drops
/// the widget's cached copy of the site, so the next connection's `welcome` uses them.
pub async fn save_site_hours(
    (writer, directory): (&Arc<Writer>, &SiteDirectory),
    actor: &Actor,
    site: (SiteId, &str, &str),
    hours: SiteHours,
) -> Result<(), Error> {
    let (id, site_key, name) = site;
    let target = Target::site(site_key, name);
    let actor = actor.clone();
    let detail = json!({
        "hours": "saved",
        "time_zone": hours.hours.zone_name(),
        "out_of_hours": hours.out_of_hours.as_str(),
        "closed_from": hours.closure.and_then(|c| c.from).map(|day| day.to_string()),
        "closed_through": hours.closure.map(|c| c.through.to_string()),
    });
    writer
        .write(move |c| {
            store::upsert_site_hours(c, id, &hours, now_ms())?;
            audit::record(c, &actor, AuditAction::SiteUpdated, &target, &detail)
        })
        .await?;
    directory.reload(site_key).await;
    Ok(())
}

/// Removes the site's hours (always open again); records `site.updated` (detail
/// `{"hours": "removed"}`) when it had some.
pub async fn remove_site_hours(
    (writer, directory): (&Arc<Writer>, &SiteDirectory),
    actor: &Actor,
    site: (SiteId, &str, &str),
) -> Result<(), Error> {
    let (id, site_key, name) = site;
    let target = Target::site(site_key, name);
    let actor = actor.clone();
    writer
        .write(move |c| {
            if store::delete_site_hours(c, id)? {
                let detail = json!({ "hours": "removed" });
                audit::record(c, &actor, AuditAction::SiteUpdated, &target, &detail)?;
            }
            Ok(())
        })
        .await?;
    directory.reload(site_key).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_round_trips_through_storage() {
        let mut input = SiteHoursInput::suggested();
        input.away_messages = "fr: Bient\u{f4}t de retour.\nde: Gleich zur\u{fc}ck.".to_owned();
        let hours = input.parse().expect("valid");
        let row = SiteHoursRow {
            time_zone: hours.hours.zone_name().to_owned(),
            days: hours.hours.days_text().join("\n"),
            away_message: hours.away_message.clone(),
            away_messages: language_lines(&hours.away_messages),
            out_of_hours: hours.out_of_hours.as_str().to_owned(),
            closed_from: None,
            closed_through: None,
        };
        assert_eq!(hours.away_messages.len(), 2);
        assert_eq!(parse_stored_hours(SiteId(1), &row), Some(hours));
    }

    #[test]
    fn a_long_away_message_or_no_choice_is_refused() {
        let mut input = SiteHoursInput::suggested();
        input.away_message = "a".repeat(501);
        assert!(input.parse().is_err());
        input.away_message = String::new();
        input.out_of_hours = "maybe".to_owned();
        assert!(input.parse().is_err());
    }

    #[test]
    fn no_hours_is_always_open_and_closed_hours_say_when_they_open() {
        assert!(availability(None, 0).is_open);
        let hours = SiteHoursInput::suggested().parse().expect("valid");
        // 2026-03-02 is a Monday; 08:00 UTC is before 09:00 UTC.
        let before = 1_772_438_400_000;
        let closed = availability(Some(&hours), before);
        assert!(!closed.is_open);
        assert_eq!(closed.opens_at, Some(before + 3_600_000));
        assert!(availability(Some(&hours), before + 3_600_000).is_open);
    }

    /// A closure set for later days leaves an opening before it alone.
    #[test]
    fn a_closure_ahead_does_not_move_an_opening_before_it() {
        let mut input = SiteHoursInput::suggested();
        input.closed_from = "2026-03-04".to_owned();
        input.closed_through = "2026-03-05".to_owned();
        let hours = input.parse().expect("valid");
        // Monday 2026-03-02, 08:00 UTC: closed until Monday 09:00, days before the closure.
        let before = 1_772_438_400_000;
        assert_eq!(
            availability(Some(&hours), before),
            Availability {
                is_open: false,
                opens_at: Some(before + 3_600_000)
            }
        );
    }
}
