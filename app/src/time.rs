//! Timestamps as shown: ISO 8601 in `datetime` (the inbox script turns it into local time) and a
//! readable UTC text for pages without JavaScript.

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `(iso, text)` for Unix milliseconds: `("2026-12-01T14:05:09Z", "1 Dec 2026, 14:05 UTC")`.
pub fn format_time(ms: i64) -> (String, String) {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (hour, minute, second) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let (year, month, day) = civil_from_days(days);
    let name = usize::try_from(month - 1).map_or("?", |i| MONTHS.get(i).copied().unwrap_or("?"));
    (
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z"),
        format!("{day} {name} {year}, {hour:02}:{minute:02} UTC"),
    )
}

/// A `<time>` for Unix milliseconds, in UTC text that `time.js` shows in the reader's zone.
pub fn time_view(ms: i64) -> impl leptos::prelude::IntoView {
    use leptos::prelude::*;
    let (iso, text) = format_time(ms);
    view! { <time datetime=iso>{text}</time> }
}

/// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a day count since 1970.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(
            format_time(0),
            (
                "1970-01-01T00:00:00Z".into(),
                "1 Jan 1970, 00:00 UTC".into()
            )
        );
        assert_eq!(format_time(1_709_210_096_000).0, "2024-02-29T12:34:56Z");
    }
}
