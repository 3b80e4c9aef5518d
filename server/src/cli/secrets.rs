//! `porch secrets rotate`: re-seals every sealed value (integration, site identity and two-factor
//! secrets, the IMAP password) under a new key in one transaction,
//! with the server stopped (it holds the key in memory), and tells the operator what to change.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::accounts::{TotpSealingError, reseal_all_totp_secrets};
use crate::audit::{self, Actor, AuditAction, Target};
use crate::chat::{IdentitySecretError, reseal_identity_secrets};
use crate::config::{DataConfig, KeySource, LoadedKey, Secret, SecretKeyConfig};
use crate::integrations::email::inbound::reseal_mailbox_password;
use crate::integrations::{SealingError, reseal_secrets};
use crate::secrets::{KEY_FILE, NEW_KEY_FILE, SecretKey};
use crate::store;

use super::{open_database, write_out};

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Re-seal every sealed secret under a new key, in one transaction. Stop the server first;
    /// the current key is taken like `porch serve` takes it, but never generated.
    Rotate(RotateArgs),
}

#[derive(Debug, Args)]
pub struct RotateArgs {
    #[command(flatten)]
    current: SecretKeyConfig,
    /// The new key (32 bytes as base64 or hex). Without it or a file, a key is generated.
    #[arg(long, env = "PORCH_SECRET_KEY_NEW", hide_env_values = true)]
    new_key: Option<Secret>,
    /// A file holding the new key.
    #[arg(long, env = "PORCH_SECRET_KEY_NEW_FILE", conflicts_with = "new_key")]
    new_key_file: Option<PathBuf>,
}

impl SecretsCommand {
    /// Refuses a malformed key setting (the current key's variable or file, the new key's)
    /// before anything is opened, exit 2 as `porch serve` does.
    pub fn check_settings(&self) -> anyhow::Result<()> {
        let SecretsCommand::Rotate(args) = self;
        args.current.validate()?;
        args.given_new_key()?;
        Ok(())
    }
}

impl RotateArgs {
    /// The new key given as a setting, if one is.
    fn given_new_key(&self) -> anyhow::Result<Option<SecretKey>> {
        Ok(match (&self.new_key, &self.new_key_file) {
            (Some(text), _) => {
                Some(SecretKey::parse(text.expose()).context("PORCH_SECRET_KEY_NEW (--new-key)")?)
            }
            // Its words already name the file's error, which `context` would print again.
            (None, Some(path)) => Some(SecretKey::read_file(path).map_err(|err| {
                anyhow::anyhow!("PORCH_SECRET_KEY_NEW_FILE (--new-key-file): {err}")
            })?),
            (None, None) => None,
        })
    }
}

pub fn run(data: &DataConfig, command: SecretsCommand) -> anyhow::Result<()> {
    let SecretsCommand::Rotate(args) = command;
    // A running server keeps the old key in memory and would fail on every re-sealed value.
    let _lock = crate::lock_data_dir(&data.data_dir)
        .context("stop the server before rotating the sealing key")?;
    // The key the database is sealed with: a generated one would open nothing.
    let new_file = data.data_dir.join(NEW_KEY_FILE);
    let current = args.current.find(&data.data_dir)?.with_context(|| {
        // A finished rotation whose new key was never moved into place leaves it here: the
        // likeliest key, before the lost-key steps that delete every secret.
        let left = if new_file.exists() {
            format!(
                " ({} is there: a rotation that finished left the database sealed with the key \
                 in it, to move over {})",
                new_file.display(),
                KEY_FILE
            )
        } else {
            String::new()
        };
        format!(
            "there is no sealing key: PORCH_SECRET_KEY and PORCH_SECRET_KEY_FILE are unset and \
             {} does not exist. Rotating needs the key this database is sealed with: restore \
             it first{left} (if it is lost, see docs/operations.md#a-lost-key); nothing was \
             changed",
            data.data_dir.join(KEY_FILE).display()
        )
    })?;
    // A key file a rotation left may be the only copy of the key the database is sealed with
    // now (it finished, and the key was never put in place): never called a leftover to move
    // away, which would lose it, and no rotation goes on beside it.
    if new_file.exists() {
        bail!(
            "{new} is there, left by an earlier rotation. If that rotation finished, {new} holds \
             the key this database is sealed with now: start with it (move it over {current}, or \
             point PORCH_SECRET_KEY_FILE at it) before rotating again. Only if porch serve starts \
             with the key you gave here is it a leftover to move away. Nothing was changed",
            new = new_file.display(),
            current = data.data_dir.join(KEY_FILE).display(),
        );
    }
    let given = args.given_new_key()?;
    let generated = given.is_none();
    let new = match given {
        Some(key) => key,
        None => {
            let key = SecretKey::generate();
            // Written (and flushed) before the database changes, so the new key is never lost.
            key.write_new_file(&new_file)?;
            key
        }
    };
    if new.id() == current.key.id() {
        bail!("the new key is the current key ({})", new.id());
    }
    // Until the commit nothing in the database changed: a generated key then opens nothing,
    // and its file left behind would refuse the next try.
    let forget_new_key = |_: &anyhow::Error| {
        if generated {
            let _ = std::fs::remove_file(&new_file);
        }
    };
    let conn = open_database(data).inspect_err(forget_new_key)?;
    let tx = store::write_transaction(&conn)
        .map_err(anyhow::Error::from)
        .inspect_err(forget_new_key)?;
    let count = reseal_everything(&tx, &current, &new).inspect_err(forget_new_key)?;
    tx.commit()?;
    // The old envelopes leave the WAL: with the old key, they would still open. A reader (the
    // Litestream sidecar) keeps it from being emptied; its next checkpoint does it.
    if !store::truncate_wal(&conn)? {
        tracing::warn!(
            "the WAL could not be emptied while another process reads the database (Litestream): \
             it holds the old envelopes until that process's next checkpoint"
        );
    }
    let next = next_step(&current.source, generated, &new_file)?;
    write_out(&format!(
        "Re-sealed {}: key {} replaces key {}.\n{next}",
        count.describe(),
        new.id(),
        current.key.id()
    ))
}

