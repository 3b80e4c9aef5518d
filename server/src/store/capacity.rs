//! The capacity tables: minute rollups of the sampler (`metrics_minutes`) and recorded load-test
//! runs (`loadtest_runs`). Column names come from `series::Series`, a fixed list, never from
//! input.

use std::fmt::Write as _;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::Error;
use crate::series::{Rollup, SERIES, Series};

fn column_list() -> String {
    let mut list = String::new();
    for s in Series::ALL {
        let _ = write!(list, ", {0}_mean, {0}_max", s.column());
    }
    list
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

/// Stores one minute's rollup (replacing a row of the same minute, as after a restart within it).
pub fn insert_metrics_minute(conn: &Connection, rollup: &Rollup) -> Result<(), Error> {
    let placeholders = (0..SERIES * 2 + 2)
        .map(|i| format!("?{}", i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "INSERT OR REPLACE INTO metrics_minutes (at, samples{}) VALUES ({placeholders})",
        column_list()
    );
    let mut values: Vec<rusqlite::types::Value> = vec![rollup.at_ms.into(), rollup.samples.into()];
    for i in 0..SERIES {
        values.push(finite(rollup.mean[i]).into());
        values.push(finite(rollup.max[i]).into());
    }
    conn.prepare_cached(&sql)?
        .execute(rusqlite::params_from_iter(values))?;
    Ok(())
}

/// Deletes minute rows older than `before` (Unix ms); returns how many.
pub fn prune_metrics_minutes(conn: &Connection, before: i64) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM metrics_minutes WHERE at < ?1")?
        .execute([before])?)
}

/// Minute rows from `since` (Unix ms) on, merged into spans of `step_ms` (mean of the means, max
/// of the maxes), oldest first.
pub fn list_metrics_spans(
    conn: &Connection,
    since: i64,
    step_ms: i64,
) -> Result<Vec<Rollup>, Error> {
    let mut select = String::new();
    for s in Series::ALL {
        let _ = write!(select, ", avg({0}_mean), max({0}_max)", s.column());
    }
    let sql = format!(
        "SELECT (at / ?2) * ?2 AS span, sum(samples){select} FROM metrics_minutes \
         WHERE at >= ?1 GROUP BY span ORDER BY span"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![since, step_ms.max(1)], |row| {
        let mut mean = [None; SERIES];
        let mut max = [None; SERIES];
        for i in 0..SERIES {
            mean[i] = row.get(2 + 2 * i)?;
            max[i] = row.get(3 + 2 * i)?;
        }
        Ok(Rollup {
            at_ms: row.get(0)?,
            samples: row.get(1)?,
            mean,
            max,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The busiest minute since `since`: the highest mean of messages a second, if any minute had
/// one.
pub fn find_busiest_minute(conn: &Connection, since: i64) -> Result<Option<f64>, Error> {
    Ok(conn
        .prepare_cached("SELECT max(messages_per_sec_mean) FROM metrics_minutes WHERE at >= ?1")?
        .query_row([since], |r| r.get(0))?)
}

/// A load-test run to record.
#[derive(Debug, Clone)]
pub struct NewLoadtestRun<'a> {
    pub started_at: i64,
    pub capacity: Option<u32>,
    pub is_passed: bool,
    pub us_per_msg: Option<f64>,
    pub report: &'a str,
}

/// A recorded run, without its report.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadtestRunRow {
    pub id: i64,
    pub started_at: i64,
    pub capacity: Option<u32>,
    pub is_passed: bool,
    pub us_per_msg: Option<f64>,
}

const RUN_COLUMNS: &str = "id, started_at, capacity, is_passed, us_per_msg";

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<LoadtestRunRow> {
    Ok(LoadtestRunRow {
        id: row.get(0)?,
        started_at: row.get(1)?,
        capacity: row.get(2)?,
        is_passed: row.get(3)?,
        us_per_msg: row.get(4)?,
    })
}

pub fn insert_loadtest_run(conn: &Connection, run: &NewLoadtestRun<'_>) -> Result<i64, Error> {
    conn.prepare_cached(
        "INSERT INTO loadtest_runs (started_at, capacity, is_passed, us_per_msg, report) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        run.started_at,
        run.capacity,
        run.is_passed,
        finite(run.us_per_msg),
        run.report
    ])?;
    Ok(conn.last_insert_rowid())
}

/// The newest `limit` runs with their report JSON, newest first.
pub fn list_loadtest_runs_with_reports(
    conn: &Connection,
    limit: u32,
) -> Result<Vec<(LoadtestRunRow, String)>, Error> {
    let sql = format!(
        "SELECT {RUN_COLUMNS}, report FROM loadtest_runs ORDER BY started_at DESC, id DESC LIMIT ?1"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([limit], |row| Ok((run_from_row(row)?, row.get(5)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One run with its report JSON.
pub fn find_loadtest_run(
    conn: &Connection,
    id: i64,
) -> Result<Option<(LoadtestRunRow, String)>, Error> {
    let sql = format!("SELECT {RUN_COLUMNS}, report FROM loadtest_runs WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], |row| Ok((run_from_row(row)?, row.get(5)?)))
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        conn
    }

    fn rollup(at_ms: i64, messages: f64) -> Rollup {
        let mut mean = [None; SERIES];
        let mut max = [None; SERIES];
        mean[Series::Messages.index()] = Some(messages);
        max[Series::Messages.index()] = Some(messages * 2.0);
        Rollup {
            at_ms,
            samples: 60,
            mean,
            max,
        }
    }

    #[test]
    fn minutes_merge_into_spans_and_old_ones_are_pruned() {
        let conn = db();
        for (at, m) in [(0, 10.0), (60_000, 30.0), (120_000, 5.0)] {
            insert_metrics_minute(&conn, &rollup(at, m)).expect("insert");
        }
        let spans = list_metrics_spans(&conn, 0, 120_000).expect("list");
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].mean[Series::Messages.index()], Some(20.0));
        assert_eq!(spans[0].max[Series::Messages.index()], Some(60.0));
        assert_eq!(spans[0].samples, 120);
        assert_eq!(spans[1].mean[Series::Cpu.index()], None);
        assert_eq!(find_busiest_minute(&conn, 60_000).expect("max"), Some(30.0));
        assert_eq!(prune_metrics_minutes(&conn, 60_000).expect("prune"), 1);
        assert_eq!(list_metrics_spans(&conn, 0, 60_000).expect("list").len(), 2);
    }

    #[test]
    fn runs_are_listed_newest_first_and_found_with_their_report() {
        let conn = db();
        for (at, passed) in [(1, true), (2, false)] {
            insert_loadtest_run(
                &conn,
                &NewLoadtestRun {
                    started_at: at,
                    capacity: Some(5000),
                    is_passed: passed,
                    us_per_msg: Some(48.5),
                    report: "{}",
                },
            )
            .expect("insert");
        }
        let runs = list_loadtest_runs_with_reports(&conn, 10).expect("list");
        let runs: Vec<LoadtestRunRow> = runs.into_iter().map(|(run, _)| run).collect();
        assert_eq!(
            runs.iter().map(|r| r.started_at).collect::<Vec<_>>(),
            [2, 1]
        );
        let (run, report) = find_loadtest_run(&conn, runs[1].id)
            .expect("find")
            .expect("run");
        assert!(run.is_passed);
        assert_eq!(report, "{}");
        assert!(find_loadtest_run(&conn, 99).expect("find").is_none());
    }
}
