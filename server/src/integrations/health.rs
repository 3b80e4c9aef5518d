//! How an integration's deliveries are going, one judgement for the destination pages and the
//! API (docs/admin.md, "health"; docs/api.md, "Other integrations").

use rusqlite::Connection;

use crate::store::{self, DeliveryLogRow, IntegrationRow};

/// An integration's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// No delivery waits for another try after an error, and the newest attempt did not fail for
    /// good (or none was tried yet).
    Healthy,
    /// Deliveries wait until an admin acts: the destination refused Porch in a way only an admin
    /// can fix, or an admin turned it off. `reason` says which.
    Blocked { reason: String },
    /// A delivery waits to be tried again after an error, or the newest one failed for good: that
    /// attempt's error and when it started, in Unix milliseconds.
    Failing { error: String, at: i64 },
}

impl Health {
    /// The integration's health from its row and the delivery attempt that speaks for it.
    fn of(row: &IntegrationRow, newest: Option<&DeliveryLogRow>) -> Self {
        if row.status == "broken" || !row.is_enabled {
            return Self::Blocked {
                reason: row
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "turned off".to_owned()),
            };
        }
        match newest {
            Some(attempt) if matches!(attempt.outcome.as_str(), "retry" | "failed") => {
                Self::Failing {
                    error: attempt
                        .error
                        .clone()
                        .unwrap_or_else(|| attempt.outcome.clone()),
                    at: attempt.started_at,
                }
            }
            _ => Self::Healthy,
        }
    }

    /// Judges from the integration's oldest delivery that waits for another try after an error,
    /// or else its newest attempt: a retrying delivery keeps it failing although newer ones went
    /// out (it is on no other page while it retries).
    pub fn read(conn: &Connection, row: &IntegrationRow) -> Result<Self, store::Error> {
        let attempt = match store::find_retrying_delivery(conn, row.id)? {
            Some(retrying) => Some(retrying),
            None => store::find_newest_delivery_attempt(conn, row.id)?,
        };
        Ok(Self::of(row, attempt.as_ref()))
    }
}
