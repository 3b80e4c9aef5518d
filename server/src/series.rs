//! What the sampler records: one value per [`Series`] per second ([`Sample`]), and the mean and
//! max of each over a span ([`Rollup`]) — a minute for SQLite, a few seconds for a graph point.
//! The list of series is data, so the ring buffer, the rollup table and the graphs share it.
//! A leaf module: it imports nothing from the crate, so `store` persists rollups without
//! depending on `metrics` (which samples them and re-exports this vocabulary).

/// A figure recorded every second. The order is the column order of `metrics_minutes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Series {
    Messages,
    AckP50,
    AckP99,
    AckMax,
    WidgetConnections,
    AgentConnections,
    Cpu,
    Rss,
    LoopLagP99,
    LoopLagMax,
    RuntimeBusy,
    WriterBatch,
    CommitMean,
    CommitMax,
    WriterQueue,
    WriterBusy,
    JobLagP99,
    JobLagMax,
    DeliveriesChat,
    DeliveriesWebhook,
    DeliveriesEmail,
    DeliveriesMaint,
    RateLimited,
    Failures,
    OpenFds,
}

/// Number of series.
pub const SERIES: usize = 25;

impl Series {
    pub const ALL: [Series; SERIES] = [
        Series::Messages,
        Series::AckP50,
        Series::AckP99,
        Series::AckMax,
        Series::WidgetConnections,
        Series::AgentConnections,
        Series::Cpu,
        Series::Rss,
        Series::LoopLagP99,
        Series::LoopLagMax,
        Series::RuntimeBusy,
        Series::WriterBatch,
        Series::CommitMean,
        Series::CommitMax,
        Series::WriterQueue,
        Series::WriterBusy,
        Series::JobLagP99,
        Series::JobLagMax,
        Series::DeliveriesChat,
        Series::DeliveriesWebhook,
        Series::DeliveriesEmail,
        Series::DeliveriesMaint,
        Series::RateLimited,
        Series::Failures,
        Series::OpenFds,
    ];

    /// Position in [`Series::ALL`] and in a sample's values.
    pub fn index(self) -> usize {
        Self::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }

    /// Column stem in `metrics_minutes` (`<stem>_mean`, `<stem>_max`). Static, never user input.
    pub fn column(self) -> &'static str {
        match self {
            Self::Messages => "messages_per_sec",
            Self::AckP50 => "ack_p50_ms",
            Self::AckP99 => "ack_p99_ms",
            Self::AckMax => "ack_max_ms",
            Self::WidgetConnections => "widget_connections",
            Self::AgentConnections => "agent_connections",
            Self::Cpu => "cpu_pct",
            Self::Rss => "rss_mb",
            Self::LoopLagP99 => "loop_lag_p99_ms",
            Self::LoopLagMax => "loop_lag_max_ms",
            Self::RuntimeBusy => "runtime_busy_pct",
            Self::WriterBatch => "writer_batch",
            Self::CommitMean => "commit_mean_ms",
            Self::CommitMax => "commit_max_ms",
            Self::WriterQueue => "writer_queue",
            Self::WriterBusy => "writer_busy_per_sec",
            Self::JobLagP99 => "job_lag_p99_ms",
            Self::JobLagMax => "job_lag_max_ms",
            Self::DeliveriesChat => "deliveries_chat_per_sec",
            Self::DeliveriesWebhook => "deliveries_webhook_per_sec",
            Self::DeliveriesEmail => "deliveries_email_per_sec",
            Self::DeliveriesMaint => "deliveries_maint_per_sec",
            Self::RateLimited => "rate_limited_per_sec",
            Self::Failures => "failures_per_sec",
            Self::OpenFds => "open_fds",
        }
    }

    /// Whether a span is best drawn by its worst second (latencies, peaks) rather than its mean.
    /// The commit's mean latency is the one latency drawn as a mean, as its line's label says.
    pub fn is_peak(self) -> bool {
        matches!(
            self,
            Self::AckP50
                | Self::AckP99
                | Self::AckMax
                | Self::LoopLagP99
                | Self::LoopLagMax
                | Self::CommitMax
                | Self::JobLagP99
                | Self::JobLagMax
                | Self::WriterQueue
        )
    }

    /// Whether the series counts events a second, so that a span's mean is its events ÷ its length.
    fn is_rate(self) -> bool {
        matches!(
            self,
            Self::Messages
                | Self::WriterBusy
                | Self::DeliveriesChat
                | Self::DeliveriesWebhook
                | Self::DeliveriesEmail
                | Self::DeliveriesMaint
                | Self::RateLimited
                | Self::Failures
        )
    }
}

