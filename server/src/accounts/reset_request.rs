//! "Forgot your password?": anyone may ask for a link to be mailed to an account's own address.
//! The answer never says whether an account exists (the caller answers the same either way, and
//! does the work in the background); requests are limited per client address, and links per
//! account, so the form cannot flood a mailbox (docs/admin.md, "Forgotten passwords"). Someone
//! who signs in through single sign-on and has no password gets no link: a password is what
//! would let them in after the provider shut them out, so only an admin gives one.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, UserRow};

use super::Error;
use super::identity::EmailAddress;
use super::session::{Accounts, hash_secret, new_secret};
use super::team::{LinkKind, expiry};
use super::throttle::{Failures, count, wait_for};

/// Requests one client address may make in the throttle's window (15 minutes).
const RESET_REQUESTS_PER_ADDRESS: u32 = 5;
/// Links one account is sent in that window, whoever asks; later requests send nothing.
const RESET_LINKS_PER_ACCOUNT: u32 = 3;

#[derive(Default)]
struct Counters {
    addresses: HashMap<IpAddr, Failures>,
    accounts: HashMap<String, Failures>,
}

/// The counts of requests per address and of links per account, in memory.
#[derive(Default)]
pub struct ResetRequests {
    counters: Mutex<Counters>,
}

impl ResetRequests {
    /// Counts a request from `address`, or says how long it waits.
    fn admit_address(&self, address: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(wait) = wait_for(&c.addresses, &address, RESET_REQUESTS_PER_ADDRESS, now) {
            return Err(wait);
        }
        count(&mut c.addresses, address, now);
        Ok(())
    }

    /// Counts a link for `account`, or false if it had its share.
    fn admit_account(&self, account: &str, now: Instant) -> bool {
        let account = account.to_lowercase();
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if wait_for(&c.accounts, &account, RESET_LINKS_PER_ACCOUNT, now).is_some() {
            return false;
        }
        count(&mut c.accounts, account, now);
        true
    }
}

/// What a request sends, for the caller to mail to `user.email`.
#[derive(Debug)]
pub struct RequestedLink {
    pub user: UserRow,
    /// The link made, and its token: a reset, or a fresh invitation for someone who never chose
    /// a password. `None` for someone linked to the single sign-on provider without a password:
    /// their mail says they sign in through single sign-on, and whom to ask for a password.
    pub link: Option<(LinkKind, String)>,
}

impl Accounts {
    /// Admits a request from `ip`, or says how long it waits: the only refusal a requester sees,
    /// and it depends on their address alone.
    ///
    /// # Errors
    /// The wait, when the address asked too often lately.
    pub fn admit_reset_request(&self, ip: IpAddr) -> Result<(), Duration> {
        self.reset_requests.admit_address(ip, Instant::now())
    }

    /// Makes a link for the enabled account whose address is `email`, recorded as asked for from
    /// `ip`: a reset link, or a fresh invitation for someone who never chose a password, except,
    /// when single sign-on `is_sso_on`, for someone without a password who signed in through it
    /// (no link). `None` when there is no such account, it is disabled, or it was sent its share
    /// of mails lately.
    pub async fn request_reset(
        &self,
        email: &str,
        ip: IpAddr,
        is_sso_on: bool,
    ) -> Result<Option<RequestedLink>, Error> {
        let Ok(email) = EmailAddress::parse(email) else {
            return Ok(None);
        };
        let lookup = email.as_str().to_owned();
        let found = self
            .readers
            .read(move |c| {
                let Some(found) = store::find_user_credentials(c, &lookup)? else {
                    return Ok(None);
                };
                let is_linked = store::find_oidc_link(c, found.user.id)?.is_some();
                Ok(Some((found, is_linked)))
            })
            .await?;
        let Some((found, is_linked)) = found.filter(|(f, _)| !f.user.is_disabled) else {
            return Ok(None);
        };
        if !self
            .reset_requests
            .admit_account(&found.user.email, Instant::now())
        {
            return Ok(None);
        }
        let kind = match (&found.password_hash, is_sso_on && is_linked) {
            (Some(_), _) => Some(LinkKind::Reset),
            (None, true) => None,
            (None, false) => Some(LinkKind::Invite),
        };
        let link = kind.map(|kind| (kind, new_secret()));
        let user = found.user;
        // The actor is what was typed, in lower case, not the account's address: nobody proved
        // being its owner, and the log keeps what the requester gave.
        let typed = Actor::unproven(&email.as_str().to_lowercase(), ip);
        self.record_reset_request(&user, typed, link.as_ref())
            .await?;
        Ok(Some(RequestedLink { user, link }))
    }

    /// Stores the link (if any) and records the request by `actor`, in one transaction.
    async fn record_reset_request(
        &self,
        user: &UserRow,
        actor: Actor,
        link: Option<&(LinkKind, String)>,
    ) -> Result<(), Error> {
        let link = link.map(|(kind, token)| (*kind, hash_secret(token)));
        let now = now_ms();
        let target = Target::user(user);
        let id = user.id;
        self.writer
            .write(move |c| {
                if let Some((kind, token_hash)) = &link {
                    let expires = expiry(*kind, now);
                    store::insert_account_link(c, token_hash, id, kind.as_str(), id, now, expires)?;
                }
                let kind = link.as_ref().map_or("sso", |(kind, _)| kind.as_str());
                let detail = json!({"kind": kind});
                audit::record(
                    c,
                    &actor,
                    AuditAction::UserPasswordResetRequested,
                    &target,
                    &detail,
                )
            })
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_waits_after_its_requests_and_an_account_gets_its_share_of_links() {
        let requests = ResetRequests::default();
        let now = Instant::now();
        let ip = IpAddr::from([192, 0, 2, 1]);
        for _ in 0..RESET_REQUESTS_PER_ADDRESS {
            assert!(requests.admit_address(ip, now).is_ok());
        }
        assert!(requests.admit_address(ip, now).is_err());
        assert!(
            requests
                .admit_address(IpAddr::from([192, 0, 2, 2]), now)
                .is_ok()
        );

        for _ in 0..RESET_LINKS_PER_ACCOUNT {
            assert!(requests.admit_account("Ana@example.com", now));
        }
        assert!(!requests.admit_account("ana@EXAMPLE.com", now));
        assert!(requests.admit_account("bo@example.com", now));
    }
}
