//! The `oidc_links` table: the OpenID Connect subject each single sign-on user is bound to.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Error, UserId};

/// The provider account a user is linked to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcLinkRow {
    pub issuer: String,
    pub subject: String,
}

/// The link of `user`, if they ever signed in through single sign-on.
pub fn find_oidc_link(conn: &Connection, user: UserId) -> Result<Option<OidcLinkRow>, Error> {
    let mut stmt =
        conn.prepare_cached("SELECT issuer, subject FROM oidc_links WHERE user_id = ?1")?;
    Ok(stmt
        .query_row([user], |r| {
            Ok(OidcLinkRow {
                issuer: r.get(0)?,
                subject: r.get(1)?,
            })
        })
        .optional()?)
}

/// The user linked to `subject` at `issuer`, if any.
pub fn find_oidc_subject_user(
    conn: &Connection,
    issuer: &str,
    subject: &str,
) -> Result<Option<UserId>, Error> {
    let mut stmt =
        conn.prepare_cached("SELECT user_id FROM oidc_links WHERE issuer = ?1 AND subject = ?2")?;
    Ok(stmt.query_row([issuer, subject], |r| r.get(0)).optional()?)
}

/// Links `user` to `subject` at `issuer`.
pub fn insert_oidc_link(
    conn: &Connection,
    user: UserId,
    link: &OidcLinkRow,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO oidc_links (user_id, issuer, subject, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![user, link.issuer, link.subject, now])?;
    Ok(())
}
