//! The `api_tokens` table: storing a token's hash with its scope and expiry, looking one up,
//! recording its last use, listing and revoking.

use rusqlite::{Connection, OptionalExtension, params};

use crate::values::TokenScope;

use super::users::UserRow;
use super::{Error, UserId};

/// A new token, hashed.
#[derive(Debug, Clone, Copy)]
pub struct NewApiToken<'a> {
    pub user_id: UserId,
    pub name: &'a str,
    pub token_hash: &'a [u8],
    pub scope: TokenScope,
    /// Milliseconds since the epoch; `None` never expires.
    pub expires_at: Option<i64>,
    pub now: i64,
}

/// Stores the hash of a new API token; returns its id.
pub fn insert_api_token(conn: &Connection, new: &NewApiToken<'_>) -> Result<i64, Error> {
    conn.prepare_cached(
        "INSERT INTO api_tokens (user_id, name, token_hash, scope, expires_at, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        new.user_id,
        new.name,
        new.token_hash,
        new.scope,
        new.expires_at,
        new.now
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A token's row, without its hash, for `porch token list` and the account page.
#[derive(Debug, Clone)]
pub struct ApiTokenRow {
    pub id: i64,
    pub name: String,
    pub user_id: UserId,
    pub user_email: String,
    pub scope: TokenScope,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

/// A token presented with a request, as far as deciding about it goes.
#[derive(Debug, Clone)]
pub struct ApiTokenUse {
    pub id: i64,
    pub scope: TokenScope,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub user: UserRow,
}

/// The token with this hash and its enabled user, expired or not (the caller says which).
pub fn find_api_token_use(
    conn: &Connection,
    token_hash: &[u8],
) -> Result<Option<ApiTokenUse>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.id, t.scope, t.expires_at, t.last_used_at, \
                u.id, u.email, u.name, u.role, u.is_disabled \
         FROM api_tokens t JOIN users u ON u.id = t.user_id \
         WHERE t.token_hash = ?1 AND u.is_disabled = 0",
    )?;
    Ok(stmt
        .query_row([token_hash], |r| {
            Ok(ApiTokenUse {
                id: r.get(0)?,
                scope: r.get(1)?,
                expires_at: r.get(2)?,
                last_used_at: r.get(3)?,
                user: UserRow {
                    id: r.get(4)?,
                    email: r.get(5)?,
                    name: r.get(6)?,
                    role: r.get(7)?,
                    is_disabled: r.get(8)?,
                },
            })
        })
        .optional()?)
}

/// Records a use of a token.
pub fn touch_api_token(conn: &Connection, id: i64, now: i64) -> Result<(), Error> {
    conn.prepare_cached("UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])?;
    Ok(())
}

const TOKEN_COLUMNS: &str = "t.id, t.name, t.user_id, u.email, t.scope, t.created_at, \
                             t.expires_at, t.last_used_at";

fn token_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ApiTokenRow> {
    Ok(ApiTokenRow {
        id: r.get(0)?,
        name: r.get(1)?,
        user_id: r.get(2)?,
        user_email: r.get(3)?,
        scope: r.get(4)?,
        created_at: r.get(5)?,
        expires_at: r.get(6)?,
        last_used_at: r.get(7)?,
    })
}

/// Every token, oldest first; only `user`'s when given.
pub fn list_api_tokens_of(
    conn: &Connection,
    user: Option<UserId>,
) -> Result<Vec<ApiTokenRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id \
         WHERE ?1 IS NULL OR t.user_id = ?1 ORDER BY t.id"
    ))?;
    let rows = stmt.query_map([user], token_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every token, oldest first.
pub fn list_api_tokens(conn: &Connection) -> Result<Vec<ApiTokenRow>, Error> {
    list_api_tokens_of(conn, None)
}

/// One token by id.
pub fn find_api_token(conn: &Connection, id: i64) -> Result<Option<ApiTokenRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id \
         WHERE t.id = ?1"
    ))?;
    Ok(stmt.query_row([id], token_from_row).optional()?)
}

/// Deletes a token; false if no token has this id.
pub fn delete_api_token(conn: &Connection, id: i64) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM api_tokens WHERE id = ?1")?
        .execute([id])?
        > 0)
}

/// Deletes every token of a user (on disable: a token made before must not work again after a
/// re-enable); returns how many.
pub fn delete_api_tokens_of(conn: &Connection, user_id: UserId) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM api_tokens WHERE user_id = ?1")?
        .execute([user_id])?)
}
