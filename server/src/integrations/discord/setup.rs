//! Connecting a site to a Discord channel webhook: the URL must be a Discord webhook under the
//! configured API base, and Discord must know it.

use serde::Deserialize;

use super::{DiscordConfig, DiscordSecrets};
use crate::integrations::SetupError;

/// What an admin provides.
#[derive(Debug, Deserialize)]
pub struct DiscordSetup {
    pub webhook_url: String,
    /// The webhook's channel is a forum: one thread per conversation.
    #[serde(default)]
    pub forum: bool,
}

/// Checks that the URL is a Discord webhook (under `api_base`) and that Discord knows it, and
/// builds the stored settings.
pub async fn check_discord(
    http: &reqwest::Client,
    api_base: &str,
    setup: DiscordSetup,
) -> Result<(DiscordConfig, DiscordSecrets), SetupError> {
    let url = normalized(setup.webhook_url.trim());
    let url = url.as_str();
    let webhook_id = webhook_id_of(url, api_base)?;
    // A GET on a webhook URL returns the webhook: a wrong or deleted one is refused now rather
    // than at the first delivery.
    let known = http
        .get(url)
        .timeout(PROBE_TIMEOUT)
        .send()
        .await
        .map(|r| r.status());
    match known {
        Ok(status) if status.is_success() => {}
        // Discord's own trouble (5xx) or its rate limit says nothing about the webhook.
        Ok(status)
            if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS =>
        {
            return Err(SetupError::Refused {
                code: "discord_unreachable",
                message: format!(
                    "Discord could not check this webhook now (HTTP {status}): try again shortly."
                ),
            });
        }
        Ok(status) => {
            return Err(SetupError::Refused {
                code: "discord_refused",
                message: format!("Discord does not know this webhook (HTTP {status})."),
            });
        }
        Err(err) => {
            return Err(SetupError::Refused {
                code: "discord_unreachable",
                message: format!(
                    "Could not reach Discord: {}",
                    crate::integrations::send_error::describe(err)
                ),
            });
        }
    }
    Ok((
        DiscordConfig {
            is_forum: setup.forum,
            webhook_id: webhook_id.to_owned(),
        },
        DiscordSecrets {
            webhook_url: url.to_owned(),
        },
    ))
}

/// The webhook id of a Discord webhook URL under `api_base` (or one of Discord's
/// [other hosts](OTHER_WEBHOOK_PREFIXES)), or why `url` is not one.
fn webhook_id_of<'a>(url: &'a str, api_base: &str) -> Result<&'a str, SetupError> {
    let base = normalized(api_base);
    let base = base.trim_end_matches('/');
    // A `?thread_id=` would pin every post to one thread, and Porch picks the thread itself: so
    // the URL is taken as Discord's "Copy Webhook URL" gives it, and anything more is refused
    // rather than dropped unseen.
    if url.contains(['?', '#']) {
        return Err(SetupError::invalid(
            "The webhook URL must be the URL as Discord gives it, with no ?… or #… \
             part: Porch chooses the thread (one per conversation in a forum channel).",
        ));
    }
    let rest = std::iter::once(format!("{base}/webhooks/"))
        .chain(OTHER_WEBHOOK_PREFIXES.iter().map(|&p| p.to_owned()))
        .find_map(|prefix| url.strip_prefix(&prefix))
        .ok_or_else(|| {
            SetupError::invalid(format!(
                "The webhook URL must be a Discord webhook URL ({base}/webhooks/…)."
            ))
        })?;
    let mut segments = rest.trim_end_matches('/').split('/');
    match (segments.next(), segments.next(), segments.next()) {
        (Some(id), Some(token), None) if !id.is_empty() && !token.is_empty() => Ok(id),
        _ => Err(SetupError::invalid(
            "The webhook URL must end in /webhooks/{id}/{token}.",
        )),
    }
}

/// `url` with its scheme and host in lower case, as they compare (`HTTPS://Discord.com/api/…` is a
/// Discord webhook too); the path, which holds the token, is kept. Not a URL: as given, for the
/// checks below to refuse.
fn normalized(url: &str) -> String {
    reqwest::Url::parse(url).map_or_else(|_| url.to_owned(), String::from)
}

/// Discord's other hosts for the same webhooks: the old domain, and the test builds' clients
/// (Canary, PTB), whose *Copy Webhook URL* gives their own host.
const OTHER_WEBHOOK_PREFIXES: &[&str] = &[
    "https://discordapp.com/api/webhooks/",
    "https://canary.discord.com/api/webhooks/",
    "https://ptb.discord.com/api/webhooks/",
];

/// Bound on the check: the admin is waiting for the answer.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "https://discord.com/api";

    #[test]
    fn webhook_urls_of_every_discord_client_are_taken() {
        for url in [
            "https://discord.com/api/webhooks/123/tok",
            "https://discordapp.com/api/webhooks/123/tok",
            "https://canary.discord.com/api/webhooks/123/tok",
            "https://ptb.discord.com/api/webhooks/123/tok/",
        ] {
            assert_eq!(webhook_id_of(url, BASE).ok(), Some("123"), "{url}");
        }
    }

    #[test]
    fn other_urls_are_refused() {
        for url in [
            "https://evil.example/api/webhooks/123/tok",
            "https://canary.discord.com.evil.example/api/webhooks/123/tok",
            "https://discord.com/api/webhooks/123",
            "https://discord.com/api/webhooks/123/tok?thread_id=4",
        ] {
            assert!(webhook_id_of(url, BASE).is_err(), "{url}");
        }
    }
}
