//! Connecting a site to Slack and fixing a connection: check the bot token with `auth.test`,
//! store the settings, and (for a fix) queue the integration's blocked deliveries again. Used by
//! the admin page and the API alike.

use std::sync::Arc;

use serde::Deserialize;

use crate::audit::Actor;
use crate::clock::now_ms;
use crate::jobs::resume_integration;
use crate::store::{self, IntegrationId, IntegrationRow, NewIntegration, SiteId};

use super::{CallError, SlackConfig, SlackInbound, SlackIntegration, SlackSecrets};
use crate::integrations::{
    SetupError, insert_integration, replace_integration_settings, settings_json,
};

/// What an admin provides. Empty secrets on a fix keep the stored ones.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SlackSetup {
    #[serde(default)]
    pub bot_token: String,
    #[serde(default)]
    pub channel_id: String,
    #[serde(default)]
    pub signing_secret: Option<String>,
    #[serde(default)]
    pub app_token: Option<String>,
}

fn present(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Validates the settings (keeping `previous` secrets where none are given) and asks Slack
/// whose token it is.
async fn check(
    slack: &SlackInbound,
    setup: SlackSetup,
    previous: Option<&SlackSecrets>,
) -> Result<SlackIntegration, SetupError> {
    let channel = setup.channel_id.trim();
    if channel.is_empty() {
        return Err(SetupError::invalid(
            "The channel id is required (it starts with C or G).",
        ));
    }
    if !is_channel_id(channel) {
        return Err(SetupError::invalid(
            "The channel id is a C or G and capital letters and digits, such as C0123456789 \
             (channel details → About; not the channel's name).",
        ));
    }
    let new_bot_token = present(Some(setup.bot_token));
    // Before asking Slack: a user token (xoxp-), an app-level one or a paste of the wrong
    // field would only come back as Slack's bare `invalid_auth`.
    if new_bot_token
        .as_ref()
        .is_some_and(|t| !t.starts_with("xoxb-"))
    {
        return Err(SetupError::invalid(
            "The bot token starts with xoxb- (OAuth & Permissions → Bot User OAuth Token, after \
             installing the app to the workspace).",
        ));
    }
    let bot_token = new_bot_token
        .or_else(|| previous.map(|p| p.bot_token.clone()))
        .ok_or_else(|| SetupError::invalid("The bot token (xoxb-…) is required."))?;
    let signing_secret =
        present(setup.signing_secret).or_else(|| previous.and_then(|p| p.signing_secret.clone()));
    let new_app_token = present(setup.app_token);
    if let Some(token) = &new_app_token {
        check_app_token(slack, token).await?;
    }
    let app_token = new_app_token.or_else(|| previous.and_then(|p| p.app_token.clone()));
    if signing_secret.is_none() && app_token.is_none() {
        return Err(SetupError::invalid(
            "Give a signing secret (Events API) or an app-level token (Socket Mode), or replies cannot reach Porch.",
        ));
    }
    let auth = slack
        .api
        .auth_test(&bot_token)
        .await
        .map_err(|e| not_accepted("bot token", &e))?;
    Ok(SlackIntegration {
        config: SlackConfig {
            team_id: auth.team_id,
            channel_id: channel.to_owned(),
            bot_user_id: auth.user_id,
            bot_id: auth.bot_id,
        },
        secrets: SlackSecrets {
            bot_token,
            signing_secret,
            app_token,
        },
    })
}

/// Whether `id` has the shape of a public (`C…`) or private (`G…`, older) channel's id, so a
/// channel name or a paste of something else is refused here rather than blocking every post on
/// `channel_not_found`.
fn is_channel_id(id: &str) -> bool {
    id.len() <= 32
        && id.starts_with(['C', 'G'])
        && id.len() > 1
        && id
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// Asks Slack for a Socket Mode connection with a new app-level token, as the connection itself
/// will: a wrong token saved would leave the page "Healthy" while no reply from Slack could
/// ever arrive. The URL it answers is not used (Slack lets it expire).
async fn check_app_token(slack: &SlackInbound, token: &str) -> Result<(), SetupError> {
    if !token.starts_with("xapp-") {
        return Err(SetupError::invalid(
            "The app-level token starts with xapp- (Basic Information → App-Level Tokens, with the \
             connections:write scope).",
        ));
    }
    slack
        .api
        .open_connection(token)
        .await
        .map(|_| ())
        .map_err(|e| not_accepted("app-level token", &e))
}

/// A failed check of a token (`what`): refused by Slack, or not checked at all because Slack did
/// not answer, answered 5xx or rate-limited the check, which says nothing about the token (a
/// script retries `slack_unreachable`, and fixes the token on `slack_refused`).
fn not_accepted(what: &str, err: &CallError) -> SetupError {
    let is_unreachable = match err {
        CallError::Network(_) | CallError::RateLimited { .. } => true,
        CallError::Http { status } => *status >= 500,
        // Slack's own trouble, answered as an error code.
        CallError::Slack { error, status } => {
            *status >= 500
                || [
                    "internal_error",
                    "fatal_error",
                    "service_unavailable",
                    "request_timeout",
                ]
                .contains(&error.as_str())
        }
    };
    if is_unreachable {
        SetupError::Refused {
            code: "slack_unreachable",
            message: format!(
                "Could not check the {what} with Slack now ({err}): try again shortly."
            ),
        }
    } else {
        SetupError::Refused {
            code: "slack_refused",
            message: format!("Slack did not accept the {what}: {err}"),
        }
    }
}

/// Connects a site to a Slack channel; returns the new integration.
pub async fn connect_slack(
    slack: &SlackInbound,
    actor: &Actor,
    site_id: SiteId,
    setup: SlackSetup,
) -> Result<(IntegrationId, SlackConfig), SetupError> {
    let checked = check(slack, setup, None).await?;
    let (config, secrets) = (
        settings_json(&checked.config),
        settings_json(&checked.secrets),
    );
    let (actor, key) = (actor.clone(), Arc::clone(&slack.secret_key));
    let channel = checked.config.channel();
    let id = slack
        .writer
        .write(move |c| {
            if let Some(other) = store::find_slack_in_channel(c, site_id, &channel, None)? {
                return Ok(Err(other.id));
            }
            let new = NewIntegration {
                site_id,
                kind: "slack",
                name: "Slack",
                config: &config,
                now: now_ms(),
            };
            insert_integration(c, &actor, &key, &new, &secrets).map(Ok)
        })
        .await?
        .map_err(channel_taken)?;
    slack.rescan.notify_one();
    Ok((id, checked.config))
}

/// Replaces a Slack integration's settings; a broken one becomes healthy and its blocked
/// deliveries are queued again (returns how many).
pub async fn update_slack(
    slack: &SlackInbound,
    actor: &Actor,
    existing: &IntegrationRow,
    setup: SlackSetup,
) -> Result<usize, SetupError> {
    let opened = SlackIntegration::open(&slack.secret_key, existing);
    let was_in = opened.as_ref().map(|s| s.config.channel());
    let previous = opened.map(|s| s.secrets);
    let checked = check(slack, setup, previous.as_ref()).await?;
    let (config, secrets, id) = (
        settings_json(&checked.config),
        settings_json(&checked.secrets),
        existing.id,
    );
    let (actor, key) = (actor.clone(), Arc::clone(&slack.secret_key));
    let (site_id, channel) = (existing.site_id, checked.config.channel());
    // Only a move into another integration's channel is refused: one of a pair made before the
    // rule keeps its settings changeable (a new token) until the other is deleted.
    let moves = was_in.as_ref() != Some(&channel);
    slack
        .writer
        .write(move |c| {
            if moves
                && let Some(other) = store::find_slack_in_channel(c, site_id, &channel, Some(id))?
            {
                return Ok(Err(other.id));
            }
            let secrets = Some((key.as_ref(), secrets.as_str()));
            replace_integration_settings(c, &actor, (id, "slack"), &config, secrets).map(Ok)
        })
        .await?
        .map_err(channel_taken)?;
    let count = resume_integration(&slack.writer, &slack.jobs, id).await?;
    slack.rescan.notify_one();
    Ok(count)
}

/// The refusal of a second integration of a site in one Slack channel: each would post every
/// message, one thread twice over (webhooks refuse a second endpoint for one URL the same way).
fn channel_taken(other: IntegrationId) -> SetupError {
    SetupError::Taken(format!(
        "This site already posts to this Slack channel (integration {}): change or delete that \
         one, or choose another channel.",
        other.0
    ))
}

#[cfg(test)]
mod tests {
    use super::is_channel_id;

    #[test]
    fn a_channel_id_is_c_or_g_then_capitals_and_digits() {
        for id in ["C0123456789", "G01ABCDEF", "C1"] {
            assert!(is_channel_id(id), "{id}");
        }
        for id in [
            "", "C", "general", "#general", "c0123", "D0123456", "C-FREE", "C 1", "Cé1",
        ] {
            assert!(!is_channel_id(id), "{id}");
        }
    }
}
