//! How an integration's deliveries are going, one judgement for the destination pages and the
//! API (docs/admin.md, "Destination health"; docs/api.md, "Other integrations").

use rusqlite::Connection;

use crate::store::{self, DeliveryLogRow, IntegrationRow};

/// An integration's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// No delivery is being retried after an error, and none was given up since the latest that
    /// went out (or none was tried yet).
    Healthy,
    /// Deliveries wait until an admin acts: the destination refused Porch in a way only an admin
    /// can fix, or an admin turned it off. `reason` says which.
    Blocked { reason: String },
    /// A delivery is being retried after an error, or one was given up since the latest that
    /// went out (`is_given_up`): that attempt's error and when it started, in Unix milliseconds.
    Failing {
        error: String,
        at: i64,
        is_given_up: bool,
    },
}

impl Health {
    /// The integration's health from its row and the delivery attempt that speaks for it.
    fn of(row: &IntegrationRow, attempt: Option<&DeliveryLogRow>) -> Self {
        if row.status == "broken" || !row.is_enabled {
            return Self::Blocked {
                reason: row
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "turned off".to_owned()),
            };
        }
        match attempt {
            Some(attempt) if matches!(attempt.outcome.as_str(), "retry" | "failed") => {
                Self::Failing {
                    error: attempt
                        .error
                        .clone()
                        .unwrap_or_else(|| attempt.outcome.clone()),
                    at: attempt.started_at,
                    is_given_up: attempt.outcome == "failed",
                }
            }
            _ => Self::Healthy,
        }
    }

    /// Judges from the integration's oldest delivery that is being retried after an error, or
    /// else from the later of its newest delivery's last attempt and the last attempt of the
    /// delivery it gave up on most recently. A retrying delivery keeps it failing although newer
    /// ones went out (it is on no other page while it retries); one given up stays the verdict
    /// until a later delivery goes out (a monitor must not clear when a message is lost).
    pub fn read(conn: &Connection, row: &IntegrationRow) -> Result<Self, store::Error> {
        if let Some(retrying) = store::find_retrying_delivery(conn, row.id)? {
            return Ok(Self::of(row, Some(&retrying)));
        }
        let newest = store::find_newest_delivery_attempt(conn, row.id)?;
        let given_up = store::find_newest_failed_delivery(conn, row.id)?;
        let latest = match (newest, given_up) {
            (Some(newest), Some(given_up)) if given_up.started_at < newest.started_at => {
                Some(newest)
            }
            (newest, given_up) => given_up.or(newest),
        };
        Ok(Self::of(row, latest.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::params;

    use super::*;
    use crate::store::IntegrationId;

    /// A webhook with no jobs yet.
    fn webhook() -> (Connection, IntegrationRow) {
        let conn = store::migrated_in_memory();
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 's_1', 'Shop', 0); \
             INSERT INTO integrations (id, site_id, kind, created_at, updated_at) \
             VALUES (1, 1, 'webhook', 0, 0);",
        )
        .expect("webhook");
        let row = store::find_integration(&conn, IntegrationId(1))
            .expect("read")
            .expect("row");
        (conn, row)
    }

    /// A job of `kind` in `state` at `attempt`, whose tries ended as `outcomes` (the n-th at
    /// `at + n`); returns its id.
    fn job(
        conn: &Connection,
        (kind, state, attempt): (&str, &str, u32),
        at: i64,
        outcomes: &[&str],
    ) -> i64 {
        conn.execute(
            "INSERT INTO jobs (lane, kind, args, integration_id, state, attempt, max_attempts, run_at, \
                               created_at) \
             VALUES ('webhook', ?1, '{}', 1, ?2, ?3, 8, 0, 0)",
            params![kind, state, attempt],
        )
        .expect("job");
        let id = conn.last_insert_rowid();
        for (seq, outcome) in (1_i64..).zip(outcomes) {
            conn.execute(
                "INSERT INTO job_attempts (job_id, seq, attempt, started_at, finished_at, outcome, error) \
                 VALUES (?1, ?2, ?2, ?3, ?3, ?4, ?5)",
                params![id, seq, at + seq, outcome, format!("error of job {id}")],
            )
            .expect("attempt");
        }
        id
    }

    fn health(conn: &Connection, row: &IntegrationRow) -> Health {
        Health::read(conn, row).expect("health")
    }

    #[test]
    fn a_delivery_being_retried_keeps_it_failing_also_while_it_is_sent_again() {
        let (conn, row) = webhook();
        let retrying = job(
            &conn,
            ("webhook.deliver", "queued", 2),
            100,
            &["retry", "retry"],
        );
        job(&conn, ("webhook.deliver", "done", 1), 200, &["delivered"]);
        let failing = Health::Failing {
            error: format!("error of job {retrying}"),
            at: 102,
            is_given_up: false,
        };
        assert_eq!(health(&conn, &row), failing);
        conn.execute(
            "UPDATE jobs SET state = 'running', attempt = 3 WHERE id = ?1",
            [retrying],
        )
        .expect("running");
        assert_eq!(health(&conn, &row), failing, "its third try is in flight");
        conn.execute("UPDATE jobs SET state = 'done' WHERE id = ?1", [retrying])
            .expect("done");
        assert_eq!(health(&conn, &row), Health::Healthy);
    }

    #[test]
    fn a_delivery_given_up_is_the_verdict_until_a_later_one_goes_out() {
        let (conn, row) = webhook();
        let lost = job(
            &conn,
            ("webhook.deliver", "failed", 2),
            50,
            &["retry", "failed"],
        );
        job(&conn, ("webhook.deliver", "done", 1), 100, &["delivered"]);
        // Given up (at 52) before the newer job went out (at 101).
        assert_eq!(health(&conn, &row), Health::Healthy);
        conn.execute(
            "UPDATE job_attempts SET started_at = 300 WHERE job_id = ?1 AND seq = 2",
            [lost],
        )
        .expect("later");
        let given_up = Health::Failing {
            error: format!("error of job {lost}"),
            at: 300,
            is_given_up: true,
        };
        assert_eq!(
            health(&conn, &row),
            given_up,
            "given up after the newer one went out"
        );
        job(&conn, ("webhook.deliver", "done", 1), 400, &["delivered"]);
        assert_eq!(health(&conn, &row), Health::Healthy, "one went out since");
    }

    #[test]
    fn a_dismissed_delivery_no_longer_counts() {
        let (conn, row) = webhook();
        job(&conn, ("webhook.deliver", "done", 1), 100, &["delivered"]);
        let lost = job(&conn, ("webhook.deliver", "failed", 1), 200, &["failed"]);
        assert!(matches!(health(&conn, &row), Health::Failing { .. }));
        store::dismiss_failed_job(&conn, store::JobId(lost)).expect("dismiss");
        assert_eq!(health(&conn, &row), Health::Healthy);
    }

    #[test]
    fn test_messages_and_a_429s_wait_do_not_make_it_failing() {
        let (conn, row) = webhook();
        job(&conn, ("webhook.deliver", "done", 1), 100, &["delivered"]);
        job(&conn, ("discord.test", "failed", 1), 200, &["failed"]);
        job(
            &conn,
            ("webhook.deliver", "queued", 1),
            300,
            &["rate_limited"],
        );
        assert_eq!(health(&conn, &row), Health::Healthy);
    }
}
