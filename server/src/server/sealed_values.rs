//! The start's dealings with sealed values (docs/operations.md, "The sealing key"): first a
//! read-only pass over every value sealed with the install's key that the start depends on
//! (sites' identity secrets, integration secrets, two-factor secrets; an IMAP password that does
//! not open is only logged, by the mail reader), then the sealing of values still in clear
//! text. The pass comes first so that a wrong key changes nothing: sealing
//! clear integration secrets with it and only then finding a two-factor secret it does not open
//! would leave a database that no single key opens.

use std::path::Path;

use rusqlite::Connection;

use crate::config::{KeySource, LoadedKey};
use crate::integrations::{
    SealingError, check_sealed_secrets, count_opening_secrets, seal_clear_secrets,
};
use crate::secrets::{NEW_KEY_FILE, SecretKey};
use crate::store::IntegrationId;

/// Checks that every sealed value opens with the key, then seals what is still in clear text.
/// A key this start generated is removed again when the check fails: nothing was sealed with it.
///
/// # Errors
/// The first value that does not open (named, with the key's source), or the store's.
pub(super) fn check_then_seal(
    conn: &Connection,
    sealing: &LoadedKey,
    data_dir: &Path,
) -> anyhow::Result<()> {
    if let Err(err) = check_every_value(conn, sealing) {
        forget_generated_key(sealing);
        return Err(
            match key_left_by_rotation(conn, data_dir, &sealing.source) {
                Some(hint) => err.context(hint),
                None => err,
            },
        );
    }
    let sealed = seal_clear_secrets(conn, &sealing.key).map_err(|err| match err {
        SealingError::Open { id, source } => {
            integration_does_not_open(conn, (id, &source), sealing)
        }
        // Its transaction rolled back: nothing was sealed with a key this start generated.
        SealingError::Store(err) => {
            forget_generated_key(sealing);
            store_failed(err)
        }
    })?;
    if sealed > 0 {
        tracing::info!(
            integrations = sealed,
            "sealed integration secrets kept in clear text"
        );
    }
    // A store failure here is said as one; the key stays either way, since integration secrets
    // may have been sealed with it a moment ago.
    let sealed =
        crate::accounts::seal_clear_totp_secrets(conn, &sealing.key).map_err(|err| match err {
            crate::accounts::TotpSealingError::Store(err) => store_failed(err),
            open @ crate::accounts::TotpSealingError::Open { .. } => wrong_key(&open, sealing),
        })?;
    if sealed > 0 {
        tracing::info!(
            users = sealed,
            "sealed two-factor secrets kept in clear text"
        );
    }
    Ok(())
}

/// The store's failure to seal, said as what stops it: the first write of the start, which waits
/// at most the busy timeout for the write lock that another program may hold.
fn store_failed(err: crate::store::Error) -> anyhow::Error {
    let busy = matches!(&err, crate::store::Error::Sqlite(rusqlite::Error::SqliteFailure(e, _))
        if e.code == rusqlite::ErrorCode::DatabaseBusy);
    let err = anyhow::Error::new(err);
    if busy {
        err.context(
            "another program holds the database's write lock (a sqlite3 shell with a transaction \
             open, a backup tool?): close it and start again",
        )
    } else {
        err.context("sealing secrets")
    }
}

/// Removes the key file this start generated, for a start that failed before sealing anything
/// with it: the next start generates one again, and a data directory is not left with a key that
/// belongs to nothing (docs/operations.md, "The sealing key").
pub(super) fn forget_generated_key(sealing: &LoadedKey) {
    if let KeySource::DataDir {
        path,
        created: true,
    } = &sealing.source
    {
        match std::fs::remove_file(path) {
            // Said, since the start logged that it generated the key and asked to keep a copy.
            Ok(()) => {
                tracing::info!(path = %path.display(), "removed the key this start generated: the start failed before anything was sealed with it");
            }
            Err(remove) => {
                tracing::warn!(error = %remove, path = %path.display(), "could not remove the key this start generated");
            }
        }
    }
}

