//! The brakes of all visitors, IP addresses and sites, in sharded maps so connections rarely
//! contend. A periodic prune forgets buckets that have refilled, which bounds memory.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::store::SiteId;
use crate::values::SiteLimits;

use super::share::AddressShare;
use super::{FloodBrake, TokenBucket, UploadBrake};

const SHARDS: usize = 16;
/// A visitor's downloads and erasure requests from the widget (docs/widget-protocol.md): bursts
/// of 5, then one every 2 minutes (30 an hour). Each builds a whole export, so far fewer than
/// messages.
const SELF_SERVICE_BURST: f64 = 5.0;
const SELF_SERVICE_PER_SECOND: f64 = 1.0 / 120.0;

/// Why a message was not let through, and how long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// This visitor is over their own rate.
    RateLimited(Duration),
    /// This IP address started too many conversations.
    TooManyConversations(Duration),
    /// The site's flood brake holds messages back.
    SiteBusy(Duration),
}

impl Refusal {
    /// How long to wait.
    pub fn wait(self) -> Duration {
        match self {
            Self::RateLimited(wait) | Self::TooManyConversations(wait) | Self::SiteBusy(wait) => {
                wait
            }
        }
    }
}

/// What an admitted message was charged: given back by [`Brakes::give_back`] when the server's
/// own trouble kept it from being stored (the writer busy, the disk unavailable), so that trouble
/// never uses up a visitor's rate or a site's minute (docs/widget-protocol.md, "Idempotency").
/// Not `Copy`: given back once, it is used up.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "give it back if nothing is stored"]
pub struct Admitted {
    site: SiteId,
    visitor: u64,
    ip_key: IpAddr,
    starts_conversation: bool,
    at: Instant,
}

impl Admitted {
    /// The message part of `self` only. A connection that sent a conversation's first message
    /// counts its conversation as started from then on (its next message joins it, also the
    /// resend of a first one that failed): giving the conversation back too would let the
    /// resend open it charged to no brake.
    pub fn message_only(self) -> Self {
        Self {
            starts_conversation: false,
            ..self
        }
    }
}

/// The per-IP limit on new conversations.
#[derive(Debug, Clone, Copy)]
pub struct IpLimits {
    pub per_hour: u32,
    pub burst: u32,
}

struct Sharded<K, V> {
    shards: Vec<Mutex<HashMap<K, V>>>,
}

impl<K: Hash + Eq, V> Sharded<K, V> {
    fn new() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// The shard `shard_of` falls in, locked (a panic elsewhere left nothing half-changed: every
    /// change is a few field writes, so a poisoned lock is taken as it is).
    fn shard(&self, shard_of: usize) -> MutexGuard<'_, HashMap<K, V>> {
        match self.shards[shard_of % SHARDS].lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn with<R>(
        &self,
        key: K,
        shard_of: usize,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&mut V) -> R,
    ) -> R {
        f(self.shard(shard_of).entry(key).or_insert_with(make))
    }

    /// Calls `f` on the entry of `key` if there is one (a pruned entry holds nothing to change).
    fn if_present(&self, key: &K, shard_of: usize, f: impl FnOnce(&mut V)) {
        if let Some(value) = self.shard(shard_of).get_mut(key) {
            f(value);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map_or(0, |m| m.len()))
            .sum()
    }

    fn retain(&self, mut keep: impl FnMut(&mut V) -> bool) {
        for shard in &self.shards {
            if let Ok(mut map) = shard.lock() {
                map.retain(|_, v| keep(v));
            }
        }
    }
}

/// Every brake of the server.
pub struct Brakes {
    visitors: Sharded<u64, (TokenBucket, f64, f64)>,
    ips: Sharded<IpAddr, TokenBucket>,
    sites: Sharded<SiteId, (FloodBrake, SiteLimits)>,
    /// Per site and address (per /64 for IPv6): what it sent of the site's minute.
    shares: Sharded<(SiteId, IpAddr), AddressShare>,
    /// Per visitor key: their self-service requests (export, erasure).
    self_service: Sharded<u64, TokenBucket>,
    ip_limits: IpLimits,
    /// Per IP: what uploads may store.
    pub uploads: UploadBrake,
}

/// IPv6 clients usually hold a whole /64, so they are limited per /64 (here and at accept).
pub fn ip_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                IpAddr::V4(v4)
            } else {
                let mut segments = v6.segments();
                segments[4..].fill(0);
                IpAddr::V6(segments.into())
            }
        }
    }
}

/// Says that site `site`'s flood brake stepped up to `level` (docs/widget-protocol.md, "The
/// flood brake"), naming the site, so an operator knows whose widget is flooded.
fn log_flood_level(site: SiteId, level: u8) {
    if level >= 2 {
        tracing::warn!(site = %site, "a site is flooded: new conversations are refused");
    } else {
        tracing::warn!(site = %site, "a site's flood brake is holding messages back");
    }
}

