//! The `Accounts` use cases for the team: inviting, reset links, choosing a password through a
//! link, changing one's password, roles, and disabling. Admin-only checks are the caller's
//! (`admin` extractors); the rules that keep an install usable (never lose the last admin) are
//! here.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, AccountLinkRow, NewUser, UserId, UserRow};

use super::Error;
use super::identity::{DisplayName, EmailAddress, Role};
use super::password::{Password, hash_password, verify_password};
use super::session::{Accounts, hash_secret, new_secret};

/// Why someone without a password has none to change: they sign in through single sign-on (an
/// invited person without a password cannot be signed in at all).
const NO_PASSWORD_TO_CHANGE: &str = "You sign in with single sign-on and have no password \
     to change. Need one, for when the provider is down? Ask an admin for a reset link.";

/// How long an invitation link works.
pub const INVITE_LIFETIME: Duration = Duration::from_hours(7 * 24);
/// How long a password-reset link works: short, because it is as good as a password.
pub const RESET_LIFETIME: Duration = Duration::from_hours(24);

/// The two kinds of one-time link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Invite,
    Reset,
}

impl LinkKind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Invite => "invite",
            Self::Reset => "reset",
        }
    }

    /// Where the links of this kind are opened: `/{path}/{token}`.
    pub fn path(self) -> &'static str {
        match self {
            Self::Invite => "invitations",
            Self::Reset => "password-resets",
        }
    }

    /// The address a link of this kind is sent as: `{public_url}/{path}/{token}`.
    pub fn url(self, public_url: &str, token: &str) -> String {
        format!("{public_url}/{}/{token}", self.path())
    }

    fn lifetime(self) -> Duration {
        match self {
            Self::Invite => INVITE_LIFETIME,
            Self::Reset => RESET_LIFETIME,
        }
    }

    /// How long a link of this kind works, in words: "7 days", "24 hours".
    pub fn lasts(self) -> String {
        let hours = usize::try_from(self.lifetime().as_secs() / 3600).unwrap_or(usize::MAX);
        if hours > 24 && hours % 24 == 0 {
            porch_app::counted(hours / 24, "day")
        } else {
            porch_app::counted(hours, "hour")
        }
    }
}

/// The token of an address made by [`LinkKind::url`]: its last segment.
pub fn link_token(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or_default()
}

pub(super) fn expiry(kind: LinkKind, now: i64) -> i64 {
    now.saturating_add(i64::try_from(kind.lifetime().as_millis()).unwrap_or(i64::MAX))
}

async fn hash(password: Password) -> Result<String, Error> {
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|_| Error::Hashing)?
        .map_err(|_| Error::Hashing)
}

impl Accounts {
    /// Every user, for the team page.
    pub async fn list_users(&self) -> Result<Vec<UserRow>, Error> {
        Ok(self.readers.read(store::list_users).await?)
    }

    /// True if the user has chosen a password (so a new link for them is a reset).
    pub async fn has_password(&self, user: UserId) -> Result<bool, Error> {
        Ok(self
            .readers
            .read(move |c| store::has_password(c, user))
            .await?)
    }

    /// Creates a user without a password and returns the token of their invitation link.
    pub async fn invite_user(
        &self,
        actor: &Actor,
        by: UserId,
        email: &str,
        name: &str,
        role: &str,
    ) -> Result<String, Error> {
        let email = EmailAddress::parse_new(email)?;
        let name = DisplayName::parse(name)?;
        let role = Role::parse(role)?;
        let token = new_secret();
        let token_hash = hash_secret(&token);
        let now = now_ms();
        let actor = actor.clone();
        let created = self
            .writer
            .write(move |c| {
                if store::find_user_by_email(c, email.as_str())?.is_some() {
                    return Ok(false);
                }
                let id = store::insert_user(
                    c,
                    &NewUser {
                        email: email.as_str(),
                        name: name.as_str(),
                        role: role.as_str(),
                        password_hash: None,
                        created_at: now,
                    },
                )?;
                let kind = LinkKind::Invite;
                store::insert_account_link(
                    c,
                    &token_hash,
                    id,
                    kind.as_str(),
                    by,
                    now,
                    expiry(kind, now),
                )?;
                if let Some(user) = store::find_user(c, id)? {
                    let detail = json!({"role": user.role});
                    audit::record(
                        c,
                        &actor,
                        AuditAction::UserInvited,
                        &Target::user(&user),
                        &detail,
                    )?;
                }
                Ok(true)
            })
            .await?;
        if created {
            Ok(token)
        } else {
            // Also what reloading the page that showed an invitation's link answers: the
            // link is not shown twice, so say how to make a new one.
            Err(Error::Conflict(
                "A user with this email already exists (an invitation made already counts): to \
                 give them a new link, use Reset link next to their name below (enable a \
                 disabled one first).",
            ))
        }
    }

