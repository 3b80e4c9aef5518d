//! The job table's tests: the Deliveries list, attempts as recorded, and a retry's budget.

use super::*;
use crate::store::{find_retryable_job, requeue_job};

/// The Deliveries page lists deliveries: a failed test message answered on its own page.
#[test]
fn deliveries_leave_test_messages_out() {
    let conn = crate::store::migrated_in_memory();
    for kind in ["slack.post", "discord.test", "email.test"] {
        conn.execute(
            "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) \
             VALUES ('chat', ?1, '{}', 'failed', 3, 0, 0)",
            [kind],
        )
        .expect("insert");
    }
    let listed = list_deliveries_in_state_with_context(&conn, "failed", 10).expect("list");
    let kinds: Vec<_> = listed.iter().map(|found| found.job.kind.as_str()).collect();
    assert_eq!(kinds, ["slack.post"]);
    assert_eq!(
        list_jobs_in_state(&conn, "failed", None, 10)
            .expect("all")
            .len(),
        3
    );
}

/// `/metrics` counts what waits, runs and waits for an admin; a failed test message is not a
/// delivery given up, so it is left out as the Deliveries page leaves it out.
#[test]
fn jobs_are_counted_by_state_without_failed_tests() {
    let conn = crate::store::migrated_in_memory();
    for (kind, state) in [
        ("slack.post", "failed"),
        ("email.test", "failed"),
        ("slack.post", "queued"),
        ("discord.test", "queued"),
        ("webhook.deliver", "blocked"),
        ("slack.post", "done"),
    ] {
        conn.execute(
            "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) \
             VALUES ('chat', ?1, '{}', ?2, 3, 0, 0)",
            [kind, state],
        )
        .expect("insert");
    }
    assert_eq!(
        count_jobs_by_state(&conn).expect("count"),
        [("queued", 2), ("running", 0), ("blocked", 1), ("failed", 1)]
    );
}

/// Only queued jobs are marked running: one blocked meanwhile must not be delivered.
#[test]
fn only_queued_jobs_are_marked_running() {
    let mut conn = Connection::open_in_memory().expect("open");
    crate::store::apply_migrations(&mut conn).expect("migrate");
    let job = |state: &str| {
        conn.execute(
            "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) \
             VALUES ('chat', 'slack.post', '{}', ?1, 3, 0, 0)",
            [state],
        )
        .expect("insert");
        JobId(conn.last_insert_rowid())
    };
    let (queued, blocked) = (job("queued"), job("blocked"));
    let marked = mark_jobs_running(&conn, &[queued, blocked]).expect("mark");
    assert_eq!(marked, vec![queued]);
    let state: String = conn
        .query_row("SELECT state FROM jobs WHERE id = ?1", [blocked], |r| {
            r.get(0)
        })
        .expect("state");
    assert_eq!(state, "blocked");
}

fn migrated() -> Connection {
    let mut conn = Connection::open_in_memory().expect("open");
    crate::store::apply_migrations(&mut conn).expect("migrate");
    conn
}

fn queued_job(conn: &Connection, max_attempts: u32) -> JobId {
    conn.execute(
        "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) \
         VALUES ('chat', 'slack.post', '{}', 'queued', ?1, 0, 0)",
        [max_attempts],
    )
    .expect("insert");
    JobId(conn.last_insert_rowid())
}

/// One try as the runner makes it, started at `at`: marked running in one round, its
/// outcome recorded in a later one.
fn try_once(conn: &Connection, job: JobId, at: i64, update: JobUpdate, error: Option<&str>) {
    assert_eq!(mark_jobs_running(conn, &[job]).expect("mark"), vec![job]);
    let record = AttemptRecord {
        job_id: job,
        update,
        started_at: at,
        finished_at: at + 1,
        http_status: None,
        error: error.map(str::to_owned),
    };
    record_attempts(conn, &[record]).expect("record");
}

