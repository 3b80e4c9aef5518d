//! The `Accounts` use cases for getting in: the first-run setup, signing in and out, and
//! looking up a session from its cookie value.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::{millis, now_ms};
use crate::secrets::SecretKey;
use crate::store::{self, NewSession, NewUser, Readers, SessionRow, UserId, UserRow, Writer};

use super::Error;
use super::challenge::PendingSignIns;
use super::identity::{DisplayName, EmailAddress, Role};
use super::password::{Password, hash_password, verify_password};
use super::reset_request::ResetRequests;
use super::revocation::{Revocations, SessionWatch};
use super::throttle::{LoginThrottle, Throttled};
use super::two_factor::SecondFactor;

/// The audit actor of sign-ins refused because their address is over its limit: the emails such
/// a flood types are the attacker's choice (docs/admin.md, "Failed and throttled sign-ins").
pub const ANY_EMAIL: &str = "(any email)";

/// How long a session lasts. Fixed, not sliding: a stolen cookie stops working by itself.
pub const SESSION_LIFETIME: Duration = Duration::from_hours(14 * 24);
/// How often a live stream looks for its session in the database, so that one ended by another
/// process (the command line) ends its streams within this long.
pub const SESSION_RECHECK: Duration = Duration::from_secs(5);

/// The session cookie's name over plain http (`admin::session` adds the `__Host-` prefix over
/// https). Its value is a random secret; the database keeps only its hash. The load test's
/// agents send it too, so it lives here rather than with the HTTP extractors.
pub const SESSION_COOKIE: &str = "porch_session";

/// 32 random bytes, URL-safe: session ids, CSRF tokens, link tokens, the setup token.
pub(crate) fn new_secret() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// A random token for the forms shown before signing in (see `admin::session`).
pub fn new_form_token() -> String {
    new_secret()
}

/// What the database keeps of a secret.
pub(crate) fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// A session just created: the cookie value (shown to the browser once) and its CSRF token.
#[derive(Debug, Clone)]
pub struct NewSessionSecret {
    pub cookie_value: String,
    pub csrf_token: String,
}

/// The account use cases. Shared by every request.
pub struct Accounts {
    pub(super) writer: Arc<Writer>,
    pub(super) readers: Arc<Readers>,
    /// Seals the TOTP secrets (`totp_sealing`).
    pub(super) key: Arc<SecretKey>,
    pub(super) throttle: LoginThrottle,
    /// Second-step code attempts, counted apart from passwords: a right password must not
    /// clear the count of wrong codes, or guessing codes would only cost a password entry.
    pub(super) code_throttle: LoginThrottle,
    /// "Forgot your password?" requests per address and links per account.
    pub(super) reset_requests: ResetRequests,
    /// Sign-ins waiting for their second step.
    pub(super) pending: PendingSignIns,
    /// Open live streams, ended when their session is.
    pub(super) revocations: Revocations,
    /// The first-run setup token, while no user exists. Only in memory: each start of a fresh
    /// install prints a new one, and it is taken (single use) by the setup that succeeds.
    setup_token: Mutex<Option<String>>,
    /// A real argon2id hash to verify against when the email is unknown, so that the answer
    /// takes as long as for a known one. Made on first use.
    dummy_hash: OnceLock<String>,
}

async fn hash_off_thread(password: Password) -> Result<String, Error> {
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|_| Error::Hashing)?
        .map_err(|_| Error::Hashing)
}

impl Accounts {
    pub fn new(writer: Arc<Writer>, readers: Arc<Readers>, key: Arc<SecretKey>) -> Self {
        Self {
            writer,
            readers,
            key,
            throttle: LoginThrottle::default(),
            code_throttle: LoginThrottle::default(),
            reset_requests: ResetRequests::default(),
            pending: PendingSignIns::default(),
            revocations: Revocations::default(),
            setup_token: Mutex::new(None),
            dummy_hash: OnceLock::new(),
        }
    }

    /// True while no user exists: the install needs its first admin.
    pub async fn needs_setup(&self) -> Result<bool, Error> {
        Ok(self.readers.read(store::count_users).await? == 0)
    }

    /// On a fresh install, makes the one-time setup token and logs where to use it; the
    /// person who can read the server log is the one who may create the first admin.
    pub async fn prepare_first_run(&self, public_url: &str) -> Result<(), Error> {
        if !self.needs_setup().await? {
            return Ok(());
        }
        let token = new_secret();
        tracing::warn!(
            "first run: no admin exists yet. Open {public_url}/setup and enter the setup token {token}"
        );
        if let Ok(mut slot) = self.setup_token.lock() {
            *slot = Some(token);
        }
        Ok(())
    }

    /// The setup token while the install waits for its first admin: repeated on the start's
    /// last log line, and read by tests, which run the server in-process.
    pub fn pending_setup_token(&self) -> Option<String> {
        self.setup_token.lock().ok().and_then(|slot| slot.clone())
    }

