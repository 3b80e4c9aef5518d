//! The Markdown rendering of a load-test report (the format itself is
//! `metrics::loadtest_report`). Ratios to the echo baseline are computed here, from figures of
//! the same run.

use std::fmt::Write as _;

use crate::metrics::loadtest_report::{Report, Series, Stair, capacity_unsure};

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Why visitors of `series` were refused, per stair (a running server's own brakes, say).
fn refusals(md: &mut String, series: &Series) {
    for s in series
        .stairs
        .iter()
        .filter(|s| s.refused.values().any(|n| *n > 0))
    {
        let codes: Vec<String> = s
            .refused
            .iter()
            .map(|(code, n)| format!("`{code}` {n}"))
            .collect();
        let _ = writeln!(
            md,
            "\nrefused at {}/s, round {}: {}",
            s.target,
            s.round,
            codes.join(", ")
        );
    }
}

/// Renders the report as Markdown: one table per series, then ratios to the echo.
pub fn markdown(r: &Report) -> String {
    let mut md = String::new();
    header(&mut md, r);
    let echo = r.series("echo");
    for series in &r.series {
        let _ = writeln!(md, "### {}\n", series.name);
        let _ = writeln!(
            md,
            "| target/s | round | achieved/s | p50 ms | p99 ms | max ms | send lag p99 ms | refused | server CPU % | µs/msg | RSS MB | loadgen CPU % | Slack delivered | deliveries/s | job lag p99 ms | pass |"
        );
        let _ = writeln!(md, "|{}", "---|".repeat(16));
        for s in &series.stairs {
            let refused: u64 = s.refused.values().sum();
            let (delivered, dps, lag) = s.slack.as_ref().map_or_else(
                || ("–".to_owned(), "–".to_owned(), "–".to_owned()),
                |k| {
                    (
                        format!("{}/{}", k.delivered, k.expected),
                        format!("{:.0}", k.deliveries_per_sec),
                        opt(k.job_lag_p99_ms, 1),
                    )
                },
            );
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {} | {} | {} | {} | {refused} | {} | {} | {} | {:.0} | {delivered} | {dps} | {lag} | {} |",
                s.target,
                s.round,
                s.achieved,
                opt(latency(s, |s| s.p50_ms), 2),
                opt(latency(s, |s| s.p99_ms), 2),
                opt(latency(s, |s| s.max_ms), 1),
                opt(s.send_lag_p99_ms, 2),
                opt(s.server_cpu_pct, 0),
                opt(s.server_us_per_msg, 1),
                opt(s.server_rss_mb, 1),
                s.loadgen_cpu_pct,
                if s.passed { "yes" } else { "**no**" }
            );
        }
        under_the_table(&mut md, series, r.gate_p99_ms);
        if series.stairs.iter().any(|s| s.flood.is_some()) {
            let _ = writeln!(
                md,
                "| target/s | round | flood sent | flood acked | flood refused |"
            );
            let _ = writeln!(md, "|---|---|---|---|---|");
            for s in &series.stairs {
                if let Some(f) = &s.flood {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | {} |",
                        s.target, s.round, f.sent, f.acked, f.refused
                    );
                }
            }
            let _ = writeln!(md);
        }
        if series.stairs.iter().any(|s| s.agents.is_some()) {
            let _ = writeln!(
                md,
                "| target/s | round | agents | reached | fan-out p50 ms | fan-out p99 ms | fan-out max ms |"
            );
            let _ = writeln!(md, "|---|---|---|---|---|---|---|");
            for s in &series.stairs {
                if let Some(a) = &s.agents {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {}/{} | {:.2} | {:.2} | {:.1} |",
                        s.target,
                        s.round,
                        a.agents,
                        a.delivered,
                        a.expected,
                        a.fan_out_p50_ms,
                        a.fan_out_p99_ms,
                        a.fan_out_max_ms
                    );
                }
            }
            let _ = writeln!(md);
        }
        channel_limits(&mut md, series);
        if let Some(kib) = series.stairs.iter().find_map(|s| s.idle_kib_per_socket) {
            let _ = writeln!(md, "idle sockets: {kib:.1} KiB of server RSS per socket\n");
        }
        if let Some(calm) = r.series("porch").filter(|_| series.name == "porch+flood") {
            flood_ratios(&mut md, series, calm);
        }
        if let Some(echo) = echo.filter(|_| series.name != "echo") {
            echo_ratios(&mut md, series, echo, r.gate_p99_ms);
        }
    }
    md
}

