//! The capacity page (admins): graphs of the sampler's series over a chosen range, headroom in
//! words, and the recorded load-test runs (one run's page is `run`). The graphs section is also
//! rendered alone, for the page's live refresh.

use leptos::prelude::*;

use crate::chart::{Chart, format_number, render_svg};
use crate::layout::{Nav, Section, document};
use crate::time::{format_time, time_view};

mod run;
pub use run::{RunView, SeriesView, StairView, render_run};

/// The ranges offered: (query value, label).
pub const RANGES: [(&str, &str); 4] = [
    ("15m", "15 minutes"),
    ("1h", "1 hour"),
    ("24h", "24 hours"),
    ("7d", "7 days"),
];

/// Where the CPU cost per message came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Basis {
    /// The last hour's traffic.
    Traffic {
        messages: f64,
        busy_seconds: usize,
        baseline_pct: f64,
    },
    /// The newest recorded load test.
    LoadTest {
        run_id: i64,
        started_at: i64,
        capacity: Option<u32>,
        /// `capacity` is a limit found: a Porch stair above it failed.
        is_limit_found: bool,
    },
}

/// The headroom statement.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadroomView {
    pub us_per_msg: f64,
    /// Messages a second one core takes at that cost.
    pub per_second: f64,
    pub basis: Basis,
    /// Messages a second in the busiest minute of the last 24 hours.
    pub busiest: Option<f64>,
}

/// What the last hour's traffic held when it gave no cost estimate, against what one takes.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficShortfall {
    pub busy_seconds: usize,
    pub busy_seconds_needed: usize,
    /// Messages a second from which a second counts as busy.
    pub busy_rate: f64,
    /// Messages in the busy seconds.
    pub messages: f64,
    pub messages_needed: f64,
}

impl TrafficShortfall {
    /// What fell short, in words: only the criteria missed, so the reader knows what to wait for.
    fn describe(&self) -> String {
        let mut missing = Vec::new();
        if self.busy_seconds < self.busy_seconds_needed {
            missing.push(format!(
                "{} busy seconds ({} or more messages a second) where it takes {}",
                self.busy_seconds,
                rate(self.busy_rate),
                self.busy_seconds_needed
            ));
        }
        if self.messages < self.messages_needed {
            missing.push(format!(
                "{} messages in its busy seconds where it takes {}",
                rate(self.messages),
                rate(self.messages_needed)
            ));
        }
        if missing.is_empty() {
            "its busy seconds took no CPU above the idle baseline".to_owned()
        } else {
            format!("it held {}", missing.join(" and "))
        }
    }
}

/// The live part of the page.
#[derive(Debug, Clone)]
pub struct GraphsView {
    /// The range's query value (`1h`).
    pub range: String,
    pub charts: Vec<Chart>,
    /// `None` when there is neither enough traffic nor a load test to estimate from.
    pub headroom: Option<HeadroomView>,
    /// Seconds between refreshes while the page is open.
    pub refresh_secs: u32,
    /// Why the last hour's traffic gave no estimate; `None` when it gave one.
    pub shortfall: Option<TrafficShortfall>,
    /// When Porch started, if less than an hour ago: what it keeps in memory (the last hour)
    /// begins there, so the headroom from traffic and the short ranges say so.
    pub started_at: Option<i64>,
}

/// A recorded load-test run in the list.
#[derive(Debug, Clone)]
pub struct RunItemView {
    pub id: i64,
    pub started_at: i64,
    pub capacity: Option<u32>,
    /// `capacity` is a limit found: a Porch stair above it failed.
    pub is_limit_found: bool,
    pub is_passed: bool,
    pub us_per_msg: Option<f64>,
}

/// The whole page.
#[derive(Debug, Clone)]
pub struct CapacityView {
    pub nav: Nav,
    pub graphs: GraphsView,
    pub runs: Vec<RunItemView>,
    /// `None` when no Litestream sidecar is configured.
    pub replication: Option<ReplicationView>,
}

/// Litestream's replication, from its last scrapes (see the server's `metrics::replication`).
#[derive(Debug, Clone, Default)]
pub struct ReplicationView {
    /// The metrics URL scraped.
    pub url: String,
    /// When the last scrape finished; `None` before the first.
    pub scraped_at: Option<i64>,
    /// Why the last scrape failed.
    pub error: Option<String>,
    /// The newest transaction Litestream has captured.
    pub txid: Option<u64>,
    /// Seconds since a successful sync was last seen.
    pub synced_secs_ago: Option<u64>,
    pub sync_errors: Option<u64>,
    pub is_disk_full: bool,
    /// Past this many seconds without a sync, the page warns.
    pub stale_after_secs: u64,
}

