//! Pacing per `rate_key`: a key whose destination documents a per-key rate starts its jobs no
//! faster than that rate (GCRA, one "theoretical arrival time" per key), so Porch does not learn
//! the limit from a storm of 429s. Keys without a documented rate are not paced here. Pure: the
//! caller passes the time (Unix milliseconds), so it is unit-tested directly.

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

/// The documented pace of `rate_key`'s destination, if it has one. Slack channels only: Discord
/// tells its limits per bucket in response headers (and says not to hard-code them), which the
/// runner already obeys as pauses; webhook endpoints and mail servers document none.
pub fn pace_of(rate_key: &str) -> Option<Pace> {
    rate_key.starts_with("slack:").then_some(SLACK_CHANNEL)
}

/// Every paced key's theoretical arrival time: the time its budget would be fully rested again
/// had it started nothing more. A key that is absent, or whose time has passed, is rested.
#[derive(Debug)]
pub struct Pacer {
    /// Which keys are paced, and how (injected so tests can use round numbers).
    pace_of: fn(&str) -> Option<Pace>,
    /// Arrival time per paced key that started a job recently (Unix ms).
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

    /// Starts a job of `key` at `now` if its pace allows it (always, for an unpaced key);
    /// otherwise returns the earliest time it will.
    pub fn try_start(&mut self, key: &str, now: i64) -> Result<(), i64> {
        let Some(pace) = (self.pace_of)(key) else {
            return Ok(());
        };
        let arrival = self.arrival.get(key).map_or(now, |at| (*at).max(now));
        let eligible = arrival - pace.tolerance();
        if now < eligible {
            return Err(eligible);
        }
        self.set(key, arrival + pace.interval_ms);
        Ok(())
    }

    /// A started job made `calls` more calls than the one it was paced for (a thread header
    /// before its reply): they come out of the key's budget too, delaying its next start.
    pub fn spend(&mut self, key: &str, calls: u32, now: i64) {
        let Some(pace) = (self.pace_of)(key) else {
            return;
        };
        let arrival = self.arrival.get(key).map_or(now, |at| (*at).max(now));
        self.set(key, arrival + pace.interval_ms * i64::from(calls));
    }

    /// The destination refused `key` (a 429) until `until`: its budget is empty then, so the key
    /// starts one job at `until` and then keeps its pace, without a burst on top of what the
    /// destination may still be counting.
    pub fn refused_until(&mut self, key: &str, until: i64) {
        let Some(pace) = (self.pace_of)(key) else {
            return;
        };
        let empty = until + pace.tolerance();
        if self.arrival.get(key).is_none_or(|at| *at < empty) {
            self.set(key, empty);
        }
    }

    /// Forgets keys that are rested, so the map holds only keys that started jobs recently.
    pub fn expire(&mut self, now: i64) {
        self.arrival.retain(|_, at| *at > now);
    }

    fn set(&mut self, key: &str, arrival: i64) {
        match self.arrival.get_mut(key) {
            Some(at) => *at = arrival,
            None => {
                self.arrival.insert(key.to_owned(), arrival);
            }
        }
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
    fn a_rested_key_bursts_then_starts_one_job_an_interval() {
        let mut pacer = pacer();
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 3);
        assert_eq!(pacer.try_start("paced:C1", 0), Err(1000));
        assert_eq!(pacer.try_start("paced:C1", 999), Err(1000));
        assert_eq!(starts(&mut pacer, "paced:C1", 1000), 1);
        assert_eq!(pacer.try_start("paced:C1", 1500), Err(2000));
        // A long rest gives back the burst, no more.
        assert_eq!(starts(&mut pacer, "paced:C1", 60_000), 3);
    }

    #[test]
    fn a_key_that_keeps_starting_on_time_keeps_its_pace() {
        let mut pacer = pacer();
        // Tries every 250 ms.
        let started: Vec<i64> = (0..10_000)
            .step_by(250)
            .filter(|now| pacer.try_start("paced:C1", *now).is_ok())
            .collect();
        // The burst spends the rest, then one start a second, on the second.
        let expected: Vec<i64> = [0, 250, 500]
            .into_iter()
            .chain((1..10).map(|s| s * 1000))
            .collect();
        assert_eq!(started, expected);
    }

    #[test]
    fn keys_are_paced_apart_and_unpaced_keys_not_at_all() {
        let mut pacer = pacer();
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 3);
        assert_eq!(starts(&mut pacer, "paced:C2", 0), 3);
        assert_eq!(starts(&mut pacer, "webhook:7", 0), 100);
    }

    #[test]
    fn extra_calls_delay_the_next_start() {
        let mut pacer = pacer();
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 3);
        pacer.spend("paced:C1", 1, 10);
        assert_eq!(pacer.try_start("paced:C1", 1000), Err(2000));
        assert_eq!(starts(&mut pacer, "paced:C1", 2000), 1);
    }

    #[test]
    fn after_a_refusal_the_key_starts_one_job_when_it_ends_then_keeps_its_pace() {
        let mut pacer = pacer();
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 3);
        pacer.refused_until("paced:C1", 5000);
        assert_eq!(pacer.try_start("paced:C1", 4999), Err(5000));
        assert_eq!(
            starts(&mut pacer, "paced:C1", 5000),
            1,
            "no burst after a 429"
        );
        assert_eq!(pacer.try_start("paced:C1", 5000), Err(6000));
        // A refusal that ends before the key's own pace does not hurry it.
        pacer.refused_until("paced:C1", 1000);
        assert_eq!(pacer.try_start("paced:C1", 5500), Err(6000));
    }

    #[test]
    fn rested_keys_are_forgotten() {
        let mut pacer = pacer();
        assert_eq!(starts(&mut pacer, "paced:C1", 0), 3);
        pacer.expire(2999);
        assert_eq!(pacer.arrival.len(), 1);
        pacer.expire(3000);
        assert!(pacer.arrival.is_empty());
        assert_eq!(starts(&mut pacer, "paced:C1", 3000), 3);
    }

    #[test]
    fn only_slack_channels_have_a_documented_pace() {
        assert_eq!(pace_of("slack:T1:C1"), Some(SLACK_CHANNEL));
        for key in ["discord:3", "webhook:4", "email"] {
            assert_eq!(pace_of(key), None, "{key}");
        }
    }
}
