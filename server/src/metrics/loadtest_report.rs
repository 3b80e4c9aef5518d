//! The stored load-test report: the JSON `porch loadtest` writes (to its results file and to
//! `loadtest_runs`) and the capacity page reads back. It lives with the capacity figures so the
//! load test that writes it and the admin UI that reads it share it without importing each
//! other. Reports already stored must keep parsing: a new field needs `#[serde(default)]`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The machine the run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu_model: String,
    pub kernel: String,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub started_at: String,
    pub command: String,
    pub machine: Machine,
    /// How server and generator were placed (`taskset` cores, or why not).
    pub placement: String,
    pub visitors: u32,
    pub sites: u32,
    pub idle: u32,
    pub flood_rate: u32,
    /// Messages seeded into each scratch server's database before its stair (`--seed-messages`).
    #[serde(default)]
    pub seeded_messages: u32,
    pub warmup_ms: u64,
    pub duration_ms: u64,
    pub gate_p99_ms: f64,
    /// Job lag p99 gate of the Slack stairs.
    #[serde(default)]
    pub gate_job_lag_ms: f64,
    /// How sends were spread in time (`smooth` or `ticks`); results from before the option
    /// existed were made with ticks.
    #[serde(default = "ticks")]
    pub arrivals: String,
    /// `PORCH_*` settings the scratch servers ran with (defaults otherwise).
    #[serde(default)]
    pub server_env: Vec<String>,
    /// The running server given with `--url`, whose settings the load test cannot know; `None`
    /// when it ran scratch servers (and in results from before the field).
    #[serde(default)]
    pub url: Option<String>,
    pub series: Vec<Series>,
}

fn ticks() -> String {
    "ticks".to_owned()
}

/// The stairs against one target: `echo`, `porch`, or `porch+slack`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub stairs: Vec<Stair>,
}

/// One round of one stair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stair {
    pub target: u32,
    pub round: u32,
    pub achieved: f64,
    pub sent: u64,
    pub acked: u64,
    pub refused: BTreeMap<String, u64>,
    pub broken: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// Intended send time → the send leaving the generator (absent in older results).
    #[serde(default)]
    pub send_lag_p99_ms: Option<f64>,
    #[serde(default)]
    pub send_lag_max_ms: Option<f64>,
    pub server_cpu_pct: Option<f64>,
    pub server_us_per_msg: Option<f64>,
    pub server_rss_mb: Option<f64>,
    pub loadgen_cpu_pct: f64,
    pub idle_kib_per_socket: Option<f64>,
    pub connect_ms: u64,
    pub slack: Option<SlackStair>,
    pub flood: Option<FloodStair>,
    /// Fan-out to agents with the live inbox open (`--agents`); absent in older results.
    #[serde(default)]
    pub agents: Option<AgentStair>,
    pub passed: bool,
}

/// Deliveries to the Slack mock for one stair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SlackStair {
    /// Acked messages (all, warm-up included) and how many of them the mock received.
    pub expected: u64,
    pub delivered: u64,
    pub deliveries_per_sec: f64,
    /// Job lag of the window's messages; `None` when none of them reached the mock (as past a
    /// tight channel limit), so nothing was measured. Older results hold 0 there.
    pub job_lag_p50_ms: Option<f64>,
    pub job_lag_p99_ms: Option<f64>,
    pub job_lag_max_ms: Option<f64>,
    /// With `--slack-channel-limit`: what the mock's limit did; absent otherwise and in older
    /// results.
    #[serde(default)]
    pub channel_limit: Option<ChannelLimitStair>,
}

/// What a per-channel limit on the Slack mock did in one stair. The backlog left is
/// `expected - delivered` of the stair's [`SlackStair`], taken as the stair ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChannelLimitStair {
    /// The limit as given (`1/s`, `1/s+5`).
    pub limit: String,
    /// Channels that received posts.
    pub channels: u64,
    /// Posts (thread headers and replies) the mock accepted in the window, per channel and
    /// second: the rate the backlog drains at.
    pub drain_per_channel_per_sec: f64,
    /// Posts answered with 429 over the whole stair.
    pub rate_limited: u64,
    /// Replies posted after a later message of their thread, and posts made more than once
    /// (a message or a thread header): the stair's order gate wants both at 0.
    pub out_of_order: u64,
    pub duplicates: u64,
}

/// How the messages acked in the window reached the agents' live inboxes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentStair {
    pub agents: u32,
    /// Messages acked in the window times agents, and how many of those reached an agent.
    pub expected: u64,
    pub delivered: u64,
    /// The visitor's intended send time → the inbox event covering the message.
    pub fan_out_p50_ms: f64,
    pub fan_out_p99_ms: f64,
    pub fan_out_max_ms: f64,
}

/// What the flood site's visitors got.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloodStair {
    pub sent: u64,
    pub acked: u64,
    pub refused: u64,
}

/// The series whose figures stand for Porch (the echo is only the baseline), the first the run
/// has: its plain stairs, else (a `--slack-only` run) its stairs posting to the Slack mock.
const PORCH_SERIES: [&str; 2] = ["porch", "porch+slack"];

