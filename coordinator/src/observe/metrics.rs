//! A [`Snapshot`] in the Prometheus text exposition format (version 0.0.4), served at
//! `/metrics` of the coordinator's HTTP port.
//!
//! Every metric is named `tilepdb_*`; counters end in `_total`. Per-table series carry a
//! `table` label (the pattern's tiles, `1-2-3`), per-worker series `worker` (its name) and
//! `id`, refusals `reason`.

use std::fmt::Write;

use super::progress::Snapshot;

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The metrics of `s`.
///
/// ```
/// use tilepdb_coordinator::observe::{metrics::render, progress::Snapshot};
/// let text = render(&Snapshot::default());
/// assert!(text.contains("# TYPE tilepdb_states_expanded_total counter\n"));
/// ```
pub fn render(s: &Snapshot) -> String {
    let mut m = Metrics::default();
    job_metrics(&mut m, s);
    layer_metrics(&mut m, s);
    wire_metrics(&mut m, s);
    table_metrics(&mut m, s);
    worker_metrics(&mut m, s);
    m.text
}

/// The job: its identity, whether it is done, its time, states and tables.
fn job_metrics(m: &mut Metrics, s: &Snapshot) {
    m.family(
        "tilepdb_job_info",
        "gauge",
        "The job: always 1, its identity in the labels.",
    );
    m.sample(
        "tilepdb_job_info",
        &[
            ("job_id", &s.job_id),
            ("partition", &s.partition),
            ("board", &s.board),
            ("goal", &s.goal),
            ("blank_rule", &s.blank_rule),
            ("encoding", &s.encoding),
        ],
        1.0,
    );
    m.gauge(
        "tilepdb_job_done",
        "1 once every table is written.",
        bool_value(s.done),
    );
    m.gauge(
        "tilepdb_elapsed_seconds",
        "Seconds since the coordinator started the job.",
        s.elapsed_seconds,
    );
    m.counter(
        "tilepdb_states_expanded_total",
        "States expanded by the workers in this job.",
        s.states_expanded as f64,
    );
    m.gauge(
        "tilepdb_table",
        "Index (0-based) of the table being built.",
        s.table as f64,
    );
    m.gauge(
        "tilepdb_tables",
        "Tables in the job.",
        s.tables.len() as f64,
    );
    m.gauge(
        "tilepdb_tables_written",
        "Tables of the job written so far.",
        s.tables_written as f64,
    );
}

/// The layer being expanded: its depth, states, rates and tasks.
fn layer_metrics(m: &mut Metrics, s: &Snapshot) {
    m.gauge(
        "tilepdb_layer_depth",
        "Depth of the layer being expanded.",
        f64::from(s.depth),
    );
    m.gauge(
        "tilepdb_layer_states",
        "States of the layer being expanded.",
        s.layer_states as f64,
    );
    m.gauge(
        "tilepdb_layer_states_per_second",
        "States expanded per second over the current layer.",
        s.layer_states_per_second,
    );
    m.gauge(
        "tilepdb_job_states_per_second",
        "States expanded per second over the whole job.",
        s.job_states_per_second,
    );
    m.gauge(
        "tilepdb_tasks_done",
        "Tasks of the current layer done.",
        f64::from(s.tasks_done),
    );
    m.gauge(
        "tilepdb_tasks_total",
        "Tasks of the current layer.",
        f64::from(s.tasks_total),
    );
}

/// The workers alive, the bytes on the wire, the results and leases, the estimate.
fn wire_metrics(m: &mut Metrics, s: &Snapshot) {
    m.gauge(
        "tilepdb_workers_alive",
        "Workers heard within the lease timeout.",
        f64::from(s.workers_alive),
    );
    m.counter(
        "tilepdb_received_bytes_total",
        "Message bytes received from workers.",
        s.bytes_received as f64,
    );
    m.counter(
        "tilepdb_sent_bytes_total",
        "Message bytes sent to workers.",
        s.bytes_sent as f64,
    );
    m.gauge(
        "tilepdb_peak_rss_bytes",
        "The coordinator's peak resident memory.",
        s.peak_rss_bytes as f64,
    );
    m.counter(
        "tilepdb_results_accepted_total",
        "Results merged.",
        s.results_accepted as f64,
    );
    m.counter(
        "tilepdb_results_dropped_total",
        "Valid results not needed (late or duplicate).",
        s.results_dropped as f64,
    );
    m.counter(
        "tilepdb_leases_expired_total",
        "Leases that expired (their task handed out again).",
        s.leases_expired as f64,
    );
    m.family(
        "tilepdb_results_refused_total",
        "counter",
        "Results refused, by reason (the gRPC status sent back).",
    );
    for (reason, count) in &s.results_refused {
        m.sample(
            "tilepdb_results_refused_total",
            &[("reason", reason)],
            *count as f64,
        );
    }
    if s.eta_seconds.is_some() || !s.done {
        m.gauge(
            "tilepdb_eta_seconds",
            "Estimated seconds until every table is written (NaN: no estimate yet).",
            s.eta_seconds.unwrap_or(f64::NAN),
        );
    }
}

