//! The IMAP mailbox set on the email page (an alternative to `PORCH_IMAP_URL`, which wins): the
//! form's fields checked into [`ImapSettings`], the password sealed with the install's key
//! (never shown again, never logged), saving and removing it with their audit events, and
//! re-sealing it under a new key.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use rusqlite::Connection;
use serde_json::json;

use super::settings::ImapSettings;
use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::integrations::ssrf::is_public;
use crate::secrets::{self, OpenError, Sealed, SecretKey};
use crate::store::{self, ImapMailboxRow, Writer};

/// The associated data of the sealed password: it opens for this row only.
const OWNER: &[u8] = b"porch:imap_mailbox.password";
/// The audit target of the mailbox settings.
const SETTING: &str = "imap_mailbox";
/// Longest wait between rounds, as `PORCH_IMAP_POLL` allows.
const MAX_POLL_SECS: u64 = 3600;

/// The email page's form, as typed. `Debug` never shows the password.
#[derive(Clone, Default)]
pub struct MailboxInput {
    pub host: String,
    pub port: String,
    /// `implicit` (TLS) or `none`.
    pub tls: String,
    pub user: String,
    /// Empty keeps the saved password.
    pub password: String,
    pub folder: String,
    pub poll_secs: String,
}

/// Why the form was refused (shown to the admin) or could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum MailboxError {
    #[error("{0}")]
    Invalid(&'static str),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl fmt::Debug for MailboxInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MailboxInput")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("user", &self.user)
            .field("folder", &self.folder)
            .field("poll_secs", &self.poll_secs)
            .finish_non_exhaustive()
    }
}

impl MailboxInput {
    /// The settings the form gives, with `saved` as the password when the field is empty.
    ///
    /// # Errors
    /// What is wrong with the form, in words for the admin.
    pub fn check(&self, saved: Option<&ImapSettings>) -> Result<ImapSettings, MailboxError> {
        let host = self.host.trim();
        if host.is_empty()
            || host
                .chars()
                .any(|c| c.is_whitespace() || c == '/' || c == '@')
        {
            return Err(MailboxError::Invalid(
                "The server must be a host name or address.",
            ));
        }
        let tls = match self.tls.as_str() {
            "implicit" => true,
            "none" => false,
            _ => return Err(MailboxError::Invalid("Choose implicit TLS or none.")),
        };
        let port = match self.port.trim() {
            "" => {
                if tls {
                    993
                } else {
                    143
                }
            }
            raw => raw
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or(MailboxError::Invalid(
                    "The port must be a number from 1 to 65535.",
                ))?,
        };
        let user = self.user.trim();
        if user.is_empty() {
            return Err(MailboxError::Invalid("The user name is required."));
        }
        // The saved password goes only to the server and user it was saved for, and never
        // in clear if it was saved for TLS: changing any of these needs it typed again, so it
        // cannot be sent somewhere else, or readably, unseen.
        let password = if self.password.is_empty() {
            let saved = saved.ok_or(MailboxError::Invalid("The password is required."))?;
            if saved.host != host || saved.user != user || (saved.tls && !tls) {
                return Err(MailboxError::Invalid(
                    "Type the password again: the server, the user or TLS changed.",
                ));
            }
            saved.password.clone()
        } else {
            self.password.clone()
        };
        let folder = match self.folder.trim() {
            "" => "INBOX",
            folder => folder,
        };
        let poll_secs = self
            .poll_secs
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|s| (1..=MAX_POLL_SECS).contains(s))
            .ok_or(MailboxError::Invalid(
                "Look every: a whole number of seconds from 1 to 3600.",
            ))?;
        Ok(ImapSettings {
            host: host.to_owned(),
            port,
            tls,
            user: user.to_owned(),
            password,
            folder: folder.to_owned(),
            poll: Duration::from_secs(poll_secs),
        })
    }
}

/// Where a mailbox's server may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// `PORCH_IMAP_URL`: anywhere, the operator's choice (an `imap://` to another host is
    /// warned about at start).
    Anywhere,
    /// A mailbox set on the page: on public addresses unless `allow_private`
    /// (`PORCH_ALLOW_PRIVATE_NETWORKS`), so the form cannot be used to probe the network Porch
    /// runs in (as for webhooks); and without TLS on this host only, so the password and the
    /// mail never cross a network readable.
    Page { allow_private: bool },
}

