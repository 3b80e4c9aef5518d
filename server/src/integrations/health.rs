//! How an integration's deliveries are going, one judgement for the destination pages and the
//! API (docs/admin.md, "health"; docs/api.md, "Other integrations").

use rusqlite::Connection;

use crate::store::{self, DeliveryLogRow, IntegrationRow};

/// An integration's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Its newest delivery attempt went out, or none was tried yet.
    Healthy,
    /// Deliveries wait until an admin acts: the destination refused Porch in a way only an admin
    /// can fix, or an admin turned it off. `reason` says which.
    Blocked { reason: String },
    /// The newest attempt failed and is retried on schedule (or failed for good): its error and
    /// when it started, in Unix milliseconds.
    Failing { error: String, at: i64 },
}

impl Health {
    /// The integration's health from its row and its newest delivery attempt.
    pub fn of(row: &IntegrationRow, newest: Option<&DeliveryLogRow>) -> Self {
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

    /// Reads the integration's newest attempt and judges.
    pub fn read(conn: &Connection, row: &IntegrationRow) -> Result<Self, store::Error> {
        let newest = store::list_delivery_log(conn, row.id, 1)?;
        Ok(Self::of(row, newest.first()))
    }
}
