//! Plain SVG charts, written by hand: a labelled scatter with its Pareto front, sorted series
//! on a log scale, and bar histograms of one or several tables. No fonts or scripts are
//! referenced beyond the generic `sans-serif`, so the files open in any browser and embed in
//! Markdown.
//!
//! ```
//! use tilepdb_common::plot::svg;
//! let text = svg::histogram("a table", "value", &[1, 4, 6, 4, 1]);
//! assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
//! ```

use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Escapes text for an XML text node or attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// How an axis maps values onto the page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Proportional.
    Linear,
    /// Base 10; values at or below zero sit on the axis' low end.
    Log,
}

struct Axis {
    scale: Scale,
    low: f64,
    high: f64,
}

impl Axis {
    fn new(scale: Scale, values: impl Iterator<Item = f64>) -> Axis {
        let values: Vec<f64> = values
            .filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0))
            .map(|v| match scale {
                Scale::Linear => v,
                Scale::Log => v.log10(),
            })
            .collect();
        let (mut low, mut high) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
                (l.min(v), h.max(v))
            });
        if !low.is_finite() {
            (low, high) = (0.0, 1.0);
        }
        match scale {
            Scale::Log => {
                low = low.floor();
                high = high.ceil().max(low + 1.0);
            }
            Scale::Linear => {
                if low > 0.0 {
                    low = 0.0;
                }
                if high <= low {
                    high = low + 1.0;
                }
                high += (high - low) * 0.05;
            }
        }
        Axis { scale, low, high }
    }

    /// Where `v` falls, 0 (low end) to 1 (high end).
    fn fraction(&self, v: f64) -> f64 {
        let v = match self.scale {
            Scale::Linear => v,
            Scale::Log if v > 0.0 => v.log10(),
            Scale::Log => self.low,
        };
        ((v - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
    }

    /// Tick values and their labels.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a log scale's bounds are decimal exponents"
    )]
    fn ticks(&self) -> Vec<(f64, String)> {
        match self.scale {
            Scale::Log => (self.low as i32..=self.high as i32)
                .map(|e| (10f64.powi(e), format!("1e{e}")))
                .collect(),
            Scale::Linear => {
                let span = self.high - self.low;
                let raw = span / 5.0;
                let magnitude = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 5.0, 10.0]
                    .iter()
                    .map(|m| m * magnitude)
                    .find(|s| *s >= raw)
                    .unwrap_or(raw);
                let mut ticks = Vec::new();
                let mut v = (self.low / step).ceil() * step;
                while v <= self.high + step * 1e-9 && ticks.len() < 50 {
                    ticks.push((v, format_number(v)));
                    v += step;
                }
                ticks
            }
        }
    }
}

