//! TOTP secrets sealed at rest with the same key as integration secrets (`secrets`), each to its
//! user (a value copied to another user's row does not open): opened only to check a code or to
//! show a pending setup; clear rows from before sealing are sealed at start, and every row is
//! re-sealed by `porch secrets rotate`.

use rusqlite::Connection;

use crate::secrets::{self, OpenError, Sealed, SecretKey};
use crate::store::{self, StoredTotp, UserId};

use super::totp::TotpSecret;

/// The associated data of a user's TOTP secret: the row it belongs to.
fn owner(user: UserId) -> Vec<u8> {
    format!("porch:user_totp.secret:{}", user.0).into_bytes()
}

/// Seals `secret` to `user`.
///
/// # Errors
/// Only if the cipher refuses the input, which a secret's hex never is.
pub fn seal_totp(key: &SecretKey, user: UserId, secret: &TotpSecret) -> Result<Sealed, OpenError> {
    secrets::seal(key, &hex::encode(secret.as_bytes()), &owner(user))
}

/// The secret of `user`'s stored factor. Never log it. A clear row (from before sealing, or
/// written by an older Porch while this one runs) is taken as it is; the next start seals it.
///
/// # Errors
/// If it was sealed with another key, altered, or copied from another user.
pub fn open_totp(
    key: &SecretKey,
    user: UserId,
    stored: &StoredTotp,
) -> Result<TotpSecret, OpenError> {
    match stored {
        StoredTotp::Clear(bytes) => Ok(TotpSecret::from_bytes(bytes.clone())),
        StoredTotp::Sealed(sealed) => {
            let text = secrets::open(key, sealed, &owner(user))?;
            hex::decode(text)
                .map(TotpSecret::from_bytes)
                .map_err(|_| OpenError::Broken)
        }
    }
}

/// Checks that every two-factor secret opens with `key` (a clear one always does), writing
/// nothing.
///
/// # Errors
/// The first secret that does not open with `key`, or the store's.
pub fn check_totp_secrets(conn: &Connection, key: &SecretKey) -> Result<(), TotpSealingError> {
    for (user, stored) in store::list_totp_secrets(conn)? {
        open_totp(key, user, &stored).map_err(|source| TotpSealingError::Open { user, source })?;
    }
    Ok(())
}

/// At start-up, in one transaction: seals every TOTP secret still in clear text and checks that
/// every sealed one opens with `key`, so a wrong key stops the start instead of the next
/// sign-in. Returns how many were sealed now; when any were, the clear text is also scrubbed from
/// the file's free space and the WAL, as for integration secrets.
///
/// # Errors
/// The first secret that does not open with `key` (nothing is changed then), or the store's.
pub fn seal_clear_totp_secrets(
    conn: &Connection,
    key: &SecretKey,
) -> Result<usize, TotpSealingError> {
    let tx = store::write_transaction(conn)?;
    let sealed = reseal_totp_secrets(&tx, key, key, false)?;
    if sealed == 0 {
        return Ok(0);
    }
    tx.commit().map_err(store::Error::from)?;
    // Only a warning: the secrets are sealed now, and an error here would read as a wrong key.
    if !store::truncate_wal(conn).unwrap_or(false) {
        tracing::warn!(
            "the WAL could not be emptied: it may hold two-factor secrets in clear text until the next checkpoint"
        );
    }
    Ok(sealed)
}

/// Re-seals every TOTP secret from `old` to `new` in the caller's transaction (part of `porch
/// secrets rotate`; clear rows are sealed too); returns how many rows were written.
///
/// # Errors
/// The first secret that does not open with `old` (nothing is changed then), or the store's.
pub fn reseal_all_totp_secrets(
    tx: &Connection,
    old: &SecretKey,
    new: &SecretKey,
) -> Result<usize, TotpSealingError> {
    reseal_totp_secrets(tx, old, new, true)
}

fn reseal_totp_secrets(
    tx: &Connection,
    old: &SecretKey,
    new: &SecretKey,
    is_rotation: bool,
) -> Result<usize, TotpSealingError> {
    let mut opened = Vec::new();
    for (user, stored) in store::list_totp_secrets(tx)? {
        let secret = open_totp(old, user, &stored)
            .map_err(|source| TotpSealingError::Open { user, source })?;
        if is_rotation || matches!(stored, StoredTotp::Clear(_)) {
            opened.push((user, secret));
        }
    }
    for (user, secret) in &opened {
        let sealed = seal_totp(new, *user, secret).map_err(store::Error::from)?;
        store::update_totp_secret(tx, *user, &sealed)?;
    }
    Ok(opened.len())
}

/// Why the TOTP secrets could not be sealed or opened as a whole.
#[derive(Debug, thiserror::Error)]
pub enum TotpSealingError {
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("the two-factor secret of user {user} does not open: {source}")]
    Open { user: UserId, source: OpenError },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_opens_only_for_its_user_and_key() {
        let key = SecretKey::generate();
        let secret = TotpSecret::generate();
        let sealed = StoredTotp::Sealed(seal_totp(&key, UserId(7), &secret).unwrap());
        let opened = open_totp(&key, UserId(7), &sealed).unwrap();
        assert_eq!(opened.as_bytes(), secret.as_bytes());
        assert!(open_totp(&key, UserId(8), &sealed).is_err());
        assert!(open_totp(&SecretKey::generate(), UserId(7), &sealed).is_err());
    }
}
