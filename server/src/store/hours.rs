//! Business hours (docs/widget.md#business-hours): the `site_hours` table, one row for each site
//! that has hours. Stored as typed; the domain parses a row back into `SiteHours`.

use rusqlite::{Connection, OptionalExtension, params};

use crate::values::{SiteHours, language_lines};

use super::{Error, SiteId};

/// A `site_hours` row as stored, before parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteHoursRow {
    pub time_zone: String,
    /// Seven lines, Monday first.
    pub days: String,
    pub away_message: String,
    /// The away message in other languages, as `de: …` lines.
    pub away_messages: String,
    pub out_of_hours: String,
    /// The first day of a closure (`2026-12-24`, in the site's zone), if it has one.
    pub closed_from: Option<String>,
    /// The last day of a closure (`2026-12-31`), if one is set.
    pub closed_through: Option<String>,
}

/// The site's hours, if it has any.
pub fn find_site_hours(conn: &Connection, site: SiteId) -> Result<Option<SiteHoursRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT time_zone, days, away_message, away_messages, out_of_hours, closed_from, \
             closed_through FROM site_hours WHERE site_id = ?1",
        )?
        .query_row([site], |r| {
            Ok(SiteHoursRow {
                time_zone: r.get(0)?,
                days: r.get(1)?,
                away_message: r.get(2)?,
                away_messages: r.get(3)?,
                out_of_hours: r.get(4)?,
                closed_from: r.get(5)?,
                closed_through: r.get(6)?,
            })
        })
        .optional()?)
}

/// Stores (or replaces) the site's hours.
pub fn upsert_site_hours(
    conn: &Connection,
    site: SiteId,
    hours: &SiteHours,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO site_hours (site_id, time_zone, days, away_message, away_messages, \
         out_of_hours, closed_from, closed_through, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (site_id) \
         DO UPDATE SET time_zone = excluded.time_zone, days = excluded.days, \
         away_message = excluded.away_message, away_messages = excluded.away_messages, \
         out_of_hours = excluded.out_of_hours, closed_from = excluded.closed_from, \
         closed_through = excluded.closed_through, \
         updated_at = excluded.updated_at",
    )?
    .execute(params![
        site,
        hours.hours.zone_name(),
        hours.hours.days_text().join("\n"),
        hours.away_message,
        language_lines(&hours.away_messages),
        hours.out_of_hours.as_str(),
        hours
            .closure
            .and_then(|c| c.from)
            .map(|day| day.to_string()),
        hours.closure.map(|c| c.through.to_string()),
        now
    ])?;
    Ok(())
}

/// Removes the site's hours (it is always open again); true if it had some.
pub fn delete_site_hours(conn: &Connection, site: SiteId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM site_hours WHERE site_id = ?1")?
        .execute([site])?
        > 0)
}
