//! A site's business hours (docs/widget.md#business-hours): an IANA time zone and weekly opening
//! spans, parsed from what an admin types, and the two questions the widget asks: is the site
//! open at this instant, and when does it open next. Wall-clock times are the zone's own, so a
//! span keeps its local times across daylight-saving changes.

use jiff::civil::{Date, Time, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

use super::{ByLanguage, Closure};

/// Day names as the admin page and errors show them, Monday first (as `days` is indexed).
pub const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
/// Most spans on one day; more is a typo, not a timetable.
const MAX_SPANS_PER_DAY: usize = 6;
/// Minutes in a day: `24:00` is accepted as the end of a span.
const DAY_MINUTES: u16 = 24 * 60;

/// Why typed hours were refused: the text, which names the field and is shown to the admin, and
/// the field, which the form marks (a screen reader hears the reason where it is to be fixed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct InvalidHours {
    pub field: HoursField,
    pub text: String,
}

/// The part of the hours a refusal is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoursField {
    TimeZone,
    /// A day's spans, Monday 0.
    Day(usize),
    AwayMessage,
    AwayMessages,
    OutOfHours,
    ClosedFrom,
    ClosedThrough,
}

impl InvalidHours {
    pub fn new(field: HoursField, text: impl Into<String>) -> Self {
        Self {
            field,
            text: text.into(),
        }
    }
}

/// One opening on a day, in minutes after local midnight. `end <= start` means the span runs
/// past midnight and closes at `end` on the next day (`22:00-02:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OpenSpan {
    start: u16,
    end: u16,
}

impl OpenSpan {
    fn is_overnight(self) -> bool {
        self.end <= self.start
    }
}

/// A site's time zone and weekly opening spans.
#[derive(Debug, Clone, PartialEq)]
pub struct BusinessHours {
    zone_name: String,
    zone: TimeZone,
    /// Spans starting on each weekday, Monday first, sorted by start.
    days: [Vec<OpenSpan>; 7],
}

