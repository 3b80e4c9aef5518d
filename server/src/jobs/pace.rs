//! Pacing per `rate_key`: once a destination with a documented per-key rate has refused a key
//! (a 429), the key starts its jobs no faster than that rate (GCRA, one "theoretical arrival
//! time" per key) for as long as it stays busy, so one 429 is not followed by a storm of them.
//! Keys without a documented rate are not paced here. Pure: the caller passes the time (Unix
//! milliseconds), so it is unit-tested directly.

use std::collections::HashMap;

/// How fast a key may start jobs: one per `interval_ms` on average, and up to `burst` at once
/// after a rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// The sustained spacing between starts.
    pub interval_ms: i64,
    /// Starts a rested key may make at once; at least 1.
    pub burst: u32,
}

impl Pace {
    /// How far ahead of now a key's arrival time may run before it must wait: the burst's
    /// starts beyond the first.
    fn tolerance(self) -> i64 {
        self.interval_ms * i64::from(self.burst.max(1) - 1)
    }
}

/// Slack's `chat.postMessage` "generally allows posting one message per second per channel"
/// with "short bursts >1 allowed" and no guarantee for them (`reference/integrations.md` §1.1).
/// A burst of 3, as that reference's pacing policy suggests: a quiet channel's new thread (its
/// header and first reply) and one more message go at once. The interval is 5 % over a second
/// because Slack counts arrivals and ours are not evenly spaced: a job reaches Slack after its
/// round's commit and an HTTP exchange, some milliseconds to tens of them later than it was
/// started, so starts exactly a second apart would arrive less than a second apart about half of
/// the time against a strict limit, and each such post earns a 429 and a whole second's wait.
/// Thread-header rewrites (`chat.update`) share the channel's key and are paced with its posts.
pub const SLACK_CHANNEL: Pace = Pace {
    interval_ms: 1050,
    burst: 3,
};

/// How long a refused key stays paced after it has rested: a channel that was busy once is
/// likely to be busy again soon, and pacing a key that has nothing to send costs nothing.
const REMEMBER_MS: i64 = 60_000;

/// The documented pace of `rate_key`'s destination, if it has one. Slack channels only: Discord
/// tells its limits per bucket in response headers (and says not to hard-code them), which the
/// runner already obeys as pauses; webhook endpoints and mail servers document none.
pub fn pace_of(rate_key: &str) -> Option<Pace> {
    rate_key.starts_with("slack:").then_some(SLACK_CHANNEL)
}

/// The theoretical arrival time of every key being paced: the time its budget would be fully
/// rested again had it started nothing more. Only keys their destination refused are here.
///
/// Why not pace every Slack channel from its first post: a destination without Slack's limit
/// (the Slack mock of the load test and of the integration tests, a proxy) would then be held to
/// it too, and a quiet channel, the common case, never reaches it anyway.
#[derive(Debug)]
pub struct Pacer {
    /// Which keys are paced, and how (injected so tests can use round numbers).
    pace_of: fn(&str) -> Option<Pace>,
    /// Arrival time per key being paced (Unix ms).
    arrival: HashMap<String, i64>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new(pace_of)
    }
}

impl Pacer {
    pub fn new(pace_of: fn(&str) -> Option<Pace>) -> Self {
        Self {
            pace_of,
            arrival: HashMap::new(),
        }
    }

    /// Starts a job of `key` at `now` if its pace allows it (always, for a key not being
    /// paced); otherwise returns the earliest time it will.
    pub fn try_start(&mut self, key: &str, now: i64) -> Result<(), i64> {
        let (Some(pace), Some(at)) = ((self.pace_of)(key), self.arrival.get_mut(key)) else {
            return Ok(());
        };
        let arrival = (*at).max(now);
        let eligible = arrival - pace.tolerance();
        if now < eligible {
            return Err(eligible);
        }
        *at = arrival + pace.interval_ms;
        Ok(())
    }

    /// A started job made `calls` more calls than the one it was paced for (a thread header
    /// before its reply): if its key is being paced, they delay the key's next start.
    pub fn spend(&mut self, key: &str, calls: u32, now: i64) {
        let (Some(pace), Some(at)) = ((self.pace_of)(key), self.arrival.get_mut(key)) else {
            return;
        };
        *at = (*at).max(now) + pace.interval_ms * i64::from(calls);
    }

    /// The destination refused `key` (a 429) until `until`: from now on the key is paced, and
    /// its budget is taken as empty at `until`, so it starts one job then and keeps its pace,
    /// without a burst on top of what the destination may still be counting.
    pub fn refused_until(&mut self, key: &str, until: i64) {
        let Some(pace) = (self.pace_of)(key) else {
            return;
        };
        let empty = until + pace.tolerance();
        match self.arrival.get_mut(key) {
            Some(at) => *at = (*at).max(empty),
            None => {
                self.arrival.insert(key.to_owned(), empty);
            }
        }
    }

