//! A Slack integration's settings, as stored in `integrations.config` and (sealed) `.secrets`.

use serde::{Deserialize, Serialize};

use crate::integrations::open_secrets_as;
use crate::secrets::SecretKey;
use crate::store::IntegrationRow;

/// Non-secret settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SlackConfig {
    /// Workspace id (`T…`), from `auth.test`.
    pub team_id: String,
    /// Channel the site's conversations go to (`C…`/`G…`).
    pub channel_id: String,
    /// Our bot's user id, so our own posts are not taken for agent replies.
    pub bot_user_id: String,
    #[serde(default)]
    pub bot_id: Option<String>,
}

impl SlackConfig {
    /// The workspace and channel it posts to, as one integration per site may
    /// (`store::find_slack_in_channel`).
    pub fn channel(&self) -> (String, String) {
        (self.team_id.clone(), self.channel_id.clone())
    }
}

/// Secrets. `Debug` never prints them.
#[derive(Clone, Serialize, Deserialize, Default)]
pub struct SlackSecrets {
    /// Bot token (`xoxb-…`) for posting.
    pub bot_token: String,
    /// Signing secret for the Events API; without it the events endpoint refuses everything.
    #[serde(default)]
    pub signing_secret: Option<String>,
    /// App-level token (`xapp-…`) for Socket Mode.
    #[serde(default)]
    pub app_token: Option<String>,
}

impl std::fmt::Debug for SlackSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackSecrets")
            .field("bot_token", &"<redacted>")
            .field(
                "signing_secret",
                &self.signing_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("app_token", &self.app_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// A parsed Slack integration.
#[derive(Debug, Clone)]
pub struct SlackIntegration {
    pub config: SlackConfig,
    pub secrets: SlackSecrets,
}

impl SlackIntegration {
    /// Opens the row's sealed secrets with `key` and parses both; `None` if they do not open or
    /// it is not a valid Slack integration.
    pub fn open(key: &SecretKey, row: &IntegrationRow) -> Option<Self> {
        Some(Self {
            config: serde_json::from_str(&row.config).ok()?,
            secrets: open_secrets_as(key, row)?,
        })
    }
}
