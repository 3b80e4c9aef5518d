//! The `Accounts` use cases for two-factor sign-in on the account and team pages: setting it up
//! (a pending secret until a first correct code), recovery codes, switching it off, an admin's
//! reset for a lost phone, and the team's requirement. The second step of signing in is
//! `challenge`'s; the code arithmetic is `totp`'s.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use rusqlite::Connection;
use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::secrets::SecretKey;
use crate::store::{self, UserId, UserRow};

use super::Error;
use super::password::verify_password;
use super::session::{Accounts, hash_secret};
use super::totp::{TotpSecret, is_one_time_code, new_recovery_codes, normalize_recovery_code};
use super::totp_sealing::{open_totp, seal_totp};

/// Why someone without a password cannot set two-factor up: it guards password sign-ins only,
/// and single sign-on is theirs (docs/sso.md).
const NO_PASSWORD_FOR_TWO_FACTOR: &str = "Two-factor sign-in guards sign-ins with a password, \
     and you sign in with single sign-on, where your provider asks for any second step.";

/// A setup waiting for its first code: what the person copies into their app.
#[derive(Debug, Clone)]
pub struct Enrolment {
    /// The secret in base32, grouped for typing.
    pub secret_text: String,
    /// The `otpauth://` URI the QR code holds.
    pub uri: String,
}

/// Where a user stands with two-factor sign-in.
#[derive(Debug, Clone, Copy)]
pub struct TwoFactorStatus {
    pub is_on: bool,
    /// A setup was started and waits for its first code.
    pub is_pending: bool,
    pub recovery_codes_left: i64,
    /// The team requires it (then it cannot be switched off).
    pub is_required: bool,
}

/// Which second factor passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondFactor {
    Totp,
    RecoveryCode,
}

impl SecondFactor {
    /// The name recorded in audit details.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Totp => "totp",
            Self::RecoveryCode => "recovery_code",
        }
    }
}

fn unix_seconds() -> u64 {
    u64::try_from(now_ms() / 1000).unwrap_or(0)
}

/// Checks `code` (a one-time code or a recovery code) against the user's switched-on factor and
/// spends it: the code's time step is recorded as used (no replay), a recovery code is marked
/// used. Runs inside the caller's writer transaction, so two racing uses cannot both pass.
pub(super) fn spend_second_factor(
    c: &Connection,
    key: &SecretKey,
    user: UserId,
    code: &str,
) -> Result<Option<SecondFactor>, store::Error> {
    let Some(row) = store::load_totp_secret(c, user)?.filter(|r| r.is_confirmed) else {
        return Ok(None);
    };
    if is_one_time_code(code) {
        let secret = open_totp(key, user, &row.secret)?;
        let after = row.last_step.and_then(|s| u64::try_from(s).ok());
        let Some(step) = secret.matching_step(code, unix_seconds(), after) else {
            return Ok(None);
        };
        let step = i64::try_from(step).unwrap_or(i64::MAX);
        return Ok(store::use_totp_step(c, user, step)?.then_some(SecondFactor::Totp));
    }
    let hash = hash_secret(&normalize_recovery_code(code));
    Ok(store::use_recovery_code(c, user, &hash, now_ms())?.then_some(SecondFactor::RecoveryCode))
}

/// Switches the user's pending factor on if `code` is its current code, and gives them a fresh
/// set of recovery codes (returned to be shown once; only hashes are kept). `None` if the code
/// is wrong or nothing is pending.
pub(super) fn confirm_pending(
    c: &Connection,
    key: &SecretKey,
    (actor, user): (&Actor, &UserRow),
    code: &str,
) -> Result<Option<Vec<String>>, store::Error> {
    let Some(row) = store::load_totp_secret(c, user.id)?.filter(|r| !r.is_confirmed) else {
        return Ok(None);
    };
    let secret = open_totp(key, user.id, &row.secret)?;
    let Some(step) = secret.matching_step(code, unix_seconds(), None) else {
        return Ok(None);
    };
    store::confirm_totp(
        c,
        user.id,
        i64::try_from(step).unwrap_or(i64::MAX),
        now_ms(),
    )?;
    let codes = replace_codes(c, user.id)?;
    audit::record(
        c,
        actor,
        AuditAction::TwoFactorEnabled,
        &Target::user(user),
        &json!({}),
    )?;
    Ok(Some(codes))
}

fn replace_codes(c: &Connection, user: UserId) -> Result<Vec<String>, store::Error> {
    let codes = new_recovery_codes();
    let hashes: Vec<[u8; 32]> = codes
        .iter()
        .map(|code| hash_secret(&normalize_recovery_code(code)))
        .collect();
    store::replace_recovery_codes(c, user, &hashes)?;
    Ok(codes)
}