fn replication_card(view: Option<ReplicationView>) -> AnyView {
    let Some(r) = view else {
        return view! {
            <div class="card" id="replication">
                <h2>"Replication"</h2>
                <p class="muted">"No Litestream sidecar configured: set "<code>"PORCH_LITESTREAM_METRICS_URL"</code>
                    " to its metrics endpoint to see here whether its syncs keep up."</p>
            </div>
        }
        .into_any();
    };
    let mut warnings = Vec::new();
    if let Some(error) = &r.error {
        // A successful scrape is what first sets the sync time.
        let figures = if r.synced_secs_ago.is_some() {
            "The figures below are from the last successful scrape."
        } else {
            "No scrape has worked yet, so there are no figures: check the URL below."
        };
        warnings.push(format!(
            "Scraping Litestream's metrics failed: {error}. {figures}"
        ));
    }
    if r.is_disk_full {
        warnings.push("Litestream has paused replication: the local disk is full.".to_owned());
    }
    if let Some(secs) = r.synced_secs_ago.filter(|s| *s > r.stale_after_secs) {
        warnings.push(format!(
            "Replication lag: no successful Litestream sync seen for {secs} s (more than {} s).",
            r.stale_after_secs
        ));
    }
    let warnings = warnings
        .into_iter()
        .map(|w| view! { <p class="notice notice-error" role="alert">{w}</p> })
        .collect_view();
    let scraped = r.scraped_at.map_or_else(
        || view! { <span>"not yet"</span> }.into_any(),
        |at| {
            let (iso, when) = format_time(at);
            view! { <time datetime=iso>{when}</time> }.into_any()
        },
    );
    let synced = r
        .synced_secs_ago
        .map_or_else(|| "–".to_owned(), |s| format!("{s} s ago"));
    let txid = r.txid.map_or_else(|| "–".to_owned(), |t| t.to_string());
    let errors = r
        .sync_errors
        .map_or_else(|| "–".to_owned(), |e| e.to_string());
    view! {
        <div class="card" id="replication">
            <h2>"Replication"</h2>
            {warnings}
            <table class="table">
                <tbody>
                    <tr><th>"Last successful sync seen"</th><td>{synced}</td></tr>
                    <tr><th>"Transaction captured by Litestream"</th><td>{txid}</td></tr>
                    <tr><th>"Failed syncs (since Litestream started)"</th><td>{errors}</td></tr>
                    <tr><th>"Last scrape"</th><td>{scraped}" of "<code>{r.url}</code></td></tr>
                </tbody>
            </table>
            <p class="muted small">"From Litestream's metrics, scraped every 10 seconds; the sync time is \
                accurate to one scrape. Litestream does not report the replica's own position, so an \
                upload that fails after a local sync shows only in the sidecar's health check."</p>
        </div>
    }
    .into_any()
}

fn rate(value: f64) -> String {
    format_number(value.round())
}

/// The traffic the headroom is measured from: the last hour, or what came since a start within it.
fn traffic_span(started_at: Option<i64>) -> AnyView {
    match started_at {
        Some(at) => view! { "the traffic since Porch started ("{time_view(at)}")" }.into_any(),
        None => "the last hour's traffic".into_any(),
    }
}

