//! Slack's per-channel limit on `chat.postMessage` ("one message per second per channel",
//! short bursts allowed, HTTP 429 with `Retry-After` beyond that): a token bucket per channel.
//! Pure logic over a clock the caller passes in; the mock's handler applies it.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// A per-channel limit: a sustained rate and how many posts beyond one a rested channel may
/// send at once. Written `RATE/s` or `RATE/min`, optionally `+BURST`: `1/s`, `1/s+5`, `20/min`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelLimit {
    /// Posts per `unit`; at least 1.
    rate: u32,
    /// Whether `rate` is per minute (else per second).
    per_minute: bool,
    /// Posts beyond one that a rested channel may send at once (the bucket holds `1 + burst`).
    burst: u32,
}

/// Largest rate and burst accepted: far above Slack's, and small enough that no sum of
/// intervals overflows.
const MAX_RATE: u32 = 100_000;
const MAX_BURST: u32 = 100_000;

const SYNTAX: &str = "expected RATE/s or RATE/min with an optional +BURST, such as 1/s or 1/s+5";

impl ChannelLimit {
    /// Parses `RATE/s`, `RATE/min`, `RATE/s+BURST` or `RATE/min+BURST` (whole numbers, rate
    /// at least 1); the `value_parser` of `--slack-channel-limit`.
    ///
    /// # Errors
    /// A message naming the expected syntax.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (rate, rest) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| format!("`{text}`: {SYNTAX}"))?;
        let (unit, burst) = match rest.split_once('+') {
            Some((unit, burst)) => (unit, Some(burst)),
            None => (rest, None),
        };
        let number = |s: &str, what: &str, max: u32| {
            s.parse::<u32>().ok().filter(|n| *n <= max).ok_or_else(|| {
                format!("`{text}`: the {what} `{s}` is not a whole number up to {max}; {SYNTAX}")
            })
        };
        let rate = number(rate, "rate", MAX_RATE)?;
        if rate == 0 {
            return Err(format!("`{text}`: the rate must be at least 1; {SYNTAX}"));
        }
        let burst = burst.map_or(Ok(0), |b| number(b, "burst", MAX_BURST))?;
        let per_minute = match unit {
            "s" => false,
            "min" => true,
            _ => {
                return Err(format!(
                    "`{text}`: the unit `{unit}` is not s or min; {SYNTAX}"
                ));
            }
        };
        Ok(Self {
            rate,
            per_minute,
            burst,
        })
    }

    /// Sustained posts a second.
    pub fn per_second(self) -> f64 {
        let rate = f64::from(self.rate);
        if self.per_minute { rate / 60.0 } else { rate }
    }

    /// The time one token takes to come back.
    fn interval(self) -> Duration {
        let unit = Duration::from_secs(if self.per_minute { 60 } else { 1 });
        unit / self.rate
    }
}

impl FromStr for ChannelLimit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text)
    }
}

impl fmt::Display for ChannelLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = if self.per_minute { "min" } else { "s" };
        write!(f, "{}/{unit}", self.rate)?;
        if self.burst > 0 {
            write!(f, "+{}", self.burst)?;
        }
        Ok(())
    }
}

/// The limit (off unless set) and every channel's bucket.
///
/// A bucket is kept as the time it will be full again minus one token's worth, the "theoretical
/// arrival time" of GCRA, which is a token bucket counted in time: a post at `now` fits when
/// that time is at most `burst` intervals ahead of `now`. Integer durations keep it exact.
#[derive(Debug, Default)]
pub(super) struct ChannelLimits {
    limit: Option<ChannelLimit>,
    due: HashMap<String, Instant>,
}

impl ChannelLimits {
    /// Sets (or with `None` lifts) the limit; every channel starts rested.
    pub(super) fn set(&mut self, limit: Option<ChannelLimit>) {
        self.limit = limit;
        self.due.clear();
    }

    /// Admits a post to `channel` at `now`, or refuses it with the `Retry-After` to send: the
    /// whole seconds until the channel's next token, at least 1 (the header carries only whole
    /// seconds, and 0 would invite an immediate retry).
    pub(super) fn admit(&mut self, channel: &str, now: Instant) -> Result<(), u64> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let due = self.due.get(channel).map_or(now, |due| (*due).max(now));
        let tolerance = limit.interval() * limit.burst;
        if due > now + tolerance {
            let wait = due.saturating_duration_since(now + tolerance);
            let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return Err(whole.max(1));
        }
        self.due.insert(channel.to_owned(), due + limit.interval());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(text: &str) -> ChannelLimits {
        let mut limits = ChannelLimits::default();
        limits.set(Some(ChannelLimit::parse(text).expect("a valid limit")));
        limits
    }

