//! A lock-free histogram of microsecond values for hot paths: recording is three relaxed atomic
//! operations and no allocation. Buckets are logarithmic (8 per power of two, so a percentile read
//! from them is within 12.5 % of the truth); values below 16 µs are exact. Readers take a
//! [`Snapshot`] and subtract an earlier one to get an interval's distribution.
//! A leaf module: it imports nothing from the crate, so the store's writer can time its commits
//! without depending on `metrics` (which re-exports it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Values below this are their own bucket.
const LINEAR: usize = 16;
/// Sub-buckets per power of two (3 bits below the leading one).
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// Highest power of two kept apart; larger values (over 35 minutes) share the last bucket.
const TOP_POWER: u32 = 31;
/// Number of buckets: the linear ones, then `SUB` for each power from 2^4 to 2^31.
pub const BUCKETS: usize = LINEAR + (TOP_POWER as usize - 3) * SUB;

/// The bucket a value falls in.
fn bucket_of(micros: u64) -> usize {
    if micros < LINEAR as u64 {
        // Lossless: below 16.
        return usize::try_from(micros).unwrap_or(0);
    }
    let power = micros.ilog2().min(TOP_POWER);
    let micros = micros.min((1 << (TOP_POWER + 1)) - 1);
    let sub = usize::try_from((micros >> (power - SUB_BITS)) & (SUB as u64 - 1)).unwrap_or(0);
    LINEAR + (power as usize - 4) * SUB + sub
}

/// The smallest value of bucket `index` and the smallest value of the next one.
pub fn bucket_bounds(index: usize) -> (u64, u64) {
    if index < LINEAR {
        let low = index as u64;
        return (low, low + 1);
    }
    let rest = index - LINEAR;
    let power = u32::try_from(rest / SUB).unwrap_or(0) + 4;
    let sub = (rest % SUB) as u64;
    let shift = power - SUB_BITS;
    ((SUB as u64 + sub) << shift, (SUB as u64 + sub + 1) << shift)
}

/// The histogram. Shared behind an `Arc`; every method takes `&self`.
#[derive(Debug)]
pub struct LogHistogram {
    buckets: Box<[AtomicU64; BUCKETS]>,
    /// Sum of all values, for the mean and Prometheus' `_sum`.
    sum: AtomicU64,
    /// Largest value since the last [`LogHistogram::take_max`]: the sampler's "max this second".
    max: AtomicU64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        Self {
            buckets: Box::new(std::array::from_fn(|_| AtomicU64::new(0))),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

impl LogHistogram {
    /// Records one value (microseconds for durations; any unit the owner documents).
    pub fn record_value(&self, micros: u64) {
        self.buckets[bucket_of(micros)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(micros, Ordering::Relaxed);
        self.max.fetch_max(micros, Ordering::Relaxed);
    }

    /// Records a duration (saturating at `u64::MAX` microseconds).
    pub fn record(&self, value: Duration) {
        self.record_value(u64::try_from(value.as_micros()).unwrap_or(u64::MAX));
    }

    /// The largest value recorded since the previous call, resetting it.
    pub fn take_max(&self) -> u64 {
        self.max.swap(0, Ordering::Relaxed)
    }

    /// The counts so far (monotonic; subtract an earlier snapshot for an interval).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            counts: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            sum: self.sum.load(Ordering::Relaxed),
        }
    }
}

/// Bucket counts at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    counts: Vec<u64>,
    /// Sum of the values, in microseconds.
    pub sum: u64,
}

