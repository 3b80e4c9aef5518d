//! Per address, what widget uploads may store (docs/widget-protocol.md, "Attachments"). A visitor
//! token costs nothing (every `hello` without one makes one), so a visitor's own rate cannot hold
//! back a flood of uploads from one machine, and uploads need no conversation, so the address's
//! brake on new conversations does not either: without this, one address filled the disk at
//! 1 GB a minute and, counted on the site's flood brake, held back the site's real visitors.
//! Generous for people (a visitor sends a few screenshots; an office behind one address a few
//! dozen files an hour), it bounds what one address can store.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::TokenBucket;
use super::keyed::ip_key;

/// Files one address may upload at once, then [`FILES_PER_HOUR`].
pub const FILE_BURST: f64 = 20.0;
pub const FILES_PER_HOUR: f64 = 60.0;
/// Bytes one address may upload at once, refilled over an hour: 100 MiB.
pub const BYTES_PER_HOUR: f64 = 100.0 * 1024.0 * 1024.0;

/// An address's budgets: files and bytes.
struct Budget {
    files: TokenBucket,
    bytes: TokenBucket,
}

/// The upload budgets of every address that uploaded lately.
#[derive(Default)]
pub struct UploadBrake {
    addresses: Mutex<HashMap<IpAddr, Budget>>,
}

const FILE_RATE: f64 = FILES_PER_HOUR / 3600.0;
const BYTE_RATE: f64 = BYTES_PER_HOUR / 3600.0;

impl UploadBrake {
    /// Takes one file of up to `bytes` from `ip`'s budgets, or says how long to wait. A file
    /// whose size is not known yet is charged the most it may be; [`UploadBrake::give_back`]
    /// returns what it did not use.
    pub fn admit(&self, ip: IpAddr, bytes: u64, now: Instant) -> Result<(), Duration> {
        let mut addresses = self.lock();
        let budget = addresses.entry(ip_key(ip)).or_insert_with(|| Budget {
            files: TokenBucket::full(FILE_BURST, now),
            bytes: TokenBucket::full(BYTES_PER_HOUR, now),
        });
        budget.files.try_take(now, FILE_RATE, FILE_BURST)?;
        // Precision is no concern: sizes are at most 25 MiB.
        #[allow(clippy::cast_precision_loss)]
        let amount = bytes as f64;
        if let Err(wait) = budget
            .bytes
            .try_take_many(now, amount, BYTE_RATE, BYTES_PER_HOUR)
        {
            budget.files.give_back(FILE_BURST);
            return Err(wait);
        }
        Ok(())
    }

    /// Returns to `ip`'s budgets what an admitted upload did not use: `bytes` unread, and the
    /// file itself when it was refused further on (`whole`).
    pub fn give_back(&self, ip: IpAddr, bytes: u64, whole: bool) {
        let mut addresses = self.lock();
        if let Some(budget) = addresses.get_mut(&ip_key(ip)) {
            #[allow(clippy::cast_precision_loss)]
            budget.bytes.give_back_many(bytes as f64, BYTES_PER_HOUR);
            if whole {
                budget.files.give_back(FILE_BURST);
            }
        }
    }

    /// Forgets addresses whose budgets have refilled.
    pub fn prune(&self, now: Instant) {
        self.lock().retain(|_, budget| {
            !(budget.files.is_full(now, FILE_RATE, FILE_BURST)
                && budget.bytes.is_full(now, BYTE_RATE, BYTES_PER_HOUR))
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Budget>> {
        self.addresses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn an_address_gets_its_burst_of_files_then_waits_and_others_do_not() {
        let brake = UploadBrake::default();
        let (ip, other): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let now = Instant::now();
        for _ in 0..20 {
            assert!(brake.admit(ip, 1000, now).is_ok());
        }
        let wait = brake.admit(ip, 1000, now).expect_err("over the burst");
        assert!((wait.as_secs_f64() - 60.0).abs() < 0.01, "{wait:?}");
        assert!(brake.admit(other, 1000, now).is_ok());
        assert!(brake.admit(ip, 1000, now + Duration::from_mins(1)).is_ok());
    }

    #[test]
    fn bytes_run_out_before_files_and_unused_bytes_come_back() {
        let brake = UploadBrake::default();
        let ip: IpAddr = [10, 0, 0, 1].into();
        let now = Instant::now();
        for _ in 0..10 {
            assert!(brake.admit(ip, 10 * MIB, now).is_ok());
        }
        assert!(brake.admit(ip, 10 * MIB, now).is_err(), "100 MiB spent");
        // One of them was 1 MiB in the end: 9 MiB back, so a 9 MiB file fits, a 10 MiB one not.
        brake.give_back(ip, 9 * MIB, false);
        assert!(brake.admit(ip, 10 * MIB, now).is_err());
        assert!(brake.admit(ip, 9 * MIB, now).is_ok());
    }

    #[test]
    fn a_refused_upload_costs_nothing_and_refilled_addresses_are_forgotten() {
        let brake = UploadBrake::default();
        let ip: IpAddr = [10, 0, 0, 1].into();
        let now = Instant::now();
        for _ in 0..40 {
            assert!(brake.admit(ip, MIB, now).is_ok());
            brake.give_back(ip, MIB, true);
        }
        brake.prune(now);
        assert!(brake.lock().is_empty());
    }
}
