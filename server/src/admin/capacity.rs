//! The capacity page (admins only): the sampler's series as graphs over 15 minutes or an hour
//! (from memory) or 24 hours or 7 days (from the minute rollups), the headroom in words, and the
//! recorded load-test runs with one page each.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use porch_app::capacity::{
    Basis, CapacityView, GraphsView, HeadroomView, ReplicationView, RunItemView, RunView,
    SeriesView, StairView, TrafficShortfall, render_capacity, render_capacity_graphs, render_run,
};
use porch_app::chart::{Chart, Line};
use porch_app::layout::Section;
use serde::Deserialize;

use crate::clock::{millis, now_ms};
use crate::metrics::loadtest_report::{Report, Stair};
use crate::metrics::replication::{STALE_AFTER_SECS, age_secs};
use crate::metrics::{
    BUSY_RATE, MIN_BUSY_SECONDS, MIN_MESSAGES, Shortfall, messages_per_core, traffic_cost,
};
use crate::series::{Rollup, Series};
use crate::state::AppState;
use crate::store;

use super::page::{PageError, html};
use super::session::Admin;

/// Load-test runs listed.
const RUNS_LISTED: u32 = 20;
const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 24 * 60 * MINUTE_MS;

/// The graphs: title, unit, and the series drawn with their labels.
type ChartSpec = (
    &'static str,
    &'static str,
    &'static [(Series, &'static str)],
);

const CHARTS: &[ChartSpec] = &[
    (
        "Visitor messages",
        "stored per second",
        &[(Series::Messages, "messages")],
    ),
    (
        "Ack latency",
        "ms, frame received to ack written",
        &[
            (Series::AckP50, "p50"),
            (Series::AckP99, "p99"),
            (Series::AckMax, "max"),
        ],
    ),
    (
        "Open connections",
        "count",
        &[
            (Series::WidgetConnections, "widgets"),
            (Series::AgentConnections, "agents' live pages"),
        ],
    ),
    ("CPU", "% of one core", &[(Series::Cpu, "process")]),
    ("Memory", "MB resident", &[(Series::Rss, "RSS")]),
    (
        "Event-loop lag",
        "ms a 100 ms timer fired late",
        &[(Series::LoopLagP99, "p99"), (Series::LoopLagMax, "max")],
    ),
    (
        "Runtime busy",
        "% of worker time",
        &[(Series::RuntimeBusy, "busy")],
    ),
    (
        "Writer batch size",
        "writes per commit",
        &[(Series::WriterBatch, "mean")],
    ),
    (
        "Commit latency",
        "ms per batch",
        &[(Series::CommitMean, "mean"), (Series::CommitMax, "max")],
    ),
    (
        "Writer queue",
        "writes waiting",
        &[(Series::WriterQueue, "depth")],
    ),
    (
        "Deliveries",
        "per second",
        &[
            (Series::DeliveriesChat, "chat"),
            (Series::DeliveriesWebhook, "webhook"),
            (Series::DeliveriesEmail, "email"),
            (Series::DeliveriesMaint, "maintenance"),
        ],
    ),
    (
        "Job lag",
        "ms, due to delivered",
        &[(Series::JobLagP99, "p99"), (Series::JobLagMax, "max")],
    ),
    (
        "Refusals and failures",
        "per second",
        &[
            (Series::RateLimited, "429s from destinations"),
            (Series::Failures, "failed attempts"),
            (Series::WriterBusy, "busy (writer queue full)"),
        ],
    ),
    (
        "Open file descriptors",
        "count",
        &[(Series::OpenFds, "open")],
    ),
];

/// A range the page offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    Minutes15,
    Hour,
    Day,
    Week,
}

impl Range {
    fn parse(text: &str) -> Self {
        match text {
            "15m" => Self::Minutes15,
            "24h" => Self::Day,
            "7d" => Self::Week,
            _ => Self::Hour,
        }
    }

