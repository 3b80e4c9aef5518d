//! The `users` and `api_tokens` tables.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, UserId};

/// An agent or admin.
#[derive(Debug, Clone)]
pub struct UserRow {
    pub id: UserId,
    pub email: String,
    pub name: String,
    pub role: String,
    pub is_disabled: bool,
}

/// What creating a user takes.
#[derive(Debug, Clone)]
pub struct NewUser<'a> {
    pub email: &'a str,
    pub name: &'a str,
    pub role: &'a str,
    pub password_hash: Option<&'a str>,
    pub created_at: i64,
}

const COLUMNS: &str = "u.id, u.email, u.name, u.role, u.is_disabled";

fn from_row(row: &Row<'_>) -> rusqlite::Result<UserRow> {
    Ok(UserRow {
        id: row.get(0)?,
        email: row.get(1)?,
        name: row.get(2)?,
        role: row.get(3)?,
        is_disabled: row.get(4)?,
    })
}

/// Creates a user and returns the id.
pub fn insert_user(conn: &Connection, new: &NewUser<'_>) -> Result<UserId, Error> {
    conn.prepare_cached(
        "INSERT INTO users (email, name, role, password_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![new.email, new.name, new.role, new.password_hash, new.created_at])?;
    Ok(UserId(conn.last_insert_rowid()))
}

/// The user with this email (case-insensitive), if any.
pub fn find_user_by_email(conn: &Connection, email: &str) -> Result<Option<UserRow>, Error> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM users u WHERE u.email = ?1"))?;
    Ok(stmt.query_row([email], from_row).optional()?)
}

/// Stores the hash of a new API token for a user.
pub fn insert_api_token(
    conn: &Connection,
    user_id: UserId,
    name: &str,
    token_hash: &[u8],
    now: i64,
) -> Result<i64, Error> {
    conn.prepare_cached(
        "INSERT INTO api_tokens (user_id, name, token_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![user_id, name, token_hash, now])?;
    Ok(conn.last_insert_rowid())
}

/// The enabled user owning the API token with this hash, if any.
pub fn find_user_by_api_token(
    conn: &Connection,
    token_hash: &[u8],
) -> Result<Option<UserRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id \
         WHERE t.token_hash = ?1 AND u.is_disabled = 0"
    ))?;
    Ok(stmt.query_row([token_hash], from_row).optional()?)
}
