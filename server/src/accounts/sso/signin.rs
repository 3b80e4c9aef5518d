//! The `Accounts` use cases of single sign-on: map a verified token to a user (linking the
//! subject, or creating the account for a provisioned domain), record refusals, and start the
//! session. Reads and writes happen in one writer transaction, so two first sign-ins of one
//! person cannot both link.

use std::net::IpAddr;

use serde_json::json;

use crate::accounts::{Accounts, DisplayName, EmailAddress, Error, NewSessionSecret, Role};
use crate::audit::{self, Actor, AuditAction, SsoAccount, Target};
use crate::clock::now_ms;
use crate::store::{self, NewUser, OidcLinkRow, UserRow};

use super::mapping::{Claims, Decision, Known, Refusal, decide};
use super::token::loggable;

/// A user the provider vouched for.
#[derive(Debug, Clone)]
pub struct SsoUser {
    pub user: UserRow,
    /// True when this sign-in linked the provider's account (the user's first through SSO).
    pub linked: bool,
}

impl Accounts {
    /// Who `claims` sign in as (see `mapping::decide`); a refusal is recorded in the audit log.
    ///
    /// # Errors
    /// `Ok(Err(refusal))` for a refusal; `Err` when the database failed.
    pub async fn sign_in_sso(
        &self,
        claims: Claims,
        provision_domains: Vec<String>,
        ip: IpAddr,
    ) -> Result<Result<SsoUser, Refusal>, Error> {
        let decided = self
            .writer
            .write(move |c| {
                let user = match &claims.email {
                    Some(email) => store::find_user_by_email(c, email)?,
                    None => None,
                };
                let user_link = match &user {
                    Some(user) => store::find_oidc_link(c, user.id)?,
                    None => None,
                };
                let subject_owner =
                    match store::find_oidc_subject_user(c, &claims.issuer, &claims.subject)? {
                        Some(owner) => store::find_user(c, owner)?,
                        None => None,
                    };
                let known = Known {
                    user: user.as_ref(),
                    user_link: user_link.as_ref(),
                    subject_owner: subject_owner.as_ref(),
                };
                let link = OidcLinkRow {
                    issuer: claims.issuer.clone(),
                    subject: claims.subject.clone(),
                };
                match decide(&claims, &known, &provision_domains) {
                    Decision::SignIn {
                        user: id,
                        link: is_new,
                    } => {
                        if is_new {
                            store::insert_oidc_link(c, id, &link, now_ms())?;
                            store::spend_invitations(c, id, now_ms())?;
                        }
                        log_changed_email(&claims, subject_owner.as_ref());
                        Ok(store::find_user(c, id)?
                            .map(|user| SsoUser {
                                user,
                                linked: is_new,
                            })
                            .ok_or(Refusal::UnknownUser))
                    }
                    Decision::Provision { email } => {
                        let Some(user) = provision(c, &email, claims.name.as_deref(), ip)? else {
                            return refuse(c, &claims, None, ip, Refusal::UnknownUser);
                        };
                        store::insert_oidc_link(c, user.id, &link, now_ms())?;
                        Ok(Ok(SsoUser { user, linked: true }))
                    }
                    Decision::Refuse(refusal) => {
                        let refused = subject_owner.as_ref().or(user.as_ref());
                        refuse(c, &claims, refused.map(|u| u.id), ip, refusal)
                    }
                }
            })
            .await?;
        Ok(decided)
    }

    /// Records a refusal that came before any claims (a bad `state`, a failed token check).
    pub async fn record_sso_refusal(&self, refusal: Refusal, ip: IpAddr) {
        // Deferred, as for wrong passwords: a lost record must not turn a refusal into a 500.
        let recorded = self
            .writer
            .write_deferred(move |c| {
                audit::record_sso_failure(c, "sso", None, ip, refusal.code(), None)
            })
            .await;
        if let Err(err) = recorded {
            tracing::warn!(error = %err, "could not record a refused single sign-on");
        }
    }

    /// Starts the session of a single sign-on; the audit event says `method: sso`.
    pub async fn start_sso_session(
        &self,
        signed_in: &SsoUser,
        ip: IpAddr,
    ) -> Result<NewSessionSecret, Error> {
        let detail = json!({"method": "sso", "linked": signed_in.linked});
        self.open_session(&signed_in.user, ip, detail).await
    }
}

/// Records `refusal` for the email the token carried (or `sso` without one) and the provider
/// account that carried it: the email may be someone else's (a takeover refused), and the
/// account's issuer and `sub` are what tell an investigator who tried.
fn refuse(
    c: &rusqlite::Connection,
    claims: &Claims,
    user: Option<store::UserId>,
    ip: IpAddr,
    refusal: Refusal,
) -> Result<Result<SsoUser, Refusal>, store::Error> {
    let label = claims.email.as_deref().unwrap_or("sso");
    let account = SsoAccount {
        issuer: &claims.issuer,
        subject: &claims.subject,
    };
    tracing::info!(
        reason = refusal.code(),
        email = %loggable(label),
        subject = %loggable(account.subject),
        issuer = %account.issuer,
        %ip,
        "single sign-on refused for a verified provider account"
    );
    audit::record_sso_failure(c, label, user, ip, refusal.code(), Some(account))?;
    Ok(Err(refusal))
}

/// Logs a sign-in by a link whose provider account has another email than the Porch user: the
/// Porch email stays as it is until an admin changes it.
fn log_changed_email(claims: &Claims, owner: Option<&UserRow>) {
    if let (Some(owner), Some(email)) = (owner, &claims.email)
        && !owner.email.eq_ignore_ascii_case(email)
    {
        tracing::info!(
            user = %owner.email,
            provider_email = %loggable(email),
            subject = %loggable(&claims.subject),
            "single sign-on: signed in by the provider account's link; its email at the \
             provider is not the Porch account's"
        );
    }
}

/// Creates an agent for `email` (no password: they sign in through SSO, or ask for a reset
/// link), named by the token's `name`, else by the part of the email before `@`. `None` if the
/// email is not one Porch accepts.
fn provision(
    c: &rusqlite::Connection,
    email: &str,
    name: Option<&str>,
    ip: IpAddr,
) -> Result<Option<UserRow>, store::Error> {
    let Ok(email) = EmailAddress::parse(email) else {
        return Ok(None);
    };
    let local = email.as_str().split('@').next().unwrap_or_default();
    let Ok(name) = name
        .map_or_else(|| DisplayName::parse(local), DisplayName::parse)
        .or_else(|_| DisplayName::parse(local))
    else {
        return Ok(None);
    };
    let id = store::insert_user(
        c,
        &NewUser {
            email: email.as_str(),
            name: name.as_str(),
            role: Role::Agent.as_str(),
            password_hash: None,
            created_at: now_ms(),
        },
    )?;
    let user = store::find_user(c, id)?;
    if let Some(user) = &user {
        let (actor, target) = (Actor::user(user, ip), Target::user(user));
        let detail = json!({"role": user.role, "via": "sso"});
        audit::record(c, &actor, AuditAction::UserCreated, &target, &detail)?;
    }
    Ok(user)
}