    fn key(self) -> &'static str {
        match self {
            Self::Minutes15 => "15m",
            Self::Hour => "1h",
            Self::Day => "24h",
            Self::Week => "7d",
        }
    }

    fn span_ms(self) -> i64 {
        match self {
            Self::Minutes15 => 15 * MINUTE_MS,
            Self::Hour => 60 * MINUTE_MS,
            Self::Day => DAY_MS,
            Self::Week => 7 * DAY_MS,
        }
    }

    /// One graph point per this much time: a few hundred points per graph.
    fn step_ms(self, sample_ms: i64) -> i64 {
        match self {
            Self::Minutes15 => sample_ms,
            Self::Hour => 5 * sample_ms,
            Self::Day => 2 * MINUTE_MS,
            Self::Week => 15 * MINUTE_MS,
        }
    }

    fn is_in_memory(self) -> bool {
        matches!(self, Self::Minutes15 | Self::Hour)
    }

    fn refresh_secs(self) -> u32 {
        if self.is_in_memory() { 5 } else { 60 }
    }

    fn start_label(self) -> &'static str {
        match self {
            Self::Minutes15 => "15 min ago",
            Self::Hour => "1 hour ago",
            Self::Day => "24 hours ago",
            Self::Week => "7 days ago",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct RangeQuery {
    #[serde(default)]
    range: String,
}

fn charts(spans: &[Rollup], since: i64, range: Range) -> Vec<Chart> {
    #[allow(clippy::cast_precision_loss)]
    let x = |at: i64| (at - since) as f64 / 1000.0;
    CHARTS
        .iter()
        .map(|(title, unit, series)| Chart {
            title: (*title).to_owned(),
            unit: (*unit).to_owned(),
            x_min: 0.0,
            x_max: x(since + range.span_ms()),
            x_labels: (range.start_label().to_owned(), "now".to_owned()),
            lines: series
                .iter()
                .map(|(s, label)| Line {
                    label: (*label).to_owned(),
                    points: spans.iter().map(|r| (x(r.at_ms), r.plotted(*s))).collect(),
                })
                .collect(),
        })
        .collect()
}

/// The last hour's shortfall as the page words it.
fn shortfall_view(short: &Shortfall) -> TrafficShortfall {
    TrafficShortfall {
        busy_seconds: short.busy_seconds,
        busy_seconds_needed: MIN_BUSY_SECONDS,
        busy_rate: BUSY_RATE,
        messages: short.messages,
        messages_needed: MIN_MESSAGES,
    }
}

/// The newest runs, each with its cost per message (`Report::cost_per_message`) and whether its
/// capacity is a limit found (`Report::is_limit_found`) judged by today's rules from its stored
/// report rather than as stored: a run recorded before 2026-12-07 kept the cost of stairs too
/// short or slow to measure one (a 3-second run at 20 a second stored 2,150 µs).
fn listed_runs(conn: &rusqlite::Connection) -> Result<Vec<ListedRun>, store::Error> {
    Ok(store::list_loadtest_runs_with_reports(conn, RUNS_LISTED)?
        .into_iter()
        .map(|(mut run, report)| {
            let report = serde_json::from_str::<Report>(&report).ok();
            if let Some(report) = &report {
                run.us_per_msg = report.cost_per_message();
            }
            // A report that no longer parses keeps the judgement stored with it.
            let is_limit_found = report.as_ref().map_or(!run.is_passed, |report| {
                report
                    .porch_series()
                    .is_some_and(|series| series.is_limit_found(report.gate_p99_ms))
            });
            ListedRun {
                run,
                is_limit_found,
            }
        })
        .collect())
}

/// A run as the page lists it.
struct ListedRun {
    run: store::LoadtestRunRow,
    /// Its capacity is a limit found: a Porch stair above it failed.
    is_limit_found: bool,
}

/// The headroom statement's figures: from the last hour's traffic if there was enough, else
/// from the newest load test with a measured cost; and what the traffic lacked, if it did.
async fn headroom(
    app: &AppState,
) -> Result<(Option<HeadroomView>, Option<TrafficShortfall>), PageError> {
    let every = app.capacity.timing.every;
    let traffic = app
        .capacity
        .with_recent(|recent| traffic_cost(recent, every));
    let day_ago = now_ms() - DAY_MS;
    let (stored_busiest, runs) = app
        .readers
        .read(move |c| Ok((store::find_busiest_minute(c, day_ago)?, listed_runs(c)?)))
        .await?;
    // Minutes not yet written (the current one) count too.
    let recent_busiest = app
        .capacity
        .minutes(day_ago)
        .iter()
        .filter_map(|r| r.mean[Series::Messages.index()])
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let busiest = match (stored_busiest, recent_busiest) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let shortfall = traffic.as_ref().err().map(shortfall_view);
    let (us_per_msg, basis) = if let Ok(cost) = traffic {
        let basis = Basis::Traffic {
            messages: cost.messages,
            busy_seconds: cost.busy_seconds,
            baseline_pct: cost.baseline_pct,
        };
        (cost.us_per_msg, basis)
    } else if let Some((listed, cost)) = runs
        .into_iter()
        .find_map(|r| r.run.us_per_msg.map(|c| (r, c)))
    {
        let basis = Basis::LoadTest {
            run_id: listed.run.id,
            started_at: listed.run.started_at,
            capacity: listed.run.capacity,
            is_limit_found: listed.is_limit_found,
        };
        (cost, basis)
    } else {
        return Ok((None, shortfall));
    };
    let view = HeadroomView {
        us_per_msg,
        per_second: messages_per_core(us_per_msg),
        basis,
        busiest,
    };
    Ok((Some(view), shortfall))
}

async fn graphs(app: &AppState, range: Range) -> Result<GraphsView, PageError> {
    let since = now_ms() - range.span_ms();
    let step = range.step_ms(millis(app.capacity.timing.every).max(1));
    let spans = if range.is_in_memory() {
        app.capacity.spans(since, step)
    } else {
        app.readers
            .read(move |c| store::list_metrics_spans(c, since, step))
            .await?
    };
    let (headroom, shortfall) = headroom(app).await?;
    Ok(GraphsView {
        range: range.key().to_owned(),
        charts: charts(&spans, since, range),
        headroom,
        refresh_secs: range.refresh_secs(),
        shortfall,
        started_at: app.capacity.started_within_memory(),
    })
}

/// `GET /capacity?range=15m|1h|24h|7d`.
pub async fn capacity_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Query(query): Query<RangeQuery>,
) -> Result<Response, PageError> {
    let graphs = graphs(&app, Range::parse(&query.range)).await?;
    let runs = app
        .readers
        .read(listed_runs)
        .await?
        .into_iter()
        .map(
            |ListedRun {
                 run,
                 is_limit_found,
             }| RunItemView {
                id: run.id,
                started_at: run.started_at,
                capacity: run.capacity,
                is_limit_found,
                is_passed: run.is_passed,
                us_per_msg: run.us_per_msg,
            },
        )
        .collect();
    Ok(html(render_capacity(CapacityView {
        nav: who.nav(Section::Capacity),
        graphs,
        runs,
        replication: replication_view(&app),
    })))
}

