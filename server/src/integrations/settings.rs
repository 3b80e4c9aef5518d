//! Saving an integration's settings, the same way for every kind: in one transaction with its
//! audit event, and (for a fix) turning it back on and queueing its blocked deliveries again.

use rusqlite::Connection;
use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, IntegrationId, JobRow, NewIntegration};

/// Stores a new integration with its audit event; returns its id.
pub fn insert_integration(
    conn: &Connection,
    actor: &Actor,
    new: &NewIntegration<'_>,
) -> Result<IntegrationId, store::Error> {
    let id = store::insert_integration(conn, new)?;
    let target = Target::integration(id, new.kind);
    audit::record(
        conn,
        actor,
        AuditAction::IntegrationCreated,
        &target,
        &json!({}),
    )?;
    Ok(id)
}

/// Replaces an integration's settings with its audit event, turns it back on (a webhook a 410
/// disabled) and marks it healthy; returns its blocked jobs, queued again, for the runner.
pub fn replace_integration_settings(
    conn: &Connection,
    actor: &Actor,
    (id, kind): (IntegrationId, &str),
    config: &str,
    secrets: &str,
) -> Result<Vec<JobRow>, store::Error> {
    let target = Target::integration(id, kind);
    audit::record(
        conn,
        actor,
        AuditAction::IntegrationUpdated,
        &target,
        &json!({}),
    )?;
    let now = now_ms();
    store::update_integration_settings(conn, id, config, secrets, now)?;
    store::enable_integration(conn, id, now)?;
    store::resume_integration_jobs(conn, id, now)
}
