//! What deliveries share (HTTP clients, the mailer, database access, the public URL) and the
//! dispatch from a job's kind to its integration's delivery.

use std::sync::Arc;

use crate::hub::Hub;
use crate::jobs::{Deliver, Delivery, JobKind};
use crate::secrets::SecretKey;
use crate::store::{JobRow, Readers, Writer};

use super::clients::HttpClients;
use super::delivery::failed;
use super::slack::SlackApi;
use super::{discord, email, slack, webhook};

/// Shared by every delivery.
pub struct Destinations {
    pub slack: SlackApi,
    pub http: HttpClients,
    /// `PORCH_ALLOW_PRIVATE_NETWORKS`: webhook URLs naming a private address are allowed.
    pub allow_private_networks: bool,
    /// SMTP, when configured.
    pub mailer: Option<Arc<email::Mailer>>,
    /// Whether a visitor is online (email replies are for visitors who are away).
    pub hub: Arc<Hub>,
    pub readers: Arc<Readers>,
    pub writer: Arc<Writer>,
    /// Base URL of this server, for links back to the inbox.
    pub public_url: String,
    /// Opens the integrations' sealed secrets, only for the delivery that needs them.
    pub secret_key: Arc<SecretKey>,
}

impl Deliver for Destinations {
    fn deliver<'a>(&'a self, job: &'a JobRow) -> Delivery<'a> {
        let Some(kind) = JobKind::parse(&job.kind) else {
            let unknown = failed(format!("unknown job kind {}", job.kind));
            return Box::pin(std::future::ready(unknown));
        };
        match kind {
            JobKind::SlackPost => Box::pin(slack::deliver_post(self, job)),
            JobKind::SlackHeader => Box::pin(slack::deliver_header_update(self, job)),
            JobKind::DiscordPost => Box::pin(discord::deliver_post(self, job)),
            JobKind::WebhookDeliver => Box::pin(webhook::deliver(self, job)),
            JobKind::DiscordTest => Box::pin(discord::deliver_test(self, job)),
            JobKind::EmailUnanswered
            | JobKind::EmailReply
            | JobKind::EmailTranscript
            | JobKind::EmailAgent => Box::pin(email::deliver(self, job, kind)),
            JobKind::EmailAccountLink | JobKind::EmailTest => {
                Box::pin(email::deliver_team_mail(self, job, kind))
            }
        }
    }
}