/// What a rotation re-sealed.
struct Resealed {
    integrations: usize,
    identity_secrets: usize,
    two_factor_secrets: usize,
    imap_mailbox: bool,
}

impl Resealed {
    fn describe(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = vec![
            plural(
                self.integrations,
                "integration's secrets",
                "integrations' secrets",
            ),
            plural(
                self.identity_secrets,
                "site identity secret",
                "site identity secrets",
            ),
            plural(
                self.two_factor_secrets,
                "two-factor secret",
                "two-factor secrets",
            ),
        ];
        if self.imap_mailbox {
            parts.push("the IMAP mailbox password".to_owned());
        }
        parts.join(", ")
    }
}

/// Re-seals every sealed value from `current` to `new` in the caller's transaction, audited;
/// fails if any does not open with `current`.
fn reseal_everything(
    tx: &rusqlite::Transaction<'_>,
    current: &LoadedKey,
    new: &SecretKey,
) -> anyhow::Result<Resealed> {
    // A value that does not open names the key as the cause; a storage error is itself.
    let wrong_key = |err: &dyn std::fmt::Display| {
        anyhow::anyhow!(
            "{err}: {} is not the key this database was sealed with; nothing was changed",
            current.source.describe()
        )
    };
    let old = &current.key;
    let count = Resealed {
        integrations: reseal_secrets(tx, old, new).map_err(|e| match e {
            SealingError::Open { .. } => wrong_key(&e),
            SealingError::Store(e) => e.into(),
        })?,
        // Sites' identity secrets (known visitors) are sealed with the same key.
        identity_secrets: reseal_identity_secrets(tx, old, new).map_err(|e| match e {
            IdentitySecretError::Open { .. } => wrong_key(&e),
            IdentitySecretError::Store(e) => e.into(),
        })?,
        // And two-factor (TOTP) secrets.
        two_factor_secrets: reseal_all_totp_secrets(tx, old, new).map_err(|e| match e {
            TotpSealingError::Open { .. } => wrong_key(&e),
            TotpSealingError::Store(e) => e.into(),
        })?,
        // So is the IMAP mailbox password saved on the email page.
        imap_mailbox: reseal_mailbox_password(tx, old, new).map_err(|e| match e {
            store::Error::Seal(open) => {
                wrong_key(&format!("the IMAP mailbox password does not open: {open}"))
            }
            e => e.into(),
        })?,
    };
    let detail = json!({
        "from_key": old.id(),
        "integrations": count.integrations,
        "identity_secrets": count.identity_secrets,
        "two_factor_secrets": count.two_factor_secrets,
        "imap_mailbox": count.imap_mailbox,
    });
    audit::record(
        tx,
        &Actor::cli(),
        AuditAction::SecretsRotated,
        &Target::sealing_key(new.id()),
        &detail,
    )?;
    Ok(count)
}

/// Puts a generated key where the next start reads it (the data directory's key file), or says
/// where it is; returns what the operator has to change.
fn next_step(source: &KeySource, generated: bool, new_file: &Path) -> anyhow::Result<String> {
    Ok(match (source, generated) {
        (KeySource::DataDir { path, .. }, true) => {
            std::fs::rename(new_file, path).with_context(|| {
                format!(
                    "the database is sealed with the new key in {}; move it to {} yourself",
                    new_file.display(),
                    path.display()
                )
            })?;
            format!(
                "The new key replaced {}; nothing else to change. Keep a copy of it with your \
                 backups (older backups still need the old key).",
                path.display()
            )
        }
        (_, true) => format!(
            "The new key is in {}: give it to porch serve as PORCH_SECRET_KEY or \
             PORCH_SECRET_KEY_FILE instead of the old one, then delete that file.",
            new_file.display()
        ),
        (KeySource::DataDir { .. }, false) => format!(
            "Start porch serve with PORCH_SECRET_KEY or PORCH_SECRET_KEY_FILE set to the new key \
             (or write it to {KEY_FILE} in the data directory, replacing the old key)."
        ),
        (_, false) => "Give porch serve the new key as PORCH_SECRET_KEY or PORCH_SECRET_KEY_FILE \
                       instead of the old one before starting it."
            .to_owned(),
    })
}
