//! The second step of signing in. After a right password, a user with two-factor sign-in (or
//! one the team requires to set it up) gets a half-finished sign-in instead of a session: a
//! random token, kept in memory for 5 minutes, good for one finished sign-in. No session exists
//! until a code (or a recovery code) passes; code attempts are throttled like passwords.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::store::{self, UserId, UserRow};

use super::Error;
use super::session::{Accounts, NewSessionSecret, hash_secret, new_secret};
use super::totp::{is_one_time_code, normalize_recovery_code};
use super::two_factor::{
    Enrolment, SecondFactor, confirm_pending, pending_or_new, spend_second_factor,
};

/// How long a half-finished sign-in waits for its second step.
pub const SECOND_STEP_LIFETIME: Duration = Duration::from_mins(5);
/// Half-finished sign-ins kept at most (each needs a right password, so this is generous);
/// past it expired ones are swept, then the oldest is dropped.
const MAX_PENDING: usize = 10_000;

/// A password-checked sign-in waiting for its second step.
#[derive(Debug, Clone)]
pub struct PendingSignIn {
    pub user: UserId,
    pub email: String,
    /// Where the sign-in leads once finished (already checked to be a local path).
    pub next: String,
    /// The team requires two-factor and the user has none: they set it up first.
    pub must_enrol: bool,
    started: Instant,
    /// Codes sent for this sign-in are checked one at a time: a racer (a double-click, a retry
    /// on a slow link) waits for the first, then finds the sign-in finished and spends nothing.
    /// Checked together, every racer spent its recovery code and only one made a session.
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Once finished: what it handed out, kept until the sign-in would have expired.
    finished: Option<Arc<Finished>>,
}

/// A finished sign-in, for a repeat of its code from the same browser. A double-click sends the
/// code twice, and the browser shows the answer to the second request only: that answer must
/// sign in too (and show the recovery codes of a setup), not say the sign-in expired while the
/// session it made went to an answer nobody saw.
struct Finished {
    /// The hash of the code that finished it, as typed once normalized.
    code: [u8; 32],
    signed_in: FinishedSignIn,
    /// A setup's new recovery codes (empty for a sign-in with a code).
    recovery_codes: Vec<String>,
}

/// Never the secrets it holds (a session cookie, recovery codes), should a sign-in be logged.
impl std::fmt::Debug for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Finished { .. }")
    }
}

/// The hash a finishing code is remembered by: spaces, dashes and case as a recovery code
/// ignores them.
fn code_key(code: &str) -> [u8; 32] {
    hash_secret(&normalize_recovery_code(code))
}

/// Half-finished sign-ins by their token's hash.
#[derive(Default)]
pub struct PendingSignIns {
    map: Mutex<HashMap<[u8; 32], PendingSignIn>>,
}

fn is_live(pending: &PendingSignIn, now: Instant) -> bool {
    now.saturating_duration_since(pending.started) < SECOND_STEP_LIFETIME
}

impl PendingSignIns {
    fn insert(&self, pending: PendingSignIn, now: Instant) -> String {
        let token = new_secret();
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        // Expired ones go at every insert: a finished one holds its session's secret until then.
        map.retain(|_, p| is_live(p, now));
        if map.len() >= MAX_PENDING
            && let Some(oldest) = map.iter().min_by_key(|(_, p)| p.started).map(|(k, _)| *k)
        {
            map.remove(&oldest);
        }
        map.insert(hash_secret(&token), pending);
        token
    }

    /// The live sign-in behind `token`, finished or not.
    fn find_any(&self, token: &str, now: Instant) -> Option<PendingSignIn> {
        let map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&hash_secret(token))
            .filter(|p| is_live(p, now))
            .cloned()
    }

    /// The live sign-in behind `token` while it still waits for its second step.
    fn find(&self, token: &str, now: Instant) -> Option<PendingSignIn> {
        self.find_any(token, now).filter(|p| p.finished.is_none())
    }

    /// Marks the sign-in finished with what it handed out; false if it is gone or was finished.
    /// Its lifetime is not checked again: its code is spent and its session made, so a sign-in
    /// that ran out meanwhile still finishes rather than leave that session to nobody.
    fn finish(&self, token: &str, finished: Finished) -> bool {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        match map.get_mut(&hash_secret(token)) {
            Some(pending) if pending.finished.is_none() => {
                pending.finished = Some(Arc::new(finished));
                true
            }
            _ => false,
        }
    }

    /// Ends the sign-in (its user was disabled meanwhile, or another code came after it finished).
    fn take(&self, token: &str, now: Instant) -> Option<PendingSignIn> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        map.remove(&hash_secret(token)).filter(|p| is_live(p, now))
    }
}

