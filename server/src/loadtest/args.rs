//! The flags of `porch loadtest` and of the hidden `porch loadtest-echo`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use super::ChannelLimit;

/// How a load test runs: what it targets, the stairs, and what extra load rides along.
#[derive(Debug, Clone, Args)]
pub struct LoadtestArgs {
    /// Target rates in visitor messages a second, one stair each (comma-separated), each at
    /// least 1 (a stair of 0 sends nothing and would record a run that measured nothing).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,2000,5000,10000",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub stairs: Vec<u32>,
    /// How sends are spread in time: `smooth` releases each at its own intended time with a
    /// precise timer; `ticks` lets each connection sleep on tokio's millisecond timer, so the
    /// sends due within a millisecond leave in one burst (flattering the server).
    #[arg(long, value_enum, default_value = "smooth")]
    pub arrivals: super::pacer::Arrivals,
    /// Sending before each stair's measured window, not counted.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// Each stair's measured window.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Times each stair runs (on a fresh server each time); a stair passes on a majority.
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Test sites seeded on the scratch server.
    #[arg(long, default_value_t = 8)]
    pub sites: u32,
    /// Visitor connections sending messages (spread over the sites).
    #[arg(long, default_value_t = 200)]
    pub visitors: u32,
    /// Extra connected widget sockets that only say hello and stay silent.
    #[arg(long, default_value_t = 0)]
    pub idle: u32,
    /// Agents with the live inbox open (`/inbox/events`) during each Porch stair; the report
    /// gives their fan-out latency: the visitor's intended send time → the inbox event.
    #[arg(long, default_value_t = 0)]
    pub agents: u32,
    /// Adds a `porch+flood` series: the same stairs with a flood site whose 10 visitors send
    /// this many messages a second in total against its default brakes (600 a minute); 0 for none.
    #[arg(long, default_value_t = 0)]
    pub flood: u32,
    /// Points every site at an in-process Slack mock answering after this delay (e.g. `50ms`).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub slack_delay: Option<Duration>,
    /// With `--slack-delay`, limits the mock's posts per channel the way Slack does: `RATE/s` or
    /// `RATE/min`, optionally `+BURST` posts more that a rested channel may send at once (`1/s`,
    /// `1/s+5`); past it the mock answers 429 with `Retry-After`. The backlog then outlasts the
    /// stair, so the stair is gated on ack p99 and per-conversation order instead of job lag,
    /// and reports the drain rate, the 429s and the backlog left.
    #[arg(long, value_name = "RATE/UNIT[+BURST]", value_parser = ChannelLimit::parse)]
    pub slack_channel_limit: Option<ChannelLimit>,
    /// A stair fails when its ack p99 exceeds this.
    #[arg(long, default_value = "50ms", value_parser = humantime::parse_duration)]
    pub gate_p99: Duration,
    /// With `--slack-delay`, a stair also fails when the job lag p99 (ack → post) exceeds this.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub gate_job_lag: Duration,
    /// Messages already in each scratch server's database before its stair: a history of
    /// conversations (20 messages each, searchable) on a site of its own, written directly
    /// through the store as `loadtest-search` does, to see whether costs stay flat as data grows.
    #[arg(long, default_value_t = 0)]
    pub seed_messages: u32,
    /// Skips the bare websocket echo baseline (then no ratios are reported).
    #[arg(long)]
    pub no_echo: bool,
    /// Skips the run without the Slack mock when `--slack-delay` is given.
    #[arg(long)]
    pub slack_only: bool,
    /// Target an already running Porch at this loopback websocket base URL (`ws://127.0.0.1:8080`)
    /// instead of a scratch server; `--site` must then name its sites. `--agents`, `--flood`,
    /// `--slack-delay` and `--seed-messages` set up scratch servers and are refused with it.
    #[arg(long)]
    pub url: Option<String>,
    /// A site key of the `--url` target (repeatable).
    #[arg(long = "site")]
    pub site_keys: Vec<String>,
    /// The origin the visitors send (must be allowed by the `--url` target's sites).
    #[arg(long, default_value = "https://loadtest.example")]
    pub origin: String,
    /// Directory for `loadtest-*.json` and `loadtest-*.md`.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// CPU cores for the scratch server and for the load generator (needs `taskset`).
    #[arg(long, default_value = "0:1")]
    pub cores: String,
    /// Leaves the scratch servers and the load generator at normal priority instead of raising
    /// them to nice -19: on a box whose live Porch must keep its share of the CPU while the test
    /// runs (the figures then include what the other processes take).
    #[arg(long)]
    pub normal_priority: bool,
    /// Stop waiting for Slack deliveries this long after a stair's last ack.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub delivery_timeout: Duration,
    /// Renders a saved result JSON file as Markdown on standard output and exits.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
}

