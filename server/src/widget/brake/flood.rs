//! The per-site flood brake: sliding-minute counters of messages and new conversations, and a
//! level that steps up while a site is being flooded and back down after a quiet minute.
//! Levels and their effects are documented in docs/widget-protocol.md ("The flood brake").

use std::time::{Duration, Instant};

use super::share::AddressShare;
use super::sliding_minute::{MIN_RETRY, MINUTE, SlidingMinute};

/// Why the site refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldBack {
    pub retry_after: Duration,
}

/// The flood state of one site.
#[derive(Debug, Clone)]
pub struct FloodBrake {
    level: u8,
    level_since: Instant,
    last_refusal: Option<Instant>,
    messages: SlidingMinute,
    conversations: SlidingMinute,
}

impl FloodBrake {
    pub fn new(now: Instant) -> Self {
        Self {
            level: 0,
            level_since: now,
            last_refusal: None,
            messages: SlidingMinute::new(now),
            conversations: SlidingMinute::new(now),
        }
    }

    /// 0 normal, 1 holding back, 2 flood.
    pub fn level(&self) -> u8 {
        self.level
    }

    /// True when the brake holds nothing worth keeping: level 0 and nothing counted for two
    /// minutes.
    pub fn is_idle(&self, now: Instant) -> bool {
        self.level == 0 && self.messages.is_idle(now) && self.conversations.is_idle(now)
    }

    /// Decides on one message (which starts a conversation when `starts_conversation`) from the
    /// address whose `share` of this site is given, counting it in both if allowed. Limits are per
    /// minute.
    pub fn admit(
        &mut self,
        now: Instant,
        messages_per_minute: u32,
        conversations_per_minute: u32,
        starts_conversation: bool,
        share: &mut AddressShare,
    ) -> Result<(), HeldBack> {
        let (wait, kept) = self.waits(
            now,
            messages_per_minute,
            conversations_per_minute,
            starts_conversation,
            share,
        );
        if !wait.is_zero() {
            return Err(self.refuse(now, wait.max(kept)));
        }
        // An address held to its share is not a flood: the level and its clock stay as they are.
        if !kept.is_zero() {
            return Err(HeldBack { retry_after: kept });
        }
        self.messages.add();
        if starts_conversation {
            self.conversations.add();
        }
        share.add(starts_conversation);
        Ok(())
    }

    /// How long a message would be held back now (zero: it would be let in), counting neither
    /// it nor a refusal: for a message another brake refused, whose wait must also cover this
    /// one. The level still follows the clock, as at every look (a step up is logged by the
    /// caller, as for an admission).
    pub fn wait_now(
        &mut self,
        now: Instant,
        messages_per_minute: u32,
        conversations_per_minute: u32,
        starts_conversation: bool,
        share: &mut AddressShare,
    ) -> Duration {
        let (wait, kept) = self.waits(
            now,
            messages_per_minute,
            conversations_per_minute,
            starts_conversation,
            share,
        );
        let wait = wait.max(kept);
        if wait.is_zero() {
            wait
        } else {
            wait.max(MIN_RETRY)
        }
    }

    /// The wait for the site's counts (`MINUTE` for a new conversation in a flood) and the wait
    /// for the address's share, each until it fits if nothing else arrives.
    fn waits(
        &mut self,
        now: Instant,
        messages_per_minute: u32,
        conversations_per_minute: u32,
        starts_conversation: bool,
        share: &mut AddressShare,
    ) -> (Duration, Duration) {
        self.messages.roll(now);
        self.conversations.roll(now);
        share.roll(now);
        self.update_level(now, messages_per_minute, conversations_per_minute);

        let message_limit = if self.level >= 2 {
            (f64::from(messages_per_minute) / 2.0).max(1.0)
        } else {
            f64::from(messages_per_minute)
        };
        if starts_conversation && self.level >= 2 {
            return (MINUTE, Duration::ZERO);
        }
        // The longest of the waits, so that the message fits both counts and the address's share
        // when it comes back.
        let conversations = starts_conversation
            .then_some((&self.conversations, f64::from(conversations_per_minute)));
        let mut wait = self.messages.wait_below(now, message_limit);
        if let Some((count, limit)) = conversations {
            wait = wait.max(count.wait_below(now, limit));
        }
        let kept = share.reserve_wait(now, (&self.messages, message_limit), conversations);
        (wait, kept)
    }

    /// Takes back a message admitted at `at` (with its address's share): nothing was stored, and
    /// only stored messages count.
    pub fn forget(&mut self, at: Instant, starts_conversation: bool, share: &mut AddressShare) {
        self.messages.remove(at);
        if starts_conversation {
            self.conversations.remove(at);
        }
        share.remove(at, starts_conversation);
    }

    fn refuse(&mut self, now: Instant, retry_after: Duration) -> HeldBack {
        self.last_refusal = Some(now);
        if self.level == 0 {
            self.level = 1;
            self.level_since = now;
        }
        HeldBack {
            retry_after: retry_after.max(MIN_RETRY),
        }
    }

