//! What an admin does to an integration of any kind, the same from the API and the admin pages:
//! add it, replace its settings (a fix resumes its blocked deliveries), turn it off and on, delete
//! it, and rotate a webhook endpoint's signing secret. Each change is written with its audit
//! event in one transaction, and jobs it queues again are handed to the runner.

use std::sync::Arc;

use crate::audit::{Actor, AuditAction};
use crate::clock::now_ms;
use crate::jobs::{JobQueue, resume_integration};
use crate::secrets::SecretKey;
use crate::store::{self, IntegrationId, IntegrationRow, NewIntegration, SiteId, Writer};

use super::sealing::{open_secrets_as, store_secrets};
use super::webhook::{WebhookSecrets, new_secret};
use super::{SetupError, insert_integration, replace_integration_settings, settings};

/// Why an admin turned an integration off: the reason its deliveries wait, shown on its page.
pub const TURNED_OFF: &str = "turned off by an admin";

/// Whether an admin turned the integration off (rather than its destination refusing Porch).
pub fn is_turned_off(row: &IntegrationRow) -> bool {
    !row.is_enabled && row.last_error.as_deref() == Some(TURNED_OFF)
}

/// Settings or secrets as stored. They are plain structs of strings, numbers and booleans, which
/// always serialise.
pub fn settings_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A new integration's checked settings, as JSON.
pub struct CheckedSettings {
    pub kind: &'static str,
    /// Shown in lists ("Discord", "Webhook", "Email").
    pub name: &'static str,
    pub config: String,
    pub secrets: String,
}

/// Stores a new integration of a site (its secrets sealed under `key`) with its audit event;
/// returns its id.
pub async fn add_integration(
    (writer, key): (&Writer, &Arc<SecretKey>),
    actor: &Actor,
    site_id: SiteId,
    settings: CheckedSettings,
) -> Result<IntegrationId, store::Error> {
    let (actor, key) = (actor.clone(), Arc::clone(key));
    writer
        .write(move |c| insert_checked(c, (&actor, &key), site_id, &settings))
        .await
}

fn insert_checked(
    c: &rusqlite::Connection,
    (actor, key): (&Actor, &SecretKey),
    site_id: SiteId,
    settings: &CheckedSettings,
) -> Result<IntegrationId, store::Error> {
    let new = NewIntegration {
        site_id,
        kind: settings.kind,
        name: settings.name,
        config: &settings.config,
        now: now_ms(),
    };
    insert_integration(c, actor, key, &new, &settings.secrets)
}

/// What [`add_sole_integration`] or [`add_webhook_endpoint`] found.
pub enum Sole {
    Added(IntegrationId),
    /// The integration that stopped the add, which was left as it was.
    Exists(IntegrationRow),
}

/// Like [`add_integration`] for a kind a site has at most one of: if the site has one, it is
/// returned instead. The check is in the same transaction as the insert, so two adds at once
/// cannot both insert.
pub async fn add_sole_integration(
    handles: (&Writer, &Arc<SecretKey>),
    actor: &Actor,
    site_id: SiteId,
    settings: CheckedSettings,
) -> Result<Sole, store::Error> {
    let kind = settings.kind;
    add_unless(handles, actor, site_id, settings, move |c| {
        store::find_site_integration(c, site_id, kind)
    })
    .await
}

/// Like [`add_integration`] for a webhook endpoint (`settings` checked by `check_webhook`), unless
/// the site has an endpoint with this URL: that one is returned instead. A reloaded or resent
/// "Add endpoint" form would otherwise make a second endpoint, and every event would reach the
/// receiver twice under two `webhook-id`s, which no deduplication catches.
pub async fn add_webhook_endpoint(
    handles: (&Writer, &Arc<SecretKey>),
    actor: &Actor,
    site_id: SiteId,
    settings: CheckedSettings,
    url: String,
) -> Result<Sole, store::Error> {
    add_unless(handles, actor, site_id, settings, move |c| {
        store::find_webhook_with_url(c, site_id, &url, None)
    })
    .await
}