fn format_number(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Width a legend label of 12-pixel sans-serif takes at most, per character (wide enough
/// for digits and lower-case letters of the common fonts).
const LEGEND_CHAR: f64 = 7.2;

/// The chart's width: the plot's, and a legend column wide enough for the longest of
/// `legend` (its swatch, a gap and the text), at least [`RIGHT`].
fn chart_width<'a>(legend: impl IntoIterator<Item = &'a str>) -> f64 {
    let longest = legend
        .into_iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    let column = 12.0 + 15.0 + LEGEND_CHAR * longest as f64 + 10.0;
    WIDTH - RIGHT + column.max(RIGHT)
}

/// A chart under construction: the frame, the axes and their ticks.
struct Canvas {
    out: String,
    x: Axis,
    y: Axis,
}

impl Canvas {
    /// A chart whose legend will show the labels `legend` (the page is widened for the
    /// longest, so that none is cut).
    fn new<'a>(
        title: &str,
        (x_label, y_label): (&str, &str),
        x: Axis,
        y: Axis,
        legend: impl IntoIterator<Item = &'a str>,
    ) -> Canvas {
        let width = chart_width(legend);
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" viewBox="0 0 {width} {HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
            (LEFT + WIDTH - RIGHT) / 2.0,
            escape(title)
        );
        let mut canvas = Canvas { out, x, y };
        canvas.frame(x_label, y_label);
        canvas
    }

    fn px(&self, v: f64) -> f64 {
        LEFT + self.x.fraction(v) * (WIDTH - LEFT - RIGHT)
    }

    fn py(&self, v: f64) -> f64 {
        HEIGHT - BOTTOM - self.y.fraction(v) * (HEIGHT - TOP - BOTTOM)
    }

    fn frame(&mut self, x_label: &str, y_label: &str) {
        let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP);
        let _ = writeln!(
            self.out,
            r##"<rect x="{x0}" y="{y1}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
            x1 - x0,
            y0 - y1
        );
        for (v, label) in self.x.ticks() {
            let x = self.px(v);
            let _ = writeln!(
                self.out,
                r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{}" stroke="#444"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                y0 + 5.0,
                y0 + 18.0,
                escape(&label)
            );
        }
        for (v, label) in self.y.ticks() {
            let y = self.py(v);
            let _ = writeln!(
                self.out,
                r##"<line x1="{}" y1="{y:.1}" x2="{x0}" y2="{y:.1}" stroke="#444"/><line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                x0 - 5.0,
                x0 - 8.0,
                y + 4.0,
                escape(&label)
            );
        }
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            f64::midpoint(x0, x1),
            HEIGHT - 18.0,
            escape(x_label)
        );
        let _ = writeln!(
            self.out,
            r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">{}</text>"#,
            f64::midpoint(y0, y1),
            f64::midpoint(y0, y1),
            escape(y_label)
        );
    }

    fn legend(&mut self, row: usize, colour: &str, label: &str) {
        let x = WIDTH - RIGHT + 12.0;
        let y = TOP + 8.0 + 18.0 * row as f64;
        let _ = writeln!(
            self.out,
            r#"<rect x="{x}" y="{}" width="10" height="10" fill="{colour}"/><text x="{}" y="{}">{}</text>"#,
            y - 9.0,
            x + 15.0,
            y,
            escape(label)
        );
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// One point of a scatter: its label, coordinates and whether it is on the front.
pub struct Point {
    /// The label.
    pub label: String,
    /// The abscissa.
    pub x: f64,
    /// The ordinate.
    pub y: f64,
    /// Whether it is on the front.
    pub on_front: bool,
}

/// A scatter of labelled points, the front's points joined by a line in increasing x.
pub fn scatter(
    title: &str,
    x_label: &str,
    y_label: &str,
    (x_scale, y_scale): (Scale, Scale),
    points: &[Point],
) -> String {
    let x = Axis::new(x_scale, points.iter().map(|p| p.x));
    let y = Axis::new(y_scale, points.iter().map(|p| p.y));
    let legend: Vec<String> = points
        .iter()
        .map(|p| {
            let mark = if p.on_front { " (front)" } else { "" };
            format!("{}{mark}", p.label)
        })
        .collect();
    let mut canvas = Canvas::new(
        title,
        (x_label, y_label),
        x,
        y,
        legend.iter().map(String::as_str),
    );
    let mut front: Vec<&Point> = points.iter().filter(|p| p.on_front).collect();
    front.sort_by(|a, b| a.x.total_cmp(&b.x));
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|p| format!("{:.1},{:.1}", canvas.px(p.x), canvas.py(p.y)))
            .collect();
        let _ = writeln!(
            canvas.out,
            r##"<polyline points="{}" fill="none" stroke="#888" stroke-dasharray="4 3"/>"##,
            path.join(" ")
        );
    }
    for (i, p) in points.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let (cx, cy) = (canvas.px(p.x), canvas.py(p.y));
        let stroke = if p.on_front {
            r#" stroke="black" stroke-width="2""#
        } else {
            ""
        };
        let _ = writeln!(
            canvas.out,
            r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="6" fill="{colour}"{stroke}><title>{}</title></circle>"#,
            escape(&p.label)
        );
        canvas.legend(i, colour, &legend[i]);
    }
    canvas.finish()
}

