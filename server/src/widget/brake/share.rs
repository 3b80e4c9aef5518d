//! One address's share of a site's minute. The last quarter of each of the site's limits is kept
//! for addresses that have sent less than a quarter of it, so one address (even three) fills the
//! site's minute to three quarters at most and never brings the flood brake down on the site's
//! other visitors. Documented in docs/widget-protocol.md ("The flood brake").

use std::time::{Duration, Instant};

use super::sliding_minute::SlidingMinute;

/// Where a site's minute starts to be kept for others, as a part of its limit.
const RESERVE_FROM: f64 = 0.75;
/// What one address may send once the reserve is reached, as a part of the limit.
const SHARE: f64 = 0.25;

/// What one address sent to one site over the sliding minute (admitted messages only).
#[derive(Debug, Clone)]
pub struct AddressShare {
    messages: SlidingMinute,
    conversations: SlidingMinute,
}

impl AddressShare {
    pub fn new(now: Instant) -> Self {
        Self {
            messages: SlidingMinute::new(now),
            conversations: SlidingMinute::new(now),
        }
    }

    /// True when nothing was counted for two minutes, so forgetting it changes nothing.
    pub fn is_idle(&self, now: Instant) -> bool {
        self.messages.is_idle(now) && self.conversations.is_idle(now)
    }

    pub(super) fn roll(&mut self, now: Instant) {
        self.messages.roll(now);
        self.conversations.roll(now);
    }

    pub(super) fn add(&mut self, starts_conversation: bool) {
        self.messages.add();
        if starts_conversation {
            self.conversations.add();
        }
    }

    /// Takes back a message (and the conversation it opened) counted at `at`: it was not stored.
    pub(super) fn remove(&mut self, at: Instant, starts_conversation: bool) {
        self.messages.remove(at);
        if starts_conversation {
            self.conversations.remove(at);
        }
    }

    /// How long this address waits because the rest of the site's minute is kept for others;
    /// zero when it may send. `conversations` is given for a message that opens a conversation.
    pub(super) fn reserve_wait(
        &self,
        now: Instant,
        messages: (&SlidingMinute, f64),
        conversations: Option<(&SlidingMinute, f64)>,
    ) -> Duration {
        let mut wait = kept_for_others(now, messages.0, &self.messages, messages.1);
        if let Some((site, limit)) = conversations {
            wait = wait.max(kept_for_others(now, site, &self.conversations, limit));
        }
        wait
    }
}

/// Zero unless the site is past the reserve and the address past its share; then the wait until
/// either is no longer so.
fn kept_for_others(
    now: Instant,
    site: &SlidingMinute,
    address: &SlidingMinute,
    limit: f64,
) -> Duration {
    let (reserve_from, share) = (limit * RESERVE_FROM, limit * SHARE);
    // A limit under four has no quarter to keep: it is not split.
    if share < 1.0 || site.count(now) + 1.0 <= reserve_from || address.count(now) + 1.0 <= share {
        return Duration::ZERO;
    }
    site.wait_below(now, reserve_from)
        .min(address.wait_below(now, share))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widget::brake::FloodBrake;

    /// Sends from one address until refused; returns how many got in and the refusal's wait.
    fn fill(
        brake: &mut FloodBrake,
        share: &mut AddressShare,
        now: Instant,
        limit: u32,
    ) -> (u32, Duration) {
        let mut admitted = 0;
        loop {
            match brake.admit(now, limit, 1000, false, share) {
                Ok(()) => admitted += 1,
                Err(held) => return (admitted, held.retry_after),
            }
        }
    }

    #[test]
    fn one_address_gets_three_quarters_and_the_rest_is_kept_for_others() {
        let now = Instant::now();
        let mut brake = FloodBrake::new(now);
        let mut flooder = AddressShare::new(now);
        assert_eq!(fill(&mut brake, &mut flooder, now, 600).0, 450);
        assert_eq!(
            brake.level(),
            0,
            "an address held to its share is not a flood"
        );
        // Three quarters are taken: each other address may still send a quarter, until the
        // site's limit is reached and the brake holds everyone back.
        let mut office = AddressShare::new(now);
        assert_eq!(fill(&mut brake, &mut office, now, 600).0, 150);
        assert_eq!(brake.level(), 1);
    }

    #[test]
    fn a_limit_under_four_is_not_split() {
        let now = Instant::now();
        let mut brake = FloodBrake::new(now);
        let mut only = AddressShare::new(now);
        assert_eq!(fill(&mut brake, &mut only, now, 3).0, 3);
        let mut brake = FloodBrake::new(now);
        let mut first = AddressShare::new(now);
        assert_eq!(fill(&mut brake, &mut first, now, 4).0, 3);
        let mut second = AddressShare::new(now);
        assert!(brake.admit(now, 4, 1000, false, &mut second).is_ok());
    }

    #[test]
    fn a_resend_after_the_named_wait_is_let_in() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        let mut flooder = AddressShare::new(start);
        let later = start + Duration::from_secs(20);
        let (_, wait) = fill(&mut brake, &mut flooder, later, 40);
        assert!(wait > Duration::ZERO);
        let back = later + wait + Duration::from_millis(1);
        assert!(brake.admit(back, 40, 1000, false, &mut flooder).is_ok());
    }

    /// The site's count refuses first, but once it has room the address is still past its share:
    /// the wait named is until both let the message in, not the first only.
    #[test]
    fn a_wait_for_the_sites_count_also_covers_the_addresss_share() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        let mut first = AddressShare::new(start);
        let mut second = AddressShare::new(start);
        assert_eq!(fill(&mut brake, &mut first, start, 20).0, 15);
        let later = start + Duration::from_secs(1);
        let (admitted, wait) = fill(&mut brake, &mut second, later, 20);
        assert_eq!(admitted, 5, "the quarter kept for others");
        let back = later + wait + Duration::from_millis(1);
        assert!(
            brake.admit(back, 20, 1000, false, &mut second).is_ok(),
            "told to wait {wait:?}"
        );
    }

    #[test]
    fn a_new_conversation_is_held_to_the_share_of_conversations() {
        let now = Instant::now();
        let mut brake = FloodBrake::new(now);
        let mut flooder = AddressShare::new(now);
        let opened = (0..20)
            .filter(|_| brake.admit(now, 1000, 8, true, &mut flooder).is_ok())
            .count();
        assert_eq!(opened, 6, "three quarters of 8");
        // Messages in conversations it already has are not new conversations.
        assert!(brake.admit(now, 1000, 8, false, &mut flooder).is_ok());
    }
}
