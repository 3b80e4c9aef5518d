//! Recording an event inside the caller's writer transaction, so a change and its record commit
//! or roll back together. Who (`Actor`), to what (`Target`), and a detail the caller builds from
//! plain facts: never a password, token or integration secret.

use std::net::IpAddr;

use rusqlite::Connection;
use serde_json::Value;

use crate::clock::now_ms;
use crate::store::{self, IntegrationId, NewAuditEvent, UserId, UserRow};

use super::AuditAction;

/// What the `ip` column holds for the command line, which has no client address.
const CLI: &str = "cli";
/// The longest attempted email kept for a failed sign-in: a guesser picks that text.
const MAX_ATTEMPTED_EMAIL: usize = 254;

/// Who acted, and from where.
#[derive(Debug, Clone)]
pub struct Actor {
    pub user: Option<UserId>,
    /// Their email as it was, so the event still reads after the user is deleted.
    pub label: String,
    /// The client address (`http::client_ip`), or `cli`.
    pub from: String,
}

impl Actor {
    /// A signed-in user (session or API token) at `ip`.
    pub fn user(user: &UserRow, ip: IpAddr) -> Self {
        Self {
            user: Some(user.id),
            label: user.email.clone(),
            from: ip.to_string(),
        }
    }

    /// Someone at the server's command line (`porch user …`, `porch token …`).
    pub fn cli() -> Self {
        Self {
            user: None,
            label: CLI.to_owned(),
            from: CLI.to_owned(),
        }
    }
}

/// What an action was done to: a type, its id and a label as it was.
#[derive(Debug, Clone)]
pub struct Target {
    kind: &'static str,
    id: String,
    label: String,
}

impl Target {
    pub fn user(user: &UserRow) -> Self {
        Self {
            kind: "user",
            id: user.id.0.to_string(),
            label: user.email.clone(),
        }
    }

    /// A site by its key and name.
    pub fn site(key: &str, name: &str) -> Self {
        Self {
            kind: "site",
            id: key.to_owned(),
            label: name.to_owned(),
        }
    }

    /// An integration by its id and kind (`slack`, `webhook`, …).
    pub fn integration(id: IntegrationId, kind: &str) -> Self {
        Self {
            kind: "integration",
            id: id.0.to_string(),
            label: kind.to_owned(),
        }
    }

    /// A canned reply by its id and shortcut.
    pub fn canned_reply(id: i64, shortcut: &str) -> Self {
        Self {
            kind: "canned_reply",
            id: id.to_string(),
            label: shortcut.to_owned(),
        }
    }

    /// An API token by its id and name (never the token).
    pub fn token(id: i64, name: &str) -> Self {
        Self {
            kind: "token",
            id: id.to_string(),
            label: name.to_owned(),
        }
    }
}

/// Records `action` by `actor` on `target`, in the transaction `c` belongs to.
pub fn record(
    c: &Connection,
    actor: &Actor,
    action: AuditAction,
    target: &Target,
    detail: &Value,
) -> Result<(), store::Error> {
    store::insert_audit_event(
        c,
        &NewAuditEvent {
            at: now_ms(),
            actor_id: actor.user,
            actor: &actor.label,
            action: action.as_str(),
            target_type: Some(target.kind),
            target_id: Some(&target.id),
            target_label: Some(&target.label),
            ip: &actor.from,
            detail: &detail.to_string(),
        },
    )
}

/// Records a wrong password for `email` from `ip`. Failures of one email from one address in
/// one minute share a row and count up, so a guessing flood adds rows no faster than minutes
/// pass (the sign-in throttle already bounds the attempts that get this far).
pub fn record_sign_in_failure(
    c: &Connection,
    email: &str,
    user: Option<UserId>,
    ip: IpAddr,
) -> Result<(), store::Error> {
    let cut = email
        .char_indices()
        .nth(MAX_ATTEMPTED_EMAIL)
        .map_or(email, |(at, _)| &email[..at]);
    store::upsert_audit_event_per_minute(
        c,
        &NewAuditEvent {
            at: now_ms(),
            actor_id: user,
            actor: cut,
            action: AuditAction::SignInFailed.as_str(),
            target_type: None,
            target_id: None,
            target_label: None,
            ip: &ip.to_string(),
            detail: "{}",
        },
    )
}
