//! The `integrations` table. Config is JSON text the destination modules parse; secrets are a
//! [`Sealed`] envelope this module stores and reads but cannot open. Secrets are never selected
//! where they are not needed.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, IntegrationId, SiteId};
use crate::secrets::Sealed;

/// An integration as stored.
#[derive(Clone)]
pub struct IntegrationRow {
    pub id: IntegrationId,
    pub site_id: SiteId,
    pub kind: String,
    pub name: String,
    pub config: String,
    /// Sealed JSON; opened only where a delivery or a signature check needs it.
    pub secrets: Sealed,
    pub is_enabled: bool,
    pub status: String,
    pub last_error: Option<String>,
}

impl std::fmt::Debug for IntegrationRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets never reach a log line, even through a debug print.
        f.debug_struct("IntegrationRow")
            .field("id", &self.id)
            .field("site_id", &self.site_id)
            .field("kind", &self.kind)
            .field("config", &self.config)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

const COLUMNS: &str = "id, site_id, kind, name, config, secrets, is_enabled, status, last_error";

fn from_row(row: &Row<'_>) -> rusqlite::Result<IntegrationRow> {
    Ok(IntegrationRow {
        id: row.get(0)?,
        site_id: row.get(1)?,
        kind: row.get(2)?,
        name: row.get(3)?,
        config: row.get(4)?,
        secrets: Sealed::from_stored(row.get(5)?),
        is_enabled: row.get(6)?,
        status: row.get(7)?,
        last_error: row.get(8)?,
    })
}

/// What creating an integration takes. Its secrets follow with
/// [`update_integration_secrets`] in the same transaction: they are sealed to the new row's id.
pub struct NewIntegration<'a> {
    pub site_id: SiteId,
    pub kind: &'a str,
    pub name: &'a str,
    pub config: &'a str,
    pub now: i64,
}

/// Creates an integration (with no secrets yet) and returns its id.
pub fn insert_integration(
    conn: &Connection,
    new: &NewIntegration<'_>,
) -> Result<IntegrationId, Error> {
    conn.prepare_cached(
        "INSERT INTO integrations (site_id, kind, name, config, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
    )?
    .execute(params![
        new.site_id,
        new.kind,
        new.name,
        new.config,
        new.now
    ])?;
    Ok(IntegrationId(conn.last_insert_rowid()))
}

/// Every integration's id, kind and secrets as stored, for sealing them at start-up and for
/// re-sealing them under a new key.
pub fn list_integration_secrets(conn: &Connection) -> Result<Vec<(IntegrationId, Sealed)>, Error> {
    let mut stmt = conn.prepare_cached("SELECT id, secrets FROM integrations ORDER BY id")?;
    Ok(stmt
        .query_map([], |r| Ok((r.get(0)?, Sealed::from_stored(r.get(1)?))))?
        .collect::<Result<_, _>>()?)
}

/// Replaces an integration's secrets; false if no integration has this id.
pub fn update_integration_secrets(
    conn: &Connection,
    id: IntegrationId,
    secrets: &Sealed,
    now: i64,
) -> Result<bool, Error> {
    let changed = conn
        .prepare_cached("UPDATE integrations SET secrets = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, secrets.as_stored(), now])?;
    Ok(changed == 1)
}

/// One integration by id.
pub fn find_integration(
    conn: &Connection,
    id: IntegrationId,
) -> Result<Option<IntegrationRow>, Error> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM integrations WHERE id = ?1"))?;
    Ok(stmt.query_row([id], from_row).optional()?)
}

/// The key and name of the site integration `id` belongs to.
pub fn find_integration_site(
    conn: &Connection,
    id: IntegrationId,
) -> Result<Option<(String, String)>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT s.key, s.name FROM integrations i JOIN sites s ON s.id = i.site_id \
             WHERE i.id = ?1",
        )?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Every integration of every site, oldest first (for `/metrics`).
pub fn list_all_integrations(conn: &Connection) -> Result<Vec<IntegrationRow>, Error> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM integrations ORDER BY id"))?;
    Ok(stmt.query_map([], from_row)?.collect::<Result<_, _>>()?)
}

/// Every enabled integration of a kind (for start-up tasks such as Socket Mode clients).
pub fn list_enabled_integrations(
    conn: &Connection,
    kind: &str,
) -> Result<Vec<IntegrationRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM integrations WHERE kind = ?1 AND is_enabled = 1 ORDER BY id"
    ))?;
    Ok(stmt
        .query_map([kind], from_row)?
        .collect::<Result<_, _>>()?)
}

/// An enabled integration as job planning sees it: no secrets.
#[derive(Debug, Clone)]
pub struct ActiveIntegration {
    pub id: IntegrationId,
    pub kind: String,
    /// Its destination refused us for a reason only an admin can fix: new jobs start blocked.
    pub is_broken: bool,
    pub config: String,
}

/// Whether the site has an email integration turned on: what an agent's mail to the visitor
/// needs.
pub fn has_active_email(conn: &Connection, site_id: SiteId) -> Result<bool, Error> {
    Ok(list_active_integrations(conn, site_id)?
        .iter()
        .any(|i| i.kind == "email"))
}

/// `id, kind, is_broken, config` as an [`ActiveIntegration`].
fn active_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ActiveIntegration> {
    Ok(ActiveIntegration {
        id: r.get(0)?,
        kind: r.get(1)?,
        is_broken: r.get(2)?,
        config: r.get(3)?,
    })
}

