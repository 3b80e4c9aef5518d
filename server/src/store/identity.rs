//! Known visitors (docs/widget.md#known-visitors): the `site_identity_secrets` table (each site's
//! sealed identity secret) and the identity columns of `visitors`.

use rusqlite::{Connection, OptionalExtension, params};

use crate::secrets::Sealed;
use crate::values::VisitorIdentity;

use super::{Error, SiteId, VisitorId};

/// The site's sealed identity secret, if known visitors are turned on.
pub fn find_site_identity_secret(conn: &Connection, site: SiteId) -> Result<Option<Sealed>, Error> {
    Ok(conn
        .prepare_cached("SELECT secret FROM site_identity_secrets WHERE site_id = ?1")?
        .query_row([site], |r| r.get::<_, String>(0))
        .optional()?
        .map(Sealed::from_stored))
}

/// Stores (or replaces) the site's sealed identity secret.
pub fn upsert_site_identity_secret(
    conn: &Connection,
    site: SiteId,
    secret: &Sealed,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO site_identity_secrets (site_id, secret, rotated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (site_id) DO UPDATE SET secret = excluded.secret, rotated_at = excluded.rotated_at",
    )?
    .execute(params![site, secret.as_stored(), now])?;
    Ok(())
}

/// Turns known visitors off for the site; true if it had a secret.
pub fn delete_site_identity_secret(conn: &Connection, site: SiteId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM site_identity_secrets WHERE site_id = ?1")?
        .execute([site])?
        > 0)
}

/// Every site's sealed identity secret, for re-sealing under a new key.
pub fn list_site_identity_secrets(conn: &Connection) -> Result<Vec<(SiteId, Sealed)>, Error> {
    let mut stmt = conn.prepare_cached("SELECT site_id, secret FROM site_identity_secrets")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, Sealed::from_stored(r.get::<_, String>(1)?)))
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// Records who the visitor is: a verified identity sets the user id, name and email (a detail
/// left out keeps the old one); an unverified one only the `claimed_*` columns, which nothing
/// looks visitors up by.
pub(super) fn record_visitor_identity(
    conn: &Connection,
    visitor: VisitorId,
    identity: &VisitorIdentity,
) -> Result<(), Error> {
    let sql = if identity.is_verified {
        "UPDATE visitors SET user_id = ?2, name = coalesce(?3, name), email = coalesce(?4, email) \
         WHERE id = ?1"
    } else {
        "UPDATE visitors SET claimed_user_id = ?2, claimed_name = ?3, claimed_email = ?4 \
         WHERE id = ?1"
    };
    conn.prepare_cached(sql)?.execute(params![
        visitor,
        identity.user_id,
        identity.name,
        identity.email
    ])?;
    Ok(())
}

/// What agents see of a visitor's identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisitorIdentityRow {
    /// The site's user id, when verified.
    pub user_id: Option<String>,
    /// What the page claimed without a valid hash.
    pub claimed_user_id: Option<String>,
    pub claimed_name: Option<String>,
    pub claimed_email: Option<String>,
}

/// The identity columns of a visitor.
pub fn find_visitor_identity(
    conn: &Connection,
    visitor: VisitorId,
) -> Result<VisitorIdentityRow, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT user_id, claimed_user_id, claimed_name, claimed_email FROM visitors \
             WHERE id = ?1",
        )?
        .query_row([visitor], |r| {
            Ok(VisitorIdentityRow {
                user_id: r.get(0)?,
                claimed_user_id: r.get(1)?,
                claimed_name: r.get(2)?,
                claimed_email: r.get(3)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}