/// One second's figures. A value is `None` when the second had nothing to measure (no message
/// acked: no ack latency).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// End of the second, Unix milliseconds.
    pub at_ms: i64,
    pub values: [Option<f64>; SERIES],
}

impl Sample {
    pub fn get(&self, series: Series) -> Option<f64> {
        self.values[series.index()]
    }
}

/// Mean and max of every series over a span that starts at `at_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollup {
    pub at_ms: i64,
    /// Samples that went in.
    pub samples: u32,
    pub mean: [Option<f64>; SERIES],
    pub max: [Option<f64>; SERIES],
}

impl Rollup {
    /// The figure a graph draws for `series`: the max for peaks, the mean otherwise.
    pub fn plotted(&self, series: Series) -> Option<f64> {
        if series.is_peak() {
            self.max[series.index()]
        } else {
            self.mean[series.index()]
        }
    }
}

/// What a rate series' mean is taken over (see [`Series`]'s rates: messages, deliveries, refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// The samples taken: a graph point of the seconds seen so far.
    Samples,
    /// The whole span, which holds this many samples, sampled or not: a minute's messages ÷ 60 s,
    /// so a minute the server sampled only in part (it started or stopped in it) is not inflated.
    Span(u32),
}

/// Accumulates samples into a [`Rollup`].
#[derive(Debug, Clone)]
pub struct RollupBuilder {
    at_ms: i64,
    samples: u32,
    sum: [f64; SERIES],
    count: [u32; SERIES],
    max: [Option<f64>; SERIES],
}

impl RollupBuilder {
    pub fn new(at_ms: i64) -> Self {
        Self {
            at_ms,
            samples: 0,
            sum: [0.0; SERIES],
            count: [0; SERIES],
            max: [None; SERIES],
        }
    }

    /// Start of the span.
    pub fn at_ms(&self) -> i64 {
        self.at_ms
    }

