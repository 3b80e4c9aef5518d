//! Saving an integration's settings, the same way for every kind: in one transaction with its
//! audit event and its secrets sealed, and (for a fix) turning it back on; its blocked
//! deliveries are then resumed in pages (`jobs::resume_integration`).

use rusqlite::Connection;
use serde_json::json;

use super::discord::DiscordConfig;
use super::sealing::store_secrets;
use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::secrets::SecretKey;
use crate::store::{self, IntegrationId, NewIntegration};

/// Stores a new integration with its secrets (JSON, sealed here under `key`) and its audit
/// event; returns its id.
pub fn insert_integration(
    conn: &Connection,
    actor: &Actor,
    key: &SecretKey,
    new: &NewIntegration<'_>,
    secrets: &str,
) -> Result<IntegrationId, store::Error> {
    let id = store::insert_integration(conn, new)?;
    store_secrets(conn, key, id, secrets)?;
    record(conn, actor, AuditAction::IntegrationCreated, (id, new.kind))?;
    Ok(id)
}

/// Records `action` on integration `id` of `kind`, naming its site in the detail (`site`,
/// `site_name`), so the log still says whose it was after the site is gone.
pub(super) fn record(
    conn: &Connection,
    actor: &Actor,
    action: AuditAction,
    (id, kind): (IntegrationId, &str),
) -> Result<(), store::Error> {
    let detail = match store::find_integration_site(conn, id)? {
        Some((site, site_name)) => json!({ "site": site, "site_name": site_name }),
        None => json!({}),
    };
    audit::record(conn, actor, action, &Target::integration(id, kind), &detail)
}

/// Replaces an integration's settings with its audit event (and its secrets, sealed under `key`,
/// when `secrets` is given; `None` keeps the stored ones), turns it back on (a webhook a 410
/// disabled) and marks it as resuming: it stays broken until `jobs::resume_integration` has
/// queued its blocked jobs.
pub fn replace_integration_settings(
    conn: &Connection,
    actor: &Actor,
    (id, kind): (IntegrationId, &str),
    config: &str,
    secrets: Option<(&SecretKey, &str)>,
) -> Result<(), store::Error> {
    record(conn, actor, AuditAction::IntegrationUpdated, (id, kind))?;
    if kind == "discord" && moves_to_another_discord_webhook(conn, id, config)? {
        store::forget_discord_threads(conn, id)?;
    }
    let now = now_ms();
    store::update_integration_config(conn, id, config, now)?;
    if let Some((key, secrets)) = secrets {
        store_secrets(conn, key, id, secrets)?;
    }
    store::start_resuming_integration(conn, id, now)
}

/// Whether `config` names another Discord webhook than the stored one: another webhook may post
/// to another channel, where the conversations' threads do not exist, so they start anew there
/// (docs/integrations/discord.md, "Forum channels").
fn moves_to_another_discord_webhook(
    conn: &Connection,
    id: IntegrationId,
    config: &str,
) -> Result<bool, store::Error> {
    let webhook_id = |config: &str| {
        serde_json::from_str::<DiscordConfig>(config)
            .map(|c| c.webhook_id)
            .ok()
    };
    let stored = store::find_integration(conn, id)?.map(|row| row.config);
    Ok(stored.as_deref().and_then(webhook_id) != webhook_id(config))
}