/// What a right password leads to.
#[derive(Debug)]
pub enum AfterPassword {
    /// Signed in: no second factor needed.
    Session(NewSessionSecret),
    /// The second step's token: a code is needed.
    SecondStep(String),
    /// The second step's token: two-factor must be set up first.
    Enrol(String),
}

/// A finished sign-in: the session, and where to go.
#[derive(Debug, Clone)]
pub struct FinishedSignIn {
    pub session: NewSessionSecret,
    pub next: String,
}

impl Accounts {
    /// Decides what follows a right password for `user`: a session, or a second step.
    pub async fn after_password(
        &self,
        user: &UserRow,
        next: &str,
        ip: IpAddr,
    ) -> Result<AfterPassword, Error> {
        let id = user.id;
        let (has_factor, is_required) = self
            .readers
            .read(move |c| {
                Ok((
                    store::load_totp_secret(c, id)?.is_some_and(|r| r.is_confirmed),
                    store::find_two_factor_required(c)?,
                ))
            })
            .await?;
        if !has_factor && !is_required {
            return Ok(AfterPassword::Session(
                self.start_session(user, ip, None).await?,
            ));
        }
        let now = Instant::now();
        let pending = PendingSignIn {
            user: user.id,
            email: user.email.clone(),
            next: next.to_owned(),
            must_enrol: !has_factor,
            started: now,
            turn: Arc::default(),
            finished: None,
        };
        let token = self.pending.insert(pending, now);
        Ok(if has_factor {
            AfterPassword::SecondStep(token)
        } else {
            AfterPassword::Enrol(token)
        })
    }

    /// The half-finished sign-in behind a token, while it is usable.
    pub fn pending_sign_in(&self, token: &str) -> Option<PendingSignIn> {
        self.pending.find(token, Instant::now())
    }

    /// Finishes a sign-in with a one-time code or a recovery code. A wrong code keeps the
    /// half-finished sign-in (until it expires or the throttle stops it) and is recorded as a
    /// failed sign-in.
    pub async fn finish_sign_in(
        &self,
        token: &str,
        code: &str,
        ip: IpAddr,
    ) -> Result<FinishedSignIn, Error> {
        let (_turn, pending) = match self.take_turn(token, code, false, ip).await? {
            Turn::Yours(turn, pending) => (turn, pending),
            Turn::Repeat(done) => return Ok(done.signed_in.clone()),
        };
        let key_of_code = code_key(code);
        let code = code.to_owned();
        let (id, key) = (pending.user, Arc::clone(&self.key));
        let passed = self
            .writer
            .write(move |c| {
                let user = match enabled_user(c, id, ip)? {
                    Ok(user) => user,
                    Err(refused) => return Ok(Err(refused)),
                };
                let actor = Actor::user(&user, ip);
                let passed = spend_second_factor(c, &key, id, &code)?;
                match passed {
                    Some(SecondFactor::RecoveryCode) => {
                        let left = store::count_unused_recovery_codes(c, id)?;
                        let (action, target) =
                            (AuditAction::TwoFactorRecoveryUsed, Target::user(&user));
                        audit::record(c, &actor, action, &target, &json!({"left": left}))?;
                    }
                    Some(SecondFactor::Totp) => {}
                    None => {
                        let reason = if is_one_time_code(&code) {
                            "bad_code"
                        } else {
                            "bad_recovery_code"
                        };
                        let (action, target) = (AuditAction::SignInFailed, Target::user(&user));
                        audit::record(c, &actor, action, &target, &json!({"reason": reason}))?;
                    }
                }
                Ok(passed.map(|how| (user, how)).ok_or(Error::BadCode))
            })
            .await?;
        let (user, how) = self.refused_ends_disabled(token, passed)?;
        self.finish((token, pending), (&user, how, key_of_code), Vec::new(), ip)
            .await
    }

