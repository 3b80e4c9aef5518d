//! Password-guess throttling, in memory. An attempt *reserves* a failure before any password is
//! checked and gives it back only when the password was right, so parallel guesses cannot all
//! pass the check while argon2 runs (and a guessing flood burns no CPU on argon2 past the limit).
//!
//! Counted per account-and-address pair (5), per address (20) and per account from anywhere
//! (50): a stranger's 5 bad guesses lock out only that stranger's address, not the real user;
//! the larger per-account limit still bounds guessing spread over many addresses.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Failed attempts one address may make on one account in one window.
pub const ACCOUNT_FAILURES: u32 = 5;
/// Failed attempts one address may make in one window: more than per account, so a team behind
/// one NAT address can mistype, but far too few to guess passwords across many accounts.
pub const IP_FAILURES: u32 = 20;
/// Failed attempts on one account from all addresses together in one window.
pub const ACCOUNT_FAILURES_ANYWHERE: u32 = 50;
/// How long failures are remembered, and how long a throttled key waits at most.
pub const WINDOW: Duration = Duration::from_mins(15);
/// Entries kept before old ones are swept, so random emails cannot grow memory without bound.
const MAX_ENTRIES: usize = 50_000;

#[derive(Debug, Clone, Copy)]
pub(super) struct Failures {
    first: Instant,
    count: u32,
}

/// Why an attempt was refused, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttled {
    Account(Duration),
    Address(Duration),
}

impl Throttled {
    pub fn retry_after(self) -> Duration {
        match self {
            Self::Account(wait) | Self::Address(wait) => wait,
        }
    }
}

#[derive(Default)]
struct Counters {
    pairs: HashMap<(String, IpAddr), Failures>,
    accounts: HashMap<String, Failures>,
    addresses: HashMap<IpAddr, Failures>,
}

/// The counters, under one lock: a reservation checks and counts all three at once.
#[derive(Default)]
pub struct LoginThrottle {
    counters: Mutex<Counters>,
}

/// How long `key` waits, if it has reached `limit` within the window.
pub(super) fn wait_for<K: Hash + Eq>(
    map: &HashMap<K, Failures>,
    key: &K,
    limit: u32,
    now: Instant,
) -> Option<Duration> {
    let entry = map.get(key)?;
    let ends = entry.first + WINDOW;
    (entry.count >= limit && ends > now).then(|| ends - now)
}

/// Counts one more for `key`, starting its window again once the old one has ended.
pub(super) fn count<K: Hash + Eq>(map: &mut HashMap<K, Failures>, key: K, now: Instant) {
    if map.len() >= MAX_ENTRIES {
        map.retain(|_, f| f.first + WINDOW > now);
    }
    let entry = map.entry(key).or_insert(Failures {
        first: now,
        count: 0,
    });
    if entry.first + WINDOW <= now {
        *entry = Failures {
            first: now,
            count: 0,
        };
    }
    entry.count += 1;
}

impl LoginThrottle {
    /// Counts an attempt as failed before its password is checked, or refuses it if the pair,
    /// the address or the account has failed too often lately. Call `succeeded` when the
    /// password turns out right.
    pub fn reserve(&self, account: &str, address: IpAddr, now: Instant) -> Result<(), Throttled> {
        let account = account.to_lowercase();
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(wait) = wait_for(&c.addresses, &address, IP_FAILURES, now) {
            return Err(Throttled::Address(wait));
        }
        let pair = (account, address);
        if let Some(wait) = wait_for(&c.pairs, &pair, ACCOUNT_FAILURES, now)
            .or_else(|| wait_for(&c.accounts, &pair.0, ACCOUNT_FAILURES_ANYWHERE, now))
        {
            return Err(Throttled::Account(wait));
        }
        count(&mut c.accounts, pair.0.clone(), now);
        count(&mut c.addresses, address, now);
        count(&mut c.pairs, pair, now);
        Ok(())
    }

