//! `porch loadtest`: runs the stairs against the echo baseline, a scratch Porch, and a scratch
//! Porch posting to the Slack mock, each stair on a fresh child process, then saves the results.
//! The stairs never run against the live database; afterwards the run is recorded in it (if it
//! exists) for the capacity page.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hdrhistogram::Histogram;

use crate::metrics::loadtest_report::{AgentStair, FloodStair, Report, Series, SlackStair, Stair};

use super::agents;
use super::args::{LoadtestArgs, loopback_url};
use super::drain;
use super::generator::{self, Outcome, Plan};
use super::report;
use super::scratch::Scratch;
use super::target::{self, ChildServer, Placement};
use super::{ChannelLimit, SlackMock};

/// Flood connections: enough to spread the flood over several visitors of one site.
const FLOOD_CONNECTIONS: u32 = 10;
/// How long after the window acks are still awaited before they count as lost.
const GRACE: Duration = Duration::from_secs(3);

/// Which target a series runs against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Echo,
    Porch,
    PorchFlood,
    PorchSlack,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Echo => "echo",
            Kind::Porch => "porch",
            Kind::PorchFlood => "porch+flood",
            Kind::PorchSlack => "porch+slack",
        }
    }
}

/// Runs the load test; `data_dir` is the live data directory, where only results are saved.
pub fn run(args: &LoadtestArgs, data_dir: &Path) -> anyhow::Result<()> {
    if let Some(path) = &args.markdown {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let report: Report = serde_json::from_str(&text).context("parsing the results")?;
        return super::write_stdout(&report::markdown(&report));
    }
    args.check()?;
    // Read before pinning: pinning narrows what this process sees.
    let machine = target::machine();
    let (server_core, load_core) = args
        .cores
        .split_once(':')
        .context("--cores is SERVER:LOAD, such as 0:1")?;
    let placement = if args.url.is_some() {
        "given server (not placed by the load test)".to_owned()
    } else if machine.cores >= 2 && target::has_taskset() {
        target::pin_self(load_core)?;
        format!(
            "taskset: server on core {server_core}, load generator and Slack mock on core {load_core}"
        )
    } else {
        "not pinned (needs 2 cores and taskset)".to_owned()
    };
    let scratch = Scratch::default();
    scratch.stop_on_signal()?;
    let is_raised =
        args.url.is_none() && !args.normal_priority && target::raise_priority(std::process::id());
    let server = Placement {
        core: placement.starts_with("taskset").then_some(server_core),
        is_raised,
        scratch: &scratch,
    };
    let placement = if is_raised {
        format!("{placement}; server and load generator at nice -19 (renice)")
    } else if args.normal_priority {
        format!("{placement}; normal priority (--normal-priority)")
    } else if args.url.is_some() {
        format!("{placement}; load generator at normal priority")
    } else {
        format!("{placement}; normal priority (renice -19 not allowed)")
    };
    let _ = rlimit::increase_nofile_limit(u64::MAX);

    let kinds = kinds(args);

    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    // Interleaved: each stair and round runs every kind back to back, so a ratio compares runs
    // minutes apart at most, and a noisy spell on a shared machine spoils one round of each
    // kind rather than a whole series.
    let mut series: Vec<Series> = kinds
        .iter()
        .map(|kind| Series {
            name: kind.name().to_owned(),
            stairs: Vec::new(),
        })
        .collect();
    for &rate in &args.stairs {
        for round in 1..=args.rounds {
            for (kind, series) in kinds.iter().zip(&mut series) {
                let label = format!("{} {rate}/s round {round}", kind.name());
                series.stairs.push(
                    run_stair(args, *kind, rate, round, server, &label)
                        .with_context(|| format!("stair {label}"))?,
                );
            }
        }
    }

    let report = Report {
        started_at: started_at.clone(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        placement,
        visitors: args.visitors,
        // Against a running server the visitors spread over the sites named with `--site`.
        sites: if args.url.is_some() {
            u32::try_from(args.site_keys.len()).unwrap_or(u32::MAX)
        } else {
            args.sites
        },
        idle: args.idle,
        flood_rate: args.flood,
        seeded_messages: args.seed_messages,
        arrivals: args.arrivals.as_str().to_owned(),
        warmup_ms: millis(args.warmup),
        duration_ms: millis(args.duration),
        gate_p99_ms: args.gate_p99.as_secs_f64() * 1000.0,
        gate_job_lag_ms: args.gate_job_lag.as_secs_f64() * 1000.0,
        // This process's environment says nothing of a server it did not start.
        server_env: if args.url.is_some() {
            Vec::new()
        } else {
            server_env()
        },
        url: args.url.clone(),
        series,
    };
    save(&report, &args.out, data_dir, &started_at)
}

/// The series the flags ask for, in the order they run within a stair.
fn kinds(args: &LoadtestArgs) -> Vec<Kind> {
    let mut kinds = Vec::new();
    if !args.no_echo && args.url.is_none() {
        kinds.push(Kind::Echo);
    }
    if args.slack_delay.is_none() || !args.slack_only {
        kinds.push(Kind::Porch);
    }
    if args.flood > 0 && args.url.is_none() {
        kinds.push(Kind::PorchFlood);
    }
    if args.slack_delay.is_some() && args.url.is_none() {
        kinds.push(Kind::PorchSlack);
    }
    kinds
}

/// The `PORCH_*` settings the scratch servers inherit (they change what is measured, such as
/// `PORCH_SYNCHRONOUS`); anything that may hold a secret is left out.
fn server_env() -> Vec<String> {
    let mut vars: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("PORCH_") && k != "PORCH_DATA_DIR")
        .filter(|(k, _)| {
            !["SECRET", "TOKEN", "PASSWORD", "_FILE", "KEY"]
                .iter()
                .any(|s| k.contains(s))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    vars.sort();
    vars
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn save(report: &Report, out: &Path, data_dir: &Path, started_at: &str) -> anyhow::Result<()> {
    let stem = format!("loadtest-{}", started_at.replace(':', ""));
    let json = serde_json::to_string_pretty(report)?;
    let markdown = report::markdown(report);
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let written = [
        out.join(format!("{stem}.json")),
        out.join(format!("{stem}.md")),
    ];
    std::fs::write(&written[0], &json)?;
    std::fs::write(&written[1], &markdown)?;
    super::write_stdout(&markdown)?;
    super::record::record_and_tell(report, data_dir);
    let list: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    super::write_stdout(&format!("results: {}", list.join(", ")))
}

fn run_stair(
    args: &LoadtestArgs,
    kind: Kind,
    rate: u32,
    round: u32,
    placement: Placement<'_>,
    label: &str,
) -> anyhow::Result<Stair> {
    // The Slack mock gets its own thread and runtime, so its work does not delay the
    // generator's sends on the same core.
    let mock = match (kind, args.slack_delay) {
        (Kind::PorchSlack, Some(delay)) => {
            Some(MockThread::start(delay, args.slack_channel_limit)?)
        }
        _ => None,
    };
    let mut agent_sessions = Vec::new();
    let (server, sites, flood_site): (Option<ChildServer>, Vec<String>, Option<String>) = match kind
    {
        Kind::Echo => (
            Some(target::start_echo(placement)?),
            vec!["echo".into()],
            None,
        ),
        _ if args.url.is_some() => (None, args.site_keys.clone(), None),
        _ => {
            let (server, seeded) = target::start_porch(
                placement,
                args.sites,
                args.agents,
                kind == Kind::PorchFlood,
                &args.origin,
                mock.as_ref().map(|m| m.api_url.as_str()),
                args.seed_messages,
            )?;
            agent_sessions = seeded.agent_sessions;
            (Some(server), seeded.sites, seeded.flood_site)
        }
    };
    let ws_base = match (&server, &args.url) {
        (Some(s), _) => format!("ws://{}", s.addr),
        (None, Some(url)) => loopback_url(url)?,
        (None, None) => bail!("no target"),
    };
    let pick = |n: u32, keys: &[String]| -> Vec<String> {
        (0..n as usize)
            .map(|i| keys[i % keys.len()].clone())
            .collect()
    };
    let flood_keys = flood_site.map_or_else(Vec::new, |key| vec![key; FLOOD_CONNECTIONS as usize]);
    let plan = Plan {
        ws_base,
        origin: args.origin.clone(),
        is_echo: kind == Kind::Echo,
        visitors: pick(args.visitors, &sites),
        flood: flood_keys,
        idle: pick(args.idle, &sites),
        agents: agent_sessions,
        rate,
        flood_rate: args.flood,
        arrivals: args.arrivals,
        warmup: args.warmup,
        duration: args.duration,
        grace: GRACE,
        server_pid: server.as_ref().map(ChildServer::pid),
        keep_acks: mock.is_some() || args.agents > 0,
        label: label.to_owned(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the generator's runtime")?;
    let outcome = runtime.block_on(generator::run(plan))?;
    let slack = match &mock {
        Some(mock) => Some(slack_figures(mock, &outcome, args)?),
        None => None,
    };
    let agents = if outcome.agent_events.is_empty() {
        None
    } else {
        let messages: Vec<_> = outcome
            .visitors
            .acks
            .iter()
            .filter(|ack| ack.in_window)
            .map(|ack| (ack.id, ack.intended))
            .collect();
        Some(agents::fan_out(&outcome.agent_events, &messages)?)
    };
    let stair = figures(args, rate, round, &outcome, slack, agents);
    drop(server);
    Ok(stair)
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    // The histogram holds microseconds.
    #[allow(clippy::cast_precision_loss)]
    let v = h.value_at_quantile(q) as f64;
    v / 1000.0
}

#[allow(clippy::cast_precision_loss)]
fn figures(
    args: &LoadtestArgs,
    rate: u32,
    round: u32,
    o: &Outcome,
    slack: Option<SlackStair>,
    agents: Option<AgentStair>,
) -> Stair {
    let window = args.duration.as_secs_f64();
    let v = &o.visitors;
    let achieved = v.acked_in_window as f64 / window;
    let all_acked = v.acked_in_window + o.flood.acked_in_window;
    let (cpu_pct, us_per_msg, rss) = match o.server {
        Some((start, end)) => {
            let cpu = end.cpu.saturating_sub(start.cpu).as_secs_f64();
            (
                Some(cpu / window * 100.0),
                (all_acked > 0).then(|| cpu * 1e6 / all_acked as f64),
                Some(end.rss_bytes as f64 / 1_048_576.0),
            )
        }
        None => (None, None, None),
    };
    let idle_kib = o.idle_rss.map(|(before, after)| {
        after.saturating_sub(before) as f64 / 1024.0 / f64::from(args.idle.max(1))
    });
    let p99 = ms(&v.latency, 0.99);
    let slack_ok = slack.as_ref().is_none_or(|s| match &s.channel_limit {
        // A limited channel cannot deliver everything within the stair; what must hold is
        // each conversation's order, once each.
        Some(limit) => limit.out_of_order == 0 && limit.duplicates == 0,
        None => {
            s.delivered >= s.expected
                && s.job_lag_p99_ms
                    .is_none_or(|lag| lag <= args.gate_job_lag.as_secs_f64() * 1000.0)
        }
    });
    let passed = achieved / f64::from(rate) >= 0.95
        && p99 <= args.gate_p99.as_secs_f64() * 1000.0
        && slack_ok;
    Stair {
        target: rate,
        round,
        achieved,
        sent: v.sent,
        acked: v.acked,
        refused: v.refused.clone(),
        broken: v.broken,
        p50_ms: ms(&v.latency, 0.5),
        p90_ms: ms(&v.latency, 0.9),
        p99_ms: p99,
        p999_ms: ms(&v.latency, 0.999),
        max_ms: v.latency.max() as f64 / 1000.0,
        send_lag_p99_ms: Some(ms(&v.send_lag, 0.99)),
        send_lag_max_ms: Some(v.send_lag.max() as f64 / 1000.0),
        server_cpu_pct: cpu_pct,
        server_us_per_msg: us_per_msg,
        server_rss_mb: rss,
        loadgen_cpu_pct: o.loadgen_cpu.as_secs_f64() / window * 100.0,
        idle_kib_per_socket: idle_kib,
        connect_ms: millis(o.connect_time),
        slack,
        flood: (o.flood.sent > 0).then(|| FloodStair {
            sent: o.flood.sent,
            acked: o.flood.acked,
            refused: o.flood.refused.values().sum(),
        }),
        agents,
        passed,
    }
}

/// Waits until every acked message reached the mock (bounded), then measures job lag: ack →
/// the mock receiving the post that carries the message id. Past a channel limit the backlog
/// outlasts any wait, so it takes what arrived by the stair's end and what the limit did.
#[allow(clippy::cast_precision_loss)]
fn slack_figures(
    mock: &MockThread,
    o: &Outcome,
    args: &LoadtestArgs,
) -> anyhow::Result<SlackStair> {
    let limit = args.slack_channel_limit;
    let acks: Vec<_> = o
        .visitors
        .acks
        .iter()
        .chain(&o.flood.acks)
        .map(|ack| (ack.id, ack.at.into_std(), ack.in_window))
        .collect();
    let expected = acks.len();
    let wait = if limit.is_some() {
        Duration::ZERO
    } else {
        args.delivery_timeout
    };
    let deadline = Instant::now() + wait;
    let posts = loop {
        let posts = mock.posts();
        if posts.len() >= expected || Instant::now() >= deadline {
            break posts;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let window = (o.window_start.into_std(), o.window_end.into_std());
    let channel_limit = limit.and_then(|limit| {
        mock.with_mock(|m| drain::figures(limit, &m.posts(), m.rate_limited_count(), window))
    });
    let mut lag = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
    let mut delivered = 0u64;
    let mut in_window = 0u64;
    for (id, at, counted) in acks {
        let Some(received) = posts.get(&id) else {
            continue;
        };
        delivered += 1;
        if counted {
            let us = u64::try_from(received.saturating_duration_since(at).as_micros())
                .unwrap_or(u64::MAX);
            lag.saturating_record(us.max(1));
        }
        if *received >= window.0 && *received < window.1 {
            in_window += 1;
        }
    }
    let measured = !lag.is_empty();
    Ok(SlackStair {
        expected: expected as u64,
        delivered,
        deliveries_per_sec: in_window as f64
            / o.window_end.duration_since(o.window_start).as_secs_f64(),
        job_lag_p50_ms: measured.then(|| ms(&lag, 0.5)),
        job_lag_p99_ms: measured.then(|| ms(&lag, 0.99)),
        job_lag_max_ms: measured.then(|| lag.max() as f64 / 1000.0),
        channel_limit,
    })
}

/// The Slack mock on a thread of its own with its own runtime.
struct MockThread {
    api_url: String,
    mock: std::sync::Arc<std::sync::Mutex<Option<SlackMock>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockThread {
    fn start(delay: Duration, limit: Option<ChannelLimit>) -> anyhow::Result<Self> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
        let shared = std::sync::Arc::clone(&slot);
        let thread = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                match SlackMock::start(([127, 0, 0, 1], 0).into(), delay).await {
                    Ok(mock) => {
                        mock.set_channel_limit(limit);
                        let _ = ready_tx.send(Some(mock.api_url()));
                        if let Ok(mut s) = shared.lock() {
                            *s = Some(mock);
                        }
                        let _ = stop_rx.await;
                        if let Ok(mut s) = shared.lock() {
                            s.take();
                        }
                    }
                    Err(_) => {
                        let _ = ready_tx.send(None);
                    }
                }
            });
        });
        let api_url = ready_rx
            .recv_timeout(Duration::from_secs(10))
            .ok()
            .flatten()
            .context("starting the Slack mock")?;
        Ok(Self {
            api_url,
            mock: slot,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `f` of the running mock (`None` once it stopped).
    fn with_mock<R>(&self, f: impl FnOnce(&SlackMock) -> R) -> Option<R> {
        self.mock.lock().ok()?.as_ref().map(f)
    }

    /// Message id → when the mock received its post.
    fn posts(&self) -> HashMap<i64, Instant> {
        self.with_mock(|mock| {
            mock.posts()
                .into_iter()
                .filter_map(|p| {
                    let id = p.body["metadata"]["event_payload"]["message_id"].as_i64()?;
                    Some((id, p.received_at))
                })
                .collect()
        })
        .unwrap_or_default()
    }
}

impl Drop for MockThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
