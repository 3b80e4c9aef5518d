//! The `sites` and `site_origins` tables.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::values::{SiteLimits, SiteSettings};

use super::{Error, SiteId};

/// A site as stored, with its allowed origins.
#[derive(Debug, Clone)]
pub struct SiteRow {
    pub id: SiteId,
    pub key: String,
    pub settings: SiteSettings,
    pub created_at: i64,
}

/// What creating a site takes.
#[derive(Debug, Clone)]
pub struct NewSite<'a> {
    pub key: &'a str,
    pub settings: &'a SiteSettings,
    pub created_at: i64,
}

const COLUMNS: &str = "id, key, name, greeting, color, position, visitor_messages_per_minute, \
    visitor_burst, flood_messages_per_minute, flood_conversations_per_minute, created_at, retention_days, locale";

fn from_row(row: &Row<'_>) -> rusqlite::Result<SiteRow> {
    Ok(SiteRow {
        id: row.get(0)?,
        key: row.get(1)?,
        settings: SiteSettings {
            name: row.get(2)?,
            greeting: row.get(3)?,
            color: row.get(4)?,
            position: row.get(5)?,
            limits: SiteLimits {
                visitor_messages_per_minute: row.get(6)?,
                visitor_burst: row.get(7)?,
                flood_messages_per_minute: row.get(8)?,
                flood_conversations_per_minute: row.get(9)?,
            },
            origins: Vec::new(),
            retention_days: row.get(11)?,
            locale: row.get(12)?,
            greetings: BTreeMap::new(),
        },
        created_at: row.get(10)?,
    })
}

/// Fills in the site's allowed origins and its greetings in other languages.
fn load_origins(conn: &Connection, site: &mut SiteRow) -> Result<(), Error> {
    let mut stmt =
        conn.prepare_cached("SELECT origin FROM site_origins WHERE site_id = ?1 ORDER BY origin")?;
    site.settings.origins = stmt
        .query_map([site.id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    site.settings.greetings = conn
        .prepare_cached("SELECT locale, greeting FROM site_greetings WHERE site_id = ?1")?
        .query_map([site.id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(())
}

/// Creates a site with its settings and allowed origins and returns it.
pub fn insert_site(conn: &Connection, new: &NewSite<'_>) -> Result<SiteRow, Error> {
    let settings = new.settings;
    let limits = &settings.limits;
    conn.prepare_cached(
        "INSERT INTO sites (key, name, greeting, color, position, visitor_messages_per_minute, \
         visitor_burst, flood_messages_per_minute, flood_conversations_per_minute, created_at, \
         retention_days, locale) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        new.key,
        settings.name,
        settings.greeting,
        settings.color,
        settings.position,
        limits.visitor_messages_per_minute,
        limits.visitor_burst,
        limits.flood_messages_per_minute,
        limits.flood_conversations_per_minute,
        new.created_at,
        settings.retention_days,
        settings.locale
    ])?;
    let id = SiteId(conn.last_insert_rowid());
    insert_origins(conn, id, &settings.origins)?;
    insert_greetings(conn, id, settings)?;
    find_site_by_key(conn, new.key)?.ok_or(Error::Sqlite(rusqlite::Error::QueryReturnedNoRows))
}

fn insert_greetings(conn: &Connection, id: SiteId, settings: &SiteSettings) -> Result<(), Error> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO site_greetings (site_id, locale, greeting) VALUES (?1, ?2, ?3)",
    )?;
    for (locale, greeting) in &settings.greetings {
        insert.execute(params![id, locale, greeting])?;
    }
    Ok(())
}

fn insert_origins(conn: &Connection, id: SiteId, origins: &[String]) -> Result<(), Error> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO site_origins (site_id, origin) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )?;
    for origin in origins {
        insert.execute(params![id, origin])?;
    }
    Ok(())
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

/// Replaces a site's settings and allowed origins; returns false if there is no such site.
pub fn update_site(conn: &Connection, key: &str, settings: &SiteSettings) -> Result<bool, Error> {
    let id: Option<SiteId> = conn
        .prepare_cached("SELECT id FROM sites WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?;
    let Some(id) = id else { return Ok(false) };
    let limits = &settings.limits;
    conn.prepare_cached(
        "UPDATE sites SET name = ?2, greeting = ?3, color = ?4, position = ?5, \
         visitor_messages_per_minute = ?6, visitor_burst = ?7, flood_messages_per_minute = ?8, \
         flood_conversations_per_minute = ?9, retention_days = ?10, locale = ?11 WHERE id = ?1",
    )?
    .execute(params![
        id,
        settings.name,
        settings.greeting,
        settings.color,
        settings.position,
        limits.visitor_messages_per_minute,
        limits.visitor_burst,
        limits.flood_messages_per_minute,
        limits.flood_conversations_per_minute,
        settings.retention_days,
        settings.locale
    ])?;
    conn.prepare_cached("DELETE FROM site_origins WHERE site_id = ?1")?
        .execute([id])?;
    insert_origins(conn, id, &settings.origins)?;
    conn.prepare_cached("DELETE FROM site_greetings WHERE site_id = ?1")?
        .execute([id])?;
    insert_greetings(conn, id, settings)?;
    Ok(true)
}

/// Deletes a site with its visitors, conversations and messages (and the tags only they had);
/// returns false if there was no such site.
pub fn delete_site(conn: &Connection, key: &str) -> Result<bool, Error> {
    let deleted = conn
        .prepare_cached("DELETE FROM sites WHERE key = ?1")?
        .execute([key])?
        == 1;
    super::delete_unused_tags(conn)?;
    Ok(deleted)
}

/// How many conversations a site has (shown before deleting it).
pub fn count_site_conversations(conn: &Connection, key: &str) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM conversations c JOIN sites s ON s.id = c.site_id WHERE s.key = ?1",
        )?
        .query_row([key], |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rust_defaults_are_the_defaults_the_migrations_give_a_new_site() {
        let mut conn = Connection::open_in_memory().expect("open");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        // Only what has no default, so every other column takes the schema's.
        conn.execute(
            "INSERT INTO sites (key, name, created_at) VALUES ('s_0123456789abcdef', 'Shop', 0)",
            [],
        )
        .expect("insert");
        let stored = find_site_by_key(&conn, "s_0123456789abcdef")
            .expect("read")
            .expect("the site");
        assert_eq!(
            stored.settings,
            SiteSettings::new("Shop".into(), Vec::new())
        );
        assert_eq!(stored.settings.limits, SiteLimits::DEFAULT);
    }
}
