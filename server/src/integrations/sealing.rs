//! Integration secrets sealed at rest: each row's secrets are sealed to its id (a value copied to
//! another integration does not open), opened only by a delivery, a signature check or a setup
//! test; the one-time start-up upgrade of clear rows, and re-sealing under a new key.

use rusqlite::Connection;

use crate::clock::now_ms;
use crate::secrets::{self, OpenError, Sealed, SecretKey};
use crate::store::{self, IntegrationId, IntegrationRow};

/// Why the integrations' secrets could not be sealed or opened as a whole.
#[derive(Debug, thiserror::Error)]
pub enum SealingError {
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("the secrets of integration {id} do not open: {source}")]
    Open {
        id: IntegrationId,
        source: OpenError,
    },
}

/// The associated data of an integration's secrets: the row they belong to.
fn owner(id: IntegrationId) -> Vec<u8> {
    format!("porch:integrations.secrets:{}", id.0).into_bytes()
}

/// Seals an integration's secrets (JSON) to its id.
///
/// # Errors
/// Only if the cipher refuses the input, which a settings object never is.
pub fn seal_secrets(key: &SecretKey, id: IntegrationId, clear: &str) -> Result<Sealed, OpenError> {
    secrets::seal(key, clear, &owner(id))
}

/// An integration's secrets (JSON), for the one use that needs them now. Never log the result.
/// A row still in clear text (written by hand or by an older Porch while this one runs) is
/// taken as it is; the next start seals it.
///
/// # Errors
/// If they were sealed with another key, altered, or copied from another integration.
pub fn open_secrets(key: &SecretKey, row: &IntegrationRow) -> Result<String, OpenError> {
    if !row.secrets.is_sealed() {
        return Ok(row.secrets.as_stored().to_owned());
    }
    secrets::open(key, &row.secrets, &owner(row.id))
}

/// An integration's secrets opened and parsed as `T`; `None` (logged, without the value) if
/// they do not open or do not parse.
pub fn open_secrets_as<T: serde::de::DeserializeOwned>(
    key: &SecretKey,
    row: &IntegrationRow,
) -> Option<T> {
    let clear = open_secrets(key, row)
        .inspect_err(|err| tracing::warn!(integration = %row.id, %err, "secrets do not open"))
        .ok()?;
    serde_json::from_str(&clear).ok()
}

/// Seals then stores an integration's secrets, in the caller's transaction.
pub fn store_secrets(
    conn: &Connection,
    key: &SecretKey,
    id: IntegrationId,
    clear: &str,
) -> Result<(), store::Error> {
    let sealed = seal_secrets(key, id, clear)?;
    store::update_integration_secrets(conn, id, &sealed, now_ms())?;
    Ok(())
}

/// At start-up, in one transaction: seals every integration's secrets still in clear text (a
/// database from before sealing existed) and checks that every sealed one opens with `key`, so a
/// wrong key stops the start instead of the first delivery. Returns how many were sealed now; a
/// second run seals none. When it sealed any, the clear text is also scrubbed from the file's
/// free space (the writer's `secure_delete`, see `store::open_write_connection`) and the WAL.
///
/// # Errors
/// The first row that does not open with `key`; nothing is changed then.
pub fn seal_clear_secrets(conn: &Connection, key: &SecretKey) -> Result<usize, SealingError> {
    let tx = store::write_transaction(conn)?;
    check_sealed_secrets(&tx, key)?;
    let clear: Vec<_> = store::list_integration_secrets(&tx)?
        .into_iter()
        .filter(|(_, stored)| !stored.is_sealed())
        .collect();
    if clear.is_empty() {
        return Ok(0);
    }
    for (id, stored) in &clear {
        store_secrets(&tx, key, *id, stored.as_stored())?;
    }
    tx.commit().map_err(store::Error::from)?;
    // Only a warning: the values are sealed now, and an error here would read as nothing sealed
    // (the start then removes a key it generated).
    if !store::truncate_wal(conn).unwrap_or(false) {
        tracing::warn!(
            "the WAL could not be emptied: it may hold secrets in clear text until the next checkpoint"
        );
    }
    Ok(clear.len())
}

/// Checks that every sealed integration secret opens with `key`, writing nothing.
///
/// # Errors
/// The first row that does not open with `key`, or the store's.
pub fn check_sealed_secrets(conn: &Connection, key: &SecretKey) -> Result<(), SealingError> {
    for (id, stored) in store::list_integration_secrets(conn)? {
        if stored.is_sealed() {
            secrets::open(key, &stored, &owner(id))
                .map_err(|source| SealingError::Open { id, source })?;
        }
    }
    Ok(())
}

/// How many integrations' sealed secrets open with `key`: a start refused over one value tells a
/// row altered or copied from another (the others open) from a wrong key (none does) by it.
///
/// # Errors
/// The store's.
pub fn count_opening_secrets(conn: &Connection, key: &SecretKey) -> Result<usize, store::Error> {
    Ok(store::list_integration_secrets(conn)?
        .into_iter()
        .filter(|(id, stored)| {
            stored.is_sealed() && secrets::open(key, stored, &owner(*id)).is_ok()
        })
        .count())
}

/// Re-seals every integration's secrets from `old` to `new` (clear rows are sealed too), in the
/// caller's transaction; returns how many rows were re-sealed. The caller commits, then calls
/// [`store::truncate_wal`] so the old envelopes leave the WAL.
///
/// # Errors
/// The first row that does not open with `old`; nothing is changed then.
pub fn reseal_secrets(
    tx: &Connection,
    old: &SecretKey,
    new: &SecretKey,
) -> Result<usize, SealingError> {
    let rows = store::list_integration_secrets(tx)?;
    let mut opened = Vec::with_capacity(rows.len());
    for (id, stored) in rows {
        let clear = if stored.is_sealed() {
            secrets::open(old, &stored, &owner(id))
                .map_err(|source| SealingError::Open { id, source })?
        } else {
            stored.as_stored().to_owned()
        };
        opened.push((id, clear));
    }
    for (id, clear) in &opened {
        store_secrets(tx, new, *id, clear)?;
    }
    Ok(opened.len())
}
