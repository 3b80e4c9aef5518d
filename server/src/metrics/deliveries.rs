//! The deliveries' state for `/metrics`: jobs per state and integrations per health, read from
//! SQLite at each scrape (docs/operations.md, "Metrics"). The counters of attempts say how
//! deliveries went; these gauges say what is wrong now, so an alert can fire on a destination
//! that fails or is blocked and on deliveries given up for good, which a rate of attempts hides
//! once nothing more is tried.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use rusqlite::Connection;

use crate::integrations::{Health, is_turned_off};
use crate::store;

/// The integration kinds, each given every health so a series exists before it is first needed;
/// the `integrations` table's `CHECK (kind IN …)` in migrations/ lists them: a new kind goes in
/// both (the unit test below holds this list to the table's).
const KINDS: [&str; 4] = ["slack", "discord", "webhook", "email"];
/// An integration's health as a label: the destination pages' three, with an integration an
/// admin turned off apart from one the destination blocked (turning one off is no fault).
const HEALTHS: [&str; 4] = ["healthy", "failing", "blocked", "off"];

/// Jobs per state and integrations per kind and health, as read at one scrape.
#[derive(Debug)]
pub struct DeliveryGauges {
    jobs: Vec<(&'static str, i64)>,
    integrations: Vec<(&'static str, &'static str, i64)>,
}

impl DeliveryGauges {
    /// Reads both from one snapshot of the database.
    ///
    /// # Errors
    /// A database error.
    pub fn read(conn: &Connection) -> Result<Self, store::Error> {
        let jobs = store::count_jobs_by_state(conn)?;
        let mut integrations: Vec<(&'static str, &'static str, i64)> = KINDS
            .iter()
            .flat_map(|kind| HEALTHS.iter().map(move |health| (*kind, *health, 0)))
            .collect();
        for row in store::list_all_integrations(conn)? {
            let health = match Health::read(conn, &row)? {
                Health::Blocked { .. } if is_turned_off(&row) => "off",
                Health::Blocked { .. } => "blocked",
                Health::Failing { .. } => "failing",
                Health::Healthy => "healthy",
            };
            if let Some(entry) = integrations
                .iter_mut()
                .find(|(kind, h, _)| *kind == row.kind && *h == health)
            {
                entry.2 += 1;
            }
        }
        Ok(Self { jobs, integrations })
    }

    /// Writes `porch_jobs{state}` and `porch_integrations{kind,health}`.
    ///
    /// # Errors
    /// Only if formatting fails.
    pub fn encode(&self, e: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let gauge = ConstGauge::new(0_i64).metric_type();
        let mut jobs = e.encode_descriptor(
            "jobs",
            "Jobs in each state now: queued (waiting, retries included), running, blocked (until an admin fixes or turns on the destination), failed (given up, until retried or dismissed; test messages left out).",
            None,
            gauge,
        )?;
        for (state, n) in &self.jobs {
            ConstGauge::new(*n).encode(jobs.encode_family(&[("state", *state)])?)?;
        }
        let mut integrations = e.encode_descriptor(
            "integrations",
            "Integrations by kind and health as the destination pages judge it (off: turned off by an admin).",
            None,
            gauge,
        )?;
        for (kind, health, n) in &self.integrations {
            let labels = [("kind", *kind), ("health", *health)];
            ConstGauge::new(*n).encode(integrations.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_the_table_allows_has_its_series() {
        let conn = store::migrated_in_memory();
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'integrations'",
                [],
                |r| r.get(0),
            )
            .expect("table");
        let listed = sql
            .split_once("kind IN (")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(kinds, _)| kinds)
            .expect("the kind's CHECK");
        let mut allowed: Vec<&str> = listed
            .split(',')
            .map(|k| k.trim().trim_matches('\''))
            .collect();
        let mut ours = KINDS.to_vec();
        allowed.sort_unstable();
        ours.sort_unstable();
        assert_eq!(allowed, ours);
    }
}