    /// Makes a new link for an existing user (a fresh invitation if they never chose a
    /// password, otherwise a reset), recorded as made by `by` from `ip`; older links of theirs
    /// of the same kind stop working. None for a disabled user: it could not be used while they
    /// are, and would open the account whenever they were enabled again.
    pub async fn create_link(
        &self,
        by: &UserRow,
        ip: IpAddr,
        user: UserId,
        kind: LinkKind,
    ) -> Result<String, Error> {
        let token = new_secret();
        let token_hash = hash_secret(&token);
        let now = now_ms();
        let (actor, by) = (Actor::user(by, ip), by.id);
        self.writer
            .write(move |c| {
                let Some(target) = store::find_user(c, user)? else {
                    return Ok(Err(Error::NotFound("user")));
                };
                if target.is_disabled {
                    return Ok(Err(Error::Conflict(
                        "This account is disabled: enable it first, then make the link.",
                    )));
                }
                store::insert_account_link(
                    c,
                    &token_hash,
                    target.id,
                    kind.as_str(),
                    by,
                    now,
                    expiry(kind, now),
                )?;
                let detail = json!({"kind": kind.as_str()});
                let target = Target::user(&target);
                audit::record(c, &actor, AuditAction::UserLinkCreated, &target, &detail)?;
                Ok(Ok(token))
            })
            .await?
    }

    /// The account a usable link belongs to.
    pub async fn find_link(&self, token: &str, kind: LinkKind) -> Result<AccountLinkRow, Error> {
        let token_hash = hash_secret(token);
        let now = now_ms();
        self.readers
            .read(move |c| store::find_account_link(c, &token_hash, kind.as_str(), now))
            .await?
            .ok_or(Error::LinkInvalid)
    }

    /// Sets the password of the link's user and spends the link; every other session of that
    /// user ends (a reset is often done because a password leaked).
    pub async fn complete_link(
        &self,
        token: &str,
        kind: LinkKind,
        password: &str,
        ip: IpAddr,
    ) -> Result<UserRow, Error> {
        let link = self.find_link(token, kind).await?;
        let hashed = hash(Password::parse(password)?).await?;
        let token_hash = hash_secret(token);
        let now = now_ms();
        let user = self
            .writer
            .write(move |c| {
                if !store::use_account_link(c, &token_hash, kind.as_str(), now)? {
                    return Ok(None);
                }
                store::update_password_hash(c, link.user_id, &hashed)?;
                // Any other link made for them (a second reset) is spent too: the password it
                // would set has just been chosen.
                store::spend_user_links(c, link.user_id, now)?;
                store::delete_user_sessions(c, link.user_id, None)?;
                let user = store::find_user(c, link.user_id)?;
                if let Some(user) = &user {
                    let (actor, detail) = (Actor::user(user, ip), json!({"via": kind.as_str()}));
                    audit::record(
                        c,
                        &actor,
                        AuditAction::UserPasswordChanged,
                        &Target::user(user),
                        &detail,
                    )?;
                }
                Ok(user)
            })
            .await?;
        let user = user.ok_or(Error::LinkInvalid)?;
        self.revocations.revoke_user(user.id, None);
        self.throttle.password_replaced(&user.email);
        Ok(user)
    }

    /// Changes a signed-in user's password after checking the current one; their other
    /// sessions end, `keep_session` (the cookie's hash source) stays.
    /// The current-password check shares the sign-in throttle of `email` from `ip`: a stolen
    /// session must not become an unthrottled password oracle.
    pub async fn change_password(
        &self,
        (user, email): (UserId, &str),
        current: &str,
        new: &str,
        keep_session: &str,
        ip: IpAddr,
    ) -> Result<(), Error> {
        let stored = self
            .readers
            .read(move |c| store::find_password_hash(c, user))
            .await?;
        // No password is not a wrong one: it is no guess, so it uses up nothing of the throttle;
        // and it is said whatever the new one is, there being nothing to change.
        let Some(stored) = stored else {
            return Err(Error::NoPassword(NO_PASSWORD_TO_CHANGE));
        };
        let new = Password::parse(new)?;
        self.throttle
            .reserve(email, ip, Instant::now())
            .map_err(|t| Error::Throttled(t.retry_after()))?;
        let candidate = current.to_owned();
        let is_match = tokio::task::spawn_blocking(move || verify_password(&stored, &candidate))
            .await
            .map_err(|_| Error::Hashing)?;
        if !is_match {
            return Err(Error::BadCredentials);
        }
        self.throttle.succeeded(email, ip);
        let hashed = hash(new).await?;
        let keep = hash_secret(keep_session);
        self.writer
            .write(move |c| {
                store::update_password_hash(c, user, &hashed)?;
                // A reset link made before, perhaps for someone who took the account over, must
                // not undo the change.
                store::spend_user_links(c, user, now_ms())?;
                if let Some(row) = store::find_user(c, user)? {
                    let (actor, detail) = (Actor::user(&row, ip), json!({"via": "account"}));
                    audit::record(
                        c,
                        &actor,
                        AuditAction::UserPasswordChanged,
                        &Target::user(&row),
                        &detail,
                    )?;
                }
                store::delete_user_sessions(c, user, Some(&keep))
            })
            .await?;
        self.revocations.revoke_user(user, Some(&keep));
        Ok(())
    }