/// The bare websocket echo used as the baseline.
#[derive(Debug, Clone, Args)]
pub struct EchoArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9098")]
    pub listen: std::net::SocketAddr,
}

impl LoadtestArgs {
    /// Refuses flags that cannot work together, rather than ignoring one.
    pub(super) fn check(&self) -> anyhow::Result<()> {
        let args = self;
        if args.stairs.is_empty() || args.visitors == 0 {
            bail!("--stairs and --visitors must not be empty or zero");
        }
        // Checked before anything runs: in the first stair it read as that stair's failure.
        if let Some(url) = &args.url {
            loopback_url(url)?;
        }
        match (&args.url, args.site_keys.is_empty()) {
            (Some(_), true) => bail!("--url needs at least one --site: a site key of that server"),
            (None, false) => {
                bail!("--site names sites of a --url target; scratch servers make their own")
            }
            _ => {}
        }
        if args.slack_channel_limit.is_some() && args.slack_delay.is_none() {
            bail!(
                "--slack-channel-limit limits the Slack mock, which only runs with --slack-delay"
            );
        }
        // These set up the scratch servers' database or their Slack; a given server has its own.
        let scratch_only: Vec<&str> = [
            ("--agents", args.agents > 0),
            ("--flood", args.flood > 0),
            ("--slack-delay", args.slack_delay.is_some()),
            ("--seed-messages", args.seed_messages > 0),
        ]
        .into_iter()
        .filter_map(|(flag, is_given)| is_given.then_some(flag))
        .collect();
        if args.url.is_some() && !scratch_only.is_empty() {
            bail!(
                "{}: only for the load test's own scratch servers, not with --url",
                scratch_only.join(", ")
            );
        }
        Ok(())
    }
}

/// Only loopback targets: a load test against someone else's server is an attack.
pub(super) fn loopback_url(url: &str) -> anyhow::Result<String> {
    let base = url.trim_end_matches('/');
    let host = base
        .strip_prefix("ws://")
        .or_else(|| base.strip_prefix("http://"))
        .context("--url must start with ws:// or http://")?;
    // A parsed address, not a prefix: `127.evil.example` must not pass.
    let is_loopback = host
        .parse::<std::net::SocketAddr>()
        .is_ok_and(|a| a.ip().is_loopback())
        || host
            .strip_prefix("localhost:")
            .is_some_and(|port| port.parse::<u16>().is_ok());
    if !is_loopback {
        bail!("--url must be a loopback address (127.0.0.1, localhost or [::1])");
    }
    Ok(format!("ws://{host}"))
}

#[cfg(test)]
mod tests {
    use super::loopback_url;

    #[test]
    fn only_loopback_targets_are_accepted() {
        assert_eq!(
            loopback_url("http://127.0.0.1:8080/").ok().as_deref(),
            Some("ws://127.0.0.1:8080")
        );
        assert!(loopback_url("ws://localhost:8080").is_ok());
        assert!(loopback_url("ws://example.com:8080").is_err());
        assert!(loopback_url("ws://127.0.0.1.example.com:80").is_err());
        assert!(loopback_url("ws://[::1]:8080").is_ok());
    }
}
