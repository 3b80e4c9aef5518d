//! Line charts as inline SVG, drawn on the server: no script, no library. A chart has a numeric
//! x axis (time, or a load test's target rates) and up to six lines sharing a y axis from zero.
//! Missing values break a line rather than drawing it to zero.

use std::fmt::Write as _;

use crate::escape_html as escape;

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub label: String,
    /// (x, y) in x order; `None` where there was nothing to measure.
    pub points: Vec<(f64, Option<f64>)>,
}

/// A chart's data and axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    /// Unit of the y axis, shown after the title.
    pub unit: String,
    pub x_min: f64,
    pub x_max: f64,
    /// Labels under the left and right ends of the x axis.
    pub x_labels: (String, String),
    pub lines: Vec<Line>,
}

impl Chart {
    /// Points with a value, over all lines.
    pub fn point_count(&self) -> usize {
        self.lines
            .iter()
            .flat_map(|l| &l.points)
            .filter(|(_, y)| y.is_some_and(f64::is_finite))
            .count()
    }
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 170.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 26.0;

/// The smallest 1, 2 or 5 × 10^k at or above `value` (at least 1).
pub fn nice_ceiling(value: f64) -> f64 {
    if !(value.is_finite() && value > 1.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|v| *v >= value)
        .unwrap_or(10.0 * magnitude)
}

/// A y-axis label: whole numbers with separators, small ones with a decimal.
pub fn format_number(value: f64) -> String {
    // An empty f64 sum is -0.0, which would print as "-0"; adding 0.0 makes it +0.0.
    let value = value + 0.0;
    if value.abs() >= 1000.0 {
        #[allow(clippy::cast_possible_truncation)]
        let whole = value.round() as i64;
        let digits = whole.unsigned_abs().to_string();
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        if whole < 0 {
            format!("-{grouped}")
        } else {
            grouped
        }
    } else if value.fract() == 0.0 || value.abs() >= 10.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// What a screen reader says for `chart`, which it cannot see: the title, the range, and per line
/// its latest and highest value (or that it has none), so the picture's facts are in words too.
fn spoken(chart: &Chart) -> String {
    let lines: Vec<String> = chart
        .lines
        .iter()
        .map(|line| {
            let values: Vec<f64> = line
                .points
                .iter()
                .filter_map(|(_, y)| y.filter(|v| v.is_finite()))
                .collect();
            match values.last() {
                Some(latest) => format!(
                    "{}: latest {}, highest {}",
                    line.label,
                    format_number(*latest),
                    format_number(values.iter().copied().fold(f64::MIN, f64::max))
                ),
                None => format!("{}: no data", line.label),
            }
        })
        .collect();
    format!(
        "{} ({}), {} to {}. {}.",
        chart.title,
        chart.unit,
        chart.x_labels.0,
        chart.x_labels.1,
        lines.join("; ")
    )
}

/// Renders `chart` as an `<svg>` element. `data-points` says how many points it draws (the
/// browser test reads it).
pub fn render_svg(chart: &Chart) -> String {
    let y_top = nice_ceiling(
        chart
            .lines
            .iter()
            .flat_map(|l| &l.points)
            .filter_map(|(_, y)| *y)
            .filter(|y| y.is_finite())
            .fold(0.0, f64::max),
    );
    let span = (chart.x_max - chart.x_min).max(f64::MIN_POSITIVE);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |v: f64| LEFT + (v - chart.x_min) / span * plot_w;
    let y = |v: f64| TOP + plot_h - (v / y_top).clamp(0.0, 1.0) * plot_h;
    let title = escape(&format!("{} ({})", chart.title, chart.unit));
    let said = escape(&spoken(chart));
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{said}" data-points="{}"><title>{title}</title>"#,
        chart.point_count()
    );
    for fraction in [0.0, 0.5, 1.0] {
        let at = y(y_top * fraction);
        let _ = write!(
            svg,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{at:.1}" y2="{at:.1}"/><text class="axis" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            LEFT - 6.0,
            at + 6.0,
            escape(&format_number(y_top * fraction))
        );
    }
    let _ = write!(
        svg,
        r#"<text class="axis" x="{LEFT}" y="{:.1}">{}</text><text class="axis" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
        HEIGHT - 6.0,
        escape(&chart.x_labels.0),
        WIDTH - RIGHT,
        HEIGHT - 6.0,
        escape(&chart.x_labels.1)
    );
    for (i, line) in chart.lines.iter().enumerate() {
        let stroke = Stroke::of(&line.points, x, y);
        if stroke.path.is_empty() {
            continue;
        }
        let _ = write!(
            svg,
            r#"<path class="series series-{i}" d="{}"><title>{}</title></path>"#,
            stroke.path,
            escape(&line.label)
        );
        for (lx, ly) in stroke.lone {
            let _ = write!(
                svg,
                r#"<circle class="series-dot series-{i}" data-lone="" cx="{lx:.1}" cy="{ly:.1}" r="2"/>"#
            );
        }
        // The latest value.
        if let Some((lx, ly)) = stroke.last {
            let _ = write!(
                svg,
                r#"<circle class="series-dot series-{i}" cx="{lx:.1}" cy="{ly:.1}" r="2.5"/>"#
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A line's path in plot coordinates: one stroke per run of samples, a gap where one is missing.
struct Stroke {
    path: String,
    /// Samples with a gap on both sides (a spike on a quiet server, say): a run of one has no
    /// length to stroke, so each gets a dot, or it would not show at all.
    lone: Vec<(f64, f64)>,
    last: Option<(f64, f64)>,
}

impl Stroke {
    fn of(points: &[(f64, Option<f64>)], x: impl Fn(f64) -> f64, y: impl Fn(f64) -> f64) -> Self {
        let mut stroke = Self {
            path: String::new(),
            lone: Vec::new(),
            last: None,
        };
        let mut run = 0;
        let mut first = (0.0, 0.0);
        for (px, py) in points {
            if let Some(v) = py.filter(|v| v.is_finite()) {
                let at = (x(*px), y(v));
                let command = if run == 0 { 'M' } else { 'L' };
                let _ = write!(stroke.path, "{command}{:.1} {:.1}", at.0, at.1);
                if run == 0 {
                    first = at;
                }
                run += 1;
                stroke.last = Some(at);
            } else {
                if run == 1 {
                    stroke.lone.push(first);
                }
                run = 0;
            }
        }
        // A lone sample at the end is the latest one, which has its dot already.
        stroke
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(f64, Option<f64>)>) -> Chart {
        Chart {
            title: "Messages <per> second".into(),
            unit: "msg/s".into(),
            x_min: 0.0,
            x_max: 10.0,
            x_labels: ("-10 s".into(), "now".into()),
            lines: vec![Line {
                label: "acked & stored".into(),
                points,
            }],
        }
    }

    #[test]
    fn a_gap_starts_a_new_stroke_and_text_is_escaped() {
        let svg = render_svg(&chart(vec![
            (0.0, Some(1.0)),
            (1.0, Some(2.0)),
            (2.0, None),
            (3.0, Some(3.0)),
        ]));
        let d = svg
            .split(r#" d=""#)
            .nth(1)
            .and_then(|r| r.split('"').next());
        assert_eq!(d.map(|d| d.matches('M').count()), Some(2), "{svg}");
        assert!(svg.contains(r#"data-points="3""#));
        assert!(svg.contains("Messages &lt;per&gt; second"));
        assert!(svg.contains("acked &amp; stored"));
        assert!(!svg.contains("<per>"));
        // The facts in words for a screen reader: latest and highest of each line.
        assert!(
            svg.contains("acked &amp; stored: latest 3, highest 3."),
            "{svg}"
        );
    }

    #[test]
    fn a_sample_with_gaps_on_both_sides_is_drawn_as_a_dot() {
        let svg = render_svg(&chart(vec![
            (0.0, None),
            (1.0, Some(16.0)),
            (2.0, None),
            (3.0, Some(1.0)),
            (4.0, Some(2.0)),
            (5.0, None),
            (6.0, Some(3.0)),
        ]));
        // The spike at 1 s: its own dot, at its height (the top of the axis, 20).
        assert_eq!(svg.matches("data-lone").count(), 1, "{svg}");
        let spike = svg.split("data-lone").nth(1).unwrap_or_default();
        let cy = spike
            .split(r#"cy=""#)
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse::<f64>().ok());
        let top = TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - 16.0 / 20.0);
        assert!(
            cy.is_some_and(|cy| (cy - top).abs() < 0.1),
            "{cy:?} {top} {svg}"
        );
        // The last sample, alone too, has the latest value's dot only.
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
    }

    #[test]
    fn the_y_axis_ends_at_a_round_number() {
        assert!((nice_ceiling(0.0) - 1.0).abs() < f64::EPSILON);
        assert!((nice_ceiling(3.2) - 5.0).abs() < f64::EPSILON);
        assert!((nice_ceiling(1234.0) - 2000.0).abs() < f64::EPSILON);
        assert_eq!(format_number(12_345.0), "12,345");
        assert_eq!(format_number(2.5), "2.5");
        assert_eq!(format_number(-0.0), "0");
    }
}