    /// Gives a reservation back: the password was right. The account's failures from this
    /// address and its count from everywhere are forgotten; other addresses keep their failures
    /// with it (a guesser elsewhere gets no fresh tries each time its owner signs in), and this
    /// address its failures with other accounts.
    pub fn succeeded(&self, account: &str, address: IpAddr) {
        let account = account.to_lowercase();
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        c.accounts.remove(&account);
        c.pairs.remove(&(account, address));
        if let Some(entry) = c.addresses.get_mut(&address) {
            entry.count = entry.count.saturating_sub(1);
        }
    }

    /// Forgets every failure with the account, from anywhere: its password was just chosen
    /// through a link (proof of its mailbox), so the guesses were against one that is gone, and
    /// its owner must not be refused their new password.
    pub fn password_replaced(&self, account: &str) {
        let account = account.to_lowercase();
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        c.accounts.remove(&account);
        c.pairs.retain(|(a, _), _| *a != account);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 7));

    #[test]
    fn a_pair_is_throttled_after_repeated_failures_and_released_after_the_window() {
        let throttle = LoginThrottle::default();
        let start = Instant::now();
        for _ in 0..ACCOUNT_FAILURES {
            assert!(throttle.reserve("Ana@x.com", IP, start).is_ok());
        }
        assert!(matches!(
            throttle.reserve("ANA@x.com", IP, start),
            Err(Throttled::Account(_))
        ));
        assert!(throttle.reserve("bo@x.com", IP, start).is_ok());
        assert!(
            throttle.reserve("ana@x.com", OTHER, start).is_ok(),
            "the real user elsewhere is not locked out"
        );
        assert!(throttle.reserve("ana@x.com", IP, start + WINDOW).is_ok());
    }

    #[test]
    fn an_account_is_throttled_across_addresses_at_the_larger_limit() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for i in 0..ACCOUNT_FAILURES_ANYWHERE {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            assert!(throttle.reserve("ana@x.com", ip, now).is_ok());
        }
        assert!(throttle.reserve("ana@x.com", OTHER, now).is_err());
    }

    #[test]
    fn an_address_is_throttled_across_accounts() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for i in 0..IP_FAILURES {
            assert!(throttle.reserve(&format!("user{i}@x.com"), IP, now).is_ok());
        }
        assert!(matches!(
            throttle.reserve("new@x.com", IP, now),
            Err(Throttled::Address(_))
        ));
    }

    #[test]
    fn success_gives_the_reservation_back() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for _ in 0..ACCOUNT_FAILURES {
            throttle.reserve("ana@x.com", IP, now).expect("allowed");
        }
        throttle.succeeded("ana@x.com", IP);
        assert!(throttle.reserve("ana@x.com", IP, now).is_ok());
    }

    /// Ana and a guesser elsewhere, each with the account's limit of failures.
    fn locked_at_two_addresses(now: Instant) -> LoginThrottle {
        let throttle = LoginThrottle::default();
        for _ in 0..ACCOUNT_FAILURES {
            throttle.reserve("ana@x.com", IP, now).expect("allowed");
            throttle.reserve("ana@x.com", OTHER, now).expect("allowed");
        }
        throttle
    }

    #[test]
    fn a_sign_in_frees_its_own_address_only() {
        let now = Instant::now();
        let throttle = locked_at_two_addresses(now);
        throttle.succeeded("ana@x.com", OTHER);
        assert!(throttle.reserve("ana@x.com", OTHER, now).is_ok());
        assert!(
            throttle.reserve("ana@x.com", IP, now).is_err(),
            "a guesser elsewhere gets no fresh tries"
        );
    }

    #[test]
    fn a_password_chosen_through_a_link_frees_every_address() {
        let now = Instant::now();
        let throttle = locked_at_two_addresses(now);
        throttle.password_replaced("ana@x.com");
        assert!(throttle.reserve("ana@x.com", IP, now).is_ok());
        assert!(throttle.reserve("ana@x.com", OTHER, now).is_ok());
    }
}