/// Several series drawn as lines over their index (1, 2, …), e.g. nodes per instance sorted.
pub fn series(
    title: &str,
    x_label: &str,
    y_label: &str,
    y_scale: Scale,
    lines: &[(String, Vec<f64>)],
) -> String {
    let longest = lines.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let x = Axis::new(Scale::Linear, [1.0, longest.max(1) as f64].into_iter());
    let y = Axis::new(y_scale, lines.iter().flat_map(|(_, v)| v.iter().copied()));
    let mut canvas = Canvas::new(
        title,
        (x_label, y_label),
        x,
        y,
        lines.iter().map(|(l, _)| l.as_str()),
    );
    for (i, (label, values)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(j, &v)| format!("{:.1},{:.1}", canvas.px((j + 1) as f64), canvas.py(v)))
            .collect();
        let _ = writeln!(
            canvas.out,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            path.join(" ")
        );
        canvas.legend(i, colour, label);
    }
    canvas.finish()
}

/// Bars of `counts[v]` over the values `v` = 0, 1, …, on a log scale of counts.
pub fn histogram(title: &str, x_label: &str, counts: &[u64]) -> String {
    histograms(title, x_label, &[(String::new(), counts.to_vec())])
}

/// The histograms of several tables side by side: for each value `v` = 0, 1, …, one bar per
/// series `(label, counts)`, `counts[v]` high on a log scale, in the series' colour; a legend
/// names the series when there are several.
pub fn histograms(title: &str, x_label: &str, series: &[(String, Vec<u64>)]) -> String {
    let longest = series.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
    let x = Axis::new(Scale::Linear, [0.0, longest.max(1) as f64].into_iter());
    let y = Axis::new(
        Scale::Log,
        series
            .iter()
            .flat_map(|(_, c)| c.iter().map(|&n| n as f64))
            .chain([1.0]),
    );
    let legend = if series.len() > 1 { series } else { &[] };
    let mut canvas = Canvas::new(
        title,
        (x_label, "entries (log scale)"),
        x,
        y,
        legend.iter().map(|(l, _)| l.as_str()),
    );
    let bar = (canvas.px(1.0) - canvas.px(0.0)).max(1.0);
    let width = (bar * 0.9 / series.len().max(1) as f64).max(0.5);
    for (j, (label, counts)) in series.iter().enumerate() {
        let colour = COLOURS[j % COLOURS.len()];
        for (v, &count) in counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let x0 = canvas.px(v as f64) + j as f64 * width;
            let (top, base) = (canvas.py(count as f64), canvas.py(1.0));
            // A count of 1 sits on the axis: give it a sliver so it shows.
            let height = (base - top).max(1.5);
            let name = if label.is_empty() {
                String::new()
            } else {
                format!("{}, ", escape(label))
            };
            let _ = writeln!(
                canvas.out,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{width:.1}" height="{height:.1}" fill="{colour}"><title>{name}{v}: {count}</title></rect>"#,
                base - height,
            );
        }
        if series.len() > 1 {
            canvas.legend(j, colour, label);
        }
    }
    canvas.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `width` attribute of the chart's `<svg>`.
    fn svg_width(text: &str) -> f64 {
        let at = text.find("width=\"").expect("a width") + 7;
        text[at..].split('"').next().unwrap().parse().unwrap()
    }

    #[test]
    fn the_legend_column_fits_the_longest_label() {
        let short = series(
            "t",
            "x",
            "y",
            Scale::Linear,
            &[("a".into(), vec![1.0, 2.0])],
        );
        assert_eq!(
            svg_width(&short),
            WIDTH,
            "a short legend keeps the usual width"
        );
        let label = "4x4-7-8-zero-aware-blank-first-1-bit+reflect (front)";
        let points = [
            Point {
                label: "4x4-6-6-3-minimized-blank-first".into(),
                x: 1.0,
                y: 2.0,
                on_front: false,
            },
            Point {
                label: label.trim_end_matches(" (front)").into(),
                x: 2.0,
                y: 1.0,
                on_front: true,
            },
        ];
        let text = scatter("t", "x", "y", (Scale::Log, Scale::Log), &points);
        let width = svg_width(&text);
        // The legend's text starts 27 px into its column; every character fits before the edge.
        let end = WIDTH - RIGHT + 27.0 + LEGEND_CHAR * label.chars().count() as f64;
        assert!(width >= end, "{width} < {end}");
        assert!(text.contains(&format!("viewBox=\"0 0 {width} {HEIGHT}\"")));
        assert!(text.contains(label));
    }
}
