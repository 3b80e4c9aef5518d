//! Turning on email for a site: when the digest and the replies are due. The admin page and
//! the API check and save the same way.

use std::sync::Arc;

use serde::Deserialize;

use crate::audit::Actor;
use crate::integrations::{CheckedSettings, Sole, add_sole_integration, fix_integration};
use crate::jobs::{EmailDelays, JobQueue};
use crate::secrets::SecretKey;
use crate::store::{self, IntegrationId, SiteId, Writer};

/// The longest delay taken: a week (a digest later than that helps nobody).
pub const MAX_DELAY_SECS: u32 = 7 * 24 * 3600;

/// The rule a delay breaks, for `what` as the caller names the field.
pub fn delay_rule(what: &str) -> String {
    format!("{what} must be a whole number of seconds from 0 to {MAX_DELAY_SECS}.")
}

/// `secs` if it is a delay taken, else the rule it breaks.
pub fn checked_delay(secs: u32, what: &str) -> Result<u32, String> {
    if secs <= MAX_DELAY_SECS {
        Ok(secs)
    } else {
        Err(delay_rule(what))
    }
}

/// What an admin provides, in seconds.
#[derive(Debug, Deserialize)]
pub struct EmailSetup {
    /// Agents get the digest when a new conversation has no reply after this long.
    #[serde(default = "default_unanswered_after")]
    pub unanswered_after_secs: u32,
    /// An agent reply is mailed to a visitor who left an address if they are still away this
    /// long after it.
    #[serde(default = "default_reply_delay")]
    pub reply_delay_secs: u32,
}

fn default_unanswered_after() -> u32 {
    secs(EmailDelays::DEFAULT.unanswered_after)
}

fn default_reply_delay() -> u32 {
    secs(EmailDelays::DEFAULT.reply_delay)
}

fn secs(duration: std::time::Duration) -> u32 {
    u32::try_from(duration.as_secs()).unwrap_or(u32::MAX)
}

/// The stored settings (in milliseconds, as `EmailDelays::from_config` reads them).
pub fn email_config(setup: &EmailSetup) -> serde_json::Value {
    serde_json::json!({
        "unanswered_after_ms": i64::from(setup.unanswered_after_secs) * 1000,
        "reply_delay_ms": i64::from(setup.reply_delay_secs) * 1000,
    })
}

/// Whether [`save_email`] turned email on or saved onto the site's integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    Created(IntegrationId),
    Updated(IntegrationId),
}

/// Turns email on for a site with `setup`'s delays, or saves them on its integration (turning it
/// on again if it was off): a site has one, as two would mail every digest twice. Whether it has
/// one is decided in the writer's transaction, so two saves at once cannot both add one.
pub async fn save_email(
    handles: (&Arc<Writer>, &JobQueue, &Arc<SecretKey>),
    actor: &Actor,
    site_id: SiteId,
    setup: &EmailSetup,
) -> Result<Saved, store::Error> {
    let config = email_config(setup).to_string();
    let settings = CheckedSettings {
        kind: "email",
        name: "Email",
        config: config.clone(),
        secrets: "{}".to_owned(),
    };
    let added = add_sole_integration((handles.0, handles.2), actor, site_id, settings).await?;
    match added {
        Sole::Added(id) => Ok(Saved::Created(id)),
        Sole::Exists(row) => {
            fix_integration(handles, actor, &row, config, None).await?;
            Ok(Saved::Updated(row.id))
        }
    }
}
