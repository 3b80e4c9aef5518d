//! The `integrations` table. Config and secrets are JSON text; the destination modules parse
//! them. Secrets are never selected where they are not needed.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, IntegrationId, SiteId};

/// An integration as stored.
#[derive(Clone)]
pub struct IntegrationRow {
    pub id: IntegrationId,
    pub site_id: SiteId,
    pub kind: String,
    pub name: String,
    pub config: String,
    pub secrets: String,
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
        secrets: row.get(5)?,
        is_enabled: row.get(6)?,
        status: row.get(7)?,
        last_error: row.get(8)?,
    })
}

/// What creating an integration takes.
pub struct NewIntegration<'a> {
    pub site_id: SiteId,
    pub kind: &'a str,
    pub name: &'a str,
    pub config: &'a str,
    pub secrets: &'a str,
    pub now: i64,
}

/// Creates an integration and returns its id.
pub fn insert_integration(
    conn: &Connection,
    new: &NewIntegration<'_>,
) -> Result<IntegrationId, Error> {
    conn.prepare_cached(
        "INSERT INTO integrations (site_id, kind, name, config, secrets, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?
    .execute(params![
        new.site_id,
        new.kind,
        new.name,
        new.config,
        new.secrets,
        new.now
    ])?;
    Ok(IntegrationId(conn.last_insert_rowid()))
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
        .query_map([site_id], |r| {
            Ok(ActiveIntegration {
                id: r.get(0)?,
                kind: r.get(1)?,
                is_broken: r.get(2)?,
                config: r.get(3)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// Replaces an integration's settings (for example a fixed token or another channel).
pub fn update_integration_settings(
    conn: &Connection,
    id: IntegrationId,
    config: &str,
    secrets: &str,
    now: i64,
) -> Result<bool, Error> {
    let changed = conn
        .prepare_cached(
            "UPDATE integrations SET config = ?2, secrets = ?3, updated_at = ?4 WHERE id = ?1",
        )?
        .execute(params![id, config, secrets, now])?;
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