    /// Ends every session of `user` but `keep_session` (the one asking), and their live streams:
    /// "End my other sessions" on the account page.
    pub async fn sign_out_elsewhere(
        &self,
        user: UserId,
        keep_session: &str,
        ip: IpAddr,
    ) -> Result<(), Error> {
        let keep = hash_secret(keep_session);
        self.writer
            .write(move |c| {
                if let Some(row) = store::find_user(c, user)? {
                    audit::record(
                        c,
                        &Actor::user(&row, ip),
                        AuditAction::SignedOutElsewhere,
                        &Target::user(&row),
                        &json!({}),
                    )?;
                }
                store::delete_user_sessions(c, user, Some(&keep))
            })
            .await?;
        self.revocations.revoke_user(user, Some(&keep));
        Ok(())
    }

    /// Changes a user's role; the last enabled admin cannot be demoted, and nobody changes their
    /// own (the team page offers no role on one's own row: an admin who demoted themselves by
    /// hand landed on a page they may no longer open). `false` when they had that role already:
    /// nothing is written or recorded.
    pub async fn change_role(
        &self,
        actor: &Actor,
        user: UserId,
        role: &str,
    ) -> Result<bool, Error> {
        if actor.user == Some(user) {
            return Err(Error::Conflict(
                "You cannot change your own role: another admin can.",
            ));
        }
        let role = Role::parse(role)?;
        let actor = actor.clone();
        self.writer
            .write(move |c| {
                let Some(target) = store::find_user(c, user)? else {
                    return Ok(Err(Error::NotFound("user")));
                };
                if target.role == role.as_str() {
                    return Ok(Ok(false));
                }
                if role == Role::Agent && store::count_other_admins(c, user)? == 0 {
                    return Ok(Err(Error::Conflict(
                        "This is the last admin; make someone else an admin first.",
                    )));
                }
                store::update_user_role(c, user, role.as_str())?;
                let detail = json!({"from": target.role, "to": role.as_str()});
                audit::record(
                    c,
                    &actor,
                    AuditAction::UserRoleChanged,
                    &Target::user(&target),
                    &detail,
                )?;
                Ok(Ok(true))
            })
            .await?
    }

    /// Changes a user's own display name (what visitors see next to their replies from now on;
    /// earlier messages keep the name they were sent with).
    pub async fn rename(&self, actor: &Actor, user: UserId, name: &str) -> Result<(), Error> {
        let name = DisplayName::parse(name)?;
        let actor = actor.clone();
        self.writer
            .write(move |c| {
                let Some(target) = store::find_user(c, user)? else {
                    return Ok(Err(Error::NotFound("user")));
                };
                if target.name == name.as_str() {
                    return Ok(Ok(()));
                }
                store::update_user_name(c, user, name.as_str())?;
                let detail = json!({"from": target.name, "to": name.as_str()});
                audit::record(
                    c,
                    &actor,
                    AuditAction::UserRenamed,
                    &Target::user(&target),
                    &detail,
                )?;
                Ok(Ok(()))
            })
            .await?
    }

    /// Disables (or re-enables) a user. A disabled user's sessions, unused links and API tokens
    /// are deleted in the same transaction, so a re-enable brings none of them back.
    pub async fn set_disabled(
        &self,
        actor: &Actor,
        user: UserId,
        is_disabled: bool,
    ) -> Result<(), Error> {
        if is_disabled && actor.user == Some(user) {
            return Err(Error::Conflict("You cannot disable yourself."));
        }
        let actor = actor.clone();
        self.writer
            .write(move |c| {
                let Some(target) = store::find_user(c, user)? else {
                    return Ok(Err(Error::NotFound("user")));
                };
                if is_disabled && store::count_other_admins(c, user)? == 0 {
                    return Ok(Err(Error::Conflict("The last admin cannot be disabled.")));
                }
                store::update_user_disabled(c, user, is_disabled)?;
                if is_disabled {
                    // Re-enabling must not bring old sign-ins or reset links back.
                    store::delete_user_sessions(c, user, None)?;
                    store::spend_user_links(c, user, now_ms())?;
                    store::delete_api_tokens_of(c, user)?;
                }
                let action = if is_disabled {
                    AuditAction::UserDisabled
                } else {
                    AuditAction::UserEnabled
                };
                audit::record(c, &actor, action, &Target::user(&target), &json!({}))?;
                Ok(Ok(()))
            })
            .await??;
        if is_disabled {
            self.revocations.revoke_user(user, None);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_s_token_is_read_back_from_the_address_it_is_sent_as() {
        for kind in [LinkKind::Invite, LinkKind::Reset] {
            let url = kind.url("https://chat.example.org/porch", "t0k3n");
            assert!(url.starts_with("https://chat.example.org/porch/"), "{url}");
            assert_eq!(link_token(&url), "t0k3n", "{url}");
        }
    }

    /// The team page says how long a new link works, as the link's expiry is reckoned.
    #[test]
    fn a_links_lifetime_is_said_in_words() {
        assert_eq!(LinkKind::Invite.lasts(), "7 days");
        assert_eq!(LinkKind::Reset.lasts(), "24 hours");
    }
}
