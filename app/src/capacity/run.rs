//! One recorded load-test run's page: its graphs and a stair table per series.

use leptos::prelude::*;

use super::{ChartCard, at_least, rate};
use crate::chart::{Chart, format_number};
use crate::layout::{Nav, Section, document};
use crate::time::format_time;

/// One stair of a run, as its table shows it.
#[derive(Debug, Clone)]
pub struct StairView {
    pub target: u32,
    pub round: u32,
    pub achieved: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub refused: u64,
    pub cpu_pct: Option<f64>,
    pub us_per_msg: Option<f64>,
    pub rss_mb: Option<f64>,
    pub passed: bool,
}

/// One series (`echo`, `porch`, `porch+slack`, …) of a run.
#[derive(Debug, Clone)]
pub struct SeriesView {
    pub name: String,
    pub capacity: Option<u32>,
    /// `capacity` is a limit found: a stair above it failed (each stair passes by a majority of
    /// its rounds).
    pub is_limit_found: bool,
    pub stairs: Vec<StairView>,
}

/// A recorded run's page.
#[derive(Debug, Clone)]
pub struct RunView {
    pub nav: Nav,
    pub started_at: i64,
    pub command: String,
    pub machine: String,
    pub is_passed: bool,
    pub series: Vec<SeriesView>,
    pub charts: Vec<Chart>,
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

#[component]
fn SeriesTable(series: SeriesView) -> impl IntoView {
    let capacity = series.capacity.map_or_else(
        || "no stair passed".to_owned(),
        |c| format!("capacity {}", at_least(c, series.is_limit_found)),
    );
    let rows = series
        .stairs
        .into_iter()
        .map(|s| {
            view! {
                <tr>
                    <td>{format_number(f64::from(s.target))}</td>
                    <td>{s.round}</td>
                    <td>{rate(s.achieved)}</td>
                    <td>{format!("{:.2}", s.p50_ms)}</td>
                    <td>{format!("{:.2}", s.p99_ms)}</td>
                    <td>{format!("{:.1}", s.max_ms)}</td>
                    <td>{s.refused}</td>
                    <td>{opt(s.cpu_pct, 0)}</td>
                    <td>{opt(s.us_per_msg, 1)}</td>
                    <td>{opt(s.rss_mb, 1)}</td>
                    <td>{if s.passed { "yes" } else { "no" }}</td>
                </tr>
            }
        })
        .collect_view();
    let label = format!("Stairs of {}", series.name);
    view! {
        <div class="card">
            <h2><span class="mono">{series.name}</span>" · "{capacity}</h2>
            <div class="table-scroll" tabindex="0" role="region" aria-label=label>
                <table class="table stairs">
                    <thead><tr>
                        <th>"Target/s"</th><th>"Round"</th><th>"Achieved/s"</th><th>"p50 ms"</th>
                        <th>"p99 ms"</th><th>"Max ms"</th><th>"Refused"</th><th>"Server CPU %"</th>
                        <th>"µs/msg"</th><th>"RSS MB"</th><th>"Passed"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </div>
    }
}

/// Renders one run's page.
pub fn render_run(view: RunView) -> String {
    let nav = Nav {
        section: Section::Capacity,
        ..view.nav
    };
    let (iso, when) = format_time(view.started_at);
    let result = if view.is_passed {
        "Every stair passed."
    } else {
        "Some stairs failed."
    };
    let charts = view
        .charts
        .into_iter()
        .map(|chart| view! { <ChartCard chart/> })
        .collect_view();
    let series = view
        .series
        .into_iter()
        .map(|series| view! { <SeriesTable series/> })
        .collect_view();
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href="/capacity">"← Capacity"</a></p>
            <h1>"Load test of "<time datetime=iso>{when}</time></h1>
            <p class="muted">{result}" "{view.machine}</p>
        </div>
        <p class="small"><code class="break">{view.command}</code></p>
        <div class="charts">{charts}</div>
        {series}
    };
    document("Load test", Some(nav), true, content.into_any())
}
