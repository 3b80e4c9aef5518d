//! A holiday closure of a site's chat (docs/widget.md#business-hours, "Closed from" and "Closed
//! through"): whole days on the site's clock when the chat is closed whatever its weekly hours
//! say. The weekly hours are kept beside it and apply again after it.

use jiff::civil::Date;

use super::{BusinessHours, HoursField, InvalidHours};

/// The days a site is closed: from the start of `from` (or at once, when it has none) through
/// the end of `through`, on the site's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closure {
    /// The first day; `None` closes from the save.
    pub from: Option<Date>,
    pub through: Date,
}

impl Closure {
    /// The closure as typed on the hours page (`YYYY-MM-DD`, what a date input sends; empty is
    /// none): no closure when both are empty; a first day needs a last day, and may not be after
    /// it.
    pub fn parse(from: &str, through: &str) -> Result<Option<Self>, InvalidHours> {
        let from = parse_day(from, HoursField::ClosedFrom, "Closed from")?;
        let Some(through) = parse_day(through, HoursField::ClosedThrough, "Closed through")? else {
            return match from {
                None => Ok(None),
                Some(_) => Err(InvalidHours::new(
                    HoursField::ClosedThrough,
                    "Closed through: choose the last day of the closure (a closure from a day \
                     needs one).",
                )),
            };
        };
        if from.is_some_and(|from| from > through) {
            return Err(InvalidHours::new(
                HoursField::ClosedFrom,
                "Closed from: the closure cannot start after its last day (Closed through).",
            ));
        }
        Ok(Some(Self { from, through }))
    }

    /// When the closure starts and ends on the clock of `hours`, in Unix milliseconds. Without a
    /// first day it has always started. A last day whose end is past what the clock can show
    /// (9999-12-31) never ends (`i64::MAX`): the chat stays closed with no opening, as the admin
    /// asked, rather than open as if no closure were set.
    pub fn window(&self, hours: &BusinessHours) -> (i64, i64) {
        let start = self
            .from
            .map_or(i64::MIN, |from| hours.start_of(from).unwrap_or(i64::MAX));
        (start, hours.end_of(self.through).unwrap_or(i64::MAX))
    }
}

/// One day of the closure as typed; `label` names the field in the refusal.
fn parse_day(raw: &str, field: HoursField, label: &str) -> Result<Option<Date>, InvalidHours> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    raw.parse::<Date>().map(Some).map_err(|_| {
        InvalidHours::new(
            field,
            format!("{label}: \"{raw}\" is not a date; use YYYY-MM-DD, such as 2026-12-31."),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Date {
        text.parse().expect("date")
    }

    #[test]
    fn a_closure_is_a_last_day_with_an_optional_first_day() {
        assert_eq!(Closure::parse(" ", ""), Ok(None));
        assert_eq!(
            Closure::parse("", "2026-12-31"),
            Ok(Some(Closure {
                from: None,
                through: day("2026-12-31")
            }))
        );
        assert_eq!(
            Closure::parse("2026-12-24", "2026-12-24"),
            Ok(Some(Closure {
                from: Some(day("2026-12-24")),
                through: day("2026-12-24")
            }))
        );
    }

    #[test]
    fn a_first_day_alone_after_the_last_or_a_typo_is_refused_on_its_field() {
        let field = |from, through| Closure::parse(from, through).map_err(|e| e.field);
        assert_eq!(field("2026-12-24", ""), Err(HoursField::ClosedThrough));
        assert_eq!(
            field("2026-12-25", "2026-12-24"),
            Err(HoursField::ClosedFrom)
        );
        assert_eq!(
            field("next week", "2026-12-24"),
            Err(HoursField::ClosedFrom)
        );
        assert_eq!(field("", "2026-13-01"), Err(HoursField::ClosedThrough));
    }

    /// From the start of the first day to the start of the day after the last, on the site's
    /// clock (Berlin is UTC+1 in December).
    #[test]
    fn the_window_runs_from_local_midnight_to_local_midnight() {
        let hours = BusinessHours::parse("Europe/Berlin", &std::array::from_fn(|_| String::new()))
            .expect("valid");
        let at = |text: &str| {
            text.parse::<jiff::Timestamp>()
                .expect("timestamp")
                .as_millisecond()
        };
        let closure = Closure::parse("2026-12-24", "2026-12-26")
            .expect("valid")
            .expect("set");
        assert_eq!(
            closure.window(&hours),
            (at("2026-12-23T23:00:00Z"), at("2026-12-26T23:00:00Z"))
        );
        let open_ended = Closure::parse("", "9999-12-31")
            .expect("valid")
            .expect("set");
        assert_eq!(open_ended.window(&hours), (i64::MIN, i64::MAX));
    }
}
