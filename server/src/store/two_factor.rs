//! The `user_totp` and `recovery_codes` tables, and the team's "require two-factor" setting.
//! The TOTP secret goes in and out only through `save_totp_secret` / `load_totp_secret` (and,
//! for sealing it at start and re-sealing it under a new key, `list_totp_secrets` /
//! `update_totp_secret`). It is stored sealed (`accounts/totp_sealing.rs`): the envelope's text
//! as the bytes of the (STRICT, BLOB) `secret` column. Bytes that are not an envelope are a clear
//! secret from before sealing (20 random bytes, far too short to be mistaken for one).

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, UserId};
use crate::secrets::Sealed;

/// The `settings` key of "the team requires two-factor sign-in" (present means required).
const REQUIRED_KEY: &str = "two_factor_required";

/// A TOTP secret as stored.
#[derive(Debug, Clone)]
pub enum StoredTotp {
    Sealed(Sealed),
    /// The raw secret, written before secrets were sealed; sealed at the next start.
    Clear(Vec<u8>),
}

/// A user's TOTP factor.
#[derive(Debug, Clone)]
pub struct TotpRow {
    pub secret: StoredTotp,
    /// False while the setup waits for its first correct code.
    pub is_confirmed: bool,
    /// The last time step a code was accepted for.
    pub last_step: Option<i64>,
}

fn stored_totp(row: &Row<'_>, column: usize) -> rusqlite::Result<StoredTotp> {
    let bytes: Vec<u8> = row.get(column)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => {
            let sealed = Sealed::from_stored(text);
            if sealed.is_sealed() {
                StoredTotp::Sealed(sealed)
            } else {
                StoredTotp::Clear(sealed.as_stored().as_bytes().to_vec())
            }
        }
        Err(err) => StoredTotp::Clear(err.into_bytes()),
    })
}

/// Stores `secret` (sealed) as the user's pending (unconfirmed) factor, replacing any earlier
/// one.
pub fn save_totp_secret(
    conn: &Connection,
    user: UserId,
    secret: &Sealed,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO user_totp (user_id, secret, created_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, \
         created_at = excluded.created_at, confirmed_at = NULL, last_step = NULL",
    )?
    .execute(params![user, secret.as_stored().as_bytes(), now])?;
    Ok(())
}

/// Every stored factor's secret, pending or confirmed.
pub fn list_totp_secrets(conn: &Connection) -> Result<Vec<(UserId, StoredTotp)>, Error> {
    let mut stmt = conn.prepare_cached("SELECT user_id, secret FROM user_totp ORDER BY user_id")?;
    Ok(stmt
        .query_map([], |r| Ok((r.get(0)?, stored_totp(r, 1)?)))?
        .collect::<Result<_, _>>()?)
}

/// Replaces a factor's stored secret with `secret` (the same secret, sealed anew), keeping its
/// state.
pub fn update_totp_secret(conn: &Connection, user: UserId, secret: &Sealed) -> Result<(), Error> {
    conn.prepare_cached("UPDATE user_totp SET secret = ?2 WHERE user_id = ?1")?
        .execute(params![user, secret.as_stored().as_bytes()])?;
    Ok(())
}

/// The user's factor, pending or confirmed.
pub fn load_totp_secret(conn: &Connection, user: UserId) -> Result<Option<TotpRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT secret, confirmed_at IS NOT NULL, last_step FROM user_totp WHERE user_id = ?1",
        )?
        .query_row([user], |r| {
            Ok(TotpRow {
                secret: stored_totp(r, 0)?,
                is_confirmed: r.get(1)?,
                last_step: r.get(2)?,
            })
        })
        .optional()?)
}

/// Switches a pending factor on, with `step` as its first used step. False if there was none.
pub fn confirm_totp(conn: &Connection, user: UserId, step: i64, now: i64) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE user_totp SET confirmed_at = ?3, last_step = ?2 \
             WHERE user_id = ?1 AND confirmed_at IS NULL",
        )?
        .execute(params![user, step, now])?
        == 1)
}

/// Records `step` as used, if it is later than the last one used (so each code works once,
/// even for two sign-ins racing). False if it is not.
pub fn use_totp_step(conn: &Connection, user: UserId, step: i64) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE user_totp SET last_step = ?2 WHERE user_id = ?1 \
             AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ?2)",
        )?
        .execute(params![user, step])?
        == 1)
}

/// Removes a user's factor and recovery codes. False if they had no factor.
pub fn delete_two_factor(conn: &Connection, user: UserId) -> Result<bool, Error> {
    conn.prepare_cached("DELETE FROM recovery_codes WHERE user_id = ?1")?
        .execute([user])?;
    Ok(conn
        .prepare_cached("DELETE FROM user_totp WHERE user_id = ?1")?
        .execute([user])?
        == 1)
}

/// Replaces a user's recovery codes with `hashes`.
pub fn replace_recovery_codes(
    conn: &Connection,
    user: UserId,
    hashes: &[[u8; 32]],
) -> Result<(), Error> {
    conn.prepare_cached("DELETE FROM recovery_codes WHERE user_id = ?1")?
        .execute([user])?;
    let mut insert =
        conn.prepare_cached("INSERT INTO recovery_codes (user_id, code_hash) VALUES (?1, ?2)")?;
    for hash in hashes {
        insert.execute(params![user, hash.as_slice()])?;
    }
    Ok(())
}

/// Spends an unused recovery code. False if there is no such unused code.
pub fn use_recovery_code(
    conn: &Connection,
    user: UserId,
    hash: &[u8],
    now: i64,
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "UPDATE recovery_codes SET used_at = ?3 \
             WHERE user_id = ?1 AND code_hash = ?2 AND used_at IS NULL",
        )?
        .execute(params![user, hash, now])?
        == 1)
}

/// How many of a user's recovery codes are still unused.
pub fn count_unused_recovery_codes(conn: &Connection, user: UserId) -> Result<i64, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM recovery_codes WHERE user_id = ?1 AND used_at IS NULL",
        )?
        .query_row([user], |r| r.get(0))?)
}

/// The users whose factor is switched on (for the team page).
pub fn list_two_factor_users(conn: &Connection) -> Result<Vec<UserId>, Error> {
    let mut stmt =
        conn.prepare_cached("SELECT user_id FROM user_totp WHERE confirmed_at IS NOT NULL")?;
    Ok(stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Whether the team requires two-factor sign-in.
pub fn find_two_factor_required(conn: &Connection) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM settings WHERE key = ?1")?
        .query_row([REQUIRED_KEY], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Sets whether the team requires two-factor sign-in.
pub fn update_two_factor_required(conn: &Connection, is_required: bool) -> Result<(), Error> {
    if is_required {
        conn.prepare_cached(
            "INSERT INTO settings (key, value) VALUES (?1, X'01') ON CONFLICT (key) DO NOTHING",
        )?
        .execute([REQUIRED_KEY])?;
    } else {
        conn.prepare_cached("DELETE FROM settings WHERE key = ?1")?
            .execute([REQUIRED_KEY])?;
    }
    Ok(())
}

/// Ends the sessions of every user without a confirmed factor (when the team starts requiring
/// one); returns the users whose sessions ended.
pub fn delete_sessions_without_two_factor(conn: &Connection) -> Result<Vec<UserId>, Error> {
    let mut stmt = conn.prepare_cached(
        "DELETE FROM sessions WHERE user_id NOT IN \
         (SELECT user_id FROM user_totp WHERE confirmed_at IS NOT NULL) RETURNING user_id",
    )?;
    let mut users: Vec<UserId> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    users.sort_by_key(|u| u.0);
    users.dedup();
    Ok(users)
}
