//! The warning that an integration was blocked until it is fixed, said once per integration and
//! error per 10 s: its deliveries still under way come back blocked too, one after another, and
//! one line says it for all of them. Another error (a new block soon after a fix) gets its own.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::store::IntegrationId;

/// How long a line stands for the same integration's same error.
const EVERY_MS: i64 = 10_000;

#[derive(Default)]
pub struct BlockedLog {
    /// When each (integration, error) was last said, in Unix milliseconds.
    said: HashMap<(IntegrationId, String), i64>,
}

impl BlockedLog {
    /// Logs that `integration` is blocked with `error`, with the `jobs` it took off the queue,
    /// unless that was said in the last 10 s.
    pub fn say(&mut self, integration: IntegrationId, error: &str, jobs: usize, now: i64) {
        if self.is_due(integration, error, now) {
            tracing::warn!(%integration, jobs, %error, "integration blocked until it is fixed");
        }
    }

    /// Whether a line for `integration` and `error` is due now; if so, it counts as said.
    fn is_due(&mut self, integration: IntegrationId, error: &str, now: i64) -> bool {
        self.said.retain(|_, at| now.saturating_sub(*at) < EVERY_MS);
        match self.said.entry((integration, error.to_owned())) {
            Entry::Vacant(said) => {
                said.insert(now);
                true
            }
            Entry::Occupied(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_integration_and_error_per_ten_seconds() {
        let mut log = BlockedLog::default();
        let (one, two) = (IntegrationId(1), IntegrationId(2));
        assert!(log.is_due(one, "invalid_auth", 0));
        assert!(!log.is_due(one, "invalid_auth", 9_999), "held back");
        assert!(log.is_due(one, "channel_not_found", 5_000), "another error");
        assert!(
            log.is_due(two, "invalid_auth", 5_000),
            "another integration"
        );
        assert!(log.is_due(one, "invalid_auth", 10_000), "10 s later");
        assert!(!log.is_due(one, "invalid_auth", 19_999), "held back again");
    }
}