/// The replication card's figures; `None` without a sidecar.
fn replication_view(app: &AppState) -> Option<ReplicationView> {
    let url = app.replication.url()?.to_owned();
    let status = app.replication.status();
    let now = now_ms();
    Some(ReplicationView {
        url,
        scraped_at: status.scraped_at,
        error: status.error,
        txid: status.reading.txid,
        synced_secs_ago: status.synced_seen_at.map(|at| age_secs(now, at)),
        sync_errors: status.reading.sync_errors,
        is_disk_full: status.reading.disk_full,
        stale_after_secs: STALE_AFTER_SECS,
    })
}

/// `GET /capacity/graphs?range=…`: the graphs section alone, for the page's live refresh.
pub async fn capacity_graphs(
    State(app): State<AppState>,
    _admin: Admin,
    Query(query): Query<RangeQuery>,
) -> Result<Response, PageError> {
    let graphs = graphs(&app, Range::parse(&query.range)).await?;
    Ok(html(render_capacity_graphs(graphs)))
}

/// `GET /capacity/runs/{id}`: one recorded load test.
pub async fn run_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(id): Path<i64>,
) -> Result<Response, PageError> {
    let Some((run, json)) = app
        .readers
        .read(move |c| store::find_loadtest_run(c, id))
        .await?
    else {
        return Err(PageError::not_found("load test run"));
    };
    let report: Report = serde_json::from_str(&json).map_err(|err| {
        tracing::warn!(error = %err, run = id, "a recorded load test does not parse");
        PageError::not_found("load test run")
    })?;
    Ok(html(render_run(RunView {
        nav: who.nav(Section::Capacity),
        started_at: run.started_at,
        machine: format!(
            "{} cores, {}, kernel {}; {}.",
            report.machine.cores, report.machine.cpu_model, report.machine.kernel, report.placement
        ),
        charts: stair_charts(&report),
        command: report.command.clone(),
        is_passed: run.is_passed,
        series: report
            .series
            .iter()
            .map(|s| SeriesView {
                name: s.name.clone(),
                capacity: s.capacity(),
                is_limit_found: s.is_limit_found(report.gate_p99_ms),
                stairs: s
                    .stairs
                    .iter()
                    .map(|t| StairView {
                        target: t.target,
                        round: t.round,
                        achieved: t.achieved,
                        p50_ms: t.p50_ms,
                        p99_ms: t.p99_ms,
                        max_ms: t.max_ms,
                        refused: t.refused.values().sum(),
                        cpu_pct: t.server_cpu_pct,
                        us_per_msg: t.server_us_per_msg,
                        rss_mb: t.server_rss_mb,
                        passed: t.passed,
                    })
                    .collect(),
            })
            .collect(),
    })))
}

