//! The per-site flood brake: sliding-minute counters of messages and new conversations, and a
//! level that steps up while a site is being flooded and back down after a quiet minute.
//! Levels and their effects are documented in docs/widget-protocol.md ("The flood brake").

use std::time::{Duration, Instant};

const MINUTE: Duration = Duration::from_mins(1);
/// Shortest wait suggested to a refused client, so retries do not spin.
const MIN_RETRY: Duration = Duration::from_millis(250);

/// Counts events over a sliding minute, approximated by two fixed windows (the previous
/// window's count weighted by how much of it still overlaps the last 60 s).
#[derive(Debug, Clone)]
struct SlidingMinute {
    window_start: Instant,
    previous: u32,
    current: u32,
}

impl SlidingMinute {
    fn new(now: Instant) -> Self {
        Self {
            window_start: now,
            previous: 0,
            current: 0,
        }
    }

    fn roll(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.window_start);
        if elapsed >= 2 * MINUTE {
            *self = Self::new(now);
        } else if elapsed >= MINUTE {
            self.previous = self.current;
            self.current = 0;
            self.window_start += MINUTE;
        }
    }

    fn previous_weight(&self, now: Instant) -> f64 {
        1.0 - now
            .saturating_duration_since(self.window_start)
            .as_secs_f64()
            / 60.0
    }

    fn count(&self, now: Instant) -> f64 {
        f64::from(self.previous) * self.previous_weight(now) + f64::from(self.current)
    }

    /// How long until one more event fits under `limit` if nothing else arrives, as this very
    /// count will judge it then: a client told to wait that long is let in when it comes back.
    /// Until the window ends the previous window's share decays; after it, the current window
    /// becomes the previous one and decays in turn, so the wait can be up to two minutes.
    fn wait_below(&self, now: Instant, limit: f64) -> Duration {
        let excess = self.count(now) + 1.0 - limit;
        if excess <= 0.0 {
            return Duration::ZERO;
        }
        let to_window_end = MINUTE.saturating_sub(now.saturating_duration_since(self.window_start));
        let decay_per_second = f64::from(self.previous) / 60.0;
        if decay_per_second > 0.0 {
            let within = Duration::from_secs_f64(excess / decay_per_second);
            if within <= to_window_end {
                return within.max(MIN_RETRY);
            }
        }
        // After the window ends the count is `current × (1 − s/60)` at `s` seconds past it.
        let current = f64::from(self.current);
        let past_window_end = if current > limit - 1.0 {
            Duration::from_secs_f64(60.0 * (1.0 - (limit - 1.0) / current))
        } else {
            Duration::ZERO
        };
        (to_window_end + past_window_end).clamp(MIN_RETRY, 2 * MINUTE)
    }
}

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
        self.level == 0
            && now.saturating_duration_since(self.messages.window_start) >= 2 * MINUTE
            && now.saturating_duration_since(self.conversations.window_start) >= 2 * MINUTE
    }

    /// Decides on one message (which starts a conversation when `starts_conversation`), counting
    /// it if allowed. Limits are per minute.
    pub fn admit(
        &mut self,
        now: Instant,
        messages_per_minute: u32,
        conversations_per_minute: u32,
        starts_conversation: bool,
    ) -> Result<(), HeldBack> {
        self.messages.roll(now);
        self.conversations.roll(now);
        self.update_level(now, messages_per_minute, conversations_per_minute);

        let message_limit = if self.level >= 2 {
            (f64::from(messages_per_minute) / 2.0).max(1.0)
        } else {
            f64::from(messages_per_minute)
        };
        if starts_conversation && self.level >= 2 {
            return Err(self.refuse(now, MINUTE));
        }
        // The longer of the two waits, so that the message fits both counts when it comes back.
        let mut wait = self.messages.wait_below(now, message_limit);
        if starts_conversation {
            let conversation_limit = f64::from(conversations_per_minute);
            wait = wait.max(self.conversations.wait_below(now, conversation_limit));
        }
        if !wait.is_zero() {
            return Err(self.refuse(now, wait));
        }
        self.messages.current += 1;
        if starts_conversation {
            self.conversations.current += 1;
        }
        Ok(())
    }

    fn refuse(&mut self, now: Instant, retry_after: Duration) -> HeldBack {
        self.last_refusal = Some(now);
        if self.level == 0 {
            self.level = 1;
            self.level_since = now;
            tracing::warn!("a site's flood brake is holding messages back");
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
            tracing::warn!("a site is flooded: new conversations are refused");
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

    #[test]
    fn holds_back_past_the_limit_and_steps_up() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        for i in 0..10 {
            assert!(
                brake
                    .admit(at(start, f64::from(i) * 0.1), 10, 5, false)
                    .is_ok()
            );
        }
        let held = brake.admit(at(start, 1.0), 10, 5, false).unwrap_err();
        assert!(held.retry_after >= MIN_RETRY);
        assert_eq!(brake.level(), 1);
    }

    #[test]
    fn sustained_refusals_reach_flood_level_which_refuses_new_conversations() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        let mut t = 0.0;
        while t < 65.0 {
            let _ = brake.admit(at(start, t), 10, 5, false);
            t += 0.05;
        }
        assert_eq!(brake.level(), 2);
        assert!(brake.admit(at(start, 65.0), 10, 5, true).is_err());
    }

    #[test]
    fn a_quiet_minute_steps_the_level_down() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        for i in 0..20 {
            let _ = brake.admit(at(start, f64::from(i) * 0.01), 10, 5, false);
        }
        assert_eq!(brake.level(), 1);
        // More than a minute in level 1, no refusal for a minute, and counters well below half.
        assert!(brake.admit(at(start, 200.0), 10, 5, false).is_ok());
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
                assert!(brake.admit(at(start, t), 1000, limit, true).is_ok());
                t += 0.5;
            }
            t = 60.0 + burst_at;
            while brake.admit(at(start, t), 1000, limit, true).is_ok() {
                t += 0.1;
            }
            let refused = brake.admit(at(start, t), 1000, limit, true).unwrap_err();
            let back = t + refused.retry_after.as_secs_f64() + 0.001;
            assert!(
                brake.admit(at(start, back), 1000, limit, true).is_ok(),
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
            assert!(brake.admit(at(start, f64::from(i)), 3, 3, true).is_ok());
        }
        let held = brake.admit(at(start, 10.0), 3, 3, true).unwrap_err();
        let back = at(start, 10.0) + held.retry_after + Duration::from_millis(1);
        assert!(brake.admit(back, 3, 3, true).is_ok());
    }

    #[test]
    fn new_conversations_have_their_own_limit() {
        let start = Instant::now();
        let mut brake = FloodBrake::new(start);
        for _ in 0..5 {
            assert!(brake.admit(start, 100, 5, true).is_ok());
        }
        assert!(brake.admit(start, 100, 5, true).is_err());
        // Messages in existing conversations still pass at level 1.
        assert!(brake.admit(start, 100, 5, false).is_ok());
    }
}