impl Snapshot {
    /// What was recorded after `earlier`.
    #[must_use]
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        let counts = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| c.saturating_sub(earlier.counts.get(i).copied().unwrap_or(0)))
            .collect();
        Snapshot {
            counts,
            sum: self.sum.saturating_sub(earlier.sum),
        }
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value at quantile `q` (0–1) in microseconds: the upper bound of its bucket, so it
    /// errs high, never low. `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        // The rank of the value sought, 1-based; `q` of 0.99 over 100 values is the 99th.
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        #[allow(clippy::cast_sign_loss)]
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, next) = bucket_bounds(i);
                return Some(if next - low == 1 { low } else { next - 1 });
            }
        }
        None
    }

    /// [`Self::quantile`], but no higher than `max`, the largest value recorded over the same
    /// interval: a bucket's upper bound can lie above every value in it, and a p99 shown above
    /// the max beside it reads as a bug. A `max` below the quantile's bucket (a value counted
    /// in this interval whose max was taken with the previous one) is ignored: never lower.
    pub fn quantile_within(&self, q: f64, max: u64) -> Option<u64> {
        self.quantile(q).map(|value| {
            let (low, _) = bucket_bounds(bucket_of(value));
            if max >= low { value.min(max) } else { value }
        })
    }

    /// Counts of values below each power-of-two microsecond bound from 2^`from` to 2^`to`
    /// (per bucket, not cumulative), plus the rest: the coarse buckets `/metrics` shows.
    pub fn power_of_two_buckets(&self, from: u32, to: u32) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = (from..=to).map(|p| (1u64 << p, 0)).collect();
        let mut rest = 0;
        for (i, c) in self.counts.iter().enumerate() {
            let (low, _) = bucket_bounds(i);
            // Bucket `i` lies wholly below the first bound that exceeds its low end.
            match out.iter_mut().find(|(bound, _)| low < *bound) {
                Some((_, n)) => *n += c,
                None => rest += c,
            }
        }
        out.push((u64::MAX, rest));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lands_in_the_bucket_whose_bounds_hold_it() {
        for v in (0..5000).chain([65_535, 1 << 20, 60_000_000, (1 << 32) - 1]) {
            let (low, next) = bucket_bounds(bucket_of(v));
            assert!(low <= v && v < next, "{v} not in [{low}, {next})");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_within_an_eighth_and_never_low() {
        let h = LogHistogram::default();
        for v in 1..=1000 {
            h.record_value(v * 10);
        }
        let s = h.snapshot();
        let p50 = s.quantile(0.5).expect("values");
        let p99 = s.quantile(0.99).expect("values");
        assert!((5000..=5000 * 9 / 8).contains(&p50), "p50 {p50}");
        assert!((9900..=9900 * 9 / 8).contains(&p99), "p99 {p99}");
        assert_eq!(h.take_max(), 10_000);
        assert_eq!(h.take_max(), 0);
    }

    #[test]
    fn a_quantile_within_the_max_never_exceeds_it() {
        let h = LogHistogram::default();
        for v in [22_971, 22_971, 22_971] {
            h.record_value(v);
        }
        let s = h.snapshot();
        let max = h.take_max();
        assert!(
            s.quantile(0.99).expect("values") > max,
            "the bucket's top is above the value"
        );
        assert_eq!(s.quantile_within(0.99, max), Some(22_971));
        assert_eq!(s.quantile_within(0.5, max), Some(22_971));
        // A max taken before the interval's values reached it does not pull the quantile down.
        assert_eq!(s.quantile_within(0.99, 100), s.quantile(0.99));
    }

    #[test]
    fn an_interval_is_the_difference_of_two_snapshots() {
        let h = LogHistogram::default();
        h.record_value(100);
        let before = h.snapshot();
        h.record_value(3);
        h.record_value(3);
        let interval = h.snapshot().since(&before);
        assert_eq!(interval.count(), 2);
        assert_eq!(interval.sum, 6);
        assert_eq!(interval.quantile(0.99), Some(3));
        assert_eq!(LogHistogram::default().snapshot().quantile(0.5), None);
    }

    #[test]
    fn power_of_two_buckets_split_exactly_at_the_bounds() {
        let h = LogHistogram::default();
        for v in [1, 1023, 1024, 5000, 1 << 30] {
            h.record_value(v);
        }
        let coarse = h.snapshot().power_of_two_buckets(10, 12);
        assert_eq!(coarse, vec![(1024, 2), (2048, 1), (4096, 0), (u64::MAX, 2)]);
    }
}