/// Achieved rate and ack p99 per stair, one line per series.
fn stair_charts(report: &Report) -> Vec<Chart> {
    // One point per stair: with several rounds, the median round (as the report's ratios use).
    let mut stairs: Vec<u32> = report
        .series
        .iter()
        .flat_map(|s| s.stairs.iter().map(|t| t.target))
        .collect();
    stairs.sort_unstable();
    stairs.dedup();
    let (x_min, x_max) = match (stairs.first(), stairs.last()) {
        (Some(&min), Some(&max)) => (f64::from(min), f64::from(max)),
        _ => (0.0, 1.0),
    };
    let labels = (
        format!("{} msg/s", porch_app::chart::format_number(x_min)),
        format!("{} msg/s", porch_app::chart::format_number(x_max)),
    );
    let line = |name: &str, value: &dyn Fn(&Stair) -> f64| Line {
        label: name.to_owned(),
        points: report
            .series(name)
            .map(|s| {
                stairs
                    .iter()
                    .filter_map(|&t| Some((f64::from(t), Some(s.at(t, |st| Some(value(st)))?))))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let names: Vec<&str> = report.series.iter().map(|s| s.name.as_str()).collect();
    let mut achieved: Vec<Line> = names.iter().map(|n| line(n, &|t| t.achieved)).collect();
    achieved.push(Line {
        label: "target".to_owned(),
        points: stairs
            .iter()
            .map(|&t| (f64::from(t), Some(f64::from(t))))
            .collect(),
    });
    vec![
        Chart {
            title: "Achieved rate per stair".to_owned(),
            unit: "messages a second".to_owned(),
            x_min,
            x_max,
            x_labels: labels.clone(),
            lines: achieved,
        },
        Chart {
            title: "Ack p99 per stair".to_owned(),
            unit: "ms".to_owned(),
            x_min,
            x_max,
            x_labels: labels,
            lines: names.iter().map(|n| line(n, &|t| t.p99_ms)).collect(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stair(target: u32, round: u32, p99_ms: f64) -> serde_json::Value {
        serde_json::json!({
            "target": target, "round": round, "achieved": f64::from(target), "sent": 1,
            "acked": 1, "refused": {}, "broken": 0, "p50_ms": 1.0, "p90_ms": 1.0,
            "p99_ms": p99_ms, "p999_ms": p99_ms, "max_ms": p99_ms, "server_cpu_pct": null,
            "server_us_per_msg": null, "server_rss_mb": null, "loadgen_cpu_pct": 1.0,
            "idle_kib_per_socket": null, "connect_ms": 1, "slack": null, "flood": null,
            "passed": true
        })
    }

    #[test]
    fn a_stair_run_in_several_rounds_is_one_point_at_its_median() {
        let report: Report = serde_json::from_value(serde_json::json!({
            "started_at": "2026-11-30T07:45:23Z", "command": "porch loadtest",
            "machine": {"cores": 2, "cpu_model": "x", "kernel": "y"}, "placement": "p",
            "visitors": 10, "sites": 1, "idle": 0, "flood_rate": 0, "warmup_ms": 1,
            "duration_ms": 1, "gate_p99_ms": 50.0,
            "series": [{"name": "porch", "stairs": [
                stair(1000, 1, 1.0), stair(1000, 2, 5.0), stair(1000, 3, 3.0), stair(2000, 1, 4.0)
            ]}]
        }))
        .expect("report");
        let charts = stair_charts(&report);
        let p99 = &charts[1].lines[0];
        assert_eq!(p99.points, vec![(1000.0, Some(3.0)), (2000.0, Some(4.0))]);
        let target = charts[0].lines.last().expect("target line");
        assert_eq!(
            target.points,
            vec![(1000.0, Some(1000.0)), (2000.0, Some(2000.0))]
        );
        assert_eq!((charts[0].x_min, charts[0].x_max), (1000.0, 2000.0));
    }
}