    fn at(start: Instant, millis: u64) -> Instant {
        start + Duration::from_millis(millis)
    }

    #[test]
    fn the_limit_is_off_by_default() {
        let mut limits = ChannelLimits::default();
        let now = Instant::now();
        assert!((0..1000).all(|_| limits.admit("C1", now).is_ok()));
    }

    #[test]
    fn one_a_second_admits_one_then_refuses_until_the_next_token() {
        let mut limits = limits("1/s");
        let t0 = Instant::now();
        assert_eq!(limits.admit("C1", t0), Ok(()));
        assert_eq!(limits.admit("C1", at(t0, 1)), Err(1));
        // 999 ms later the token is still 1 ms away: Retry-After rounds up to a whole second.
        assert_eq!(limits.admit("C1", at(t0, 999)), Err(1));
        assert_eq!(limits.admit("C1", at(t0, 1000)), Ok(()));
        assert_eq!(limits.admit("C1", at(t0, 1500)), Err(1));
    }

    #[test]
    fn channels_have_buckets_of_their_own() {
        let mut limits = limits("1/s");
        let t0 = Instant::now();
        assert_eq!(limits.admit("C1", t0), Ok(()));
        assert_eq!(limits.admit("C2", t0), Ok(()));
        assert_eq!(limits.admit("C1", t0), Err(1));
    }

    #[test]
    fn a_rested_channel_may_burst_then_keeps_the_sustained_rate() {
        let mut limits = limits("1/s+5");
        let t0 = Instant::now();
        assert!((0..6).all(|_| limits.admit("C1", t0).is_ok()));
        assert_eq!(limits.admit("C1", t0), Err(1));
        assert_eq!(limits.admit("C1", at(t0, 1000)), Ok(()));
        assert_eq!(limits.admit("C1", at(t0, 1000)), Err(1));
        // A long rest refills the bucket to its size, no further.
        let later = at(t0, 60_000);
        assert!((0..6).all(|_| limits.admit("C1", later).is_ok()));
        assert_eq!(limits.admit("C1", later), Err(1));
    }

    #[test]
    fn a_slow_rate_asks_for_the_whole_wait() {
        let mut limits = limits("20/min");
        let t0 = Instant::now();
        assert_eq!(limits.admit("C1", t0), Ok(()));
        assert_eq!(limits.admit("C1", t0), Err(3));
        assert_eq!(limits.admit("C1", at(t0, 2500)), Err(1));
        assert_eq!(limits.admit("C1", at(t0, 3000)), Ok(()));
    }

    #[test]
    fn a_clock_that_steps_back_does_not_mint_tokens() {
        let mut limits = limits("1/s");
        let t0 = Instant::now();
        let t1 = at(t0, 1000);
        assert_eq!(limits.admit("C1", t1), Ok(()));
        assert!(limits.admit("C1", t0).is_err());
        assert_eq!(limits.admit("C1", at(t0, 1999)), Err(1));
        assert_eq!(limits.admit("C1", at(t0, 2000)), Ok(()));
    }

    #[test]
    fn limits_parse_and_show_as_written() {
        for text in ["1/s", "1/s+5", "20/min", "3/min+2", "100/s+0"] {
            let limit = ChannelLimit::parse(text).expect(text);
            let shown = limit.to_string();
            assert_eq!(ChannelLimit::parse(&shown), Ok(limit), "{text} → {shown}");
        }
        assert_eq!(
            ChannelLimit::parse("100/s+0")
                .as_ref()
                .map(ToString::to_string),
            Ok("100/s".into())
        );
        assert!((ChannelLimit::parse("30/min").expect("valid").per_second() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn nonsense_limits_are_refused_with_the_syntax() {
        for text in [
            "",
            "1",
            "0/s",
            "-1/s",
            "1.5/s",
            "1/h",
            "1/s+",
            "1/s+-2",
            "1/s+x",
            "s/1",
            "1/s+5+1",
            "999999999/s",
        ] {
            let error = ChannelLimit::parse(text).expect_err(text);
            assert!(error.contains("RATE/s"), "{text}: {error}");
        }
    }
}