/// The shard of a visitor's bucket.
fn visitor_shard(visitor: u64) -> usize {
    usize::try_from(visitor % 1024).unwrap_or(0)
}

/// The shard of a site's flood brake.
fn site_shard(site: SiteId) -> usize {
    usize::try_from(site.0.unsigned_abs()).unwrap_or(0)
}

fn shard_of_ip(ip: IpAddr) -> usize {
    match ip {
        IpAddr::V4(v4) => usize::from(v4.octets()[3]),
        IpAddr::V6(v6) => usize::from(v6.octets()[7]),
    }
}

impl Brakes {
    pub fn new(ip_limits: IpLimits) -> Self {
        Self {
            visitors: Sharded::new(),
            ips: Sharded::new(),
            sites: Sharded::new(),
            shares: Sharded::new(),
            self_service: Sharded::new(),
            ip_limits,
            uploads: UploadBrake::default(),
        }
    }

    /// Decides whether a visitor's message may be stored. `visitor` is a stable key of the visitor
    /// (derived from their token); `starts_conversation` when it would open a conversation.
    pub fn admit_message(
        &self,
        site: SiteId,
        limits: SiteLimits,
        visitor: u64,
        ip: IpAddr,
        starts_conversation: bool,
        now: Instant,
    ) -> Result<Admitted, Refusal> {
        let ip_key = ip_key(ip);
        let taken = self.take_visitor_token(site, limits, visitor, now);
        if let Some(refusal) = self.own_refusal(taken, visitor, ip_key, starts_conversation, now) {
            // The wait given is for the message to be taken when it comes back (nothing else
            // arriving meanwhile): the longest of the brakes' waits, named after the brake that
            // sets it, so a visitor told to wait 2 s for their own rate is not refused then for
            // a minute by the site's count that was already full.
            let site_wait = self.with_site(site, limits, ip_key, now, |brake, share| {
                let (messages, conversations) = limits.flood_per_minute();
                brake.wait_now(now, messages, conversations, starts_conversation, share)
            });
            return Err(if site_wait > refusal.wait() {
                Refusal::SiteBusy(site_wait)
            } else {
                refusal
            });
        }
        let admitted = self.with_site(site, limits, ip_key, now, |brake, share| {
            let (messages, conversations) = limits.flood_per_minute();
            brake.admit(now, messages, conversations, starts_conversation, share)
        });
        if let Err(held) = admitted {
            // A flood on one site must not use up the budget of an address (a shared office NAT)
            // on every other site, nor the visitor's own rate: only admitted messages are charged.
            self.give_back_visitor(visitor);
            if starts_conversation {
                self.with_ip_bucket(ip_key, now, |bucket, _, _, burst| bucket.give_back(burst));
            }
            return Err(Refusal::SiteBusy(held.retry_after));
        }
        Ok(Admitted {
            site,
            visitor,
            ip_key,
            starts_conversation,
            at: now,
        })
    }

    /// Takes a token from the visitor's own bucket, or says how long until one is there. While
    /// the site is held back, each visitor's own rate is halved.
    fn take_visitor_token(
        &self,
        site: SiteId,
        limits: SiteLimits,
        visitor: u64,
        now: Instant,
    ) -> Result<(), Duration> {
        let site_level = self.sites.with(
            site,
            site_shard(site),
            || (FloodBrake::new(now), limits),
            |(brake, _)| brake.level(),
        );
        let factor = if site_level >= 1 { 0.5 } else { 1.0 };
        let per_second = f64::from(limits.visitor_messages_per_minute) / 60.0 * factor;
        let burst = f64::from(limits.visitor_burst);
        self.visitors.with(
            visitor,
            visitor_shard(visitor),
            || (TokenBucket::full(burst, now), per_second, burst),
            |(bucket, rate, size)| {
                (*rate, *size) = (per_second, burst);
                bucket.try_take(now, per_second, burst)
            },
        )
    }

    /// The refusal of the visitor's own rate (`taken`, its token) or, for a new conversation,
    /// of the address's: the longer of their waits. A visitor token taken for a message the
    /// address then refuses is given back.
    fn own_refusal(
        &self,
        taken: Result<(), Duration>,
        visitor: u64,
        ip_key: IpAddr,
        starts_conversation: bool,
        now: Instant,
    ) -> Option<Refusal> {
        match taken {
            Err(wait) => {
                let ip_wait = if starts_conversation {
                    self.with_ip_bucket(ip_key, now, TokenBucket::wait)
                } else {
                    Duration::ZERO
                };
                Some(if ip_wait > wait {
                    Refusal::TooManyConversations(ip_wait)
                } else {
                    Refusal::RateLimited(wait)
                })
            }
            Ok(()) if starts_conversation => self
                .with_ip_bucket(ip_key, now, TokenBucket::try_take)
                .err()
                .map(|wait| {
                    self.give_back_visitor(visitor);
                    Refusal::TooManyConversations(wait)
                }),
            Ok(()) => None,
        }
    }