/// The Slack mock's per-channel limit: how fast the channels drained, what was left, and the
/// order gate that replaces delivery and job lag for these stairs.
/// What follows a series' table: its refusals, stairs the generator fell behind on, and its
/// capacity.
fn under_the_table(md: &mut String, series: &Series, gate_p99_ms: f64) {
    refusals(md, series);
    generator_behind(md, series, gate_p99_ms);
    // The words of the capacity page (docs/admin.md, "Load tests"): a limit only when a stair
    // above it failed and the run can be trusted; else what passed, "or more", and why.
    let found = series.capacity().map_or_else(
        || "none passed".to_owned(),
        |c| match capacity_unsure(series, gate_p99_ms) {
            _ if series.is_limit_found(gate_p99_ms) => format!("{c} msg/s"),
            Some(why) => format!("{c} msg/s or more (not comparable: {why})"),
            None => format!("{c} msg/s or more (every stair passed)"),
        },
    );
    let _ = writeln!(md, "\ncapacity (highest passing stair): {found}\n");
}

/// Stairs whose sends left the generator late: a send lag p99 above a fifth of the p99 gate
/// means the load generator, not the server, fell behind (a busy box, another load), so the
/// stair's latency and verdict say little about the server (docs/capacity.md, "Arrivals").
fn generator_behind(md: &mut String, series: &Series, gate_p99_ms: f64) {
    let behind: Vec<String> = series
        .stairs
        .iter()
        .filter_map(|s| {
            let lag = s
                .send_lag_p99_ms
                .filter(|_| s.generator_fell_behind(gate_p99_ms))?;
            Some(format!("{}/s (round {}): {lag:.1} ms", s.target, s.round))
        })
        .collect();
    if !behind.is_empty() {
        let _ = writeln!(
            md,
            "\n**The load generator fell behind** (send lag p99 above {:.0} ms) at {}: those stairs' figures and verdicts are not to be trusted; run them again on a quieter box, or with fewer stairs per run.",
            gate_p99_ms / 5.0,
            behind.join(", ")
        );
    }
}

fn channel_limits(md: &mut String, series: &Series) {
    let limited: Vec<_> = series
        .stairs
        .iter()
        .filter_map(|s| {
            Some((
                s,
                s.slack.as_ref()?,
                s.slack.as_ref()?.channel_limit.as_ref()?,
            ))
        })
        .collect();
    if limited.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "Slack channel limit (the mock answers 429 past it; these stairs are gated on ack p99 and per-conversation order, not on delivery or job lag; the backlog is acked messages not yet posted when the stair ended):\n"
    );
    let _ = writeln!(
        md,
        "| target/s | round | limit | channels | drained/channel/s | 429s | backlog left | out of order | duplicates |"
    );
    let _ = writeln!(md, "|{}", "---|".repeat(9));
    for (s, slack, l) in limited {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.2} | {} | {} | {} | {} |",
            s.target,
            s.round,
            l.limit,
            l.channels,
            l.drain_per_channel_per_sec,
            l.rate_limited,
            slack.expected.saturating_sub(slack.delivered),
            l.out_of_order,
            l.duplicates
        );
    }
    let _ = writeln!(md);
}

/// A stair's ack latency, if it measured one (no message acked: nothing measured, not 0 ms).
fn latency(s: &Stair, of: fn(&Stair) -> f64) -> Option<f64> {
    (s.acked > 0).then(|| of(s))
}

