//! `porch secrets rotate`: re-seals every integration secret under a new key in one transaction,
//! with the server stopped (it holds the key in memory), and tells the operator what to change.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::config::{DataConfig, KeySource, Secret, SecretKeyConfig};
use crate::integrations::reseal_secrets;
use crate::secrets::{KEY_FILE, NEW_KEY_FILE, SecretKey};
use crate::store;

use super::{open_database, write_out};

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Re-seal every integration secret under a new key, in one transaction. Stop the server
    /// first; the current key is taken like `porch serve` takes it.
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

pub fn run(data: &DataConfig, command: SecretsCommand) -> anyhow::Result<()> {
    let SecretsCommand::Rotate(args) = command;
    // A running server keeps the old key in memory and would fail on every re-sealed value.
    let _lock = crate::lock_data_dir(&data.data_dir)
        .context("stop the server before rotating the sealing key")?;
    let current = args.current.load(&data.data_dir)?;
    let given = match (&args.new_key, &args.new_key_file) {
        (Some(text), _) => {
            Some(SecretKey::parse(text.expose()).context("PORCH_SECRET_KEY_NEW (--new-key)")?)
        }
        (None, Some(path)) => {
            Some(SecretKey::read_file(path).context("PORCH_SECRET_KEY_NEW_FILE (--new-key-file)")?)
        }
        (None, None) => None,
    };
    let new_file = data.data_dir.join(NEW_KEY_FILE);
    let new = match given {
        Some(key) => key,
        None => {
            let key = SecretKey::generate();
            // Written (and flushed) before the database changes, so the new key is never lost.
            key.write_new_file(&new_file).with_context(|| {
                format!(
                    "a previous rotation left {}: move it away first",
                    new_file.display()
                )
            })?;
            key
        }
    };
    if new.id() == current.key.id() {
        bail!("the new key is the current key ({})", new.id());
    }
    let conn = open_database(data)?;
    let tx = conn.unchecked_transaction()?;
    let count = reseal_secrets(&tx, &current.key, &new).map_err(|err| {
        anyhow::anyhow!(
            "{err}: {} is not the key this database was sealed with; nothing was changed",
            current.source.describe()
        )
    })?;
    // Sites' identity secrets (known visitors) are sealed with the same key.
    let sites = crate::chat::reseal_identity_secrets(&tx, &current.key, &new)?;
    // And two-factor (TOTP) secrets.
    let users = crate::accounts::reseal_all_totp_secrets(&tx, &current.key, &new)?;
    // So is the IMAP mailbox password saved on the email page.
    let imap =
        crate::integrations::email::inbound::reseal_mailbox_password(&tx, &current.key, &new)?;
    let detail = json!({
        "from_key": current.key.id(),
        "integrations": count,
        "identity_secrets": sites,
        "two_factor_secrets": users,
        "imap_mailbox": imap,
    });
    audit::record(
        &tx,
        &Actor::cli(),
        AuditAction::SecretsRotated,
        &Target::sealing_key(new.id()),
        &detail,
    )?;
    tx.commit()?;
    // The old envelopes leave the WAL: with the old key, they would still open.
    store::truncate_wal(&conn)?;
    let next = match (
        &current.source,
        args.new_key.is_some() || args.new_key_file.is_some(),
    ) {
        (KeySource::DataDir { path, .. }, false) => {
            std::fs::rename(&new_file, path).with_context(|| {
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
        (_, false) => format!(
            "The new key is in {}: give it to porch serve as PORCH_SECRET_KEY or \
             PORCH_SECRET_KEY_FILE instead of the old one, then delete that file.",
            new_file.display()
        ),
        (KeySource::DataDir { .. }, true) => format!(
            "Start porch serve with PORCH_SECRET_KEY or PORCH_SECRET_KEY_FILE set to the new key \
             (or write it to {KEY_FILE} in the data directory, replacing the old key)."
        ),
        (_, true) => "Give porch serve the new key as PORCH_SECRET_KEY or PORCH_SECRET_KEY_FILE \
                      instead of the old one before starting it."
            .to_owned(),
    };
    write_out(&format!(
        "Re-sealed the secrets of {count} integrations: key {} replaces key {}.\n{next}",
        new.id(),
        current.key.id()
    ))
}
