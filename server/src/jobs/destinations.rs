//! What deliveries need (HTTP clients, database access, the public URL) and the dispatch from a
//! job's kind to its destination module.

use std::sync::Arc;

use crate::slack::SlackApi;
use crate::store::{JobRow, Readers, Writer};

use super::outcome::{Attempt, Outcome};
use super::{discord, email, slack, webhook};

/// Shared by every delivery.
pub struct Destinations {
    pub slack: SlackApi,
    /// For destinations at fixed, known hosts (Discord).
    pub http: reqwest::Client,
    /// For admin-supplied webhook URLs: resolves through the SSRF guard.
    pub webhooks: reqwest::Client,
    /// `PORCH_ALLOW_PRIVATE_NETWORKS`: webhook URLs naming a private address are allowed.
    pub allow_private_networks: bool,
    /// SMTP, when configured.
    pub mailer: Option<Arc<email::Mailer>>,
    /// Whether a visitor is online (email replies are for visitors who are away).
    pub hub: Arc<crate::hub::Hub>,
    pub readers: Arc<Readers>,
    pub writer: Arc<Writer>,
    /// Base URL of this server, for links back to the inbox.
    pub public_url: String,
    /// Outcome counters and job lag, read by the capacity sampler and `/metrics`.
    pub stats: Arc<super::JobStats>,
}

/// Runs one delivery attempt of `job`.
pub async fn deliver(destinations: &Destinations, job: &JobRow) -> Attempt {
    match job.kind.as_str() {
        "slack.post" => slack::deliver_post(destinations, job).await,
        "discord.post" => discord::deliver_post(destinations, job).await,
        "webhook.deliver" => webhook::deliver(destinations, job).await,
        "email.unanswered" | "email.reply" | "email.transcript" => {
            email::deliver(destinations, job).await
        }
        other => Attempt::new(
            Outcome::Failed {
                error: format!("unknown job kind {other}"),
            },
            None,
        ),
    }
}