fn echo_ratios(md: &mut String, series: &Series, echo: &Series, gate_p99_ms: f64) {
    let _ = writeln!(md, "Ratios to the echo baseline of this run:\n");
    let _ = writeln!(
        md,
        "| target/s | p99 ÷ echo p99 | µs/msg ÷ echo µs/msg | RSS ÷ echo RSS |"
    );
    let _ = writeln!(md, "|---|---|---|---|");
    let mut targets: Vec<u32> = series.stairs.iter().map(|s| s.target).collect();
    targets.dedup();
    for t in targets {
        let p99 = ratio(
            series.at(t, |s| latency(s, |s| s.p99_ms)),
            echo.at(t, |s| latency(s, |s| s.p99_ms)),
        );
        let cpu = ratio(
            series.at(t, |s| s.server_us_per_msg),
            echo.at(t, |s| s.server_us_per_msg),
        );
        let rss = ratio(
            series.at(t, |s| s.server_rss_mb),
            echo.at(t, |s| s.server_rss_mb),
        );
        let _ = writeln!(
            md,
            "| {t} | {} | {} | {} |",
            opt(p99, 2),
            opt(cpu, 2),
            opt(rss, 2)
        );
    }
    let cap = ratio(
        series.capacity().map(f64::from),
        echo.capacity().map(f64::from),
    );
    // The echo's capacity is only a floor when it passed every stair tried: a failed stair
    // found its limit.
    let echo_passed_all = echo.every_stair_passed();
    let floor = if cap.is_some() && echo_passed_all {
        " (the echo's capacity is a floor: it passed every stair tried)"
    } else {
        ""
    };
    match [series, echo]
        .into_iter()
        .find_map(|s| capacity_unsure(s, gate_p99_ms))
    {
        Some(why) => {
            let _ = writeln!(
                md,
                "\ncapacity ÷ echo capacity: – (not comparable: {why})\n"
            );
        }
        None => {
            let _ = writeln!(md, "\ncapacity ÷ echo capacity: {}{floor}\n", opt(cap, 2));
        }
    }
    let idle = |s: &Series| s.stairs.iter().find_map(|s| s.idle_kib_per_socket);
    if let Some(r) = ratio(idle(series), idle(echo)) {
        let _ = writeln!(md, "idle KiB per socket ÷ echo: {r:.2}\n");
    }
}