impl Report {
    /// The series named `name` (`echo`, `porch`, …), if the run had it.
    pub fn series(&self, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == name)
    }

    /// The series that stands for Porch ([`PORCH_SERIES`]), if the run had one.
    pub fn porch_series(&self) -> Option<&Series> {
        PORCH_SERIES.iter().find_map(|name| self.series(name))
    }

    /// The CPU cost of a message this run measured: the median server µs per message over the
    /// Porch stairs that measure one ([`Self::measures_a_message`]; of an even number, the
    /// mean of the middle two). `None` when none does. The recorder stores it and the capacity
    /// page judges stored runs again with it.
    pub fn cost_per_message(&self) -> Option<f64> {
        let costs = self
            .porch_series()?
            .stairs
            .iter()
            .filter(|stair| self.measures_a_message(stair))
            .filter_map(|stair| stair.server_us_per_msg)
            .collect();
        median(costs)
    }

    /// Whether a stair's CPU per message can stand for a message's cost on the capacity page:
    /// it passed, its generator kept up, and its window held as many messages as live traffic
    /// must (`MIN_MESSAGES`), less the 5 % a stair may fall short of its rate and still pass (so
    /// a 10-second stair at 500 a second counts). A short or slow stair's CPU is mostly the
    /// server's idle work shared over few messages: a 3-second stair at 20 a second read
    /// 2,150 µs, ten times a real message.
    fn measures_a_message(&self, stair: &Stair) -> bool {
        let window_secs = std::time::Duration::from_millis(self.duration_ms).as_secs_f64();
        stair.passed
            && !stair.generator_fell_behind(self.gate_p99_ms)
            && stair.achieved * window_secs >= super::MIN_MESSAGES * 0.95
    }
}

/// Why a series' capacity says little about the server, if it does: its generator fell behind on
/// a stair (a busy box, not the server, was late), or a stair failed below one that passed (a
/// busier moment). The CLI's report calls such a capacity "not comparable".
pub fn capacity_unsure(series: &Series, gate_p99_ms: f64) -> Option<String> {
    let behind = series
        .stairs
        .iter()
        .any(|s| s.generator_fell_behind(gate_p99_ms));
    if behind {
        Some(format!(
            "the load generator fell behind in the {} series",
            series.name
        ))
    } else if series.passed_out_of_order() {
        Some(format!(
            "the {} series failed a stair below one it passed",
            series.name
        ))
    } else {
        None
    }
}

impl Stair {
    /// Whether the generator fell behind on this stair: its send lag p99 is above a fifth of
    /// the p99 gate, so the load generator, not the server, was late (a busy box, another load),
    /// and the stair's latency and verdict say little about the server.
    pub fn generator_fell_behind(&self, gate_p99_ms: f64) -> bool {
        self.send_lag_p99_ms
            .is_some_and(|lag| lag > gate_p99_ms / 5.0)
    }
}

impl Series {
    /// Each target and whether its stair passed: by a majority of its rounds.
    fn stairs_passed(&self) -> BTreeMap<u32, bool> {
        let mut by_target: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
        for s in &self.stairs {
            let e = by_target.entry(s.target).or_default();
            e.1 += 1;
            if s.passed {
                e.0 += 1;
            }
        }
        by_target
            .into_iter()
            .map(|(target, (passed, total))| (target, passed * 2 > total))
            .collect()
    }

    /// Highest target whose rounds passed by majority.
    pub fn capacity(&self) -> Option<u32> {
        self.stairs_passed()
            .into_iter()
            .filter(|(_, passed)| *passed)
            .map(|(t, _)| t)
            .max()
    }

    /// Whether [`Self::capacity`] is a limit found: a stair above it failed, and the run can
    /// be trusted ([`capacity_unsure`] is `None`). Otherwise the box took the fastest rate that
    /// passed, and may take more.
    pub fn is_limit_found(&self, gate_p99_ms: f64) -> bool {
        let failed_above = self.capacity().is_some_and(|capacity| {
            self.stairs_passed()
                .into_iter()
                .any(|(target, passed)| target > capacity && !passed)
        });
        failed_above && capacity_unsure(self, gate_p99_ms).is_none()
    }

    /// Whether a stair failed below one that passed: a box that was busier during the lower
    /// stair, so the highest passing stair is no limit found.
    pub fn passed_out_of_order(&self) -> bool {
        let passed = self.stairs_passed();
        let lowest_failed = passed.iter().find(|(_, ok)| !**ok).map(|(t, _)| *t);
        lowest_failed.is_some_and(|failed| passed.iter().any(|(t, ok)| *ok && *t > failed))
    }

    /// Whether every stair tried passed (each by a majority of its rounds, as [`Self::capacity`]
    /// counts them: one failed round of three does not fail its stair).
    pub fn every_stair_passed(&self) -> bool {
        self.stairs_passed().values().all(|passed| *passed)
    }

    /// Median over rounds of a figure at a target.
    pub fn at(&self, target: u32, f: impl Fn(&Stair) -> Option<f64>) -> Option<f64> {
        median(
            self.stairs
                .iter()
                .filter(|s| s.target == target)
                .filter_map(&f)
                .collect(),
        )
    }
}

/// The median: the middle value, or the mean of the middle two of an even count.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 0 => Some(f64::midpoint(values[mid - 1], values[mid])),
        _ => Some(values[mid]),
    }
}
