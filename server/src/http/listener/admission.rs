//! Who gets a connection slot at accept time: a per-address limit (IPv6 by /64, trusted proxies
//! exempt) and the global cap, decided without waiting, plus a small reserve that refused
//! connections borrow just long enough to be answered (health probes for real, others with 503).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::Meters;
use crate::widget::brake::ip_key;

/// Slots kept aside for refused connections; each holds one for at most the refusal deadline.
pub const RESERVE: usize = 32;
/// One address may hold this many reserve slots, so one refused flood cannot starve the probes.
const RESERVE_PER_IP: usize = 4;

/// Why a connection was refused, as labelled in `porch_connections_refused_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    PerIp,
    Capacity,
}

/// The outcome of admitting one accepted connection.
pub enum Admitted {
    /// An ordinary slot: serve the connection.
    Slot(Held),
    /// Refused, with a reserve slot to read the request head and answer it.
    Reserve(Held, Reason),
    /// Refused, and the reserve is used up too: answer blindly and close.
    Refused(Reason),
}

/// Open connections per address group, as (ordinary, reserve).
type Table = Mutex<HashMap<IpAddr, (usize, usize)>>;

/// The admission state of one listener.
pub struct Admission {
    ordinary: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
    /// 0 means no per-address limit.
    per_ip: usize,
    /// Peers that carry many clients' connections (`PORCH_TRUSTED_PROXIES`): only the global cap
    /// applies to them, since the per-address limit would otherwise cap the whole site.
    exempt: Vec<IpAddr>,
    open: Arc<Table>,
    meters: Arc<Meters>,
}

/// A slot held for the life of a connection (and of its websocket, once upgraded).
pub struct Held {
    _permit: OwnedSemaphorePermit,
    _counted: Counted,
}

/// This connection's place in the per-address table; dropping it frees the place.
struct Counted {
    table: Arc<Table>,
    key: IpAddr,
    is_reserve: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut table = lock(&self.table);
        if let Some(entry) = table.get_mut(&self.key) {
            let n = if self.is_reserve {
                &mut entry.1
            } else {
                &mut entry.0
            };
            *n = n.saturating_sub(1);
            if *entry == (0, 0) {
                table.remove(&self.key);
            }
        }
    }
}

fn lock(table: &Table) -> MutexGuard<'_, HashMap<IpAddr, (usize, usize)>> {
    match table.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Admission {
    pub fn new(
        max_connections: usize,
        per_ip: usize,
        exempt: &[IpAddr],
        meters: Arc<Meters>,
    ) -> Self {
        Self {
            ordinary: Arc::new(Semaphore::new(max_connections)),
            reserve: Arc::new(Semaphore::new(RESERVE)),
            per_ip,
            exempt: exempt.to_vec(),
            open: Arc::new(Mutex::new(HashMap::new())),
            meters,
        }
    }

    /// Decides at once, never waiting for a slot to free up, and counts refusals.
    pub fn admit(&self, peer: IpAddr) -> Admitted {
        let peer = peer.to_canonical();
        let key = ip_key(peer);
        let is_limited = self.per_ip > 0 && !self.exempt.contains(&peer);
        let mut table = lock(&self.open);
        let (ordinary, reserve) = table.get(&key).copied().unwrap_or((0, 0));
        let reason = if is_limited && ordinary >= self.per_ip {
            Reason::PerIp
        } else if let Ok(permit) = Arc::clone(&self.ordinary).try_acquire_owned() {
            table.insert(key, (ordinary + 1, reserve));
            return Admitted::Slot(Held {
                _permit: permit,
                _counted: Counted {
                    table: Arc::clone(&self.open),
                    key,
                    is_reserve: false,
                },
            });
        } else {
            Reason::Capacity
        };
        let counter = match reason {
            Reason::PerIp => &self.meters.connections_refused_per_ip,
            Reason::Capacity => &self.meters.connections_refused_capacity,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if reserve >= RESERVE_PER_IP && !self.exempt.contains(&peer) {
            return Admitted::Refused(reason);
        }
        match Arc::clone(&self.reserve).try_acquire_owned() {
            Ok(permit) => {
                table.insert(key, (ordinary, reserve + 1));
                Admitted::Reserve(
                    Held {
                        _permit: permit,
                        _counted: Counted {
                            table: Arc::clone(&self.open),
                            key,
                            is_reserve: true,
                        },
                    },
                    reason,
                )
            }
            Err(_) => Admitted::Refused(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(max: usize, per_ip: usize, exempt: &[IpAddr]) -> Admission {
        Admission::new(max, per_ip, exempt, Arc::new(Meters::default()))
    }

    #[test]
    fn an_address_over_its_limit_is_refused_while_others_are_admitted() {
        let admission = admission(10, 2, &[]);
        let a: IpAddr = [192, 0, 2, 1].into();
        let held: Vec<_> = (0..2).map(|_| admission.admit(a)).collect();
        assert!(held.iter().all(|h| matches!(h, Admitted::Slot(_))));
        assert!(matches!(
            admission.admit(a),
            Admitted::Reserve(_, Reason::PerIp)
        ));
        assert!(matches!(
            admission.admit([192, 0, 2, 2].into()),
            Admitted::Slot(_)
        ));
        drop(held);
        assert!(matches!(admission.admit(a), Admitted::Slot(_)));
        assert_eq!(
            admission
                .meters
                .connections_refused_per_ip
                .load(Ordering::Relaxed),
            1
        );
    }

    #[test]
    fn ipv6_addresses_share_the_limit_of_their_slash_64() {
        let admission = admission(10, 1, &[]);
        let one: IpAddr = "2001:db8::1".parse().unwrap_or(IpAddr::from([0; 16]));
        let two: IpAddr = "2001:db8::2".parse().unwrap_or(IpAddr::from([0; 16]));
        let _held = admission.admit(one);
        assert!(matches!(
            admission.admit(two),
            Admitted::Reserve(_, Reason::PerIp)
        ));
    }

    #[test]
    fn trusted_proxies_are_held_only_to_the_global_cap() {
        let proxy: IpAddr = [10, 0, 0, 2].into();
        let admission = admission(3, 1, &[proxy]);
        let held: Vec<_> = (0..3).map(|_| admission.admit(proxy)).collect();
        assert!(held.iter().all(|h| matches!(h, Admitted::Slot(_))));
        assert!(matches!(
            admission.admit(proxy),
            Admitted::Reserve(_, Reason::Capacity)
        ));
    }

    #[test]
    fn one_address_cannot_take_the_whole_reserve() {
        let admission = admission(0, 1, &[]);
        let a: IpAddr = [192, 0, 2, 1].into();
        let borrowed: Vec<_> = (0..RESERVE_PER_IP).map(|_| admission.admit(a)).collect();
        assert!(borrowed.iter().all(|h| matches!(h, Admitted::Reserve(..))));
        assert!(matches!(
            admission.admit(a),
            Admitted::Refused(Reason::Capacity)
        ));
        assert!(matches!(
            admission.admit([192, 0, 2, 2].into()),
            Admitted::Reserve(..)
        ));
    }
}
