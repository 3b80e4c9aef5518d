//! The `sessions` table: admin UI sign-ins. Only the SHA-256 of the cookie value is stored.

use rusqlite::{Connection, OptionalExtension, params};

use super::users::UserRow;
use super::{Error, UserId};

/// A live session and its (enabled) user.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub user: UserRow,
    pub csrf_token: String,
    pub expires_at: i64,
}

/// What creating a session takes.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub id_hash: &'a [u8],
    pub user_id: UserId,
    pub csrf_token: &'a str,
    pub now: i64,
    pub expires_at: i64,
}

/// Stores a new session.
pub fn insert_session(conn: &Connection, new: &NewSession<'_>) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, last_seen_at, expires_at) \
         VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
    )?
    .execute(params![
        new.id_hash,
        new.user_id,
        new.csrf_token,
        new.now,
        new.expires_at
    ])?;
    Ok(())
}

/// The session with this id hash, if it has not expired and its user is enabled.
pub fn find_session(
    conn: &Connection,
    id_hash: &[u8],
    now: i64,
) -> Result<Option<SessionRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT u.id, u.email, u.name, u.role, u.is_disabled, s.csrf_token, s.expires_at \
         FROM sessions s JOIN users u ON u.id = s.user_id \
         WHERE s.id_hash = ?1 AND s.expires_at > ?2 AND u.is_disabled = 0",
    )?;
    Ok(stmt
        .query_row(params![id_hash, now], |r| {
            Ok(SessionRow {
                user: UserRow {
                    id: r.get(0)?,
                    email: r.get(1)?,
                    name: r.get(2)?,
                    role: r.get(3)?,
                    is_disabled: r.get(4)?,
                },
                csrf_token: r.get(5)?,
                expires_at: r.get(6)?,
            })
        })
        .optional()?)
}

/// Ends one session (sign out).
pub fn delete_session(conn: &Connection, id_hash: &[u8]) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM sessions WHERE id_hash = ?1")?
        .execute([id_hash])?
        > 0)
}

/// Ends every session of a user except `keep` (after a password change or reset).
pub fn delete_user_sessions(
    conn: &Connection,
    user_id: UserId,
    keep: Option<&[u8]>,
) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM sessions WHERE user_id = ?1 AND id_hash IS NOT ?2")?
        .execute(params![user_id, keep])?;
    Ok(())
}

/// Forgets sessions that expired; returns how many.
pub fn delete_expired_sessions(conn: &Connection, now: i64) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM sessions WHERE expires_at <= ?1")?
        .execute([now])?)
}
