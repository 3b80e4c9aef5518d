//! The `canned_replies` table: shared replies (no owner) and each user's personal ones.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, UserId};

/// A canned reply as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannedReplyRow {
    pub id: i64,
    /// `None`: shared with everyone.
    pub owner_id: Option<UserId>,
    pub shortcut: String,
    pub body: String,
    pub updated_at: i64,
}

/// What inserting or changing a canned reply stores.
#[derive(Debug, Clone)]
pub struct CannedReplyFields<'a> {
    pub shortcut: &'a str,
    pub body: &'a str,
    pub now: i64,
}

const COLUMNS: &str = "id, owner_id, shortcut, body, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<CannedReplyRow> {
    Ok(CannedReplyRow {
        id: row.get(0)?,
        owner_id: row.get(1)?,
        shortcut: row.get(2)?,
        body: row.get(3)?,
        updated_at: row.get(4)?,
    })
}

/// True when the error is the shortcut's uniqueness (`canned_replies_shortcut`).
fn is_taken(err: &rusqlite::Error) -> bool {
    err.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation)
}

/// Stores a new reply owned by `owner` (`None`: shared); `None` when the owner already has
/// one with this shortcut.
pub fn insert_canned_reply(
    conn: &Connection,
    owner: Option<UserId>,
    fields: &CannedReplyFields<'_>,
) -> Result<Option<i64>, Error> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO canned_replies (owner_id, shortcut, body, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?4) RETURNING id",
        )?
        .query_row(
            params![owner, fields.shortcut, fields.body, fields.now],
            |r| r.get(0),
        );
    match inserted {
        Ok(id) => Ok(Some(id)),
        Err(err) if is_taken(&err) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Replaces a reply's shortcut and body; `false` when the owner already has another reply
/// with this shortcut.
pub fn update_canned_reply(
    conn: &Connection,
    id: i64,
    fields: &CannedReplyFields<'_>,
) -> Result<bool, Error> {
    let updated = conn
        .prepare_cached(
            "UPDATE canned_replies SET shortcut = ?2, body = ?3, updated_at = ?4 WHERE id = ?1",
        )?
        .execute(params![id, fields.shortcut, fields.body, fields.now]);
    match updated {
        Ok(_) => Ok(true),
        Err(err) if is_taken(&err) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Deletes a reply.
pub fn delete_canned_reply(conn: &Connection, id: i64) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM canned_replies WHERE id = ?1")?
        .execute(params![id])?;
    Ok(())
}

/// One reply by id.
pub fn find_canned_reply(conn: &Connection, id: i64) -> Result<Option<CannedReplyRow>, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM canned_replies WHERE id = ?1"
        ))?
        .query_row(params![id], from_row)
        .optional()?)
}

/// The replies `user` may use: the shared ones and their own, by shortcut (personal first
/// among equal shortcuts).
pub fn list_canned_replies(conn: &Connection, user: UserId) -> Result<Vec<CannedReplyRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM canned_replies WHERE owner_id IS NULL OR owner_id = ?1 \
         ORDER BY shortcut, owner_id IS NULL, id"
    ))?;
    let rows = stmt.query_map(params![user], from_row)?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}