    /// Calls `f` (`TokenBucket::try_take`, `wait` or `give_back`) on the bucket of new
    /// conversations of the address `ip_key`, with the configured rate and burst.
    fn with_ip_bucket<R>(
        &self,
        ip_key: IpAddr,
        now: Instant,
        f: impl FnOnce(&mut TokenBucket, Instant, f64, f64) -> R,
    ) -> R {
        let per_second = f64::from(self.ip_limits.per_hour) / 3600.0;
        let burst = f64::from(self.ip_limits.burst);
        self.ips.with(
            ip_key,
            shard_of_ip(ip_key),
            || TokenBucket::full(burst, now),
            |bucket| f(bucket, now, per_second, burst),
        )
    }

    /// Calls `f` on the site's flood brake and the address's share of it (keeping the site's
    /// limits for the pruning), and logs a step up of the site's level, whichever call made it
    /// (admitting, or reckoning the wait of a message another brake refused).
    fn with_site<R>(
        &self,
        site: SiteId,
        limits: SiteLimits,
        ip_key: IpAddr,
        now: Instant,
        f: impl FnOnce(&mut FloodBrake, &mut AddressShare) -> R,
    ) -> R {
        let site_shard = site_shard(site);
        // Always the address's share first, then the site: one order, so no two locks deadlock.
        let (result, stepped_up) = self.shares.with(
            (site, ip_key),
            site_shard ^ shard_of_ip(ip_key),
            || AddressShare::new(now),
            |share| {
                self.sites.with(
                    site,
                    site_shard,
                    || (FloodBrake::new(now), limits),
                    |(brake, stored)| {
                        *stored = limits;
                        let before = brake.level();
                        let result = f(brake, share);
                        (result, (brake.level() > before).then(|| brake.level()))
                    },
                )
            },
        );
        // Said once the locks are let go.
        if let Some(level) = stepped_up {
            log_flood_level(site, level);
        }
        result
    }

    /// Gives back what `admitted` was charged: its message was not stored after all.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "taken, so that an admission is given back once"
    )]
    pub fn give_back(&self, admitted: Admitted) {
        let Admitted {
            site,
            visitor,
            ip_key,
            starts_conversation,
            at,
        } = admitted;
        self.give_back_visitor(visitor);
        if starts_conversation {
            let burst = f64::from(self.ip_limits.burst);
            self.ips.if_present(&ip_key, shard_of_ip(ip_key), |bucket| {
                bucket.give_back(burst);
            });
        }
        // The same order as when it was charged: the address's share, then the site.
        let site_shard = site_shard(site);
        self.shares
            .if_present(&(site, ip_key), site_shard ^ shard_of_ip(ip_key), |share| {
                self.sites.if_present(&site, site_shard, |(brake, _)| {
                    brake.forget(at, starts_conversation, share);
                });
            });
    }

    /// Gives the visitor's bucket back the token a message took.
    fn give_back_visitor(&self, visitor: u64) {
        self.visitors
            .if_present(&visitor, visitor_shard(visitor), |(bucket, _, burst)| {
                bucket.give_back(*burst);
            });
    }

    /// Decides whether a visitor (their stable key) may download or erase their data now;
    /// `Err` says how long to wait.
    pub fn admit_self_service(&self, visitor: u64, now: Instant) -> Result<(), Duration> {
        self.self_service.with(
            visitor,
            visitor_shard(visitor),
            || TokenBucket::full(SELF_SERVICE_BURST, now),
            |bucket| bucket.try_take(now, SELF_SERVICE_PER_SECOND, SELF_SERVICE_BURST),
        )
    }

    /// Forgets state that no longer limits anyone: full buckets and sites back at level 0 with
    /// nothing counted for two minutes.
    pub fn prune(&self, now: Instant) {
        self.visitors
            .retain(|(bucket, rate, burst)| !bucket.is_full(now, *rate, *burst));
        let ip_rate = f64::from(self.ip_limits.per_hour) / 3600.0;
        let ip_burst = f64::from(self.ip_limits.burst);
        self.ips
            .retain(|bucket| !bucket.is_full(now, ip_rate, ip_burst));
        self.sites.retain(|(brake, _)| !brake.is_idle(now));
        self.shares.retain(|share| !share.is_idle(now));
        self.self_service
            .retain(|bucket| !bucket.is_full(now, SELF_SERVICE_PER_SECOND, SELF_SERVICE_BURST));
        self.uploads.prune(now);
    }
}

#[cfg(test)]
#[path = "keyed_tests.rs"]
mod tests;
