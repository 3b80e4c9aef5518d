//! Slack saying that Porch's app lost its access to a workspace: the app was uninstalled
//! (`app_uninstalled`) or its bot token revoked (`tokens_revoked` naming Porch's bot). Every
//! integration of that app in that workspace is parked at once (broken with the reason, its
//! waiting deliveries blocked) rather than when the next visitor message fails with
//! `invalid_auth`, so the admin sees it before a visitor writes. Saving a working bot token on
//! its page resumes it, as after any block (docs/integrations/slack.md, "Failures").

use serde_json::Value;

use crate::clock::now_ms;
use crate::store;

use super::SlackIntegration;
use super::inbound::SlackInbound;

/// Why an integration is parked after `app_uninstalled`.
pub const UNINSTALLED: &str = "Slack: the app was uninstalled from the workspace \
    (app_uninstalled). Install it again, then save the new bot token here.";
/// Why an integration is parked after `tokens_revoked` named Porch's bot.
pub const REVOKED: &str = "Slack: the app's bot token was revoked (tokens_revoked). \
    Save a new bot token here.";

/// The reason to park the app's integrations, if `event` says the app lost its access. A
/// `tokens_revoked` about people's tokens only (`tokens.oauth`) leaves the bot's working.
pub fn lost_access(event: &Value, bot_user_id: &str) -> Option<&'static str> {
    match event["type"].as_str()? {
        "app_uninstalled" => Some(UNINSTALLED),
        "tokens_revoked" => event["tokens"]["bot"]
            .as_array()?
            .iter()
            .any(|user| user.as_str() == Some(bot_user_id))
            .then_some(REVOKED),
        _ => None,
    }
}

/// Parks every integration of `slack`'s app in its workspace (one app may serve several
/// channels and sites, and Slack says it once); the runner forgets their deliveries in memory.
/// The event's id is stored with it, as a reply's is: Slack resends an event whose answer came
/// late, and a resend arriving after the admin saved a new token must not park it again.
///
/// # Errors
/// Storage errors; the event is then not acknowledged, and Slack sends it again.
pub async fn park_app(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    (event_id, reason): (Option<&str>, &'static str),
) -> Result<(), store::Error> {
    let team = slack.config.team_id.clone();
    let bot = slack.config.bot_user_id.clone();
    let event_id = event_id.map(str::to_owned);
    let jobs = inbound.jobs.clone();
    let parked = inbound
        .writer
        .write_then(
            move |c| {
                let now = now_ms();
                if let Some(id) = &event_id
                    && !store::insert_slack_event(c, id, now)?
                {
                    return Ok(Vec::new());
                }
                store::park_slack_app(c, (&team, &bot), reason, now)
            },
            move |parked| {
                for id in parked {
                    jobs.integration_off(*id);
                }
            },
        )
        .await?;
    if !parked.is_empty() {
        let ids: Vec<i64> = parked.iter().map(|id| id.0).collect();
        tracing::warn!(integrations = ?ids, team = %slack.config.team_id, reason, "Slack app lost its access: integrations parked until a bot token is saved");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_an_uninstall_or_the_bots_own_revoked_token_parks() {
        let uninstalled = json!({"type": "app_uninstalled"});
        assert_eq!(lost_access(&uninstalled, "UBOT"), Some(UNINSTALLED));
        let bot = json!({"type": "tokens_revoked", "tokens": {"oauth": [], "bot": ["UBOT"]}});
        assert_eq!(lost_access(&bot, "UBOT"), Some(REVOKED));
        let people = json!({"type": "tokens_revoked", "tokens": {"oauth": ["U1"]}});
        assert_eq!(lost_access(&people, "UBOT"), None);
        let other_bot = json!({"type": "tokens_revoked", "tokens": {"bot": ["UOTHER"]}});
        assert_eq!(lost_access(&other_bot, "UBOT"), None);
        assert_eq!(lost_access(&json!({"type": "message"}), "UBOT"), None);
    }
}