/// The flood gate: the other sites' p99 during the flood against the same stair without it.
fn flood_ratios(md: &mut String, flooded: &Series, calm: &Series) {
    let _ = writeln!(
        md,
        "Other sites during the flood, against the same stair without it:\n"
    );
    // Judged here, from two series: a stair's own `passed` (and the JSON, and the capacity) knows
    // only its own gates.
    let _ = writeln!(
        md,
        "| target/s | p99 ms without flood | p99 ms with flood | ratio | within 1.2× (not part of `passed`) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    let mut targets: Vec<u32> = flooded.stairs.iter().map(|s| s.target).collect();
    targets.dedup();
    for t in targets {
        let (a, b) = (
            calm.at(t, |s| Some(s.p99_ms)),
            flooded.at(t, |s| Some(s.p99_ms)),
        );
        let within = ratio(b, a).map_or("–", |r| if r <= 1.2 { "yes" } else { "**no**" });
        let _ = writeln!(
            md,
            "| {t} | {} | {} | {} | {within} |",
            opt(a, 2),
            opt(b, 2),
            opt(ratio(b, a), 2)
        );
    }
    let _ = writeln!(md);
}

fn arrivals(name: &str) -> &str {
    match name {
        "smooth" => "smooth (each send released at its own intended time by a precise timer)",
        "ticks" => {
            "ticks (tokio's millisecond timer: sends due within a millisecond leave together)"
        }
        other => other,
    }
}

fn header(md: &mut String, r: &Report) {
    let _ = writeln!(md, "## Load test {}\n", r.started_at);
    let _ = writeln!(md, "- command: `{}`", r.command);
    let _ = writeln!(
        md,
        "- machine: {} cores, {}, kernel {}",
        r.machine.cores, r.machine.cpu_model, r.machine.kernel
    );
    let _ = writeln!(md, "- placement: {}", r.placement);
    let _ = writeln!(md, "- arrivals: {}", arrivals(&r.arrivals));
    if r.seeded_messages > 0 {
        let _ = writeln!(
            md,
            "- history: {} messages seeded into each scratch server's database before its stair \
             (20 a conversation, on a site of their own, indexed for search)",
            r.seeded_messages
        );
    }
    let settings = match (&r.url, r.server_env.is_empty()) {
        (Some(url), _) => {
            format!("not known (the server at {url} was not started by the load test)")
        }
        (None, true) => "defaults (synchronous=FULL)".to_owned(),
        (None, false) => r.server_env.join(" "),
    };
    let _ = writeln!(md, "- server settings: {settings}");
    let _ = writeln!(
        md,
        "- {} visitor sockets over {} {}, {} idle sockets, flood {} msg/s; warm-up {} ms, window {} ms; gate: achieved/target ≥ 0.95 and ack p99 ≤ {} ms (with Slack also every message delivered and job lag p99 ≤ {} ms)\n",
        r.visitors,
        r.sites,
        if r.sites == 1 { "site" } else { "sites" },
        r.idle,
        r.flood_rate,
        r.warmup_ms,
        r.duration_ms,
        r.gate_p99_ms,
        r.gate_job_lag_ms
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_of(url: Option<&str>, sites: u32, series: &serde_json::Value) -> Report {
        serde_json::from_value(serde_json::json!({
            "started_at": "2026-12-05T10:00:00Z", "command": "porch loadtest",
            "machine": {"cores": 2, "cpu_model": "x", "kernel": "y"}, "placement": "p",
            "visitors": 10, "sites": sites, "idle": 0, "flood_rate": 0, "warmup_ms": 1,
            "duration_ms": 1, "gate_p99_ms": 50.0, "url": url, "series": series
        }))
        .expect("a report")
    }

    fn report(url: Option<&str>, sites: u32) -> Report {
        report_of(url, sites, &serde_json::json!([]))
    }

    /// One stair of a series, as the JSON has it.
    fn stair(target: u32, passed: bool) -> serde_json::Value {
        serde_json::json!({
            "target": target, "round": 1, "achieved": f64::from(target), "sent": 10, "acked": 10,
            "refused": {}, "broken": 0, "p50_ms": 1.0, "p90_ms": 1.0, "p99_ms": 1.0,
            "p999_ms": 1.0, "max_ms": 1.0, "server_cpu_pct": 5.0, "server_us_per_msg": 9.0,
            "server_rss_mb": 20.0, "loadgen_cpu_pct": 1.0, "idle_kib_per_socket": null,
            "connect_ms": 1, "slack": null, "flood": null, "passed": passed
        })
    }

    /// The echo's capacity is called a floor only when the echo passed every stair: one it
    /// failed found its limit.
    #[test]
    fn the_echos_capacity_is_a_floor_only_when_it_passed_every_stair() {
        let with_echo = |echo_passed_2000: bool| {
            markdown(&report_of(
                None,
                2,
                &serde_json::json!([
                    {"name": "echo", "stairs": [stair(1000, true), stair(2000, echo_passed_2000)]},
                    {"name": "porch", "stairs": [stair(1000, true), stair(2000, false)]}
                ]),
            ))
        };
        assert!(with_echo(true).contains("a floor"), "{}", with_echo(true));
        let found = with_echo(false);
        assert!(
            found.contains("capacity ÷ echo capacity: 1.00\n"),
            "{found}"
        );
        assert!(!found.contains("a floor"), "{found}");
    }

    /// A run whose stairs passed out of order (the box busier during a lower one) has no
    /// capacity ratio: 5.00 from porch passing 1000/s where the echo failed it was nonsense.
    #[test]
    fn capacities_found_out_of_order_are_not_compared() {
        let md = markdown(&report_of(
            None,
            2,
            &serde_json::json!([
                {"name": "echo", "stairs": [stair(200, true), stair(1000, false)]},
                {"name": "porch", "stairs": [stair(200, false), stair(1000, true)]}
            ]),
        ));
        assert!(
            md.contains("capacity ÷ echo capacity: – (not comparable: the porch series failed a stair below one it passed)"),
            "{md}"
        );
        // Each series' own capacity line says so too, as the capacity page does: no limit.
        assert!(
            md.contains("capacity (highest passing stair): 1000 msg/s or more (not comparable: the porch series failed a stair below one it passed)"),
            "{md}"
        );
        assert!(
            md.contains("capacity (highest passing stair): 200 msg/s\n"),
            "the echo's 200 is a limit (1000 failed above it): {md}"
        );
    }

    /// A stair that acked nothing measured no latency: "–", not 0.00 ms.
    #[test]
    fn a_stair_that_acked_nothing_shows_no_latency() {
        let mut refused = stair(1000, false);
        refused["acked"] = serde_json::json!(0);
        refused["achieved"] = serde_json::json!(0.0);
        refused["p50_ms"] = serde_json::json!(0.0);
        let md = markdown(&report_of(
            None,
            2,
            &serde_json::json!([{"name": "porch", "stairs": [refused]}]),
        ));
        assert!(md.contains("| 1000 | 1 | 0 | – | – | – |"), "{md}");
    }

    /// The flood gate is judged in its table, from the two series' p99s.
    #[test]
    fn the_flood_table_says_whether_the_gate_is_met() {
        let with = |p99: f64| {
            let mut s = stair(5000, true);
            s["p99_ms"] = serde_json::json!(p99);
            s
        };
        let md = markdown(&report_of(
            None,
            2,
            &serde_json::json!([
                {"name": "porch", "stairs": [with(10.0)]},
                {"name": "porch+flood", "stairs": [with(13.0)]}
            ]),
        ));
        assert!(
            md.contains("| 5000 | 10.00 | 13.00 | 1.30 | **no** |"),
            "{md}"
        );
    }

    /// A stair whose sends left late is named as not to be trusted; one on time is not.
    #[test]
    fn a_stair_whose_generator_fell_behind_is_flagged() {
        let mut late = stair(2000, false);
        late["send_lag_p99_ms"] = serde_json::json!(234.0);
        let mut on_time = stair(1000, true);
        on_time["send_lag_p99_ms"] = serde_json::json!(0.4);
        let md = markdown(&report_of(
            None,
            2,
            &serde_json::json!([{"name": "porch", "stairs": [on_time, late]}]),
        ));
        assert!(md.contains("**The load generator fell behind**"), "{md}");
        assert!(md.contains("at 2000/s (round 1): 234.0 ms"), "{md}");
        assert!(!md.contains("1000/s (round 1)"), "{md}");
    }

    #[test]
    fn a_job_lag_nothing_measured_shows_as_a_dash() {
        let slack = serde_json::json!({
            "expected": 200, "delivered": 32, "deliveries_per_sec": 8.0,
            "job_lag_p50_ms": null, "job_lag_p99_ms": null, "job_lag_max_ms": null
        });
        let md = markdown(&report_of(
            None,
            2,
            &serde_json::json!([{"name": "porch+slack", "stairs": [{
                "target": 40, "round": 1, "achieved": 40.0, "sent": 200, "acked": 200,
                "refused": {}, "broken": 0, "p50_ms": 1.0, "p90_ms": 1.0, "p99_ms": 1.0,
                "p999_ms": 1.0, "max_ms": 1.0, "server_cpu_pct": 5.0, "server_us_per_msg": 9.0,
                "server_rss_mb": 20.0, "loadgen_cpu_pct": 1.0, "idle_kib_per_socket": null,
                "connect_ms": 1, "slack": slack, "flood": null, "passed": true
            }]}]),
        ));
        assert!(md.contains("| 32/200 | 8 | – | yes |"), "{md}");
    }

    #[test]
    fn a_run_against_a_given_server_does_not_claim_its_settings() {
        let md = markdown(&report(Some("ws://127.0.0.1:19900"), 1));
        assert!(
            md.contains(
                "- server settings: not known (the server at ws://127.0.0.1:19900 was not \
                 started by the load test)\n"
            ),
            "{md}"
        );
        assert!(md.contains("10 visitor sockets over 1 site, "), "{md}");
        let scratch = markdown(&report(None, 8));
        assert!(scratch.contains("- server settings: defaults (synchronous=FULL)\n"));
        assert!(scratch.contains("over 8 sites, "), "{scratch}");
    }
}