fn headroom_text(
    headroom: Option<HeadroomView>,
    shortfall: Option<TrafficShortfall>,
    started_at: Option<i64>,
) -> AnyView {
    let short = shortfall.map_or_else(String::new, |s| s.describe());
    let Some(h) = headroom else {
        // The plain answer first; the technical reason for whoever wants it.
        return view! {
            <p>"No headroom estimate yet: this box has not been busy enough to measure what a \
                message costs it, which a small site may never be. Run "<code>"porch loadtest"</code>
                " on this box (with this data directory) for a figure."</p>
            <details class="headroom-why">
                <summary>"Why there is none"</summary>
                <p>"Porch could not measure the CPU cost per message from "{traffic_span(started_at)}
                    " ("{short}"), and no recorded load test measured it. A load test's stair \
                    measures it when it passed, its generator kept up, and its window held 4,750 \
                    messages or more (10 seconds at 500 a second; shorter or slower stairs measure \
                    mostly the server's idle work); a run against another server with "<code>"--url"</code>
                    " measures no server CPU."</p>
            </details>
        }
        .into_any();
    };
    let per_second = rate(h.per_second);
    let busiest = match h.busiest.filter(|b| *b > 0.0) {
        Some(b) => format!(
            "the busiest minute in the last 24 hours used {:.1} % of that ({} messages a second).",
            b / h.per_second.max(1.0) * 100.0,
            format_number(b)
        ),
        None => "there has been no visitor traffic in the last 24 hours.".to_owned(),
    };
    let statement = format!(
        "At the measured CPU cost per message ({:.0} µs), one core of this box takes about \
         {per_second} messages a second; {busiest}",
        h.us_per_msg
    );
    let basis = match h.basis {
        Basis::Traffic {
            messages,
            busy_seconds,
            baseline_pct,
        } => view! {
            <p class="muted small">"Measured from "{traffic_span(started_at)}{format!(
                ": {} messages in {busy_seconds} busy seconds, counting the CPU above the idle \
                 baseline ({baseline_pct:.1} % of a core).",
                rate(messages)
            )}</p>
        }
        .into_any(),
        Basis::LoadTest {
            run_id,
            started_at: run_started_at,
            capacity,
            is_limit_found,
        } => {
            let (iso, when) = format_time(run_started_at);
            let found = capacity.map_or_else(
                || "no stair passed".to_owned(),
                |c| {
                    let rate = format_number(f64::from(c));
                    if is_limit_found {
                        format!("capacity found {rate} messages a second")
                    } else {
                        format!("{rate} messages a second or more: no limit found")
                    }
                },
            );
            view! {
                <p class="muted small">
                    "The cost could not be measured from "{traffic_span(started_at)}" ("{short}"), \
                    so it comes from the newest "
                    <a href=format!("/capacity/runs/{run_id}")>"load test"</a>", run "
                    <time datetime=iso>{when}</time>" ("{found}")."
                </p>
            }
            .into_any()
        }
    };
    view! {
        <p class="headroom-statement">{statement}</p>
        {basis}
        <p class="muted small">"One core's worth: the cost is the whole server's CPU per message, \
            measured as the load test measures it (server pinned to one core). More cores help the \
            websockets and deliveries; every write still goes through one writer thread."</p>
    }
    .into_any()
}

#[component]
fn ChartCard(chart: Chart) -> impl IntoView {
    let title = format!("{} ({})", chart.title, chart.unit);
    let legend = chart
        .lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            view! { <li><span class=format!("swatch-line series-{i}") aria-hidden="true"></span>{line.label.clone()}</li> }
        })
        .collect_view();
    let body = if chart.point_count() == 0 {
        view! { <p class="muted small chart-empty">"No data in this range yet."</p> }.into_any()
    } else {
        view! { <div class="chart-box" inner_html=render_svg(&chart)></div> }.into_any()
    };
    view! {
        <figure class="card chart-card">
            <figcaption>{title}</figcaption>
            {body}
            <ul class="legend">{legend}</ul>
        </figure>
    }
}

#[component]
fn Graphs(view: GraphsView) -> impl IntoView {
    let refresh = format!("/capacity/graphs?range={}", view.range);
    let charts = view
        .charts
        .into_iter()
        .map(|chart| view! { <ChartCard chart/> })
        .collect_view();
    view! {
        <section id="capacity-graphs" data-refresh=refresh data-refresh-every=view.refresh_secs.to_string()>
            <div class="card">
                <h2>"Headroom"</h2>
                {headroom_text(view.headroom, view.shortfall, view.started_at)}
            </div>
            {view.started_at.map(|at| view! {
                <p class="muted small" data-capacity="restarted">"Porch started "{time_view(at)}
                    ": the last hour is kept in memory only, so the 1-hour graph (and for 15 \
                    minutes the 15-minute one) begins there; the 24-hour and 7-day ones keep the \
                    minutes stored before."</p>
            })}
            <div class="charts">{charts}</div>
        </section>
    }
}

/// The graphs section alone (the page's live refresh replaces it).
pub fn render_capacity_graphs(view: GraphsView) -> String {
    view! { <Graphs view/> }.to_html()
}

/// A capacity found, as a limit only when a stair above it failed: otherwise (every stair
/// passed, or only one below it failed: a busier moment) the highest passing stair is just the
/// fastest rate that passed, and the box takes that much or more.
fn at_least(capacity: u32, is_limit_found: bool) -> String {
    let rate = format_number(f64::from(capacity));
    if is_limit_found {
        format!("{rate} msg/s")
    } else {
        format!("{rate} msg/s or more")
    }
}