/// The addresses the mailbox's server resolves to, each one where `reach` allows.
///
/// # Errors
/// The name does not resolve, or resolves to an address `reach` does not allow.
pub async fn resolve_mailbox(
    settings: &ImapSettings,
    reach: Reach,
) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((settings.host.as_str(), settings.port))
        .await
        .map_err(|err| format!("cannot resolve {}: {err}", settings.host))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("cannot resolve {}", settings.host));
    }
    let Reach::Page { allow_private } = reach else {
        return Ok(addrs);
    };
    // Canonical first: `::ffff:127.0.0.1` is this host's loopback written as IPv6.
    if !settings.tls
        && let Some(far) = addrs.iter().find(|a| !a.ip().to_canonical().is_loopback())
    {
        return Err(format!(
            "{} is not on this host: without TLS the password and the mail would cross the \
             network readable, so choose Implicit TLS",
            far.ip()
        ));
    }
    if !allow_private && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
        return Err(format!(
            "{} is a private address (set PORCH_ALLOW_PRIVATE_NETWORKS=true to allow it, or use \
             PORCH_IMAP_URL)",
            bad.ip()
        ));
    }
    Ok(addrs)
}

/// The saved mailbox's settings, if one is saved and its password opens (a password that does
/// not open is logged, without any value, and the mailbox taken as unset).
pub fn open_mailbox(key: &SecretKey, row: &ImapMailboxRow) -> Option<ImapSettings> {
    let password = secrets::open(key, &row.password, OWNER)
        .inspect_err(|err| tracing::warn!(%err, "the IMAP mailbox password does not open"))
        .ok()?;
    Some(ImapSettings {
        host: row.host.clone(),
        port: row.port,
        tls: row.is_tls,
        user: row.user.clone(),
        password,
        folder: row.folder.clone(),
        poll: Duration::from_millis(u64::try_from(row.poll_ms).unwrap_or(60_000)),
    })
}

/// Saves the mailbox, its password sealed, with its `email.imap_saved` audit event.
///
/// # Errors
/// Storage, or the cipher refusing the password (it never does).
pub async fn save_mailbox(
    writer: &Writer,
    key: &SecretKey,
    actor: &Actor,
    settings: &ImapSettings,
) -> Result<(), MailboxError> {
    let row = ImapMailboxRow {
        host: settings.host.clone(),
        port: settings.port,
        is_tls: settings.tls,
        user: settings.user.clone(),
        password: seal(key, &settings.password)?,
        folder: settings.folder.clone(),
        poll_ms: i64::try_from(settings.poll.as_millis()).unwrap_or(i64::MAX),
        updated_at: now_ms(),
    };
    let actor = actor.clone();
    let detail = json!({
        "host": row.host, "port": row.port, "tls": row.is_tls, "user": row.user,
        "folder": row.folder,
    });
    writer
        .write(move |c| {
            store::upsert_imap_mailbox(c, &row)?;
            audit::record(
                c,
                &actor,
                AuditAction::ImapSaved,
                &Target::setting(SETTING),
                &detail,
            )
        })
        .await?;
    Ok(())
}

/// Forgets the saved mailbox, with its `email.imap_removed` audit event; false if none was.
///
/// # Errors
/// Storage.
pub async fn remove_mailbox(writer: &Writer, actor: &Actor) -> Result<bool, MailboxError> {
    let actor = actor.clone();
    Ok(writer
        .write(move |c| {
            let removed = store::delete_imap_mailbox(c)?;
            if removed {
                let target = Target::setting(SETTING);
                audit::record(c, &actor, AuditAction::ImapRemoved, &target, &json!({}))?;
            }
            Ok(removed)
        })
        .await?)
}

/// Records an admin's connection test and its outcome (never the password).
///
/// # Errors
/// Storage.
pub async fn record_mailbox_test(
    writer: &Writer,
    actor: &Actor,
    outcome: &Result<(), String>,
) -> Result<(), MailboxError> {
    let actor = actor.clone();
    let detail = match outcome {
        Ok(()) => json!({"ok": true}),
        Err(error) => json!({"ok": false, "error": error}),
    };
    writer
        .write(move |c| {
            let target = Target::setting(SETTING);
            audit::record(c, &actor, AuditAction::ImapTested, &target, &detail)
        })
        .await?;
    Ok(())
}