/// Adds the integration unless `existing` finds one, in one transaction.
async fn add_unless(
    (writer, key): (&Writer, &Arc<SecretKey>),
    actor: &Actor,
    site_id: SiteId,
    settings: CheckedSettings,
    existing: impl Fn(&rusqlite::Connection) -> Result<Option<IntegrationRow>, store::Error>
    + Send
    + 'static,
) -> Result<Sole, store::Error> {
    let (actor, key) = (actor.clone(), Arc::clone(key));
    writer
        .write(move |c| {
            if let Some(row) = existing(c)? {
                return Ok(Sole::Exists(row));
            }
            insert_checked(c, (&actor, &key), site_id, &settings).map(Sole::Added)
        })
        .await
}

/// Saves new settings (and new secrets, sealed under `key`, when given; `None` keeps the stored
/// ones), turns the integration back on and queues its blocked jobs again; returns how many.
pub async fn fix_integration(
    (writer, jobs, key): (&Arc<Writer>, &JobQueue, &Arc<SecretKey>),
    actor: &Actor,
    row: &IntegrationRow,
    config: String,
    secrets: Option<String>,
) -> Result<usize, store::Error> {
    let (id, kind, actor) = (row.id, row.kind.clone(), actor.clone());
    let key = Arc::clone(key);
    writer
        .write(move |c| {
            let secrets = secrets.as_deref().map(|s| (key.as_ref(), s));
            replace_integration_settings(c, &actor, (id, &kind), &config, secrets)
        })
        .await?;
    resume_integration(writer, jobs, id).await
}

/// What [`fix_webhook_endpoint`] did.
pub enum EndpointChange {
    /// Saved; this many blocked deliveries were queued again.
    Saved(usize),
    /// Another endpoint of the site already posts to the new URL (returned); nothing changed.
    UrlTaken(IntegrationRow),
}

/// Like [`fix_integration`] for a webhook endpoint (`config` checked by `check_webhook`, posting
/// to `url`), unless another endpoint of the site posts to that URL: moved onto it, this one
/// would send the receiver every event a second time, under other `webhook-id`s. The check is
/// in the same transaction as the change.
pub async fn fix_webhook_endpoint(
    (writer, jobs): (&Arc<Writer>, &JobQueue),
    actor: &Actor,
    row: &IntegrationRow,
    config: String,
    url: String,
) -> Result<EndpointChange, store::Error> {
    let (id, site_id, actor) = (row.id, row.site_id, actor.clone());
    let taken = writer
        .write(move |c| {
            let taken = store::find_webhook_with_url(c, site_id, &url, Some(id))?;
            if taken.is_none() {
                replace_integration_settings(c, &actor, (id, "webhook"), &config, None)?;
            }
            Ok(taken)
        })
        .await?;
    match taken {
        Some(other) => Ok(EndpointChange::UrlTaken(other)),
        None => Ok(EndpointChange::Saved(
            resume_integration(writer, jobs, id).await?,
        )),
    }
}

/// Turns an integration off: no new deliveries are planned for it, and its queued ones wait
/// (blocked, with [`TURNED_OFF`] as the reason) until it is turned on again. The runner forgets
/// them too, so that turning it on starts them at once, not at the retry time they had.
pub async fn turn_off_integration(
    (writer, jobs): (&Writer, &JobQueue),
    actor: &Actor,
    row: &IntegrationRow,
) -> Result<(), store::Error> {
    let (id, kind, actor) = (row.id, row.kind.clone(), actor.clone());
    let jobs = jobs.clone();
    writer
        .write_then(
            move |c| {
                // Turning off what an admin already turned off changes nothing, so it records
                // nothing (a retried call does not fill the audit log).
                let current = store::find_integration(c, id)?;
                if current.as_ref().is_some_and(is_turned_off) {
                    return Ok(());
                }
                settings::record(c, &actor, AuditAction::IntegrationDisabled, (id, &kind))?;
                store::disable_integration(c, id, TURNED_OFF, now_ms())
            },
            move |()| jobs.integration_off(id),
        )
        .await
}

