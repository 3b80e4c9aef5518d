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

/// What signing in needs: the user and their password hash (`None` until they chose one).
#[derive(Debug, Clone)]
pub struct UserCredentials {
    pub user: UserRow,
    pub password_hash: Option<String>,
}

/// How many users exist (zero means the install still needs its first admin).
pub fn count_users(conn: &Connection) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM users")?
        .query_row([], |r| r.get(0))?)
}

/// The user with this email and their password hash, disabled or not.
pub fn find_user_credentials(
    conn: &Connection,
    email: &str,
) -> Result<Option<UserCredentials>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, u.password_hash FROM users u WHERE u.email = ?1"
    ))?;
    Ok(stmt
        .query_row([email], |r| {
            Ok(UserCredentials {
                user: from_row(r)?,
                password_hash: r.get(5)?,
            })
        })
        .optional()?)
}

/// The password hash of a user, if they have one.
pub fn find_password_hash(conn: &Connection, id: UserId) -> Result<Option<String>, Error> {
    Ok(conn
        .prepare_cached("SELECT password_hash FROM users WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
        .flatten())
}

/// Whether a user has a password (someone who signs in only through single sign-on has none).
pub fn has_password(conn: &Connection, id: UserId) -> Result<bool, Error> {
    Ok(find_password_hash(conn, id)?.is_some())
}

/// One user by id.
pub fn find_user(conn: &Connection, id: UserId) -> Result<Option<UserRow>, Error> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM users u WHERE u.id = ?1"))?;
    Ok(stmt.query_row([id], from_row).optional()?)
}

/// Every user, admins first, then by name.
pub fn list_users(conn: &Connection) -> Result<Vec<UserRow>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM users u ORDER BY u.role = 'agent', u.name COLLATE NOCASE"
    ))?;
    Ok(stmt.query_map([], from_row)?.collect::<Result<_, _>>()?)
}

/// How many enabled admins exist other than `except` (so the last one is never demoted).
pub fn count_other_admins(conn: &Connection, except: UserId) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM users WHERE role = 'admin' AND is_disabled = 0 AND id <> ?1",
        )?
        .query_row([except], |r| r.get(0))?)
}

/// Sets a user's password hash.
pub fn update_password_hash(conn: &Connection, id: UserId, hash: &str) -> Result<(), Error> {
    conn.prepare_cached("UPDATE users SET password_hash = ?2 WHERE id = ?1")?
        .execute(params![id, hash])?;
    Ok(())
}

/// Sets a user's display name.
pub fn update_user_name(conn: &Connection, id: UserId, name: &str) -> Result<(), Error> {
    conn.prepare_cached("UPDATE users SET name = ?2 WHERE id = ?1")?
        .execute(params![id, name])?;
    Ok(())
}

/// Sets a user's role (`admin` or `agent`; the schema refuses anything else).
pub fn update_user_role(conn: &Connection, id: UserId, role: &str) -> Result<(), Error> {
    conn.prepare_cached("UPDATE users SET role = ?2 WHERE id = ?1")?
        .execute(params![id, role])?;
    Ok(())
}

/// Disables or re-enables a user. Disabling also ends their sessions, in the same transaction.
pub fn update_user_disabled(conn: &Connection, id: UserId, is_disabled: bool) -> Result<(), Error> {
    conn.prepare_cached("UPDATE users SET is_disabled = ?2 WHERE id = ?1")?
        .execute(params![id, is_disabled])?;
    if is_disabled {
        conn.prepare_cached("DELETE FROM sessions WHERE user_id = ?1")?
            .execute([id])?;
    }
    Ok(())
}

/// Spends a user's unused invitation and reset links: on disable (a link made before must not
/// work again after a re-enable), and when their password is set (a link made before must not
/// undo it).
pub fn spend_user_links(conn: &Connection, user_id: UserId, now: i64) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE account_links SET used_at = ?2 WHERE user_id = ?1 AND used_at IS NULL",
    )?
    .execute(params![user_id, now])?;
    Ok(())
}

/// Spends a user's unused invitation links (not reset links): on their first single sign-on,
/// which is how they joined, so a mailed invitation cannot later give them a password too (a
/// team that signs in only through the provider relies on that; docs/sso.md).
pub fn spend_invitations(conn: &Connection, user_id: UserId, now: i64) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE account_links SET used_at = ?2 \
          WHERE user_id = ?1 AND kind = 'invite' AND used_at IS NULL",
    )?
    .execute(params![user_id, now])?;
    Ok(())
}

/// A user who can have signed in: a password, or a single sign-on link. Those without either (an
/// invitation not taken up, a user added without a password) have not joined yet.
pub(super) const HAS_JOINED: &str =
    "(password_hash IS NOT NULL OR id IN (SELECT user_id FROM oidc_links))";

/// Someone who cannot have signed in yet (see [`HAS_JOINED`]) and their invitation links.
#[derive(Debug, Clone, Copy)]
pub struct NotJoined {
    pub id: UserId,
    /// When their unused invitation link expires (`None`: they have none).
    pub link_expires_at: Option<i64>,
    /// They were ever sent one (else they were added without a password, by `porch user add`).
    pub was_invited: bool,
}

/// The users who cannot have signed in yet. The team page marks them as invited, their
/// invitation as expired, or them as not invited yet.
pub fn list_users_not_joined(conn: &Connection) -> Result<Vec<NotJoined>, Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT u.id, (SELECT max(l.expires_at) FROM account_links l \
                       WHERE l.user_id = u.id AND l.kind = 'invite' AND l.used_at IS NULL), \
                EXISTS (SELECT 1 FROM account_links l WHERE l.user_id = u.id AND l.kind = 'invite') \
         FROM users u WHERE NOT {HAS_JOINED}"
    ))?;
    Ok(stmt
        .query_map([], |r| {
            Ok(NotJoined {
                id: r.get(0)?,
                link_expires_at: r.get(1)?,
                was_invited: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}
