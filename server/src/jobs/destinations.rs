//! What deliveries need (HTTP clients, database access, the public URL) and the dispatch from a
//! job's kind to its destination module.

use std::sync::Arc;

use crate::slack::SlackApi;
use crate::store::{JobRow, Readers, Writer};

use super::outcome::{Attempt, Outcome};
use super::slack;

/// Shared by every delivery.
pub struct Destinations {
    pub slack: SlackApi,
    pub readers: Arc<Readers>,
    pub writer: Arc<Writer>,
    /// Base URL of this server, for links back to the inbox.
    pub public_url: String,
}

/// Runs one delivery attempt of `job`.
pub async fn deliver(destinations: &Destinations, job: &JobRow) -> Attempt {
    match job.kind.as_str() {
        "slack.post" => slack::deliver_post(destinations, job).await,
        other => Attempt::new(
            Outcome::Failed {
                error: format!("unknown job kind {other}"),
            },
            None,
        ),
    }
}
