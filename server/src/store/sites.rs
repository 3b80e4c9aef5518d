//! The `sites` and `site_origins` tables.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, SiteId};

/// A site as stored, with its allowed origins.
#[derive(Debug, Clone)]
pub struct SiteRow {
    pub id: SiteId,
    pub key: String,
    pub name: String,
    pub greeting: String,
    pub color: String,
    pub position: String,
    pub visitor_messages_per_minute: u32,
    pub visitor_burst: u32,
    pub flood_messages_per_minute: u32,
    pub flood_conversations_per_minute: u32,
    pub origins: Vec<String>,
    pub created_at: i64,
}

/// What creating a site takes; the brake settings start at the schema's defaults.
#[derive(Debug, Clone)]
pub struct NewSite<'a> {
    pub key: &'a str,
    pub name: &'a str,
    pub origins: &'a [String],
    pub created_at: i64,
}

const COLUMNS: &str = "id, key, name, greeting, color, position, visitor_messages_per_minute, \
    visitor_burst, flood_messages_per_minute, flood_conversations_per_minute, created_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<SiteRow> {
    Ok(SiteRow {
        id: row.get(0)?,
        key: row.get(1)?,
        name: row.get(2)?,
        greeting: row.get(3)?,
        color: row.get(4)?,
        position: row.get(5)?,
        visitor_messages_per_minute: row.get(6)?,
        visitor_burst: row.get(7)?,
        flood_messages_per_minute: row.get(8)?,
        flood_conversations_per_minute: row.get(9)?,
        created_at: row.get(10)?,
        origins: Vec::new(),
    })
}

fn load_origins(conn: &Connection, site: &mut SiteRow) -> Result<(), Error> {
    let mut stmt =
        conn.prepare_cached("SELECT origin FROM site_origins WHERE site_id = ?1 ORDER BY origin")?;
    site.origins = stmt
        .query_map([site.id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(())
}

/// Creates a site with its allowed origins and returns it.
pub fn insert_site(conn: &Connection, new: &NewSite<'_>) -> Result<SiteRow, Error> {
    conn.prepare_cached("INSERT INTO sites (key, name, created_at) VALUES (?1, ?2, ?3)")?
        .execute(params![new.key, new.name, new.created_at])?;
    let id = conn.last_insert_rowid();
    let mut insert = conn.prepare_cached(
        "INSERT INTO site_origins (site_id, origin) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )?;
    for origin in new.origins {
        insert.execute(params![id, origin])?;
    }
    find_site_by_key(conn, new.key)?.ok_or(Error::Sqlite(rusqlite::Error::QueryReturnedNoRows))
}

/// The site with this public key, if any.
pub fn find_site_by_key(conn: &Connection, key: &str) -> Result<Option<SiteRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM sites WHERE key = ?1"))?;
    let Some(mut site) = stmt.query_row([key], from_row).optional()? else {
        return Ok(None);
    };
    load_origins(conn, &mut site)?;
    Ok(Some(site))
}

/// Every site, oldest first.
pub fn list_sites(conn: &Connection) -> Result<Vec<SiteRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM sites ORDER BY id"))?;
    let mut sites = stmt
        .query_map([], from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    for site in &mut sites {
        load_origins(conn, site)?;
    }
    Ok(sites)
}

/// The editable settings of a site.
#[derive(Debug, Clone)]
pub struct SiteSettings<'a> {
    pub name: &'a str,
    pub greeting: &'a str,
    pub color: &'a str,
    pub position: &'a str,
    pub visitor_messages_per_minute: u32,
    pub visitor_burst: u32,
    pub flood_messages_per_minute: u32,
    pub flood_conversations_per_minute: u32,
    pub origins: &'a [String],
}

/// Replaces a site's settings and allowed origins; returns false if there is no such site.
pub fn update_site(
    conn: &Connection,
    key: &str,
    settings: &SiteSettings<'_>,
) -> Result<bool, Error> {
    let id: Option<SiteId> = conn
        .prepare_cached("SELECT id FROM sites WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?;
    let Some(id) = id else { return Ok(false) };
    conn.prepare_cached(
        "UPDATE sites SET name = ?2, greeting = ?3, color = ?4, position = ?5, \
         visitor_messages_per_minute = ?6, visitor_burst = ?7, flood_messages_per_minute = ?8, \
         flood_conversations_per_minute = ?9 WHERE id = ?1",
    )?
    .execute(params![
        id,
        settings.name,
        settings.greeting,
        settings.color,
        settings.position,
        settings.visitor_messages_per_minute,
        settings.visitor_burst,
        settings.flood_messages_per_minute,
        settings.flood_conversations_per_minute
    ])?;
    conn.prepare_cached("DELETE FROM site_origins WHERE site_id = ?1")?
        .execute([id])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO site_origins (site_id, origin) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )?;
    for origin in settings.origins {
        insert.execute(params![id, origin])?;
    }
    Ok(true)
}

/// Deletes a site with its visitors, conversations and messages; returns false if there was
/// no such site.
pub fn delete_site(conn: &Connection, key: &str) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM sites WHERE key = ?1")?
        .execute([key])?
        == 1)
}

/// How many conversations a site has (shown before deleting it).
pub fn count_site_conversations(conn: &Connection, key: &str) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM conversations c JOIN sites s ON s.id = c.site_id WHERE s.key = ?1",
        )?
        .query_row([key], |r| r.get(0))?)
}
