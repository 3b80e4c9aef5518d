//! Recording an event inside the caller's writer transaction, so a change and its record commit
//! or roll back together. Who (`Actor`), to what (`Target`), and a detail the caller builds from
//! plain facts: never a password, token or integration secret.

use std::net::IpAddr;

use rusqlite::Connection;
use serde_json::Value;

use crate::clock::now_ms;
use crate::store::{
    self, ConversationId, IntegrationId, JobId, NewAuditEvent, UserId, UserRow, VisitorId,
};

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

    /// Someone at `ip` who typed `email` before signing in, not proven to be its user (the
    /// "Forgot your password?" form): the `user` column stays empty.
    pub fn unproven(email: &str, ip: IpAddr) -> Self {
        Self {
            user: None,
            label: email.to_owned(),
            from: ip.to_string(),
        }
    }

    /// A visitor acting on their own data from the widget. Their address is not kept (the `ip`
    /// column says `widget`): an erasure deletes it everywhere else, and the audit log outlives
    /// the erasure by a year.
    pub fn visitor(id: VisitorId) -> Self {
        Self {
            user: None,
            label: format!("visitor {id}"),
            from: "widget".to_owned(),
        }
    }

    /// A Porch user acting from Slack as the Slack user `slack_user` of workspace `team`: the
    /// `ip` column holds `slack:{team}/{user}`, as Slack's requests carry no client address.
    pub fn slack(user: &UserRow, team: &str, slack_user: &str) -> Self {
        Self {
            user: Some(user.id),
            label: user.email.clone(),
            from: format!("slack:{team}/{slack_user}"),
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

    /// A delivery by its job id and kind (`webhook.deliver`, …).
    pub fn job(id: JobId, kind: &str) -> Self {
        Self {
            kind: "job",
            id: id.0.to_string(),
            label: kind.to_owned(),
        }
    }

    /// The failed deliveries of *Dismiss all failed* (test messages are left out).
    pub fn failed_deliveries() -> Self {
        Self {
            kind: "jobs",
            id: "failed".to_owned(),
            label: "failed deliveries".to_owned(),
        }
    }

    /// An install-wide setting by its key.
    pub fn setting(key: &str) -> Self {
        Self {
            kind: "setting",
            id: key.to_owned(),
            label: key.to_owned(),
        }
    }

    /// A conversation by its id.
    pub fn conversation(id: ConversationId) -> Self {
        Self {
            kind: "conversation",
            id: id.0.to_string(),
            label: format!("conversation {id}"),
        }
    }

    /// A visitor by their id only: an erased person's name or address must not stay behind.
    pub fn visitor(id: VisitorId) -> Self {
        Self {
            kind: "visitor",
            id: id.0.to_string(),
            label: format!("visitor {id}"),
        }
    }

    /// Every conversation of the database (`porch export --all`).
    pub fn all_conversations() -> Self {
        Self {
            kind: "database",
            id: "all".to_owned(),
            label: "all conversations".to_owned(),
        }
    }

    /// The key that seals integration secrets, by its public id (never the key).
    pub fn sealing_key(id: &str) -> Self {
        Self {
            kind: "key",
            id: id.to_owned(),
            label: "sealing key".to_owned(),
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

/// Records a sign-in attempt that did not sign in: `SignInFailed` (a wrong password) or
/// `SignInThrottled` (refused by the throttle before any check), for `email` from `ip`. Attempts
/// of one kind for one email from one address in one minute share a row and count up, so a
/// guessing flood adds rows no faster than minutes pass.
pub fn record_sign_in_attempt(
    c: &Connection,
    action: AuditAction,
    email: &str,
    user: Option<UserId>,
    ip: IpAddr,
) -> Result<(), store::Error> {
    record_failure(c, action, email, user, ip, "{}")
}

/// The provider account a refused single sign-on came from (its verified token's issuer and
/// `sub`): the token's email may be the person it tried to sign in as, this says who tried.
#[derive(Debug, Clone, Copy)]
pub struct SsoAccount<'a> {
    pub issuer: &'a str,
    pub subject: &'a str,
}

/// The longest `sub` kept: OpenID Connect Core 2 allows 255 ASCII characters.
const MAX_SUBJECT: usize = 255;

/// Records a refused single sign-on from `ip`: `label` is the email the provider gave, or `sso`
/// when the refusal came before any (a bad `state`, a token that failed its checks); `reason`
/// is the refusal's stable code; `account` the provider account, once a token was verified.
/// Aggregated per minute like wrong passwords, since anyone can call the callback URL (each
/// provider account its own row).
pub fn record_sso_failure(
    c: &Connection,
    label: &str,
    user: Option<UserId>,
    ip: IpAddr,
    reason: &str,
    account: Option<SsoAccount<'_>>,
) -> Result<(), store::Error> {
    let mut detail = serde_json::json!({"method": "sso", "reason": reason});
    if let Some(account) = account {
        let subject: String = account.subject.chars().take(MAX_SUBJECT).collect();
        detail["issuer"] = account.issuer.into();
        detail["subject"] = subject.into();
    }
    record_failure(
        c,
        AuditAction::SignInFailed,
        label,
        user,
        ip,
        &detail.to_string(),
    )
}

fn record_failure(
    c: &Connection,
    action: AuditAction,
    email: &str,
    user: Option<UserId>,
    ip: IpAddr,
    detail: &str,
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
            action: action.as_str(),
            target_type: None,
            target_id: None,
            target_label: None,
            ip: &ip.to_string(),
            detail,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::migrated_in_memory;

    fn rows(c: &Connection) -> Vec<(String, i64)> {
        let mut stmt = c
            .prepare("SELECT detail, count FROM audit_events ORDER BY id")
            .expect("prepare");
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)));
        rows.expect("query").map(|r| r.expect("row")).collect()
    }

    #[test]
    fn failures_of_one_kind_share_a_row_and_another_reason_gets_its_own() {
        let c = migrated_in_memory();
        let ip: IpAddr = [192, 0, 2, 7].into();
        // A cheap refusal first, then forged tokens, then wrong passwords, in one minute.
        record_sso_failure(&c, "sso", None, ip, "sso_state_mismatch", None).expect("record");
        for _ in 0..3 {
            record_sso_failure(&c, "sso", None, ip, "sso_token_invalid", None).expect("record");
        }
        for _ in 0..2 {
            let failed = AuditAction::SignInFailed;
            record_sign_in_attempt(&c, failed, "sso", None, ip).expect("record");
        }
        let state = r#"{"method":"sso","reason":"sso_state_mismatch"}"#;
        let token = r#"{"method":"sso","reason":"sso_token_invalid"}"#;
        assert_eq!(
            rows(&c),
            [(state.into(), 1), (token.into(), 3), ("{}".into(), 2)]
        );
    }
}