    /// The pending setup shown to someone the team requires to set up two-factor.
    pub async fn enrolment_at_sign_in(&self, token: &str) -> Result<Enrolment, Error> {
        let pending = self.usable(token, true)?;
        let (id, key) = (pending.user, Arc::clone(&self.key));
        self.writer
            .write(move |c| match store::find_user(c, id)? {
                Some(user) => pending_or_new(c, &key, &user),
                None => Ok(None),
            })
            .await?
            .ok_or(Error::SignInExpired)
    }

    /// Switches two-factor on during a sign-in (first correct code) and finishes the sign-in;
    /// returns the recovery codes to show once.
    pub async fn enrol_at_sign_in(
        &self,
        token: &str,
        code: &str,
        ip: IpAddr,
    ) -> Result<(FinishedSignIn, Vec<String>), Error> {
        let (_turn, pending) = match self.take_turn(token, code, true, ip).await? {
            Turn::Yours(turn, pending) => (turn, pending),
            Turn::Repeat(done) => return Ok((done.signed_in.clone(), done.recovery_codes.clone())),
        };
        let key_of_code = code_key(code);
        let (code, id, key) = (code.to_owned(), pending.user, Arc::clone(&self.key));
        let enrolled = self
            .writer
            .write(move |c| {
                let user = match enabled_user(c, id, ip)? {
                    Ok(user) => user,
                    Err(refused) => return Ok(Err(refused)),
                };
                let codes = confirm_pending(c, &key, (&Actor::user(&user, ip), &user), &code)?;
                Ok(codes.map(|codes| (user, codes)).ok_or(Error::BadCode))
            })
            .await?;
        let (user, codes) = self.refused_ends_disabled(token, enrolled)?;
        let how = (&user, SecondFactor::Totp, key_of_code);
        let finished = self
            .finish((token, pending), how, codes.clone(), ip)
            .await?;
        Ok((finished, codes))
    }

    fn usable(&self, token: &str, must_enrol: bool) -> Result<PendingSignIn, Error> {
        self.pending
            .find(token, Instant::now())
            .filter(|p| p.must_enrol == must_enrol)
            .ok_or(Error::SignInExpired)
    }

    /// Waits for this sign-in's turn to check a code (see [`PendingSignIn::turn`]). Finished
    /// by then with this same code (a double-click): what it handed out, again. Otherwise
    /// reserves a failed code attempt before the code is checked, as the password path does; a
    /// refusal by the throttle is recorded like a password's. Returns the turn, held until the
    /// code is checked and the sign-in finished, and the sign-in as it is then.
    async fn take_turn(
        &self,
        token: &str,
        code: &str,
        must_enrol: bool,
        ip: IpAddr,
    ) -> Result<Turn, Error> {
        let found = self.pending.find_any(token, Instant::now());
        let found = found.filter(|p| p.must_enrol == must_enrol);
        let turn = Arc::clone(&found.ok_or(Error::SignInExpired)?.turn)
            .lock_owned()
            .await;
        // The one before may have finished it, or it may have expired while waiting.
        let now = self.pending.find_any(token, Instant::now());
        if let Some(done) = now.and_then(|p| p.finished) {
            if done.code == code_key(code) {
                return Ok(Turn::Repeat(done));
            }
            // Another code for a finished sign-in ends it: the token is then worth nothing,
            // rather than a way to guess the code that finished it, unthrottled.
            self.pending.take(token, Instant::now());
            return Err(Error::SignInExpired);
        }
        let pending = self.usable(token, must_enrol)?;
        if let Err(throttled) = self
            .code_throttle
            .reserve(&pending.email, ip, Instant::now())
        {
            let (action, email) = (AuditAction::SignInThrottled, pending.email.clone());
            self.record_attempt(action, email, Some(pending.user), ip)
                .await;
            return Err(Error::Throttled(throttled.retry_after()));
        }
        Ok(Turn::Yours(turn, pending))
    }