    /// Creates the first admin, if `token` is the setup token and still no user exists.
    pub async fn create_first_admin(
        &self,
        token: &str,
        email: &str,
        name: &str,
        password: &str,
        ip: IpAddr,
    ) -> Result<UserRow, Error> {
        let token_ok = self
            .setup_token
            .lock()
            .ok()
            .and_then(|slot| {
                slot.as_ref()
                    .map(|t| bool::from(t.as_bytes().ct_eq(token.trim().as_bytes())))
            })
            .unwrap_or(false);
        if !token_ok {
            return Err(if self.needs_setup().await? {
                Error::BadSetupToken
            } else {
                Error::SetupClosed
            });
        }
        let email = EmailAddress::parse(email)?;
        let name = DisplayName::parse(name)?;
        let hash = hash_off_thread(Password::parse(password)?).await?;
        let created = self
            .writer
            .write(move |c| {
                // Checked inside the transaction: two racing setups cannot both succeed.
                if store::count_users(c)? > 0 {
                    return Ok(None);
                }
                let new = NewUser {
                    email: email.as_str(),
                    name: name.as_str(),
                    role: Role::Admin.as_str(),
                    password_hash: Some(&hash),
                    created_at: now_ms(),
                };
                let id = store::insert_user(c, &new)?;
                let user = store::find_user(c, id)?;
                if let Some(user) = &user {
                    let (actor, target) = (Actor::user(user, ip), Target::user(user));
                    let detail = json!({"role": user.role, "via": "setup"});
                    audit::record(c, &actor, AuditAction::UserCreated, &target, &detail)?;
                }
                Ok(user)
            })
            .await?;
        let user = created.ok_or(Error::SetupClosed)?;
        if let Ok(mut slot) = self.setup_token.lock() {
            *slot = None;
        }
        tracing::info!(email = %user.email, "first admin created; the setup token is spent");
        Ok(user)
    }

    /// Checks an email and password, with throttling per account and per address.
    pub async fn sign_in(&self, email: &str, password: &str, ip: IpAddr) -> Result<UserRow, Error> {
        let email = email.trim().to_owned();
        // Reserved before argon2 runs, so parallel guesses cannot all pass.
        if let Err(throttled) = self.throttle.reserve(&email, ip, Instant::now()) {
            // An address over its own limit is recorded whatever email it typed: a flood of
            // made-up emails then adds one row a minute, not one per email.
            let actor = match throttled {
                Throttled::Address(_) => ANY_EMAIL.to_owned(),
                Throttled::Account(_) => email,
            };
            self.record_attempt(AuditAction::SignInThrottled, actor, None, ip)
                .await;
            return Err(Error::Throttled(throttled.retry_after()));
        }
        let lookup = email.clone();
        let found = self
            .readers
            .read(move |c| store::find_user_credentials(c, &lookup))
            .await?;
        let stored = found.as_ref().and_then(|f| f.password_hash.clone());
        let dummy = self.dummy_hash.get().cloned();
        let candidate = password.to_owned();
        let (is_match, dummy) = tokio::task::spawn_blocking(move || match stored {
            Some(hash) => (verify_password(&hash, &candidate), None),
            None => {
                let dummy = dummy.or_else(|| {
                    Password::parse("no account has this password")
                        .ok()
                        .and_then(|p| hash_password(&p).ok())
                });
                if let Some(hash) = &dummy {
                    verify_password(hash, &candidate);
                }
                (false, dummy)
            }
        })
        .await
        .map_err(|_| Error::Hashing)?;
        if let Some(dummy) = dummy {
            let _ = self.dummy_hash.set(dummy);
        }
        match found {
            Some(found) if is_match && found.user.is_disabled => {
                let user = Some(found.user.id);
                self.record_attempt(AuditAction::SignInFailed, email, user, ip)
                    .await;
                Err(Error::Disabled)
            }
            Some(found) if is_match => {
                self.throttle.succeeded(&email, ip);
                Ok(found.user)
            }
            found => {
                let user = found.map(|f| f.user.id);
                self.record_attempt(AuditAction::SignInFailed, email, user, ip)
                    .await;
                Err(Error::BadCredentials)
            }
        }
    }

    /// Records a failed or throttled sign-in. Deferred: it needs no commit of its own, and a
    /// lost record (the writer busy or stopping) must not turn the answer into a 500.
    pub(super) async fn record_attempt(
        &self,
        action: AuditAction,
        email: String,
        user: Option<UserId>,
        ip: IpAddr,
    ) {
        let recorded = self
            .writer
            .write_deferred(move |c| audit::record_sign_in_attempt(c, action, &email, user, ip))
            .await;
        if let Err(err) = recorded {
            tracing::warn!(error = %err, action = action.as_str(), "could not record a sign-in attempt");
        }
    }

    /// Starts a session for a user who just proved who they are, from `ip` (with a second
    /// factor, recorded in the audit event, when they have one).
    pub async fn start_session(
        &self,
        user: &UserRow,
        ip: IpAddr,
        second_factor: Option<SecondFactor>,
    ) -> Result<NewSessionSecret, Error> {
        let detail =
            second_factor.map_or_else(|| json!({}), |how| json!({"second_factor": how.as_str()}));
        self.open_session(user, ip, detail).await
    }

