//! Login throttling, in memory: failed sign-ins are counted per account and per client address
//! over a window; past the limit, attempts are refused before any password is checked (which
//! also keeps a password-guessing flood from burning CPU on argon2).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed attempts an account may have in one window.
pub const ACCOUNT_FAILURES: u32 = 5;
/// Failed attempts one address may make in one window: more than per account, so a team behind
/// one NAT address can mistype, but far too few to guess passwords across many accounts.
pub const IP_FAILURES: u32 = 20;
/// How long failures are remembered, and how long a throttled key waits at most.
pub const WINDOW: Duration = Duration::from_mins(15);
/// Entries kept before old ones are swept, so random emails cannot grow memory without bound.
const MAX_ENTRIES: usize = 50_000;

#[derive(Debug, Clone, Copy)]
struct Failures {
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

/// The counters.
#[derive(Default)]
pub struct LoginThrottle {
    accounts: Mutex<HashMap<String, Failures>>,
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

fn wait_for(entry: Option<&Failures>, limit: u32, now: Instant) -> Option<Duration> {
    let entry = entry?;
    let ends = entry.first + WINDOW;
    (entry.count >= limit && ends > now).then(|| ends - now)
}

fn record<K: std::hash::Hash + Eq>(map: &Mutex<HashMap<K, Failures>>, key: K, now: Instant) {
    let Ok(mut map) = map.lock() else { return };
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
    /// Refuses the attempt if the account or the address has failed too often lately.
    pub fn check(&self, account: &str, address: IpAddr, now: Instant) -> Result<(), Throttled> {
        let account = account.to_lowercase();
        if let Ok(map) = self.addresses.lock()
            && let Some(wait) = wait_for(map.get(&address), IP_FAILURES, now)
        {
            return Err(Throttled::Address(wait));
        }
        if let Ok(map) = self.accounts.lock()
            && let Some(wait) = wait_for(map.get(&account), ACCOUNT_FAILURES, now)
        {
            return Err(Throttled::Account(wait));
        }
        Ok(())
    }

    /// Counts a failed attempt against both the account and the address.
    pub fn record_failure(&self, account: &str, address: IpAddr, now: Instant) {
        record(&self.accounts, account.to_lowercase(), now);
        record(&self.addresses, address, now);
    }

    /// Forgets the account's failures after a successful sign-in (the address keeps its own).
    pub fn record_success(&self, account: &str) {
        if let Ok(mut map) = self.accounts.lock() {
            map.remove(&account.to_lowercase());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    #[test]
    fn an_account_is_throttled_after_repeated_failures_and_released_after_the_window() {
        let throttle = LoginThrottle::default();
        let start = Instant::now();
        for _ in 0..ACCOUNT_FAILURES {
            assert!(throttle.check("Ana@x.com", IP, start).is_ok());
            throttle.record_failure("ana@x.com", IP, start);
        }
        assert!(matches!(
            throttle.check("ANA@x.com", IP, start),
            Err(Throttled::Account(_))
        ));
        assert!(throttle.check("bo@x.com", IP, start).is_ok());
        assert!(throttle.check("ana@x.com", IP, start + WINDOW).is_ok());
    }

    #[test]
    fn an_address_is_throttled_across_accounts() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for i in 0..IP_FAILURES {
            throttle.record_failure(&format!("user{i}@x.com"), IP, now);
        }
        assert!(matches!(
            throttle.check("new@x.com", IP, now),
            Err(Throttled::Address(_))
        ));
    }

    #[test]
    fn success_clears_the_account() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for _ in 0..ACCOUNT_FAILURES {
            throttle.record_failure("ana@x.com", IP, now);
        }
        throttle.record_success("ana@x.com");
        assert!(throttle.check("ana@x.com", IP, now).is_ok());
    }
}