/// The user's pending setup, started now if there is none. `None` once the factor is on.
pub(super) fn pending_or_new(
    c: &Connection,
    key: &SecretKey,
    user: &UserRow,
) -> Result<Option<Enrolment>, store::Error> {
    let secret = match store::load_totp_secret(c, user.id)? {
        Some(row) if row.is_confirmed => return Ok(None),
        Some(row) => open_totp(key, user.id, &row.secret)?,
        None => {
            let secret = TotpSecret::generate();
            let sealed = seal_totp(key, user.id, &secret)?;
            store::save_totp_secret(c, user.id, &sealed, now_ms())?;
            secret
        }
    };
    Ok(Some(Enrolment {
        secret_text: secret.to_display(),
        uri: secret.uri(&user.email),
    }))
}

/// Removes `user`'s factor and recovery codes and ends their sessions, recording
/// `two_factor.reset` by `actor`: an admin's (or the command line's) answer to a lost phone.
/// False if the user had no factor. Shared by the team page and `porch user reset-2fa`.
///
/// # Errors
/// Only the store's.
pub fn reset_two_factor_in(
    c: &Connection,
    actor: &Actor,
    user: &UserRow,
) -> Result<bool, store::Error> {
    if !store::delete_two_factor(c, user.id)? {
        return Ok(false);
    }
    // Whoever has the lost phone may also have a session on it.
    store::delete_user_sessions(c, user.id, None)?;
    audit::record(
        c,
        actor,
        AuditAction::TwoFactorReset,
        &Target::user(user),
        &json!({}),
    )?;
    Ok(true)
}

impl Accounts {
    /// Where `user` stands with two-factor sign-in.
    pub async fn two_factor_status(&self, user: UserId) -> Result<TwoFactorStatus, Error> {
        Ok(self
            .readers
            .read(move |c| {
                let row = store::load_totp_secret(c, user)?;
                Ok(TwoFactorStatus {
                    is_on: row.as_ref().is_some_and(|r| r.is_confirmed),
                    is_pending: row.as_ref().is_some_and(|r| !r.is_confirmed),
                    recovery_codes_left: store::count_unused_recovery_codes(c, user)?,
                    is_required: store::find_two_factor_required(c)?,
                })
            })
            .await?)
    }

    /// Two-factor guards password sign-ins only: someone who signs in through single sign-on
    /// (no password) is told so instead of setting up what would never be asked.
    async fn refuse_without_password(&self, user: &UserRow) -> Result<(), Error> {
        if self.has_password(user.id).await? {
            Ok(())
        } else {
            Err(Error::NoPassword(NO_PASSWORD_FOR_TWO_FACTOR))
        }
    }

    /// Starts (or continues) setting up two-factor sign-in: the pending secret to show.
    pub async fn begin_two_factor(&self, user: &UserRow) -> Result<Enrolment, Error> {
        self.refuse_without_password(user).await?;
        let (user, key) = (user.clone(), Arc::clone(&self.key));
        self.writer
            .write(move |c| pending_or_new(c, &key, &user))
            .await?
            .ok_or(Error::Conflict("Two-factor sign-in is already on."))
    }

    /// Switches two-factor sign-in on with the first correct code; returns the recovery codes
    /// to show once.
    pub async fn confirm_two_factor(
        &self,
        user: &UserRow,
        code: &str,
        ip: IpAddr,
    ) -> Result<Vec<String>, Error> {
        // A setup begun before the rule (or in another tab) is not finished either.
        self.refuse_without_password(user).await?;
        let (actor, user, code) = (Actor::user(user, ip), user.clone(), code.to_owned());
        let key = Arc::clone(&self.key);
        self.writer
            .write(move |c| confirm_pending(c, &key, (&actor, &user), &code))
            .await?
            .ok_or(Error::BadCode)
    }

    /// Replaces the user's recovery codes after a good code (the authenticator or a recovery
    /// code); code attempts are throttled like sign-in codes.
    pub async fn regenerate_recovery_codes(
        &self,
        user: &UserRow,
        code: &str,
        ip: IpAddr,
    ) -> Result<Vec<String>, Error> {
        self.code_throttle
            .reserve(&user.email, ip, Instant::now())
            .map_err(|t| Error::Throttled(t.retry_after()))?;
        let (actor, row, code) = (Actor::user(user, ip), user.clone(), code.to_owned());
        let key = Arc::clone(&self.key);
        let codes = self
            .writer
            .write(move |c| {
                if spend_second_factor(c, &key, row.id, &code)?.is_none() {
                    return Ok(None);
                }
                let codes = replace_codes(c, row.id)?;
                let (action, target) = (
                    AuditAction::TwoFactorRecoveryRegenerated,
                    Target::user(&row),
                );
                audit::record(c, &actor, action, &target, &json!({}))?;
                Ok(Some(codes))
            })
            .await?
            .ok_or(Error::BadCode)?;
        self.code_throttle.succeeded(&user.email, ip);
        Ok(codes)
    }