/// Re-seals the saved mailbox's password from `old` to `new` in the caller's transaction (part
/// of `porch secrets rotate`); false when none is saved.
///
/// # Errors
/// The password does not open with `old`, or storage; nothing is changed then.
pub fn reseal_mailbox_password(
    tx: &Connection,
    old: &SecretKey,
    new: &SecretKey,
) -> Result<bool, store::Error> {
    let Some(row) = store::find_imap_mailbox(tx)? else {
        return Ok(false);
    };
    let clear = secrets::open(old, &row.password, OWNER)?;
    let row = ImapMailboxRow {
        password: secrets::seal(new, &clear, OWNER)?,
        ..row
    };
    store::upsert_imap_mailbox(tx, &row)?;
    Ok(true)
}

fn seal(key: &SecretKey, clear: &str) -> Result<Sealed, OpenError> {
    secrets::seal(key, clear, OWNER)
}

impl From<OpenError> for MailboxError {
    fn from(err: OpenError) -> Self {
        Self::Store(err.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> MailboxInput {
        MailboxInput {
            host: "imap.example.com".into(),
            tls: "implicit".into(),
            user: "chat@example.com".into(),
            password: "s3cret".into(),
            poll_secs: "60".into(),
            ..MailboxInput::default()
        }
    }

    #[test]
    fn defaults_fill_port_and_folder_and_an_empty_password_keeps_the_saved_one() {
        let s = input().check(None).expect("valid");
        assert_eq!((s.port, s.folder.as_str(), s.tls), (993, "INBOX", true));
        let in_clear = MailboxInput {
            tls: "none".into(),
            ..input()
        };
        let saved = in_clear.check(None).expect("valid");
        let keep = MailboxInput {
            password: String::new(),
            ..in_clear
        };
        let s = keep.check(Some(&saved)).expect("valid");
        assert_eq!((s.port, s.password.as_str()), (143, "s3cret"));
        assert!(keep.check(None).is_err(), "no password at all");
        let elsewhere = MailboxInput {
            host: "imap.evil.test".into(),
            ..keep.clone()
        };
        assert!(
            elsewhere.check(Some(&saved)).is_err(),
            "the saved password never goes to another server"
        );
        let other_user = MailboxInput {
            user: "root".into(),
            ..keep
        };
        assert!(
            other_user.check(Some(&saved)).is_err(),
            "nor to another user"
        );
    }

    #[test]
    fn a_password_saved_for_tls_is_not_kept_for_a_connection_in_clear() {
        let saved = input().check(None).expect("valid");
        let clear = MailboxInput {
            password: String::new(),
            tls: "none".into(),
            ..input()
        };
        assert!(clear.check(Some(&saved)).is_err());
        let typed = MailboxInput {
            tls: "none".into(),
            ..input()
        };
        assert!(typed.check(Some(&saved)).is_ok(), "typed again, it may");
    }

    #[test]
    fn debug_never_shows_the_password() {
        assert!(!format!("{:?}", input()).contains("s3cret"));
    }

    #[test]
    fn rotating_the_key_reseals_the_password() {
        let mut conn = Connection::open_in_memory().expect("open");
        store::apply_migrations(&mut conn).expect("migrate");
        let (old, new) = (SecretKey::generate(), SecretKey::generate());
        assert!(!reseal_mailbox_password(&conn, &old, &new).expect("none saved"));
        let row = ImapMailboxRow {
            host: "imap.example.com".into(),
            port: 993,
            is_tls: true,
            user: "chat".into(),
            password: seal(&old, "s3cret").expect("seal"),
            folder: "INBOX".into(),
            poll_ms: 60_000,
            updated_at: 0,
        };
        store::upsert_imap_mailbox(&conn, &row).expect("save");
        assert!(reseal_mailbox_password(&conn, &old, &new).expect("resealed"));
        let row = store::find_imap_mailbox(&conn)
            .expect("read")
            .expect("saved");
        assert!(
            open_mailbox(&old, &row).is_none(),
            "the old key no longer opens it"
        );
        let settings = open_mailbox(&new, &row).expect("opens with the new key");
        assert_eq!(settings.password, "s3cret");
    }

    #[test]
    fn wrong_fields_are_refused() {
        for bad in [
            MailboxInput {
                host: "a b".into(),
                ..input()
            },
            MailboxInput {
                port: "0".into(),
                ..input()
            },
            MailboxInput {
                port: "70000".into(),
                ..input()
            },
            MailboxInput {
                tls: "starttls".into(),
                ..input()
            },
            MailboxInput {
                user: " ".into(),
                ..input()
            },
            MailboxInput {
                poll_secs: "0".into(),
                ..input()
            },
            MailboxInput {
                poll_secs: "3601".into(),
                ..input()
            },
        ] {
            assert!(bad.check(None).is_err(), "{bad:?}");
        }
    }
}