fn parse_minutes(raw: &str, day: usize) -> Result<u16, InvalidHours> {
    let name = DAY_NAMES[day];
    let bad = || {
        InvalidHours::new(
            HoursField::Day(day),
            format!("{name}: \"{raw}\" is not a time; use HH:MM, such as 09:30."),
        )
    };
    let (h, m) = raw.trim().split_once(':').ok_or_else(bad)?;
    let is_digits = |s: &str, lengths: std::ops::RangeInclusive<usize>| {
        lengths.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !is_digits(h, 1..=2) || !is_digits(m, 2..=2) {
        return Err(bad());
    }
    let (h, m) = (
        h.parse::<u16>().map_err(|_| bad())?,
        m.parse::<u16>().map_err(|_| bad())?,
    );
    if m >= 60 || h > 24 || (h == 24 && m > 0) {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

fn parse_day(raw: &str, day: usize) -> Result<Vec<OpenSpan>, InvalidHours> {
    let name = DAY_NAMES[day];
    let refused = |text: String| InvalidHours::new(HoursField::Day(day), text);
    let mut spans = Vec::new();
    for part in raw
        .split([',', ';'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (start, end) = part.split_once('-').ok_or_else(|| {
            refused(format!(
                "{name}: \"{part}\" is not a span; use START-END, such as 09:00-17:00."
            ))
        })?;
        let (start, end) = (parse_minutes(start, day)?, parse_minutes(end, day)?);
        if start == DAY_MINUTES || start == end {
            return Err(refused(format!(
                "{name}: \"{part}\" is empty; a span needs an end different from its start."
            )));
        }
        // 24:00 as an end is midnight after the day, the same as 00:00 (an overnight span ending
        // at once); kept as 0 so every end compares the same way.
        spans.push(OpenSpan {
            start,
            end: end % DAY_MINUTES,
        });
    }
    if spans.len() > MAX_SPANS_PER_DAY {
        return Err(refused(format!(
            "{name}: at most {MAX_SPANS_PER_DAY} spans a day."
        )));
    }
    spans.sort_by_key(|s| s.start);
    Ok(spans)
}

fn text_of(minutes: u16) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

impl BusinessHours {
    /// Parses a time zone (an IANA name, such as `Europe/Berlin`) and the spans of each day,
    /// Monday first, each like `09:00-12:00, 13:00-17:30` (empty: closed all day). A span whose
    /// end is not after its start runs past midnight (`22:00-02:00`).
    pub fn parse(zone: &str, days: &[String; 7]) -> Result<Self, InvalidHours> {
        let zone_name = zone.trim();
        let tz = TimeZone::get(zone_name).map_err(|_| {
            InvalidHours::new(
                HoursField::TimeZone,
                format!(
                    "\"{zone_name}\" is not a time zone; use an IANA name such as Europe/Berlin."
                ),
            )
        })?;
        let mut parsed: [Vec<OpenSpan>; 7] = Default::default();
        for (day, (slot, raw)) in parsed.iter_mut().zip(days).enumerate() {
            *slot = parse_day(raw, day)?;
        }
        Ok(Self {
            zone_name: zone_name.to_owned(),
            zone: tz,
            days: parsed,
        })
    }

    /// `at_ms` as the site's own clock shows it, with the date and the zone (`Monday 2 March
    /// 2026 13:00 Europe/Berlin`), beside the same moment in the reader's zone, so hours typed
    /// in the site's zone are seen to be kept.
    pub fn local_time(&self, at_ms: i64) -> String {
        let Ok(at) = Timestamp::from_millisecond(at_ms) else {
            return String::new();
        };
        let local = at.to_zoned_datetime(self.zone.clone());
        // The date too: an opening after a holiday can be weeks away, and a weekday alone
        // would read as this week's.
        format!(
            "{} {} {}",
            day_and_date(local.date()),
            local.time().strftime("%H:%M"),
            self.zone_name
        )
    }

    /// When day `date` starts on the site's clock, in Unix milliseconds (a day that starts in a
    /// daylight-saving gap starts after the jump).
    pub fn start_of(&self, date: Date) -> Option<i64> {
        let start = date
            .to_datetime(Time::midnight())
            .to_zoned_datetime(self.zone.clone())
            .ok()?;
        Some(start.timestamp().as_millisecond())
    }

    /// When day `date` ends on the site's clock: the first moment of the next day.
    pub fn end_of(&self, date: Date) -> Option<i64> {
        self.start_of(date.tomorrow().ok()?)
    }

    /// The IANA name of the time zone, as typed (and validated).
    pub fn zone_name(&self) -> &str {
        &self.zone_name
    }

    /// Each day's spans as text, Monday first: `09:00-12:00, 13:00-17:30`, or empty.
    pub fn days_text(&self) -> [String; 7] {
        self.days.clone().map(|spans| {
            spans
                .iter()
                .map(|s| {
                    // A span closing at midnight reads 24:00, as typed (00:00 would read as empty).
                    let end = if s.end == 0 { DAY_MINUTES } else { s.end };
                    format!("{}-{}", text_of(s.start), text_of(end))
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
    }

    fn spans_on(&self, day: Weekday) -> &[OpenSpan] {
        &self.days[usize::from(day.to_monday_zero_offset().unsigned_abs())]
    }

    /// True if the site is open at `at_ms` (Unix milliseconds): the local wall-clock time is
    /// inside a span starting today, or in the tail of an overnight span that started yesterday.
    pub fn is_open(&self, at_ms: i64) -> bool {
        let Ok(at) = Timestamp::from_millisecond(at_ms) else {
            return false;
        };
        let local = at.to_zoned_datetime(self.zone.clone());
        let time = local.time();
        let now = u16::try_from(i32::from(time.hour()) * 60 + i32::from(time.minute()))
            .unwrap_or_default();
        let today = self
            .spans_on(local.weekday())
            .iter()
            .any(|s| now >= s.start && (s.is_overnight() || now < s.end));
        let from_yesterday = self
            .spans_on(local.weekday().previous())
            .iter()
            .any(|s| s.is_overnight() && now < s.end);
        today || from_yesterday
    }

    /// When the site opens next after `at_ms`, in Unix milliseconds; `None` if it has no spans.
    /// A start that falls in a daylight-saving gap opens when the clocks have jumped (02:30 on
    /// a spring-forward night opens at 03:30 local), one in a repeated hour at its first
    /// occurrence.
    pub fn next_opening(&self, at_ms: i64) -> Option<i64> {
        let at = Timestamp::from_millisecond(at_ms).ok()?;
        let today: Date = at.to_zoned_datetime(self.zone.clone()).date();
        // Eight days: today's later spans, through the same weekday next week.
        (0..=7i64)
            .filter_map(|offset| today.checked_add(offset.days()).ok())
            .flat_map(|date| {
                self.spans_on(date.weekday())
                    .iter()
                    .map(move |span| (date, span.start))
            })
            .filter_map(|(date, start)| {
                let time = Time::new(
                    i8::try_from(start / 60).ok()?,
                    i8::try_from(start % 60).ok()?,
                    0,
                    0,
                )
                .ok()?;
                let zoned = date
                    .to_datetime(time)
                    .to_zoned_datetime(self.zone.clone())
                    .ok()?;
                Some(zoned.timestamp().as_millisecond())
            })
            .filter(|opens| *opens > at_ms)
            .min()
    }
}

/// What the widget offers while a site is out of hours; chats are accepted either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfHours {
    /// The panel shows the away message and asks for the visitor's email address.
    Email,
    /// The panel shows the away message with a note that replies come by email.
    Accept,
}

impl OutOfHours {
    /// The code stored and sent in `welcome.site.out_of_hours`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Accept => "accept",
        }
    }

    /// The choice from its code.
    pub fn parse(raw: &str) -> Result<Self, InvalidHours> {
        match raw.trim() {
            "email" => Ok(Self::Email),
            "accept" => Ok(Self::Accept),
            _ => Err(InvalidHours::new(
                HoursField::OutOfHours,
                "Choose what the chat does out of hours.",
            )),
        }
    }
}

/// A site's business hours with what visitors see while it is closed.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteHours {
    pub hours: BusinessHours,
    /// Shown in the widget while closed (at most 500 characters, may be empty).
    pub away_message: String,
    /// The away message in other languages: a panel in one of them shows it instead.
    pub away_messages: ByLanguage,
    pub out_of_hours: OutOfHours,
    /// A holiday: closed over these days whatever the weekly spans say; `None` when none is set.
    pub closure: Option<Closure>,
}

impl SiteHours {
    /// When the closure starts and ends on the site's clock (Unix milliseconds), if one is set.
    pub fn closure_window(&self) -> Option<(i64, i64)> {
        self.closure.map(|closure| closure.window(&self.hours))
    }

    /// The closure that closes the chat at `now_ms`, if one does.
    pub fn closure_in_force(&self, now_ms: i64) -> Option<Closure> {
        let (start, end) = self.closure_window()?;
        self.closure.filter(|_| start <= now_ms && now_ms < end)
    }

    /// The closure set for later, if one is: it does not close the chat yet.
    pub fn closure_ahead(&self, now_ms: i64) -> Option<Closure> {
        let (start, _) = self.closure_window()?;
        self.closure.filter(|_| now_ms < start)
    }

    /// True when a closure is set and its last day is over at `now_ms`: it closes nothing.
    pub fn closure_has_passed(&self, now_ms: i64) -> bool {
        self.closure_window().is_some_and(|(_, end)| end <= now_ms)
    }
}

/// A day as the admin pages write it beside a site's zone: `Tuesday 15 December 2026`.
pub fn day_and_date(date: Date) -> String {
    date.strftime("%A %-d %B %Y").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hours in `zone` with the same spans every day.
    fn every_day(zone: &str, spans: &str) -> BusinessHours {
        BusinessHours::parse(zone, &std::array::from_fn(|_| spans.to_owned())).expect("valid")
    }

    /// Unix milliseconds of a local wall-clock time in `zone` (RFC 9557 with the zone).
    fn local(text: &str) -> i64 {
        text.parse::<jiff::ZonedDateTime>()
            .expect("zoned")
            .timestamp()
            .as_millisecond()
    }

    fn utc(text: &str) -> i64 {
        text.parse::<Timestamp>()
            .expect("timestamp")
            .as_millisecond()
    }

    /// The page shows the next opening on the site's clock beside the reader's.
    #[test]
    fn a_moment_is_shown_on_the_sites_clock_with_its_zone() {
        let hours = every_day("Europe/Berlin", "13:00-17:00");
        // 2026-03-02 was a Monday; 12:00 UTC is 13:00 in Berlin (winter time).
        assert_eq!(
            hours.local_time(utc("2026-03-02T12:00:00Z")),
            "Monday 2 March 2026 13:00 Europe/Berlin"
        );
        let opening = hours.next_opening(utc("2026-03-02T20:00:00Z"));
        assert_eq!(
            opening.map(|at| hours.local_time(at)).as_deref(),
            Some("Tuesday 3 March 2026 13:00 Europe/Berlin")
        );
    }

    /// A closure's day ends at the next midnight on the site's clock; the calendar's last day
    /// has no end the clock can show.
    #[test]
    fn a_day_ends_at_the_next_local_midnight() {
        let hours = every_day("Europe/Berlin", "09:00-17:00");
        let day = |text: &str| text.parse::<Date>().expect("date");
        assert_eq!(
            hours.end_of(day("2026-03-28")),
            Some(local("2026-03-29T00:00:00[Europe/Berlin]"))
        );
        assert_eq!(
            hours.end_of(day("2026-07-01")),
            Some(utc("2026-07-01T22:00:00Z"))
        );
        assert_eq!(hours.end_of(day("9999-12-31")), None);
    }

    #[test]
    fn spans_are_open_from_their_start_up_to_but_not_at_their_end() {
        let hours = every_day("Europe/Berlin", "09:00-12:00, 13:00-17:30");
        assert!(!hours.is_open(local("2026-03-02T08:59:59[Europe/Berlin]")));
        assert!(hours.is_open(local("2026-03-02T09:00:00[Europe/Berlin]")));
        assert!(hours.is_open(local("2026-03-02T11:59:59[Europe/Berlin]")));
        assert!(!hours.is_open(local("2026-03-02T12:00:00[Europe/Berlin]")));
        assert!(hours.is_open(local("2026-03-02T17:29:00[Europe/Berlin]")));
        assert!(!hours.is_open(local("2026-03-02T17:30:00[Europe/Berlin]")));
    }

    #[test]
    fn an_overnight_span_is_open_past_midnight_into_the_next_day() {
        let mut days: [String; 7] = Default::default();
        days[4] = "22:00-02:00".to_owned(); // Friday night
        let hours = BusinessHours::parse("Europe/Berlin", &days).expect("valid");
        // 2026-03-06 is a Friday.
        assert!(!hours.is_open(local("2026-03-06T21:59:00[Europe/Berlin]")));
        assert!(hours.is_open(local("2026-03-06T23:30:00[Europe/Berlin]")));
        assert!(hours.is_open(local("2026-03-07T01:59:00[Europe/Berlin]")));
        assert!(!hours.is_open(local("2026-03-07T02:00:00[Europe/Berlin]")));
        // Saturday has no span of its own.
        assert!(!hours.is_open(local("2026-03-07T23:00:00[Europe/Berlin]")));
        assert_eq!(
            hours.next_opening(local("2026-03-07T02:00:00[Europe/Berlin]")),
            Some(local("2026-03-13T22:00:00[Europe/Berlin]"))
        );
    }

    #[test]
    fn a_span_to_24_00_closes_at_midnight() {
        let hours = every_day("UTC", "18:00-24:00");
        assert!(hours.is_open(utc("2026-05-01T23:59:59Z")));
        assert!(!hours.is_open(utc("2026-05-02T00:00:00Z")));
        assert_eq!(hours.days_text()[0], "18:00-24:00");
    }

    #[test]
    fn next_opening_is_the_next_start_in_the_zone() {
        let hours = every_day("Europe/Berlin", "09:00-17:00");
        assert_eq!(
            hours.next_opening(local("2026-03-02T17:00:00[Europe/Berlin]")),
            Some(local("2026-03-03T09:00:00[Europe/Berlin]"))
        );
        assert_eq!(
            hours.next_opening(local("2026-03-02T06:00:00[Europe/Berlin]")),
            Some(local("2026-03-02T09:00:00[Europe/Berlin]"))
        );
        let closed = every_day("Europe/Berlin", "");
        assert_eq!(closed.next_opening(utc("2026-03-02T06:00:00Z")), None);
        assert!(!closed.is_open(utc("2026-03-02T12:00:00Z")));
    }

    #[test]
    fn berlin_spring_forward_keeps_local_opening_times() {
        // 2026-03-29: 02:00 CET jumps to 03:00 CEST (UTC+1 to UTC+2).
        let hours = every_day("Europe/Berlin", "09:00-17:00");
        assert!(hours.is_open(utc("2026-03-29T07:00:00Z")));
        assert!(!hours.is_open(utc("2026-03-29T06:59:00Z")));
        assert_eq!(
            hours.next_opening(utc("2026-03-28T20:00:00Z")),
            Some(utc("2026-03-29T07:00:00Z"))
        );
        // The day before still opens at 08:00 UTC.
        assert_eq!(
            hours.next_opening(utc("2026-03-28T06:00:00Z")),
            Some(utc("2026-03-28T08:00:00Z"))
        );
    }

    #[test]
    fn a_start_in_the_spring_forward_gap_opens_after_the_jump() {
        let hours = every_day("Europe/Berlin", "02:30-04:00");
        // 02:30 does not exist on 2026-03-29; the clocks read 03:30 CEST at 01:30 UTC.
        assert_eq!(
            hours.next_opening(utc("2026-03-29T00:00:00Z")),
            Some(utc("2026-03-29T01:30:00Z"))
        );
        assert!(hours.is_open(utc("2026-03-29T01:30:00Z")));
        assert!(!hours.is_open(utc("2026-03-29T02:00:00Z")));
    }

    #[test]
    fn berlin_fall_back_keeps_local_opening_times() {
        // 2026-10-25: 03:00 CEST falls back to 02:00 CET (UTC+2 to UTC+1).
        let hours = every_day("Europe/Berlin", "09:00-17:00");
        assert_eq!(
            hours.next_opening(utc("2026-10-24T20:00:00Z")),
            Some(utc("2026-10-25T08:00:00Z"))
        );
        assert!(hours.is_open(utc("2026-10-25T15:59:00Z")));
        assert!(!hours.is_open(utc("2026-10-25T16:00:00Z")));
    }

    #[test]
    fn an_overnight_span_over_the_fall_back_lasts_an_hour_longer() {
        let hours = every_day("Europe/Berlin", "22:00-06:00");
        // Sat 22:00 CEST is 20:00 UTC; Sun 06:00 CET is 05:00 UTC: nine hours, not eight.
        assert!(hours.is_open(utc("2026-10-24T20:00:00Z")));
        assert!(hours.is_open(utc("2026-10-25T04:59:00Z")));
        assert!(!hours.is_open(utc("2026-10-25T05:00:00Z")));
        // The repeated hour (02:00-03:00 twice) is open both times.
        assert!(hours.is_open(utc("2026-10-25T00:30:00Z")));
        assert!(hours.is_open(utc("2026-10-25T01:30:00Z")));
    }

    #[test]
    fn a_start_in_the_repeated_hour_opens_at_its_first_occurrence() {
        let hours = every_day("Europe/Berlin", "02:30-02:45");
        // 02:30 happens at 00:30 UTC (CEST) and again at 01:30 UTC (CET).
        assert_eq!(
            hours.next_opening(utc("2026-10-25T00:00:00Z")),
            Some(utc("2026-10-25T00:30:00Z"))
        );
    }

    #[test]
    fn new_york_spring_forward_and_fall_back_keep_local_opening_times() {
        // 2026-03-08: 02:00 EST jumps to 03:00 EDT; 2026-11-01: 02:00 EDT falls back to 01:00 EST.
        let hours = every_day("America/New_York", "08:00-18:00");
        assert_eq!(
            hours.next_opening(utc("2026-03-08T02:00:00Z")),
            Some(utc("2026-03-08T12:00:00Z"))
        );
        assert_eq!(
            hours.next_opening(utc("2026-03-07T02:00:00Z")),
            Some(utc("2026-03-07T13:00:00Z"))
        );
        assert!(hours.is_open(utc("2026-03-08T21:59:00Z")));
        assert!(!hours.is_open(utc("2026-03-08T22:00:00Z")));
        assert_eq!(
            hours.next_opening(utc("2026-11-01T02:00:00Z")),
            Some(utc("2026-11-01T13:00:00Z"))
        );
        assert!(!hours.is_open(utc("2026-11-01T12:59:00Z")));
        assert!(hours.is_open(utc("2026-11-01T13:00:00Z")));
        assert!(!hours.is_open(utc("2026-11-01T23:00:00Z")));
    }

    #[test]
    fn typed_hours_are_refused_with_the_day_named() {
        let mut days: [String; 7] = Default::default();
        days[1] = "09:00-25:00".to_owned();
        let err = BusinessHours::parse("Europe/Berlin", &days).unwrap_err();
        assert!(err.text.starts_with("Tuesday:"), "{err}");
        assert_eq!(err.field, HoursField::Day(1), "the form marks Tuesday");
        days[1] = "9-17".to_owned();
        assert!(BusinessHours::parse("Europe/Berlin", &days).is_err());
        days[1] = "09:00-09:00".to_owned();
        assert!(BusinessHours::parse("Europe/Berlin", &days).is_err());
        days[1] = "09:00-17:00".to_owned();
        let err = BusinessHours::parse("Mars/Olympus_Mons", &days).unwrap_err();
        assert!(err.text.contains("not a time zone"), "{err}");
        assert_eq!(err.field, HoursField::TimeZone);
        let hours = BusinessHours::parse(" America/New_York ", &days).expect("valid");
        assert_eq!(hours.zone_name(), "America/New_York");
        assert_eq!(hours.days_text()[1], "09:00-17:00");
    }

    #[test]
    fn spans_come_back_sorted_and_in_one_form() {
        let hours = every_day("UTC", "13:00-17:30;9:00-12:00");
        assert_eq!(hours.days_text()[6], "09:00-12:00, 13:00-17:30");
    }
}