/// When the values do not open with the key given, the key a rotation left in
/// `secret.key.new` (a rotation whose new key was never moved into place, or a start without
/// it), if that one opens them all: said first, so an operator moves it over instead of
/// following the lost-key steps, which delete every secret (docs/operations.md, "Rotating the
/// key").
fn key_left_by_rotation(conn: &Connection, data_dir: &Path, given: &KeySource) -> Option<String> {
    let path = data_dir.join(NEW_KEY_FILE);
    let left = LoadedKey {
        key: SecretKey::read_file(&path).ok()?,
        source: KeySource::File(path.clone()),
    };
    check_every_value(conn, &left).ok()?;
    // Where the key goes depends on where this start took its key from.
    let fix = match given {
        KeySource::DataDir { path: file, .. } => format!("move it over {}", file.display()),
        // Copied, not pointed at: the rotation said to delete that file once the key is in use.
        _ => "copy it to where PORCH_SECRET_KEY_FILE points (or give its text as \
              PORCH_SECRET_KEY)"
            .to_owned(),
    };
    Some(format!(
        "{} holds key {}, the one this database is sealed with (a rotation left it there): {fix}, \
         and start again",
        path.display(),
        left.key.id(),
    ))
}

/// The read-only pass: every sealed value must open with the key.
fn check_every_value(conn: &Connection, sealing: &LoadedKey) -> anyhow::Result<()> {
    let key = &sealing.key;
    crate::chat::check_identity_secrets(conn, key).map_err(|err| wrong_key(&err, sealing))?;
    check_sealed_secrets(conn, key).map_err(|err| match err {
        SealingError::Open { id, source } => {
            integration_does_not_open(conn, (id, &source), sealing)
        }
        SealingError::Store(err) => anyhow::Error::new(err).context("reading sealed secrets"),
    })?;
    crate::accounts::check_totp_secrets(conn, key).map_err(|err| wrong_key(&err, sealing))
}

/// Integration `id`'s secrets do not open with the key. When others do, the key is right and
/// that one row was altered (or copied from another row): said so, with how to clear that row
/// alone, rather than leading to the lost-key steps, which clear every secret.
fn integration_does_not_open(
    conn: &Connection,
    (id, source): (IntegrationId, &dyn std::fmt::Display),
    sealing: &LoadedKey,
) -> anyhow::Error {
    let key = refused_source(sealing);
    match count_opening_secrets(conn, &sealing.key) {
        Ok(others) if others > 0 => anyhow::anyhow!(
            "{key} opens the secrets of {others} other integration(s) but not those of \
             integration {id} ({source}): the key is right, and that row was altered or copied \
             from another. With Porch stopped, clear that row alone (sqlite3 porch.db \
             \"UPDATE integrations SET secrets = '{{}}' WHERE id = {id}\"), start, and enter \
             its secrets again (see docs/operations.md#one-integrations-secrets-do-not-open)"
        ),
        _ => anyhow::anyhow!(
            "{key} does not open the integration secrets sealed in this database (integration \
             {id}: {source}); start with the key they were sealed with (see \
             docs/operations.md#the-sealing-key)"
        ),
    }
}

/// `err` (a value that does not open), with what to do about it.
fn wrong_key(err: &dyn std::fmt::Display, sealing: &LoadedKey) -> anyhow::Error {
    anyhow::anyhow!(
        "{err}; start with the key it was sealed with ({}; see \
         docs/operations.md#the-sealing-key)",
        refused_source(sealing)
    )
}

/// The key that did not fit, as a refusal names it: a key this start generated is no key given
/// at all (the file it names is removed again, so naming only the file would send the operator
/// looking for it).
fn refused_source(sealing: &LoadedKey) -> String {
    match &sealing.source {
        KeySource::DataDir {
            path,
            created: true,
        } => format!(
            "the key this start generated, since no key was given (PORCH_SECRET_KEY and \
             PORCH_SECRET_KEY_FILE are unset and {} did not exist), and removed again",
            path.display()
        ),
        source => source.describe(),
    }
}
