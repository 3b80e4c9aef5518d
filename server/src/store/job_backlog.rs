//! The runner's reads of the queue: what is queued at start-up, a rate key's backlog a page at
//! a time, and jobs another process wrote. The runner holds only a window of each rate key's
//! queued jobs in memory (docs/jobs.md); these reads go through the `jobs_queued` index.

use rusqlite::{Connection, params};

use super::jobs::{COLUMNS, from_row};
use super::{Error, JobId, JobRow};

/// How many jobs are queued (for the runner's start-up log).
pub fn count_queued_jobs(conn: &Connection) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM jobs WHERE state = 'queued'")?
        .query_row([], |r| r.get(0))?)
}

/// The rate keys of queued jobs with each one's oldest, read from the `jobs_queued` index alone.
const QUEUED_RATE_KEYS: &str =
    "SELECT rate_key, min(id) FROM jobs WHERE state = 'queued' GROUP BY rate_key";

/// A rate key's queued jobs above an id, oldest first, through `jobs_queued` (`IS` matches a
/// `NULL` key too).
const QUEUED_OF_RATE_KEY: &str =
    "FROM jobs WHERE state = 'queued' AND rate_key IS ?1 AND id > ?2 ORDER BY id LIMIT ?3";

/// The rate keys that have queued jobs (`None` for jobs without one), each with its oldest: the
/// runner's start-up reads each key's oldest jobs, not every queued job.
pub fn list_queued_rate_keys(conn: &Connection) -> Result<Vec<(Option<String>, JobId)>, Error> {
    let mut stmt = conn.prepare_cached(QUEUED_RATE_KEYS)?;
    Ok(stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?)
}

/// The highest job id ever written, or 0.
pub fn highest_job_id(conn: &Connection) -> Result<JobId, Error> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(id), 0) FROM jobs")?
        .query_row([], |r| r.get(0))?)
}

/// Up to `limit` queued jobs of `rate_key` with ids above `after`, oldest first: the next part
/// of a backlog the runner did not hold in memory (through the `jobs_queued` index).
pub fn list_queued_jobs_of_rate_key(
    conn: &Connection,
    rate_key: Option<&str>,
    after: JobId,
    limit: usize,
) -> Result<Vec<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} {QUEUED_OF_RATE_KEY}"))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    Ok(stmt
        .query_map(params![rate_key, after, limit], from_row)?
        .collect::<Result<_, _>>()?)
}

/// Those of the jobs `ids` that are still queued, oldest first: a conversation's next jobs from
/// its tail (by primary key, however long the backlog around them).
pub fn list_queued_jobs_by_id(conn: &Connection, ids: &[JobId]) -> Result<Vec<JobRow>, Error> {
    let ids = serde_json::to_string(&ids.iter().map(|id| id.0).collect::<Vec<_>>())
        .unwrap_or_else(|_| "[]".to_owned());
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) \
         AND state = 'queued' ORDER BY id"
    ))?;
    Ok(stmt.query_map([ids], from_row)?.collect::<Result<_, _>>()?)
}

/// Queued jobs with ids above `after`, oldest first (the runner's safety poll for jobs another
/// process wrote).
pub fn list_queued_jobs_after(conn: &Connection, after: JobId) -> Result<Vec<JobRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE id > ?1 AND state = 'queued' ORDER BY id"
    ))?;
    Ok(stmt
        .query_map([after], from_row)?
        .collect::<Result<_, _>>()?)
}

/// Notes `jobs`, written by this process (a command beside a running server), for that
/// server's runner to pick up (`jobs_from_elsewhere`).
pub fn note_jobs_from_elsewhere(conn: &Connection, jobs: &[JobRow]) -> Result<(), Error> {
    let mut stmt =
        conn.prepare_cached("INSERT OR IGNORE INTO jobs_from_elsewhere (job_id) VALUES (?1)")?;
    for job in jobs {
        stmt.execute([job.id])?;
    }
    Ok(())
}

/// The noted jobs that are still queued, and the ids of every note (to forget once read).
pub fn list_jobs_from_elsewhere(conn: &Connection) -> Result<(Vec<JobRow>, Vec<JobId>), Error> {
    let ids: Vec<JobId> = conn
        .prepare_cached("SELECT job_id FROM jobs_from_elsewhere ORDER BY job_id")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Ok((Vec::new(), ids));
    }
    let jobs = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM jobs WHERE state = 'queued' \
               AND id IN (SELECT job_id FROM jobs_from_elsewhere) ORDER BY id"
        ))?
        .query_map([], from_row)?
        .collect::<Result<_, _>>()?;
    Ok((jobs, ids))
}

/// Deletes the notes of `ids`, read by the runner.
pub fn forget_jobs_from_elsewhere(conn: &Connection, ids: &[JobId]) -> Result<(), Error> {
    let mut stmt = conn.prepare_cached("DELETE FROM jobs_from_elsewhere WHERE job_id = ?1")?;
    for id in ids {
        stmt.execute([id])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rate key's backlog is read a page at a time in id order, keyless jobs too, and only
    /// queued jobs; both of the runner's reads walk the `jobs_queued` index, not the table.
    #[test]
    fn queued_jobs_are_read_per_rate_key_in_pages_through_their_index() {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        let job = |rate_key: Option<&str>, state: &str| {
            conn.execute(
                "INSERT INTO jobs (lane, kind, args, state, rate_key, max_attempts, run_at, \
                                   created_at) VALUES ('chat', 'slack.post', '{}', ?1, ?2, 3, 0, 0)",
                params![state, rate_key],
            )
            .expect("insert");
            JobId(conn.last_insert_rowid())
        };
        let c1: Vec<JobId> = (0..5).map(|_| job(Some("slack:T:C1"), "queued")).collect();
        job(Some("slack:T:C1"), "done");
        let keyless = job(None, "queued");
        job(Some("slack:T:C2"), "failed");
        let page = |key: Option<&str>, after: JobId, limit: usize| -> Vec<JobId> {
            list_queued_jobs_of_rate_key(&conn, key, after, limit)
                .expect("list")
                .iter()
                .map(|j| j.id)
                .collect()
        };
        assert_eq!(page(Some("slack:T:C1"), JobId(0), 3), c1[..3]);
        assert_eq!(page(Some("slack:T:C1"), c1[2], 3), c1[3..]);
        assert_eq!(page(None, JobId(0), 3), [keyless]);
        let mut keys = list_queued_rate_keys(&conn).expect("keys");
        keys.sort();
        assert_eq!(
            keys,
            [(None, keyless), (Some("slack:T:C1".to_owned()), c1[0])]
        );
        let plan = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> String {
            conn.query_row(&format!("EXPLAIN QUERY PLAN {sql}"), params, |r| r.get(3))
                .expect("plan")
        };
        let keys_plan = plan(QUEUED_RATE_KEYS, &[]);
        assert!(
            keys_plan.contains("COVERING INDEX jobs_queued"),
            "{keys_plan}"
        );
        let page_sql = format!("SELECT id {QUEUED_OF_RATE_KEY}");
        let page_plan = plan(&page_sql, &[&None::<String>, &0, &1]);
        assert!(page_plan.contains("INDEX jobs_queued"), "{page_plan}");
    }
}