/// Turns an integration on again: it is marked healthy and its waiting deliveries are queued
/// (if its destination still refuses, the next delivery says so); returns how many. One that is
/// on and healthy is left as it is (0).
pub async fn turn_on_integration(
    (writer, jobs): (&Arc<Writer>, &JobQueue),
    actor: &Actor,
    row: &IntegrationRow,
) -> Result<usize, store::Error> {
    let (id, kind, actor) = (row.id, row.kind.clone(), actor.clone());
    let changed = writer
        .write(move |c| {
            // On and healthy: nothing waits and nothing changes, so nothing is recorded.
            let current = store::find_integration(c, id)?;
            if current.is_some_and(|row| row.is_enabled && row.status == "ok") {
                return Ok(false);
            }
            settings::record(c, &actor, AuditAction::IntegrationEnabled, (id, &kind))?;
            store::start_resuming_integration(c, id, now_ms())?;
            Ok(true)
        })
        .await?;
    if !changed {
        return Ok(0);
    }
    resume_integration(writer, jobs, id).await
}

/// Deletes an integration with its unfinished deliveries and its delivery log.
pub async fn delete_integration(
    writer: &Writer,
    actor: &Actor,
    row: &IntegrationRow,
) -> Result<(), store::Error> {
    let (id, kind, actor) = (row.id, row.kind.clone(), actor.clone());
    writer
        .write(move |c| {
            settings::record(c, &actor, AuditAction::IntegrationDeleted, (id, &kind))?;
            store::delete_integration(c, id).map(|_| ())
        })
        .await
}

/// Gives a webhook endpoint a new signing secret; the previous one keeps signing alongside it
/// (two signatures per delivery) for [`super::webhook::ROTATION_OVERLAP_MS`]. A secret that no
/// longer opens (its sealing key was lost) is replaced without overlap, and the deliveries it
/// blocked are queued again (an endpoint that is off stays off). Returns the new secrets.
pub async fn rotate_webhook_secret(
    (writer, jobs, key): (&Arc<Writer>, &JobQueue, &Arc<SecretKey>),
    actor: &Actor,
    row: &IntegrationRow,
) -> Result<WebhookSecrets, SetupError> {
    let now = now_ms();
    let (rotated, was_unopenable) = match open_secrets_as::<WebhookSecrets>(key, row) {
        Some(current) => (current.rotated(now), false),
        None => (
            WebhookSecrets {
                secret: new_secret(),
                previous: None,
                previous_until: None,
            },
            true,
        ),
    };
    let secrets = settings_json(&rotated);
    let (key, id) = (Arc::clone(key), row.id);
    let (actor, kind) = (actor.clone(), row.kind.clone());
    let resumes = writer
        .write(move |c| {
            settings::record(
                c,
                &actor,
                AuditAction::IntegrationSecretRotated,
                (id, &kind),
            )?;
            store_secrets(c, &key, id, &secrets)?;
            let blocked = store::find_integration(c, id)?
                .is_some_and(|row| row.is_enabled && row.status == "broken");
            let resumes = was_unopenable && blocked;
            if resumes {
                store::start_resuming_integration(c, id, now)?;
            }
            Ok(resumes)
        })
        .await?;
    // The new secret is stored and is shown only in this answer: the queueing of the waiting
    // deliveries must not decide it (a failure, or a long backlog outlasting the request, would
    // lose the secret). It runs on its own; one cut short by a stop is taken up at the next start
    // (the endpoint stays marked as resuming).
    if resumes {
        let (writer, jobs) = (Arc::clone(writer), jobs.clone());
        tokio::spawn(async move {
            if let Err(err) = resume_integration(&writer, &jobs, id).await {
                tracing::warn!(%err, integration = %id, "could not queue the deliveries a rotation freed");
            }
        });
    }
    Ok(rotated)
}