    pub fn add(&mut self, sample: &Sample) {
        self.samples += 1;
        for (i, value) in sample.values.iter().enumerate() {
            if let Some(v) = value.filter(|v| v.is_finite()) {
                self.sum[i] += v;
                self.count[i] += 1;
                self.max[i] = Some(self.max[i].map_or(v, |m| m.max(v)));
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    pub fn finish(&self, over: Over) -> Rollup {
        let mean = std::array::from_fn(|i| {
            let divisor = match over {
                // More samples than the span holds (a tick late, then one early) are all counted.
                Over::Span(slots) if Series::ALL[i].is_rate() => slots.max(self.count[i]),
                _ => self.count[i],
            };
            (self.count[i] > 0).then(|| self.sum[i] / f64::from(divisor))
        });
        Rollup {
            at_ms: self.at_ms,
            samples: self.samples,
            mean,
            max: self.max,
        }
    }
}

/// Rolls `samples` (oldest first) up into spans of `step_ms` aligned to multiples of it.
pub fn roll_up<'a>(
    samples: impl IntoIterator<Item = &'a Sample>,
    step_ms: i64,
    over: Over,
) -> Vec<Rollup> {
    let step_ms = step_ms.max(1);
    let mut out = Vec::new();
    let mut current: Option<RollupBuilder> = None;
    for sample in samples {
        let at = sample.at_ms.div_euclid(step_ms) * step_ms;
        if current.as_ref().is_some_and(|b| b.at_ms() != at) {
            out.extend(current.take().map(|b| b.finish(over)));
        }
        current
            .get_or_insert_with(|| RollupBuilder::new(at))
            .add(sample);
    }
    out.extend(current.map(|b| b.finish(over)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: i64, messages: Option<f64>) -> Sample {
        let mut values = [None; SERIES];
        values[Series::Messages.index()] = messages;
        Sample { at_ms, values }
    }

    #[test]
    fn every_series_has_its_own_column_and_index() {
        let columns: std::collections::HashSet<_> =
            Series::ALL.iter().map(|s| s.column()).collect();
        assert_eq!(columns.len(), SERIES);
        for (i, s) in Series::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
        }
    }

    #[test]
    fn spans_hold_the_mean_and_max_of_the_seconds_that_had_a_value() {
        let samples = [
            sample(1_000, Some(10.0)),
            sample(2_000, None),
            sample(3_000, Some(30.0)),
            sample(61_000, Some(5.0)),
        ];
        let spans = roll_up(&samples, 60_000, Over::Samples);
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].at_ms, 0);
        assert_eq!(spans[0].samples, 3);
        assert_eq!(spans[0].mean[Series::Messages.index()], Some(20.0));
        assert_eq!(spans[0].max[Series::Messages.index()], Some(30.0));
        assert_eq!(spans[0].mean[Series::Cpu.index()], None);
        assert_eq!(spans[1].plotted(Series::Messages), Some(5.0));
    }

    #[test]
    fn a_minute_sampled_in_part_spreads_its_messages_over_the_whole_minute() {
        // The server started 26 s into the minute: 8,800 messages in the 34 s it sampled.
        let mut samples: Vec<Sample> = (26..60)
            .map(|s| {
                let mut sample = sample(s * 1000, Some(8_800.0 / 34.0));
                sample.values[Series::Cpu.index()] = Some(40.0);
                sample
            })
            .collect();
        // Then 4,800 messages in the first 6 s of the next minute, the one still going.
        samples.extend((60..66).map(|s| sample(s * 1000, Some(800.0))));
        let minutes = roll_up(&samples, 60_000, Over::Span(60));
        let rate = |r: &Rollup| r.mean[Series::Messages.index()].expect("a rate");
        assert!(
            (rate(&minutes[0]) - 8_800.0 / 60.0).abs() < 1e-9,
            "{minutes:?}"
        );
        assert!((rate(&minutes[1]) - 80.0).abs() < 1e-9, "{minutes:?}");
        // What is not a count of events stays the mean of the seconds sampled.
        assert_eq!(minutes[0].mean[Series::Cpu.index()], Some(40.0));
        let seen = roll_up(&samples, 60_000, Over::Samples);
        assert!((rate(&seen[0]) - 8_800.0 / 34.0).abs() < 1e-9);
    }

    #[test]
    fn every_ack_latency_line_draws_a_span_by_its_worst_second() {
        let mut samples = Vec::new();
        // (p50, p99, max) of three seconds: the middle one holds the span's highest p50.
        for (at, ack) in [
            (1_000, [0.4, 0.9, 2.0]),
            (2_000, [1.81, 3.0, 9.0]),
            (3_000, [0.8, 4.0, 5.0]),
        ] {
            let mut s = sample(at, Some(100.0));
            for (series, ms) in [Series::AckP50, Series::AckP99, Series::AckMax]
                .iter()
                .zip(ack)
            {
                s.values[series.index()] = Some(ms);
            }
            samples.push(s);
        }
        let span = &roll_up(&samples, 60_000, Over::Samples)[0];
        assert_eq!(span.plotted(Series::AckP50), Some(1.81));
        assert_eq!(span.plotted(Series::AckP99), Some(4.0));
        assert_eq!(span.plotted(Series::AckMax), Some(9.0));
        assert_eq!(span.plotted(Series::Messages), Some(100.0));
    }
}
