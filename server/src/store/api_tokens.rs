//! API tokens beyond their lookup: when each was last used, listing and revoking them.

use rusqlite::{Connection, OptionalExtension, params};

use super::Error;
use super::users::UserRow;

/// A token's row, without its hash, for `porch token list`.
#[derive(Debug, Clone)]
pub struct ApiTokenRow {
    pub id: i64,
    pub name: String,
    pub user_email: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// The enabled user behind a token hash, with the token's id and when it was last used.
pub fn find_api_token_use(
    conn: &Connection,
    token_hash: &[u8],
) -> Result<Option<(i64, Option<i64>, UserRow)>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.id, t.last_used_at, u.id, u.email, u.name, u.role, u.is_disabled \
         FROM api_tokens t JOIN users u ON u.id = t.user_id \
         WHERE t.token_hash = ?1 AND u.is_disabled = 0",
    )?;
    Ok(stmt
        .query_row([token_hash], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                UserRow {
                    id: r.get(2)?,
                    email: r.get(3)?,
                    name: r.get(4)?,
                    role: r.get(5)?,
                    is_disabled: r.get(6)?,
                },
            ))
        })
        .optional()?)
}

/// Records a use of a token.
pub fn touch_api_token(conn: &Connection, id: i64, now: i64) -> Result<(), Error> {
    conn.prepare_cached("UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])?;
    Ok(())
}

/// Every token, oldest first.
pub fn list_api_tokens(conn: &Connection) -> Result<Vec<ApiTokenRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.id, t.name, u.email, t.created_at, t.last_used_at \
         FROM api_tokens t JOIN users u ON u.id = t.user_id ORDER BY t.id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(ApiTokenRow {
            id: r.get(0)?,
            name: r.get(1)?,
            user_email: r.get(2)?,
            created_at: r.get(3)?,
            last_used_at: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Deletes a token; false if no token has this id.
pub fn delete_api_token(conn: &Connection, id: i64) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM api_tokens WHERE id = ?1")?
        .execute([id])?
        > 0)
}