/// Per table: states found and expected, the states of each layer, whether written.
fn table_metrics(m: &mut Metrics, s: &Snapshot) {
    let tables: Vec<(String, &_)> = s
        .tables
        .iter()
        .map(|t| (tiles_label(&t.tiles), t))
        .collect();
    m.family(
        "tilepdb_table_states_found",
        "gauge",
        "States found so far in each table.",
    );
    for (label, t) in &tables {
        m.sample(
            "tilepdb_table_states_found",
            &[("table", label)],
            t.states_found as f64,
        );
    }
    m.family(
        "tilepdb_table_expected_states",
        "gauge",
        "States each table will have (minimized tables: its placements, a lower bound).",
    );
    for (label, t) in &tables {
        m.sample(
            "tilepdb_table_expected_states",
            &[("table", label)],
            t.expected_states as f64,
        );
    }
    m.family(
        "tilepdb_table_layer_states",
        "gauge",
        "States of each layer of each table, by depth, as the job recorded them.",
    );
    for (label, t) in &tables {
        for (depth, states) in t.layers.iter().enumerate() {
            let depth = depth.to_string();
            m.sample(
                "tilepdb_table_layer_states",
                &[("table", label), ("depth", &depth)],
                *states as f64,
            );
        }
    }
    m.family(
        "tilepdb_table_written",
        "gauge",
        "1 for each table written.",
    );
    for (label, t) in &tables {
        m.sample(
            "tilepdb_table_written",
            &[("table", label)],
            bool_value(t.state == "written"),
        );
    }
}

/// Per worker: its last call and its tasks.
fn worker_metrics(m: &mut Metrics, s: &Snapshot) {
    m.family(
        "tilepdb_worker_seconds_since_heartbeat",
        "gauge",
        "Seconds since each worker's last call.",
    );
    for w in &s.workers {
        let id = w.id.to_string();
        m.sample(
            "tilepdb_worker_seconds_since_heartbeat",
            &[("worker", &w.name), ("id", &id)],
            w.seconds_since_heartbeat,
        );
    }
    m.family(
        "tilepdb_worker_tasks_held",
        "gauge",
        "Tasks leased to each worker and not yet done.",
    );
    for w in &s.workers {
        let id = w.id.to_string();
        m.sample(
            "tilepdb_worker_tasks_held",
            &[("worker", &w.name), ("id", &id)],
            f64::from(w.tasks_held),
        );
    }
}

/// `1-2-3` for tiles 1, 2, 3.
pub fn tiles_label(tiles: &[u32]) -> String {
    tiles
        .iter()
        .map(std::string::ToString::to_string)
        .collect::<Vec<_>>()
        .join("-")
}

fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

#[derive(Default)]
struct Metrics {
    text: String,
}

impl Metrics {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape_label(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", number(value));
    }

    fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "gauge", help);
        self.sample(name, &[], value);
    }

    fn counter(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "counter", help);
        self.sample(name, &[], value);
    }
}

/// A sample value: integers without a fraction, `NaN`, `+Inf`, `-Inf` as the format spells them.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v.fract() == 0.0 && v.abs() < 9.0e15 {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "an integral value below 9e15 is exact in i64"
        )]
        let integral = v as i64;
        format!("{integral}")
    } else {
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::progress::{TableProgress, WorkerRow};

    #[test]
    fn labels_and_values_are_escaped_and_spelled_as_the_format_wants() {
        let s = Snapshot {
            job_id: "a\"b\\c\nd".into(),
            states_expanded: 12_345_678_901,
            layer_states_per_second: 1.5,
            results_refused: [("invalid argument".to_string(), 3)].into(),
            workers: vec![WorkerRow {
                id: 7,
                name: "w\"1".into(),
                ..Default::default()
            }],
            tables: vec![TableProgress {
                tiles: vec![1, 2, 3],
                state: "written",
                layers: vec![1, 2],
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = render(&s);
        assert!(text.contains(r#"job_id="a\"b\\c\nd""#), "{text}");
        assert!(text.contains("tilepdb_states_expanded_total 12345678901\n"));
        assert!(text.contains("tilepdb_layer_states_per_second 1.5\n"));
        assert!(text.contains("tilepdb_results_refused_total{reason=\"invalid argument\"} 3\n"));
        assert!(text.contains("tilepdb_worker_tasks_held{worker=\"w\\\"1\",id=\"7\"} 0\n"));
        assert!(text.contains("tilepdb_table_written{table=\"1-2-3\"} 1\n"));
        assert!(text.contains("tilepdb_table_layer_states{table=\"1-2-3\",depth=\"1\"} 2\n"));
        assert!(text.contains("tilepdb_eta_seconds NaN\n"));
        assert_eq!(number(f64::INFINITY), "+Inf");
    }
}