    /// `checked`, with the half-finished sign-in of a user disabled meanwhile ended: their next
    /// attempt starts again with the password, and is refused there.
    fn refused_ends_disabled<T>(&self, token: &str, checked: Result<T, Error>) -> Result<T, Error> {
        if matches!(checked, Err(Error::Disabled)) {
            self.pending.take(token, Instant::now());
        }
        checked
    }

    /// Starts the session and marks the half-finished sign-in `pending` finished with it (`by`
    /// the user, the factor and the code's key), so a repeat of the code gets the same answer.
    /// Called with the sign-in's turn held, so nothing else finishes it meanwhile, and once its
    /// code is spent: so its lifetime is not asked again, or a code checked in its last moment
    /// would be spent for no session.
    async fn finish(
        &self,
        (token, pending): (&str, PendingSignIn),
        (user, how, code): (&UserRow, SecondFactor, [u8; 32]),
        recovery_codes: Vec<String>,
        ip: IpAddr,
    ) -> Result<FinishedSignIn, Error> {
        self.code_throttle.succeeded(&pending.email, ip);
        let session = self.start_session(user, ip, Some(how)).await?;
        let signed_in = FinishedSignIn {
            session,
            next: pending.next,
        };
        let finished = Finished {
            code,
            signed_in: signed_in.clone(),
            recovery_codes,
        };
        if !self.pending.finish(token, finished) {
            return Err(Error::SignInExpired);
        }
        Ok(signed_in)
    }
}

/// Whose turn it is to check a code for a half-finished sign-in.
enum Turn {
    /// This request's: the turn, held until it is done, and the sign-in.
    Yours(tokio::sync::OwnedMutexGuard<()>, PendingSignIn),
    /// Finished with this same code by the request before.
    Repeat(Arc<Finished>),
}

/// The user behind a half-finished sign-in, unless disabled since the password step: then the
/// attempt is recorded as a failed sign-in (`reason: disabled`) and refused as a disabled
/// account's right password is.
fn enabled_user(
    c: &rusqlite::Connection,
    id: UserId,
    ip: IpAddr,
) -> Result<Result<UserRow, Error>, store::Error> {
    let Some(user) = store::find_user(c, id)? else {
        return Ok(Err(Error::SignInExpired));
    };
    if user.is_disabled {
        let (action, target) = (AuditAction::SignInFailed, Target::user(&user));
        let detail = json!({"reason": "disabled"});
        audit::record(c, &Actor::user(&user, ip), action, &target, &detail)?;
        return Ok(Err(Error::Disabled));
    }
    Ok(Ok(user))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(started: Instant) -> PendingSignIn {
        PendingSignIn {
            user: UserId(1),
            email: "ana@example.com".to_owned(),
            next: "/inbox".to_owned(),
            must_enrol: false,
            started,
            turn: Arc::default(),
            finished: None,
        }
    }

    #[test]
    fn a_half_finished_sign_in_lasts_five_minutes_and_finishes_once() {
        let all = PendingSignIns::default();
        let start = Instant::now();
        let token = all.insert(pending(start), start);
        let almost = start + SECOND_STEP_LIFETIME.saturating_sub(Duration::from_secs(1));
        assert!(all.find(&token, almost).is_some());
        assert!(all.find(&token, start + SECOND_STEP_LIFETIME).is_none());
        assert!(all.find("another token", start).is_none());
        let finished = || Finished {
            code: code_key("123 456"),
            signed_in: FinishedSignIn {
                session: NewSessionSecret {
                    cookie_value: "s".to_owned(),
                    csrf_token: "c".to_owned(),
                },
                next: "/inbox".to_owned(),
            },
            recovery_codes: Vec::new(),
        };
        assert!(all.finish(&token, finished()));
        assert!(!all.finish(&token, finished()), "finished once");
        assert!(all.find(&token, almost).is_none(), "no longer waiting");
        let kept = all.find_any(&token, almost).and_then(|p| p.finished);
        assert_eq!(
            kept.map(|f| f.code),
            Some(code_key("123456")),
            "kept for a repeat"
        );
        assert!(all.take(&token, almost).is_some());
        assert!(all.take(&token, almost).is_none(), "ended");
    }
}
