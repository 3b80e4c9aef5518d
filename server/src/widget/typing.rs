//! The visitor's `typing` frames: forwarded to the agents' conversation pages at most once a
//! second per connection on average, in bursts of two (a token bucket), so that typing again
//! right after sending a message still shows; a stop right after a forwarded start is free, so
//! "Visitor is typing…" never lingers. The rest are dropped without an answer. Not messages: the
//! brakes do not count them and nothing is stored.

use std::time::{Duration, Instant};

use crate::store::ConversationId;

/// One forwarded frame's worth of tokens comes back this often.
const INTERVAL: Duration = Duration::from_secs(1);
/// Frames that may pass at once.
const BURST: f64 = 2.0;

/// One connection's typing state.
#[derive(Debug, Default)]
pub struct VisitorTyping {
    /// The visitor's open conversation; before their first message there is none, and typing
    /// goes nowhere.
    pub conversation: Option<ConversationId>,
    /// The bucket: tokens left when last counted, and when that was.
    tokens: f64,
    counted_at: Option<Instant>,
    /// The last forwarded frame said "typing".
    was_active: bool,
}

impl VisitorTyping {
    /// Where to forward a `typing` frame that arrived at `now`, or `None` to drop it.
    pub fn admit(&mut self, active: bool, now: Instant) -> Option<ConversationId> {
        let conversation = self.conversation?;
        let refill = self.counted_at.map_or(BURST, |at| {
            now.duration_since(at).as_secs_f64() / INTERVAL.as_secs_f64()
        });
        self.tokens = (self.tokens + refill).min(BURST);
        self.counted_at = Some(now);
        let is_free_stop = self.was_active && !active;
        if !is_free_stop {
            if self.tokens < 1.0 {
                return None;
            }
            self.tokens -= 1.0;
        }
        self.was_active = active;
        Some(conversation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_forwarded_before_the_first_message() {
        let mut typing = VisitorTyping::default();
        assert_eq!(typing.admit(true, Instant::now()), None);
    }

    #[test]
    fn bursts_of_two_then_one_a_second_and_a_stop_after_a_start_is_free() {
        let mut typing = VisitorTyping {
            conversation: Some(ConversationId(7)),
            ..VisitorTyping::default()
        };
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        assert!(typing.admit(true, at(0)).is_some());
        assert!(
            typing.admit(false, at(100)).is_some(),
            "a stop after a start"
        );
        assert!(
            typing.admit(true, at(200)).is_some(),
            "the second of the burst"
        );
        assert!(typing.admit(true, at(300)).is_none());
        assert!(
            typing.admit(false, at(400)).is_some(),
            "a stop after a start"
        );
        assert!(
            typing.admit(false, at(500)).is_none(),
            "no token, not after a start"
        );
        assert!(typing.admit(true, at(1300)).is_some(), "a token came back");
        assert!(typing.admit(true, at(1400)).is_none());
    }
}
