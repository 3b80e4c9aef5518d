//! Adding or changing an outgoing webhook endpoint: known events only, and a URL the SSRF guard
//! accepts.

use serde::Deserialize;

use super::WebhookConfig;
use crate::integrations::{SetupError, ssrf};
use crate::jobs::WebhookEvent;

/// What an admin provides.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WebhookSetup {
    pub url: String,
    pub events: Vec<String>,
}

/// Checks the events and the URL and builds the stored settings (events sorted, without
/// repeats). `allow_private_networks` is `PORCH_ALLOW_PRIVATE_NETWORKS`.
pub async fn check_webhook(
    setup: WebhookSetup,
    allow_private_networks: bool,
) -> Result<WebhookConfig, SetupError> {
    let known = || WebhookEvent::ALL.map(WebhookEvent::as_str).join(", ");
    if setup.events.is_empty() {
        return Err(SetupError::invalid(format!(
            "Choose at least one event: {}.",
            known()
        )));
    }
    if let Some(unknown) = setup
        .events
        .iter()
        .find(|e| WebhookEvent::parse(e).is_none())
    {
        return Err(SetupError::invalid(format!(
            "Unknown event {unknown}; events are {}.",
            known()
        )));
    }
    let mut url = ssrf::check_url(&setup.url, allow_private_networks)
        .await
        .map_err(|refused| SetupError::Refused {
            code: "url_refused",
            message: format!("The URL is refused: {refused}."),
        })?;
    // Stored as parsed (scheme and host in lower case, no default port) and without an empty
    // query, so that one endpoint per URL holds for the ways of writing the same URL.
    if url.query() == Some("") {
        url.set_query(None);
    }
    let mut events = setup.events;
    events.sort();
    events.dedup();
    Ok(WebhookConfig {
        url: url.to_string(),
        events,
    })
}