    /// Switches two-factor sign-in off, after the current password (sharing the sign-in
    /// throttle) and a good code. Refused while the team requires it.
    pub async fn disable_two_factor(
        &self,
        user: &UserRow,
        (password, code): (&str, &str),
        ip: IpAddr,
    ) -> Result<(), Error> {
        self.throttle
            .reserve(&user.email, ip, Instant::now())
            .map_err(|t| Error::Throttled(t.retry_after()))?;
        let id = user.id;
        let stored = self
            .readers
            .read(move |c| store::find_password_hash(c, id))
            .await?;
        let candidate = password.to_owned();
        let is_match = tokio::task::spawn_blocking(move || {
            stored.is_some_and(|h| verify_password(&h, &candidate))
        })
        .await
        .map_err(|_| Error::Hashing)?;
        if !is_match {
            return Err(Error::BadCredentials);
        }
        let (actor, row, code) = (Actor::user(user, ip), user.clone(), code.to_owned());
        let key = Arc::clone(&self.key);
        self.writer
            .write(move |c| {
                if store::find_two_factor_required(c)? {
                    return Ok(Err(Error::Conflict(
                        "The team requires two-factor sign-in; an admin can reset yours instead.",
                    )));
                }
                if spend_second_factor(c, &key, row.id, &code)?.is_none() {
                    return Ok(Err(Error::BadCode));
                }
                store::delete_two_factor(c, row.id)?;
                let target = Target::user(&row);
                audit::record(
                    c,
                    &actor,
                    AuditAction::TwoFactorDisabled,
                    &target,
                    &json!({}),
                )?;
                Ok(Ok(()))
            })
            .await??;
        self.throttle.succeeded(&user.email, ip);
        Ok(())
    }

    /// An admin resets another user's two-factor sign-in (lost phone); their sessions end.
    pub async fn reset_two_factor(&self, actor: &Actor, user: UserId) -> Result<(), Error> {
        let actor = actor.clone();
        self.writer
            .write(move |c| {
                let Some(target) = store::find_user(c, user)? else {
                    return Ok(Err(Error::NotFound("user")));
                };
                if reset_two_factor_in(c, &actor, &target)? {
                    Ok(Ok(()))
                } else {
                    Ok(Err(Error::Conflict("This user has no two-factor sign-in.")))
                }
            })
            .await??;
        self.revocations.revoke_user(user, None);
        Ok(())
    }

    /// Who has two-factor sign-in on, and whether the team requires it (for the team page).
    pub async fn team_two_factor(&self) -> Result<(Vec<UserId>, bool), Error> {
        Ok(self
            .readers
            .read(|c| {
                Ok((
                    store::list_two_factor_users(c)?,
                    store::find_two_factor_required(c)?,
                ))
            })
            .await?)
    }

    /// Sets whether the team requires two-factor sign-in. Turning it on signs out everyone
    /// without it (they set it up at their next sign-in); the admin doing it must have it.
    pub async fn set_two_factor_required(
        &self,
        actor: &Actor,
        is_required: bool,
    ) -> Result<(), Error> {
        let actor = actor.clone();
        let signed_out = self
            .writer
            .write(move |c| {
                let own = match actor.user {
                    Some(id) => store::load_totp_secret(c, id)?,
                    None => None,
                };
                if is_required && !own.is_some_and(|r| r.is_confirmed) {
                    return Ok(Err(Error::Conflict(
                        "Set up two-factor sign-in for yourself first (on your account page).",
                    )));
                }
                store::update_two_factor_required(c, is_required)?;
                let signed_out = if is_required {
                    store::delete_sessions_without_two_factor(c)?
                } else {
                    Vec::new()
                };
                let detail = json!({"required": is_required, "signed_out": signed_out.len()});
                let target = Target::setting("two_factor_required");
                audit::record(
                    c,
                    &actor,
                    AuditAction::TeamTwoFactorRequired,
                    &target,
                    &detail,
                )?;
                Ok(Ok(signed_out))
            })
            .await??;
        for user in signed_out {
            self.revocations.revoke_user(user, None);
        }
        Ok(())
    }
}
