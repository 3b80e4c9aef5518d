//! The `account_links` table: single-use invitation and password-reset links.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Error, UserId};

/// A link that has not been used and has not expired.
#[derive(Debug, Clone)]
pub struct AccountLinkRow {
    pub user_id: UserId,
    pub kind: String,
    pub email: String,
    pub name: String,
}

/// Stores a new link. Older unused links of the same kind for the user stop working, so only
/// the newest link an admin handed out is valid.
pub fn insert_account_link(
    conn: &Connection,
    token_hash: &[u8],
    user_id: UserId,
    kind: &str,
    created_by: UserId,
    now: i64,
    expires_at: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE account_links SET used_at = ?3 \
         WHERE user_id = ?1 AND kind = ?2 AND used_at IS NULL",
    )?
    .execute(params![user_id, kind, now])?;
    conn.prepare_cached(
        "INSERT INTO account_links (token_hash, user_id, kind, created_by, created_at, expires_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        token_hash, user_id, kind, created_by, now, expires_at
    ])?;
    Ok(())
}

/// The usable link with this token hash and kind, with its user's email and name.
pub fn find_account_link(
    conn: &Connection,
    token_hash: &[u8],
    kind: &str,
    now: i64,
) -> Result<Option<AccountLinkRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT l.user_id, l.kind, u.email, u.name FROM account_links l \
         JOIN users u ON u.id = l.user_id \
         WHERE l.token_hash = ?1 AND l.kind = ?2 AND l.used_at IS NULL AND l.expires_at > ?3 \
           AND u.is_disabled = 0",
    )?;
    Ok(stmt
        .query_row(params![token_hash, kind, now], |r| {
            Ok(AccountLinkRow {
                user_id: r.get(0)?,
                kind: r.get(1)?,
                email: r.get(2)?,
                name: r.get(3)?,
            })
        })
        .optional()?)
}

/// Whether the link with this token hash still works: not used, not replaced by a newer one (which
/// marks it used), not expired.
pub fn is_account_link_usable(
    conn: &Connection,
    token_hash: &[u8],
    now: i64,
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM account_links \
             WHERE token_hash = ?1 AND used_at IS NULL AND expires_at > ?2",
        )?
        .query_row(params![token_hash, now], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Marks a link used; returns false if it was already used or expired (a race lost).
pub fn use_account_link(
    conn: &Connection,
    token_hash: &[u8],
    kind: &str,
    now: i64,
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE account_links SET used_at = ?3 \
             WHERE token_hash = ?1 AND kind = ?2 AND used_at IS NULL AND expires_at > ?3",
        )?
        .execute(params![token_hash, kind, now])?
        == 1)
}
