//! Known visitors' per-site identity secret (docs/widget.md#known-visitors): made, rotated and
//! removed by an admin (audited), sealed at rest to its site, opened to check a `user_hash` or to
//! show it on the site page, and re-sealed when the install's key is rotated.

use std::sync::Arc;

use rusqlite::Connection;
use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::secrets::{self, OpenError, Sealed, SecretKey};
use crate::store::{self, Readers, SiteId, Writer};

use super::Error;
use super::site::SiteDirectory;

/// The associated data of a site's identity secret: a sealed secret copied to another site's
/// row does not open there.
fn owner(site: SiteId) -> Vec<u8> {
    format!("porch:sites.identity_secret:{}", site.0).into_bytes()
}

/// A new secret: 32 random bytes as 64 lower-case hex digits. Sites use this text, exactly as
/// shown, as the HMAC key.
fn new_secret() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The identity secret in clear, for one check or for the site page. Never log it.
///
/// # Errors
/// If it was sealed with another key, altered, or copied from another site.
pub fn open_identity_secret(
    key: &SecretKey,
    site: SiteId,
    sealed: &Sealed,
) -> Result<String, OpenError> {
    secrets::open(key, sealed, &owner(site))
}

/// The site's identity secret in clear, or `None` when known visitors are off (or the secret
/// does not open, which is logged without the value).
pub async fn find_identity_secret(
    readers: &Arc<Readers>,
    key: &SecretKey,
    site: SiteId,
) -> Result<Option<String>, Error> {
    let sealed = readers
        .read(move |c| store::find_site_identity_secret(c, site))
        .await?;
    Ok(sealed.and_then(|s| {
        open_identity_secret(key, site, &s)
            .inspect_err(|err| tracing::warn!(site = %site, %err, "identity secret does not open"))
            .ok()
    }))
}

/// Makes a new identity secret for the site (turning known visitors on, or rotating: the old
/// secret stops verifying at once), records `site.identity_secret_rotated` and drops the
/// widget's cached copy of the site.
pub async fn rotate_identity_secret(
    (writer, directory, key): (&Arc<Writer>, &SiteDirectory, &Arc<SecretKey>),
    actor: &Actor,
    site: (SiteId, &str, &str),
) -> Result<(), Error> {
    let (id, site_key, name) = site;
    let sealed = secrets::seal(key, &new_secret(), &owner(id)).map_err(store::Error::from)?;
    let target = Target::site(site_key, name);
    let actor = actor.clone();
    writer
        .write(move |c| {
            store::upsert_site_identity_secret(c, id, &sealed, now_ms())?;
            audit::record(
                c,
                &actor,
                AuditAction::SiteIdentitySecretRotated,
                &target,
                &json!({}),
            )
        })
        .await?;
    directory.reload(site_key).await;
    Ok(())
}

/// Turns known visitors off for the site: every identity is unverified from now on. Records
/// `site.identity_secret_removed` when there was a secret.
pub async fn remove_identity_secret(
    (writer, directory): (&Arc<Writer>, &SiteDirectory),
    actor: &Actor,
    site: (SiteId, &str, &str),
) -> Result<(), Error> {
    let (id, site_key, name) = site;
    let target = Target::site(site_key, name);
    let actor = actor.clone();
    writer
        .write(move |c| {
            if store::delete_site_identity_secret(c, id)? {
                audit::record(
                    c,
                    &actor,
                    AuditAction::SiteIdentitySecretRemoved,
                    &target,
                    &json!({}),
                )?;
            }
            Ok(())
        })
        .await?;
    directory.reload(site_key).await;
    Ok(())
}

/// Re-seals every site's identity secret from `old` to `new` in the caller's transaction (part
/// of `porch secrets rotate`); returns how many.
///
/// # Errors
/// A secret that does not open with `old`, or a storage error; nothing is changed then.
pub fn reseal_identity_secrets(
    tx: &Connection,
    old: &SecretKey,
    new: &SecretKey,
) -> Result<usize, IdentitySecretError> {
    let rows = store::list_site_identity_secrets(tx)?;
    for (site, sealed) in &rows {
        let clear = open_identity_secret(old, *site, sealed).map_err(|source| {
            IdentitySecretError::Open {
                site: *site,
                source,
            }
        })?;
        let resealed = secrets::seal(new, &clear, &owner(*site)).map_err(store::Error::from)?;
        store::upsert_site_identity_secret(tx, *site, &resealed, now_ms())?;
    }
    Ok(rows.len())
}

/// A site's identity secret that does not open with the key given.
#[derive(Debug, thiserror::Error)]
pub enum IdentitySecretError {
    #[error("the identity secret of site {site} does not open: {source}")]
    Open { site: SiteId, source: OpenError },
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Checks at start-up that every site's identity secret opens with `key`: started with another
/// key, Porch would quietly treat every known visitor as unverified, and the site page would
/// invite an admin to make a new secret that breaks every page's `user_hash`.
///
/// # Errors
/// The first site whose secret does not open, or the store's error.
pub fn check_identity_secrets(
    conn: &Connection,
    key: &SecretKey,
) -> Result<(), IdentitySecretError> {
    for (site, sealed) in store::list_site_identity_secrets(conn)? {
        open_identity_secret(key, site, &sealed)
            .map_err(|source| IdentitySecretError::Open { site, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_opens_only_for_its_site_and_key() {
        let key = SecretKey::generate();
        let secret = new_secret();
        assert_eq!(secret.len(), 64);
        let sealed = secrets::seal(&key, &secret, &owner(SiteId(1))).expect("seal");
        assert_eq!(
            open_identity_secret(&key, SiteId(1), &sealed).expect("opens"),
            secret
        );
        assert!(open_identity_secret(&key, SiteId(2), &sealed).is_err());
        assert!(open_identity_secret(&SecretKey::generate(), SiteId(1), &sealed).is_err());
    }
}