    /// Starts a session, recording `session.signed_in` with `detail` (how they signed in).
    pub(super) async fn open_session(
        &self,
        user: &UserRow,
        ip: IpAddr,
        detail: serde_json::Value,
    ) -> Result<NewSessionSecret, Error> {
        let secret = NewSessionSecret {
            cookie_value: new_secret(),
            csrf_token: new_secret(),
        };
        let id_hash = hash_secret(&secret.cookie_value);
        let csrf = secret.csrf_token.clone();
        let user_id = user.id;
        let now = now_ms();
        let (actor, target) = (Actor::user(user, ip), Target::user(user));
        self.writer
            .write(move |c| {
                audit::record(c, &actor, AuditAction::SignedIn, &target, &detail)?;
                // Sweeping here keeps the table small without a timer of its own.
                store::delete_expired_sessions(c, now)?;
                store::insert_session(
                    c,
                    &NewSession {
                        id_hash: &id_hash,
                        user_id,
                        csrf_token: &csrf,
                        now,
                        expires_at: now.saturating_add(millis(SESSION_LIFETIME)),
                    },
                )
            })
            .await?;
        Ok(secret)
    }

    /// The live session behind a cookie value (its user enabled, not expired).
    pub async fn find_session(&self, cookie_value: &str) -> Result<Option<SessionRow>, Error> {
        let id_hash = hash_secret(cookie_value);
        let now = now_ms();
        Ok(self
            .readers
            .read(move |c| store::find_session(c, &id_hash, now))
            .await?)
    }

    /// Ends the session behind a cookie value (sign out by `user` from `ip`, recorded), and its
    /// live streams.
    pub async fn end_session(
        &self,
        cookie_value: &str,
        user: &UserRow,
        ip: IpAddr,
    ) -> Result<(), Error> {
        self.end_session_recorded(cookie_value, user, ip, json!({}))
            .await
    }

    async fn end_session_recorded(
        &self,
        cookie_value: &str,
        user: &UserRow,
        ip: IpAddr,
        detail: serde_json::Value,
    ) -> Result<(), Error> {
        let id_hash = hash_secret(cookie_value);
        let (actor, target) = (Actor::user(user, ip), Target::user(user));
        self.writer
            .write(move |c| {
                // Recorded only for a session that was there: two tabs signing out (or a sign-in
                // replacing one just signed out) record one sign-out.
                if store::delete_session(c, &id_hash)? {
                    audit::record(c, &actor, AuditAction::SignedOut, &target, &detail)?;
                }
                Ok(())
            })
            .await?;
        self.revocations.revoke_session(&id_hash);
        Ok(())
    }

    /// Ends the session behind the cookie a browser still holds when a sign-in in that browser
    /// gives it a new one (another account's, or the same person's again): the new cookie
    /// overwrites the old, so nobody could sign the old session out any more, and it would stay
    /// valid for whoever copied it. Recorded as a sign-out with `{"replaced": true}`. A cookie
    /// that names no live session changes nothing.
    pub async fn end_replaced_session(&self, cookie_value: &str, ip: IpAddr) -> Result<(), Error> {
        match self.find_session(cookie_value).await? {
            Some(old) => {
                self.end_session_recorded(cookie_value, &old.user, ip, json!({"replaced": true}))
                    .await
            }
            None => Ok(()),
        }
    }

    /// Resolves when the session of a live stream watched by `watch` ends: revoked in this
    /// process, expired, or gone from the database. The last is how a session ended by another
    /// process is found (`porch user set-password` or `reset-2fa` beside the running server,
    /// sharing no memory with it): checked every [`SESSION_RECHECK`], one indexed read per
    /// stream. Until 2026-12-07 such a stream ran until it reconnected, which a stolen
    /// session's holder need never do.
    pub async fn session_ended(&self, watch: &SessionWatch, cookie_value: &str) {
        let gone = async {
            loop {
                tokio::time::sleep(SESSION_RECHECK).await;
                // A failed read (the database busy) is no proof either way: look again later.
                if matches!(self.find_session(cookie_value).await, Ok(None)) {
                    return;
                }
            }
        };
        tokio::select! {
            () = watch.ended() => {}
            () = gone => {}
        }
    }

    /// Watches the session behind a cookie value for one live stream, which must stop when
    /// `ended()` resolves (revoked or expired). `None` when the session already ended: it is
    /// checked again after registering, so a revocation between the stream's first check and now
    /// is not missed.
    pub async fn watch_session(
        &self,
        cookie_value: &str,
        user: UserId,
    ) -> Result<Option<SessionWatch>, Error> {
        let watch = self.revocations.watch(hash_secret(cookie_value), user);
        // Sessions have a fixed lifetime, so the expiry read now is the one that holds.
        Ok(self
            .find_session(cookie_value)
            .await?
            .map(|session| watch.expiring_at(session.expires_at)))
    }
}