    fn update_level(
        &mut self,
        now: Instant,
        messages_per_minute: u32,
        conversations_per_minute: u32,
    ) {
        let in_level = now.saturating_duration_since(self.level_since);
        let refused_within = |d: Duration| {
            self.last_refusal
                .is_some_and(|t| now.saturating_duration_since(t) < d)
        };
        if self.level == 1 && in_level >= MINUTE && refused_within(Duration::from_secs(5)) {
            self.level = 2;
            self.level_since = now;
            return;
        }
        let is_quiet = !refused_within(MINUTE)
            && self.messages.count(now) < f64::from(messages_per_minute) / 2.0
            && self.conversations.count(now) < f64::from(conversations_per_minute) / 2.0;
        if self.level > 0 && in_level >= MINUTE && is_quiet {
            self.level -= 1;
            self.level_since = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, secs: f64) -> Instant {
        start + Duration::from_secs_f64(secs)
    }

    /// Each message from another address, so no address's share decides: the site's count does.
    fn admit(
        brake: &mut FloodBrake,
        now: Instant,
        messages: u32,
        conversations: u32,
        starts: bool,
    ) -> Result<(), HeldBack> {
        let mut share = AddressShare::new(now);
        brake.admit(now, messages, conversations, starts, &mut share)
    }

    #[test]
    fn holds_back_past_the_limit_and_steps_up() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        for i in 0..10 {
            assert!(admit(&mut brake, at(start, f64::from(i) * 0.1), 10, 5, false).is_ok());
        }
        let held = admit(&mut brake, at(start, 1.0), 10, 5, false).unwrap_err();
        assert!(held.retry_after >= MIN_RETRY);
        assert_eq!(brake.level(), 1);
    }

    #[test]
    fn sustained_refusals_reach_flood_level_which_refuses_new_conversations() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        let mut t = 0.0;
        while t < 65.0 {
            let _ = admit(&mut brake, at(start, t), 10, 5, false);
            t += 0.05;
        }
        assert_eq!(brake.level(), 2);
        assert!(admit(&mut brake, at(start, 65.0), 10, 5, true).is_err());
    }

    #[test]
    fn a_quiet_minute_steps_the_level_down() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        for i in 0..20 {
            let _ = admit(&mut brake, at(start, f64::from(i) * 0.01), 10, 5, false);
        }
        assert_eq!(brake.level(), 1);
        // More than a minute in level 1, no refusal for a minute, and counters well below half.
        assert!(admit(&mut brake, at(start, 200.0), 10, 5, false).is_ok());
        assert_eq!(brake.level(), 0);
    }

    /// Whatever the count, a resend after the wait the refusal named is let in when nothing
    /// else arrived meanwhile (an outside client found a resend after `retry_after_ms` refused
    /// again: the wait ended at the window's end, while the count still weighed the old window).
    #[test]
    fn a_resend_after_the_named_wait_is_let_in() {
        for (limit, burst_at) in [(3, 0.0), (3, 30.0), (10, 59.0), (1, 12.5), (40, 45.0)] {
            let start = Instant::now();
            let mut brake = FloodBrake::new(start);
            let mut t = 0.0;
            // A window that held traffic before, then a burst up to the limit.
            for _ in 0..limit / 2 {
                assert!(admit(&mut brake, at(start, t), 1000, limit, true).is_ok());
                t += 0.5;
            }
            t = 60.0 + burst_at;
            while admit(&mut brake, at(start, t), 1000, limit, true).is_ok() {
                t += 0.1;
            }
            let refused = admit(&mut brake, at(start, t), 1000, limit, true).unwrap_err();
            let back = t + refused.retry_after.as_secs_f64() + 0.001;
            assert!(
                admit(&mut brake, at(start, back), 1000, limit, true).is_ok(),
                "limit {limit}: refused at {t:.1} s, told to wait {:?}",
                refused.retry_after
            );
        }
    }

    #[test]
    fn a_new_conversation_waits_for_both_counts() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        for i in 0..3 {
            assert!(admit(&mut brake, at(start, f64::from(i)), 3, 3, true).is_ok());
        }
        let held = admit(&mut brake, at(start, 10.0), 3, 3, true).unwrap_err();
        let back = at(start, 10.0) + held.retry_after + Duration::from_millis(1);
        assert!(admit(&mut brake, back, 3, 3, true).is_ok());
    }

    #[test]
    fn new_conversations_have_their_own_limit() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        for _ in 0..5 {
            assert!(admit(&mut brake, start, 100, 5, true).is_ok());
        }
        assert!(admit(&mut brake, start, 100, 5, true).is_err());
        // Messages in existing conversations still pass at level 1.
        assert!(admit(&mut brake, start, 100, 5, false).is_ok());
    }
}