/// A run's result in the list: without a capacity found, no Porch stair passed, which "some
/// stairs failed" would understate.
fn run_result(is_passed: bool, capacity: Option<u32>) -> &'static str {
    match (is_passed, capacity) {
        (true, _) => "all stairs passed",
        (false, Some(_)) => "some stairs failed",
        (false, None) => "no Porch stair passed",
    }
}

#[component]
fn Runs(runs: Vec<RunItemView>) -> impl IntoView {
    if runs.is_empty() {
        return view! {
            <p class="muted">"No load test recorded yet. "<code>"porch loadtest"</code>" run with this \
                server's data directory records each run here."</p>
        }
        .into_any();
    }
    let rows = runs
        .into_iter()
        .map(|run| {
            let (iso, when) = format_time(run.started_at);
            let capacity = run.capacity.map_or_else(
                || "none passed".to_owned(),
                |c| at_least(c, run.is_limit_found),
            );
            let result = run_result(run.is_passed, run.capacity);
            let badge = if run.is_passed { "badge badge-open" } else { "badge badge-danger" };
            let cost = run
                .us_per_msg
                .map_or_else(|| "–".to_owned(), |c| format!("{c:.0} µs"));
            view! {
                <tr>
                    <td><a href=format!("/capacity/runs/{}", run.id)><time datetime=iso>{when}</time></a></td>
                    <td>{capacity}</td>
                    <td><span class=badge>{result}</span></td>
                    <td>{cost}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="table" id="loadtest-runs">
            <thead><tr><th>"Run"</th><th>"Highest stair passed"</th><th>"Result"</th><th>"CPU per message"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

/// Renders the capacity page.
pub fn render_capacity(view: CapacityView) -> String {
    let nav = Nav {
        section: Section::Capacity,
        ..view.nav
    };
    let current = view.graphs.range.clone();
    let tabs = RANGES
        .iter()
        .map(|(key, label)| {
            let is_current = current == *key;
            view! {
                <a href=format!("/capacity?range={key}") aria-current=is_current.then_some("page")>{*label}</a>
            }
        })
        .collect_view();
    let content = view! {
        <div class="page-head">
            <h1>"Capacity"</h1>
            <p class="muted">"What this server handles now and how much more it could: figures sampled \
                every second (the last hour in memory, minute rollups for 30 days)."</p>
        </div>
        <nav class="tabs" aria-label="Range">{tabs}</nav>
        <Graphs view=view.graphs/>
        {replication_card(view.replication)}
        <div class="card">
            <h2>"Load tests"</h2>
            <Runs runs=view.runs/>
        </div>
    };
    document("Capacity", Some(nav), true, content.into_any())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shortfall(busy_seconds: usize, messages: f64) -> TrafficShortfall {
        TrafficShortfall {
            busy_seconds,
            busy_seconds_needed: 30,
            busy_rate: 20.0,
            messages,
            messages_needed: 5_000.0,
        }
    }

    #[test]
    fn a_run_whose_porch_stairs_all_failed_says_so() {
        assert_eq!(run_result(true, Some(5000)), "all stairs passed");
        assert_eq!(run_result(false, Some(5000)), "some stairs failed");
        assert_eq!(run_result(false, None), "no Porch stair passed");
    }

    #[test]
    fn a_shortfall_names_only_the_criteria_missed() {
        assert_eq!(
            shortfall(22, 8_800.0).describe(),
            "it held 22 busy seconds (20 or more messages a second) where it takes 30"
        );
        assert_eq!(
            shortfall(40, 1_200.0).describe(),
            "it held 1,200 messages in its busy seconds where it takes 5,000"
        );
        assert!(shortfall(3, 90.0).describe().contains(" and 90 messages"));
        assert_eq!(
            shortfall(40, 8_800.0).describe(),
            "its busy seconds took no CPU above the idle baseline"
        );
    }

    /// A scrape failing from the start has no figures to show: the card said they were "from
    /// the last successful scrape" beside a column of dashes.
    #[test]
    fn a_scrape_that_never_worked_is_not_said_to_have_figures() {
        let card = |synced_secs_ago| {
            replication_card(Some(ReplicationView {
                url: "http://litestream:9090/metrics".into(),
                scraped_at: Some(1_796_083_200_000),
                error: Some("connection failed".into()),
                txid: None,
                synced_secs_ago,
                sync_errors: None,
                is_disk_full: false,
                stale_after_secs: 60,
            }))
            .to_html()
        };
        let never = card(None);
        assert!(never.contains("No scrape has worked yet"), "{never}");
        assert!(!never.contains("last successful scrape"), "{never}");
        assert!(card(Some(5)).contains("from the last successful scrape"));
    }
}
