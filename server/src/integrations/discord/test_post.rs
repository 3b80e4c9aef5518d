//! An admin's test post (`discord.test`): a fixed text through the integration's webhook, with
//! the same request, pacing and outcome classification as a visitor's message, so a test that
//! passes means messages will arrive.

use std::sync::Arc;

use serde_json::json;

use super::deliver::{SUPPRESS_EMBEDS, execute};
use super::{DiscordConfig, DiscordSecrets};
use crate::integrations::delivery::{Found, finish, integration_of, read};
use crate::integrations::{Destinations, open_secrets_as};
use crate::jobs::{Attempt, Outcome};
use crate::store::{self, JobRow};

/// What the test post says.
const TEST_TEXT: &str = "Test message from Porch: new conversations will be posted here.";

/// Delivers a `discord.test` job.
pub async fn deliver_test(destinations: &Destinations, job: &JobRow) -> Attempt {
    finish(post(destinations, job).await)
}

async fn post(destinations: &Destinations, job: &JobRow) -> Result<Attempt, Attempt> {
    let integration = integration_of(job)?;
    let key = Arc::clone(&destinations.secret_key);
    let (config, secrets) = read(&destinations.readers, move |c| {
        let Some(row) = store::find_integration(c, integration)? else {
            return Ok(Found::Gone("integration deleted"));
        };
        match (
            serde_json::from_str::<DiscordConfig>(&row.config),
            open_secrets_as::<DiscordSecrets>(&key, &row),
        ) {
            (Ok(config), Some(secrets)) => Ok(Found::Ready((config, secrets))),
            _ => Ok(Found::Invalid("the Discord settings are incomplete")),
        }
    })
    .await?;
    let mut body = json!({
        "content": TEST_TEXT,
        "username": "Porch",
        "allowed_mentions": {"parse": []},
        "flags": SUPPRESS_EMBEDS,
    });
    // A forum channel takes posts only inside a thread: the test opens its own.
    if config.is_forum {
        body["thread_name"] = json!("Porch test");
    }
    let posted = execute(
        &destinations.http.known_hosts,
        &secrets.webhook_url,
        None,
        &body,
    )
    .await
    .map_err(|err| Attempt::new(err.outcome, err.status))?;
    Ok(Attempt::new(
        Outcome::Delivered {
            external_ref: Some(posted.message_id),
        },
        Some(200),
    )
    .paced(posted.pause))
}
