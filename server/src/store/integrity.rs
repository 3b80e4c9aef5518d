//! The background integrity check: `PRAGMA quick_check` on a connection of its own, once right
//! after start-up and then daily, so a damaged file is found before it loses acknowledged
//! messages. The outcome goes to an [`IntegrityStatus`] that `/readyz`, `/metrics` and the log
//! report; the check only reads, and never holds the writer or a pooled reader.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};
use tokio_util::sync::CancellationToken;

use super::{Error, open_read_connection};

/// Problems kept per check: the first few say enough, and `quick_check` stops looking after
/// this many, which bounds its output on a badly damaged file.
const MAX_PROBLEMS: usize = 10;
/// Problems quoted in the log line.
const LOGGED_PROBLEMS: usize = 3;
/// How often the check repeats. Damage from a failing disk appears while the server runs, but a
/// check reads the whole file (about a second per few hundred MB), so once a day is enough.
pub const INTEGRITY_CHECK_INTERVAL: Duration = Duration::from_hours(24);

/// `IntegrityStatus::state` before the first check has finished.
const NOT_RUN: i64 = -1;
const FAILED: i64 = 0;
const PASSED: i64 = 1;

/// The last integrity check's outcome, shared by the check task and its readers.
#[derive(Debug)]
pub struct IntegrityStatus {
    /// 1 passed, 0 failed, -1 not run yet: the `/metrics` gauge as it is exported.
    state: AtomicI64,
    /// When the last check finished, in Unix milliseconds (0 before the first).
    checked_at_ms: AtomicI64,
}

impl Default for IntegrityStatus {
    fn default() -> Self {
        Self {
            state: AtomicI64::new(NOT_RUN),
            checked_at_ms: AtomicI64::new(0),
        }
    }
}

impl IntegrityStatus {
    /// 1 when the last check passed, 0 when it failed, -1 before the first has finished.
    pub fn gauge(&self) -> i64 {
        self.state.load(Ordering::Acquire)
    }

    /// True when the last check found the file damaged.
    pub fn is_corrupt(&self) -> bool {
        self.gauge() == FAILED
    }

    /// When the last check finished, in Unix milliseconds; `None` before the first.
    pub fn checked_at_ms(&self) -> Option<i64> {
        match self.checked_at_ms.load(Ordering::Acquire) {
            0 => None,
            ms => Some(ms),
        }
    }

    fn record(&self, is_ok: bool) {
        self.checked_at_ms
            .store(crate::clock::now_ms(), Ordering::Release);
        self.state
            .store(if is_ok { PASSED } else { FAILED }, Ordering::Release);
    }
}

/// Runs `PRAGMA quick_check` on `conn` and returns its problems (empty when the file is sound).
/// SQLite reporting the file as corrupt or not a database while checking is a problem too.
///
/// # Errors
/// Any other SQLite failure, such as an I/O error or an interrupt: the check did not finish.
pub fn quick_check(conn: &Connection) -> Result<Vec<String>, Error> {
    let lines = conn
        .prepare(&format!("PRAGMA quick_check({MAX_PROBLEMS})"))
        .and_then(|mut statement| {
            statement
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        });
    match lines {
        Ok(rows) => Ok(problems(&rows)),
        Err(err)
            if matches!(
                err.sqlite_error_code(),
                Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
            ) =>
        {
            Ok(vec![err.to_string()])
        }
        Err(err) => Err(Error::from(err)),
    }
}

/// The problems in `quick_check`'s rows. A row can hold several on lines of their own under a
/// heading (`*** in database main ***`): each is one problem, so the log stays one line and the
/// count is of problems.
fn problems(rows: &[String]) -> Vec<String> {
    rows.iter()
        .flat_map(|row| row.lines())
        .map(str::trim)
        .filter(|line| !line.is_empty() && *line != "ok" && !line.starts_with("***"))
        .map(str::to_owned)
        .collect()
}

/// Checks the database at `path` now and then every [`INTEGRITY_CHECK_INTERVAL`] until
/// `shutdown`, recording each outcome in `status` and logging it in one line. A check under way
/// at shutdown is interrupted, so it never delays stopping.
pub fn spawn_integrity_checks(
    path: PathBuf,
    status: Arc<IntegrityStatus>,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            check_once(&path, &status, &shutdown).await;
            tokio::select! {
                () = tokio::time::sleep(INTEGRITY_CHECK_INTERVAL) => {}
                () = shutdown.cancelled() => break,
            }
        }
    });
}

async fn check_once(
    path: &std::path::Path,
    status: &IntegrityStatus,
    shutdown: &CancellationToken,
) {
    let conn = match open_read_connection(path) {
        Ok(conn) => conn,
        Err(err) => {
            tracing::warn!(error = %err, "database integrity check could not open the database");
            return;
        }
    };
    let interrupt = conn.get_interrupt_handle();
    let size_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let started = Instant::now();
    let mut check = tokio::task::spawn_blocking(move || quick_check(&conn));
    let outcome = tokio::select! {
        joined = &mut check => joined,
        () = shutdown.cancelled() => {
            interrupt.interrupt();
            let _ = check.await;
            return;
        }
    };
    let took_ms = crate::clock::millis(started.elapsed());
    match outcome {
        Ok(Ok(problems)) if problems.is_empty() => {
            status.record(true);
            tracing::info!(took_ms, size_bytes, "database integrity check: ok");
        }
        Ok(Ok(problems)) => {
            status.record(false);
            let first: Vec<&str> = problems
                .iter()
                .take(LOGGED_PROBLEMS)
                .map(String::as_str)
                .collect();
            tracing::error!(
                took_ms,
                size_bytes,
                problems = problems.len(),
                "database integrity check FAILED, the file is damaged (readiness is now 503 \
                 corrupt; stop, run `porch check`, restore a backup): {}",
                first.join("; ")
            );
        }
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "database integrity check did not finish");
        }
        Err(err) => {
            tracing::error!(error = %err, "database integrity check panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::problems;

    #[test]
    fn each_problem_is_one_whatever_rows_sqlite_puts_them_in() {
        let rows = [
            "*** in database main ***\nTree 20 page 112 cell 3: invalid page number 9\n\
             Tree 20 page 112 cell 4: 2nd reference to page 8"
                .to_owned(),
            "Page 40: never used".to_owned(),
        ];
        assert_eq!(
            problems(&rows),
            [
                "Tree 20 page 112 cell 3: invalid page number 9",
                "Tree 20 page 112 cell 4: 2nd reference to page 8",
                "Page 40: never used",
            ]
        );
        assert!(problems(&["ok".to_owned()]).is_empty());
    }
}