/// A job's attempt rows in the order of the tries: (attempt, outcome).
fn attempt_rows(conn: &Connection, job: JobId) -> Vec<(u32, String)> {
    let mut stmt = conn
        .prepare("SELECT attempt, outcome FROM job_attempts WHERE job_id = ?1 ORDER BY started_at")
        .expect("prepare");
    stmt.query_map([job], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// A run of 429s then a success: a `rate_limited` row per 429 and the delivered one, while
/// the job used one attempt of its budget (a 429 gives its attempt back).
#[test]
fn every_429_is_a_row_of_its_own_and_uses_no_attempt() {
    const LIMITED: i64 = 5;
    let conn = migrated();
    let job = queued_job(&conn, 3);
    for at in 0..LIMITED {
        let snooze = JobUpdate::Snooze { run_at: 0 };
        try_once(
            &conn,
            job,
            at,
            snooze,
            Some("rate limited by the destination"),
        );
    }
    try_once(
        &conn,
        job,
        LIMITED,
        JobUpdate::Done { external_ref: None },
        None,
    );
    let mut expected: Vec<_> = (0..LIMITED)
        .map(|_| (1, "rate_limited".to_owned()))
        .collect();
    expected.push((1, "delivered".to_owned()));
    assert_eq!(attempt_rows(&conn, job), expected);
    let seqs: String = conn
        .query_row(
            "SELECT group_concat(seq) FROM (SELECT seq FROM job_attempts ORDER BY started_at)",
            [],
            |r| r.get(0),
        )
        .expect("seqs");
    assert_eq!(seqs, "1,2,3,4,5,6", "tries are numbered in order");
    let (attempt, state): (u32, String) = conn
        .query_row(
            "SELECT attempt, state FROM jobs WHERE id = ?1",
            [job],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("job");
    assert_eq!((attempt, state.as_str()), (1, "done"));
}

/// A manual retry starts the budget again at 0; the tries before it stay on record.
#[test]
fn tries_before_a_manual_retry_stay_on_record() {
    let conn = migrated();
    let job = queued_job(&conn, 1);
    try_once(&conn, job, 1, JobUpdate::Failed, Some("HTTP 500"));
    assert!(find_retryable_job(&conn, job).expect("find").is_some());
    requeue_job(&conn, job, 10, None, false).expect("requeue");
    try_once(&conn, job, 2, JobUpdate::Done { external_ref: None }, None);
    assert_eq!(
        attempt_rows(&conn, job),
        [(1, "failed".to_owned()), (1, "delivered".to_owned())]
    );
}

/// Blocking and disabling an integration look up its unfinished jobs through the partial
/// index, never by scanning every job it ever had.
#[test]
fn integration_lookups_use_the_unfinished_jobs_index() {
    let mut conn = Connection::open_in_memory().expect("open");
    crate::store::apply_migrations(&mut conn).expect("migrate");
    for narrower in ["state = 'queued'", "state <> 'blocked'"] {
        let sql = format!(
            "EXPLAIN QUERY PLAN UPDATE jobs SET last_error = 'x' \
              WHERE {UNFINISHED_JOBS_OF_INTEGRATION} AND {narrower}"
        );
        let plan: String = conn.query_row(&sql, [1], |r| r.get(3)).expect("plan");
        assert!(plan.contains("jobs_integration_unfinished"), "{plan}");
    }
}

/// An attempt that ends with "try again" after its integration was turned off (or blocked)
/// while it ran leaves its job blocked, not queued, and says so: it must not go out past the
/// turned-off integration at its time, and the turn-on sends it at once with the others. A test
/// message is failed. One whose integration is on, or being resumed, is queued as before.
#[test]
fn a_retry_or_429_of_an_integration_turned_off_meanwhile_is_not_queued() {
    let conn = crate::store::migrate::migrated_with_conversations(&[]);
    conn.execute_batch(
        "INSERT INTO integrations (site_id, kind, created_at, updated_at) VALUES (1, 'slack', 0, 0);",
    )
    .expect("integration");
    let job_of_integration = || {
        let job = queued_job(&conn, 5);
        conn.execute("UPDATE jobs SET integration_id = 1 WHERE id = ?1", [job])
            .expect("integration's job");
        job
    };
    let state = |job: JobId| -> (String, i64) {
        conn.query_row("SELECT state, run_at FROM jobs WHERE id = ?1", [job], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("job")
    };
    let (on, retried, limited) = (
        job_of_integration(),
        job_of_integration(),
        job_of_integration(),
    );
    for job in [on, retried, limited] {
        assert_eq!(mark_jobs_running(&conn, &[job]).expect("mark"), vec![job]);
    }
    let record = |job, update| AttemptRecord {
        job_id: job,
        update,
        started_at: 1,
        finished_at: 2,
        http_status: None,
        error: Some("HTTP 500".into()),
    };
    let blocked = record_attempts(&conn, &[record(on, JobUpdate::Retry { run_at: 50 })])
        .expect("record while on");
    assert!(blocked.is_empty());
    assert_eq!(state(on), ("queued".to_owned(), 50));

    // Turned off while the other two ran.
    crate::store::disable_integration(&conn, IntegrationId(1), "turned off", 3).expect("off");
    let blocked = record_attempts(
        &conn,
        &[
            record(retried, JobUpdate::Retry { run_at: 60 }),
            record(limited, JobUpdate::Snooze { run_at: 3_600_000 }),
        ],
    )
    .expect("record while off");
    assert_eq!(blocked, [retried, limited]);
    assert_eq!(state(retried).0, "blocked");
    assert_eq!(state(limited).0, "blocked");
    let last_error: Option<String> = conn
        .query_row(
            "SELECT last_error FROM jobs WHERE id = ?1",
            [retried],
            |r| r.get(0),
        )
        .expect("last_error");
    assert_eq!(
        last_error.as_deref(),
        Some("turned off"),
        "the reason the admin acts on, not the attempt's HTTP 500"
    );
    assert_eq!(
        attempt_rows(&conn, limited),
        [(1, "rate_limited".to_owned())]
    );
    let attempt: u32 = conn
        .query_row("SELECT attempt FROM jobs WHERE id = ?1", [limited], |r| {
            r.get(0)
        })
        .expect("attempt");
    assert_eq!(attempt, 0, "the 429 gave its attempt back, blocked or not");

    // A test message of the turned-off integration is over; one of an integration being
    // resumed (its jobs run while the resume pages on) keeps its wait, queued.
    let test = job_of_integration();
    conn.execute("UPDATE jobs SET kind = 'slack.test' WHERE id = ?1", [test])
        .expect("a test");
    assert_eq!(mark_jobs_running(&conn, &[test]).expect("mark"), vec![test]);
    let resumed = job_of_integration();
    assert_eq!(
        mark_jobs_running(&conn, &[resumed]).expect("mark"),
        vec![resumed]
    );
    let not_retried = record_attempts(&conn, &[record(test, JobUpdate::Retry { run_at: 70 })])
        .expect("record the test");
    assert_eq!(not_retried, [test]);
    let finished: Option<i64> = conn
        .query_row("SELECT finished_at FROM jobs WHERE id = ?1", [test], |r| {
            r.get(0)
        })
        .expect("finished_at");
    assert_eq!((state(test).0.as_str(), finished), ("failed", Some(2)));
    crate::store::start_resuming_integration(&conn, IntegrationId(1), 4).expect("resuming");
    let not_retried = record_attempts(&conn, &[record(resumed, JobUpdate::Snooze { run_at: 80 })])
        .expect("record while resuming");
    assert!(not_retried.is_empty());
    assert_eq!(state(resumed), ("queued".to_owned(), 80));
}

/// The counts of running, blocked and failed jobs (`/metrics`, the Deliveries page) go through
/// the `jobs_unfinished` index: SQLite takes a partial index only when the query repeats its
/// condition, and a scan would read every done job kept for `PORCH_JOB_RETENTION`.
#[test]
fn counts_of_unfinished_jobs_read_their_partial_index() {
    let conn = crate::store::migrated_in_memory();
    let sql = format!(
        "EXPLAIN QUERY PLAN SELECT count(*) FROM jobs j WHERE {UNFINISHED} AND state = ?1 \
         AND {NOT_A_TEST}"
    );
    let plan: Vec<String> = conn
        .prepare(&sql)
        .expect("plan")
        .query_map(["failed"], |r| r.get(3))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("plan rows");
    assert!(
        plan.iter().any(|step| step.contains("jobs_unfinished"))
            && !plan.iter().any(|step| step.starts_with("SCAN")),
        "{plan:?}"
    );
}