/// A site's enabled integrations, oldest first: what a change on the site may be delivered to.
pub fn list_active_integrations(
    conn: &Connection,
    site_id: SiteId,
) -> Result<Vec<ActiveIntegration>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, kind, status = 'broken', config FROM integrations \
          WHERE site_id = ?1 AND is_enabled = 1 ORDER BY id",
    )?;
    Ok(stmt
        .query_map([site_id], active_from_row)?
        .collect::<Result<_, _>>()?)
}

/// Every webhook endpoint of a site, turned off ones too, as [`ActiveIntegration`]s whose
/// `is_broken` is also set while it is off: what an erasure must reach, so an endpoint that is
/// off then hears of it, its delivery waiting blocked, once it is turned on again.
pub fn list_webhook_endpoints(
    conn: &Connection,
    site_id: SiteId,
) -> Result<Vec<ActiveIntegration>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, kind, status = 'broken' OR is_enabled = 0, config FROM integrations \
          WHERE site_id = ?1 AND kind = 'webhook' ORDER BY id",
    )?;
    Ok(stmt
        .query_map([site_id], active_from_row)?
        .collect::<Result<_, _>>()?)
}

/// Replaces an integration's config (for example another channel); secrets are replaced
/// separately, with [`update_integration_secrets`].
pub fn update_integration_config(
    conn: &Connection,
    id: IntegrationId,
    config: &str,
    now: i64,
) -> Result<bool, Error> {
    let changed = conn
        .prepare_cached("UPDATE integrations SET config = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, config, now])?;
    Ok(changed == 1)
}

/// Marks an integration broken with the destination's error; its jobs are blocked separately.
pub fn mark_integration_broken(
    conn: &Connection,
    id: IntegrationId,
    error: &str,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE integrations SET status = 'broken', last_error = ?2, updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![id, error, now])?;
    Ok(())
}

/// The error an integration shows while its blocked jobs are being queued again, and the mark
/// each page of that resume checks: a runner that blocks it again, an admin turning it off, or
/// another fix replaces it, and the resume stops (docs/jobs.md, "Blocking").
pub const RESUMING: &str = "resuming its blocked deliveries";

/// Turns an integration on after an admin fixed it, and marks it as resuming: it stays broken
/// (its new jobs start blocked) until the resume's last page marks it healthy.
pub fn start_resuming_integration(
    conn: &Connection,
    id: IntegrationId,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE integrations SET is_enabled = 1, status = 'broken', last_error = ?2, \
                updated_at = ?3 WHERE id = ?1",
    )?
    .execute(params![id, RESUMING, now])?;
    Ok(())
}

/// Marks every email integration that is on and broken as resuming, at a start with SMTP
/// configured: what blocks email (SMTP not configured, or its login refused) is the server's
/// own settings, which a restart is the way to change, so each start gives them another try
/// (a login still refused blocks them again). Answers how many.
pub fn start_resuming_email(conn: &Connection, now: i64) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE integrations SET last_error = ?1, updated_at = ?2 \
              WHERE kind = 'email' AND is_enabled = 1 AND status = 'broken' \
                AND last_error IS NOT ?1",
        )?
        .execute(params![RESUMING, now])?)
}

/// Whether integration `id` is on and still marked as resuming.
pub fn is_integration_resuming(conn: &Connection, id: IntegrationId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM integrations \
              WHERE id = ?1 AND is_enabled = 1 AND status = 'broken' AND last_error = ?2",
        )?
        .query_row(params![id, RESUMING], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The integrations whose resume a stop interrupted.
pub fn list_resuming_integrations(conn: &Connection) -> Result<Vec<IntegrationId>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM integrations \
              WHERE is_enabled = 1 AND status = 'broken' AND last_error = ?1 ORDER BY id",
        )?
        .query_map([RESUMING], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Marks an integration healthy: its resume queued the last of its blocked jobs.
pub fn mark_integration_healthy(
    conn: &Connection,
    id: IntegrationId,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE integrations SET status = 'ok', last_error = NULL, updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// A site's integration of a kind (the first, if several), for its settings page.
pub fn find_site_integration(
    conn: &Connection,
    site_id: SiteId,
    kind: &str,
) -> Result<Option<IntegrationRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM integrations WHERE site_id = ?1 AND kind = ?2 ORDER BY id LIMIT 1"
    ))?;
    Ok(stmt
        .query_row(params![site_id, kind], from_row)
        .optional()?)
}

/// The site's Slack integration (other than `except`) posting to `channel`, a workspace and
/// channel id, if there is one.
pub fn find_slack_in_channel(
    conn: &Connection,
    site_id: SiteId,
    (team_id, channel_id): &(String, String),
    except: Option<IntegrationId>,
) -> Result<Option<IntegrationRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM integrations WHERE site_id = ?1 AND kind = 'slack' \
         AND json_extract(config, '$.team_id') = ?2 AND json_extract(config, '$.channel_id') = ?3 \
         AND id IS NOT ?4 ORDER BY id LIMIT 1"
    ))?;
    Ok(stmt
        .query_row(params![site_id, team_id, channel_id, except], from_row)
        .optional()?)
}

/// The site's webhook endpoint posting to `url` (as stored, after the URL check), other than
/// `except` (the endpoint being changed), if any.
pub fn find_webhook_with_url(
    conn: &Connection,
    site_id: SiteId,
    url: &str,
    except: Option<IntegrationId>,
) -> Result<Option<IntegrationRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM integrations WHERE site_id = ?1 AND kind = 'webhook' \
         AND json_extract(config, '$.url') = ?2 AND id IS NOT ?3 ORDER BY id LIMIT 1"
    ))?;
    Ok(stmt
        .query_row(params![site_id, url, except], from_row)
        .optional()?)
}
