//! Records a finished run in the live database (`loadtest_runs`), so the capacity page lists it
//! and can fall back on its CPU cost per message. Only a database that already exists and is at
//! a schema with the table is written to: a load test creates nothing and migrates nothing.

use std::path::Path;

use anyhow::Context;

use crate::config::DATABASE_FILE;
use crate::metrics::loadtest_report::{Report, Series};
use crate::store::{self, NewLoadtestRun, Synchronous};

/// What the run list shows without parsing the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub started_at: i64,
    pub capacity: Option<u32>,
    pub is_passed: bool,
    pub us_per_msg: Option<f64>,
}

/// Summarises `report`: the Porch series' capacity and its cost per message
/// ([`Report::cost_per_message`]); passed if every stair of every series passed (by a majority
/// of its rounds).
pub fn summarize(report: &Report) -> Summary {
    let started_at = humantime::parse_rfc3339(&report.started_at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or_else(crate::clock::now_ms, |d| {
            i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
        });
    Summary {
        started_at,
        capacity: report.porch_series().and_then(Series::capacity),
        is_passed: report.series.iter().all(Series::every_stair_passed),
        us_per_msg: report.cost_per_message(),
    }
}

/// Inserts the run into `<data_dir>/porch.db` if that database exists and has the table.
/// Returns the new row id, or `None` when there was nothing to record into.
///
/// # Errors
/// Fails if the database exists but cannot be opened or written.
pub fn record_run(report: &Report, data_dir: &Path) -> anyhow::Result<Option<i64>> {
    let path = data_dir.join(DATABASE_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let conn = store::open_write_connection(&path, Synchronous::Full)
        .with_context(|| format!("opening {}", path.display()))?;
    let has_table: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'loadtest_runs'",
            [],
            |r| r.get(0),
        )
        .context("reading the schema")?;
    if !has_table {
        return Ok(None);
    }
    let summary = summarize(report);
    let json = serde_json::to_string(report)?;
    let id = store::insert_loadtest_run(
        &conn,
        &NewLoadtestRun {
            started_at: summary.started_at,
            capacity: summary.capacity,
            is_passed: summary.is_passed,
            us_per_msg: summary.us_per_msg,
            report: &json,
        },
    )?;
    Ok(Some(id))
}

/// [`record_run`], telling the operator what happened; never fails the load test.
pub fn record_and_tell(report: &Report, data_dir: &Path) {
    let said = match record_run(report, data_dir) {
        Ok(Some(id)) => format!(
            "recorded as run {id} in {} (shown on the capacity page)",
            data_dir.join(DATABASE_FILE).display()
        ),
        Ok(None) => format!(
            "not recorded for the capacity page: no Porch database with the capacity tables in {} \
             (start `porch serve` on it once, or pass --data-dir)",
            data_dir.display()
        ),
        Err(err) => format!("not recorded for the capacity page: {err:#}"),
    };
    let _ = super::write_stdout(&said);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(series: &str, stairs: &[serde_json::Value]) -> Report {
        serde_json::from_value(serde_json::json!({
            "started_at": "2026-12-05T10:00:00Z", "command": "porch loadtest",
            "machine": {"cores": 2, "cpu_model": "x", "kernel": "y"}, "placement": "p",
            "visitors": 10, "sites": 1, "idle": 0, "flood_rate": 0, "warmup_ms": 1,
            "duration_ms": 10_000, "gate_p99_ms": 50.0,
            "series": [{"name": series, "stairs": stairs}]
        }))
        .expect("a report")
    }

    fn stair(target: u32, us_per_msg: f64, passed: bool) -> serde_json::Value {
        serde_json::json!({
            "target": target, "round": 1, "achieved": f64::from(target), "sent": 1,
            "acked": 1, "refused": {}, "broken": 0, "p50_ms": 1.0, "p90_ms": 1.0,
            "send_lag_p99_ms": 1.0,
            "p99_ms": 1.0, "p999_ms": 1.0, "max_ms": 1.0, "server_cpu_pct": 50.0,
            "server_us_per_msg": us_per_msg, "server_rss_mb": 20.0, "loadgen_cpu_pct": 1.0,
            "idle_kib_per_socket": null, "connect_ms": 1, "slack": null, "flood": null,
            "passed": passed
        })
    }

    #[test]
    fn the_cost_of_an_even_number_of_passing_stairs_is_the_mean_of_the_middle_two() {
        let report = report(
            "porch",
            &[
                stair(1000, 353.3, true),
                stair(2000, 313.3, true),
                stair(5000, 90.0, false),
            ],
        );
        let summary = summarize(&report);
        let cost = summary.us_per_msg.expect("a cost");
        assert!((cost - 333.3).abs() < 1e-9, "{cost}");
        assert_eq!(summary.capacity, Some(2000));
    }

    #[test]
    fn a_stair_that_passed_two_rounds_of_three_passed() {
        let mut second = stair(1000, 300.0, false);
        second["round"] = 2.into();
        let mut third = stair(1000, 300.0, true);
        third["round"] = 3.into();
        let report = report("porch", &[stair(1000, 300.0, true), second, third]);
        assert!(summarize(&report).is_passed);
    }

    #[test]
    fn a_slack_only_run_is_summed_up_by_its_stairs_with_slack() {
        let report = report(
            "porch+slack",
            &[stair(1000, 400.0, true), stair(3000, 250.0, false)],
        );
        let summary = summarize(&report);
        assert_eq!(summary.capacity, Some(1000));
        assert_eq!(summary.us_per_msg, Some(400.0));
        assert!(!summary.is_passed);
    }

    /// A stair too short or slow to hold 4,750 messages, or one the generator fell behind on,
    /// gives the page no cost: its CPU is mostly the server's idle work.
    #[test]
    fn only_stairs_that_measure_a_message_give_the_cost() {
        // 10 s windows: 400/s holds 4,000 messages, 500/s 5,000 (4,750 is enough).
        let mut late = stair(2000, 150.0, true);
        late["send_lag_p99_ms"] = 10.1.into();
        let mixed = report(
            "porch",
            &[stair(400, 2150.0, true), stair(500, 300.0, true), late],
        );
        assert_eq!(summarize(&mixed).us_per_msg, Some(300.0));
        let tiny = report("porch", &[stair(20, 2150.0, true), stair(50, 900.0, true)]);
        assert_eq!(summarize(&tiny).us_per_msg, None);
    }
}