    /// Stops pacing `key` (its integration was turned off or blocked, and its jobs left).
    pub fn forget(&mut self, key: &str) {
        self.arrival.remove(key);
    }

    /// Stops pacing keys that have been rested for [`REMEMBER_MS`], so the map holds only keys
    /// refused recently.
    pub fn expire(&mut self, now: i64) {
        self.arrival.retain(|_, at| *at + REMEMBER_MS > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One a second with a burst of 3, for round numbers.
    fn pacer() -> Pacer {
        Pacer::new(|key| {
            key.starts_with("paced:").then_some(Pace {
                interval_ms: 1000,
                burst: 3,
            })
        })
    }

    fn starts(pacer: &mut Pacer, key: &str, now: i64) -> usize {
        std::iter::from_fn(|| pacer.try_start(key, now).ok())
            .take(100)
            .count()
    }

    #[test]
    fn a_key_is_paced_once_its_destination_refused_it() {
        let mut pacer = pacer();
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 100, "not refused yet");
        pacer.refused_until("paced:C1", 500);
        assert_eq!(pacer.try_start("paced:C1", 499), Err(500));
        assert_eq!(
            starts(&mut pacer, "paced:C1", 500),
            1,
            "no burst after a 429"
        );
        assert_eq!(pacer.try_start("paced:C1", 500), Err(1500));
        assert_eq!(pacer.try_start("paced:C1", 1499), Err(1500));
        assert_eq!(starts(&mut pacer, "paced:C1", 1500), 1);
    }

    #[test]
    fn a_paced_key_that_keeps_starting_on_time_keeps_its_pace() {
        let mut pacer = pacer();
        pacer.refused_until("paced:C1", 0);
        // Tries every 250 ms: one start a second, on the second.
        let started: Vec<i64> = (0..10_000)
            .step_by(250)
            .filter(|now| pacer.try_start("paced:C1", *now).is_ok())
            .collect();
        assert_eq!(started, (0..10).map(|s| s * 1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_paced_key_that_rested_bursts_then_keeps_its_pace() {
        let mut pacer = pacer();
        pacer.refused_until("paced:C1", 0);
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 1);
        assert_eq!(starts(&mut pacer, "paced:C1", 10_000), 3);
        assert_eq!(pacer.try_start("paced:C1", 10_000), Err(11_000));
        assert_eq!(starts(&mut pacer, "paced:C1", 11_000), 1);
    }

    #[test]
    fn keys_are_paced_apart_and_keys_without_a_pace_not_at_all() {
        let mut pacer = pacer();
        pacer.refused_until("paced:C1", 0);
        pacer.refused_until("webhook:7", 0);
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 1);
        assert_eq!(starts(&mut pacer, "paced:C2", 0), 100);
        assert_eq!(starts(&mut pacer, "webhook:7", 0), 100);
    }

    #[test]
    fn extra_calls_delay_a_paced_keys_next_start() {
        let mut pacer = pacer();
        pacer.refused_until("paced:C1", 0);
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 1);
        pacer.spend("paced:C1", 1, 10);
        assert_eq!(pacer.try_start("paced:C1", 1000), Err(2000));
        assert_eq!(starts(&mut pacer, "paced:C1", 2000), 1);
        pacer.spend("paced:C2", 1, 10);
        assert_eq!(
            starts(&mut pacer, "paced:C2", 10),
            100,
            "not paced, not charged"
        );
    }

    #[test]
    fn a_refusal_that_ends_before_the_keys_own_pace_does_not_hurry_it() {
        let mut pacer = pacer();
        pacer.refused_until("paced:C1", 0);
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 1);
        pacer.refused_until("paced:C1", 500);
        assert_eq!(pacer.try_start("paced:C1", 500), Err(1000));
    }

    #[test]
    fn a_key_rested_for_a_while_is_no_longer_paced() {
        let mut pacer = pacer();
        pacer.refused_until("paced:C1", 0);
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 1);
        let rested = 3000 + REMEMBER_MS;
        pacer.expire(rested - 1);
        assert_eq!(pacer.arrival.len(), 1);
        pacer.expire(rested);
        assert!(pacer.arrival.is_empty());
        assert_eq!(starts(&mut pacer, "paced:C1", rested), 100);
    }

    #[test]
    fn only_slack_channels_have_a_documented_pace() {
        assert_eq!(pace_of("slack:T1:C1"), Some(SLACK_CHANNEL));
        for key in ["discord:3", "webhook:4", "email"] {
            assert_eq!(pace_of(key), None, "{key}");
        }
    }
}
