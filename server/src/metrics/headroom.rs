//! Headroom: how many visitor messages a second one core of this box could take, from the CPU
//! cost per message. The cost comes from recent traffic when there was enough of it (CPU above
//! the idle baseline, divided by the messages), otherwise from the newest load-test run.

use std::time::Duration;

use crate::series::{Sample, Series};

use super::loadtest_report::median;

/// A second counts as busy from this rate on; below it the idle baseline dominates its CPU.
pub const BUSY_RATE: f64 = 20.0;
/// Traffic needed before the live estimate is trusted over a load test.
pub const MIN_MESSAGES: f64 = 5_000.0;
/// Busy seconds needed, so one burst does not decide.
pub const MIN_BUSY_SECONDS: usize = 30;

/// CPU cost per message measured from live traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficCost {
    pub us_per_msg: f64,
    /// Messages in the busy seconds measured.
    pub messages: f64,
    pub busy_seconds: usize,
    /// CPU of the idle seconds (median), subtracted from the busy ones, % of one core.
    pub baseline_pct: f64,
}

/// What the traffic held when it gave no estimate: fewer busy seconds or messages than needed,
/// or (with both met) no CPU above the idle baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortfall {
    pub busy_seconds: usize,
    /// Messages in the busy seconds.
    pub messages: f64,
}

/// Estimates the cost from samples taken `every` (the last hour).
///
/// # Errors
/// What the traffic held, when it gave no estimate.
pub fn traffic_cost<'a>(
    samples: impl IntoIterator<Item = &'a Sample>,
    every: Duration,
) -> Result<TrafficCost, Shortfall> {
    let every = every.as_secs_f64();
    let mut idle: Vec<f64> = Vec::new();
    let mut busy: Vec<(f64, f64)> = Vec::new();
    for s in samples {
        let (Some(rate), Some(cpu)) = (s.get(Series::Messages), s.get(Series::Cpu)) else {
            continue;
        };
        if rate >= BUSY_RATE {
            busy.push((rate, cpu));
        } else if rate == 0.0 {
            idle.push(cpu);
        }
    }
    let messages = busy.iter().map(|(rate, _)| rate).sum::<f64>() * every;
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    #[allow(clippy::cast_sign_loss)]
    let busy_seconds = (busy.len() as f64 * every) as usize;
    let shortfall = Shortfall {
        busy_seconds,
        messages,
    };
    if busy_seconds < MIN_BUSY_SECONDS || messages < MIN_MESSAGES {
        return Err(shortfall);
    }
    // Without idle seconds the baseline is unknown; 0 attributes it all to messages (errs high).
    let baseline_pct = median(idle).unwrap_or(0.0);
    let cpu_seconds = busy
        .iter()
        .map(|(_, cpu)| (cpu - baseline_pct).max(0.0) / 100.0 * every)
        .sum::<f64>();
    let us_per_msg = cpu_seconds * 1e6 / messages;
    if us_per_msg > 0.0 {
        Ok(TrafficCost {
            us_per_msg,
            messages,
            busy_seconds,
            baseline_pct,
        })
    } else {
        Err(shortfall)
    }
}

/// Messages a second one core takes at `us_per_msg`.
pub fn messages_per_core(us_per_msg: f64) -> f64 {
    if us_per_msg > 0.0 {
        1e6 / us_per_msg
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::SERIES;

    const SECOND: Duration = Duration::from_secs(1);

    fn second(rate: f64, cpu: f64) -> Sample {
        let mut values = [None; SERIES];
        values[Series::Messages.index()] = Some(rate);
        values[Series::Cpu.index()] = Some(cpu);
        Sample { at_ms: 0, values }
    }

    #[test]
    fn the_cost_is_cpu_above_the_idle_baseline_per_message() {
        // 1000 msg/s at 6 % of a core over a 1 % idle baseline: 50 µs a message.
        let mut samples: Vec<Sample> = (0..60).map(|_| second(1000.0, 6.0)).collect();
        samples.extend((0..10).map(|_| second(0.0, 1.0)));
        let cost = traffic_cost(&samples, SECOND).expect("enough traffic");
        assert!((cost.us_per_msg - 50.0).abs() < 1e-9, "{cost:?}");
        assert_eq!(cost.busy_seconds, 60);
        assert!((messages_per_core(cost.us_per_msg) - 20_000.0).abs() < 1e-6);
    }

    #[test]
    fn light_traffic_gives_no_estimate() {
        let samples: Vec<Sample> = (0..600).map(|_| second(5.0, 1.0)).collect();
        let light = traffic_cost(&samples, SECOND).expect_err("too light");
        assert_eq!(light.busy_seconds, 0);
        let burst: Vec<Sample> = (0..10).map(|_| second(5000.0, 30.0)).collect();
        assert!(traffic_cost(&burst, SECOND).is_err());
    }

    #[test]
    fn enough_messages_in_too_few_busy_seconds_says_which_fell_short() {
        // 8,800 messages in 22 busy seconds: messages enough, busy seconds not.
        let samples: Vec<Sample> = (0..22).map(|_| second(400.0, 30.0)).collect();
        let short = traffic_cost(&samples, SECOND).expect_err("too few busy seconds");
        assert_eq!(short.busy_seconds, 22);
        assert!((short.messages - 8_800.0).abs() < 1e-9, "{short:?}");
    }
}
