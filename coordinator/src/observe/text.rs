//! A [`Snapshot`] for the terminal: what `tilepdb-coordinator status --watch` prints (the
//! dashboard's content, in text).

use std::fmt::Write;

use super::progress::Snapshot;
use crate::build::human_bytes;

/// Width of the progress bars, in characters.
const BAR: usize = 30;

/// The snapshot as lines of text: the job, a progress bar and ETA per table (columns
/// aligned), the current layer, the states of each layer of the table being built, the
/// rates, a row per worker, the wire and the results.
///
/// ```
/// use tilepdb_coordinator::observe::{progress::Snapshot, text::render};
/// assert!(render(&Snapshot::default()).starts_with("job "));
/// ```
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    job_lines(&mut out, s);
    table_lines(&mut out, s);
    layer_lines(&mut out, s);
    worker_lines(&mut out, s);
    wire_lines(&mut out, s);
    out
}

/// The job and where it is.
fn job_lines(out: &mut String, s: &Snapshot) {
    let encoding = if s.encoding.is_empty() {
        String::new()
    } else {
        format!(" {}", s.encoding)
    };
    let _ = writeln!(
        out,
        "job      {} ({} {} {} {}{encoding})",
        s.job_id, s.partition, s.board, s.blank_rule, s.goal
    );
    let _ = writeln!(
        out,
        "phase    {}; {} of {} tables written; elapsed {}; ETA {}",
        if s.done { "done" } else { &s.phase },
        s.tables_written,
        s.tables.len(),
        duration(Some(s.elapsed_seconds)),
        if s.done {
            "-".to_string()
        } else {
            duration(s.eta_seconds)
        }
    );
}

/// A row per table, every column aligned: tiles, bar, percentage, state, states found of
/// states expected, ETA.
fn table_lines(out: &mut String, s: &Snapshot) {
    let tiles: Vec<String> = s.tables.iter().map(|t| tiles_list(&t.tiles)).collect();
    let tiles_width = tiles.iter().map(String::len).max().unwrap_or(0);
    let number_width = s
        .tables
        .iter()
        .map(|t| {
            t.states_found
                .to_string()
                .len()
                .max(t.expected_states.to_string().len())
        })
        .max()
        .unwrap_or(0);
    let index_width = s.tables.len().to_string().len();
    for (t, tiles) in s.tables.iter().zip(&tiles) {
        let _ = writeln!(
            out,
            "table {:<index_width$}  {tiles:<tiles_width$}  {} {:>5.1} %  {:<8}  {:>number_width$} of {:>number_width$} states  ETA {}",
            t.index + 1,
            bar(t.fraction),
            100.0 * t.fraction,
            t.state,
            t.states_found,
            t.expected_states,
            if t.state == "written" {
                "done".to_string()
            } else {
                duration(t.eta_seconds)
            }
        );
    }
}

/// The layer being expanded and the states of each layer of the table being built (or,
/// once the job is done, of the last table).
fn layer_lines(out: &mut String, s: &Snapshot) {
    if !s.done {
        let tasks = if s.tasks_total > 0 {
            f64::from(s.tasks_done) / f64::from(s.tasks_total)
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "layer    depth {}: {} states; tasks {} {} of {}",
            s.depth,
            s.layer_states,
            bar(tasks),
            s.tasks_done,
            s.tasks_total
        );
    }
    let shown = s
        .tables
        .iter()
        .find(|t| t.state == "building")
        .or_else(|| s.tables.iter().rev().find(|t| !t.layers.is_empty()));
    if let Some(t) = shown.filter(|t| !t.layers.is_empty()) {
        let _ = writeln!(
            out,
            "layers   table {}, states by depth: {}",
            t.index + 1,
            t.layers
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let _ = writeln!(
        out,
        "rate     {:.2} M states/s this layer, {:.2} M states/s over the job ({} expanded)",
        s.layer_states_per_second / 1e6,
        s.job_states_per_second / 1e6,
        s.states_expanded
    );
}

/// A row per worker, aligned.
fn worker_lines(out: &mut String, s: &Snapshot) {
    let _ = writeln!(
        out,
        "workers  {} alive of {} seen",
        s.workers_alive,
        s.workers.len()
    );
    let id_width = s
        .workers
        .iter()
        .map(|w| w.id.to_string().len())
        .max()
        .unwrap_or(0);
    let name_width = s
        .workers
        .iter()
        .map(|w| w.name.chars().count())
        .max()
        .unwrap_or(0);
    for w in &s.workers {
        let _ = writeln!(
            out,
            "  {:>id_width$}  {:<name_width$}  {:<6}  last heard {:>6.1} s ago, {} task(s) held",
            w.id,
            w.name,
            if w.alive { "alive" } else { "silent" },
            w.seconds_since_heartbeat,
            w.tasks_held
        );
    }
}

/// The wire, the results and the memory.
fn wire_lines(out: &mut String, s: &Snapshot) {
    let refused = if s.results_refused.is_empty() {
        "none".to_string()
    } else {
        s.results_refused
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "wire     {} received, {} sent; results {} merged, {} late or duplicate, refused {}; {} lease(s) expired",
        human_bytes(s.bytes_received),
        human_bytes(s.bytes_sent),
        s.results_accepted,
        s.results_dropped,
        refused,
        s.leases_expired
    );
    let _ = writeln!(out, "memory   {} peak", human_bytes(s.peak_rss_bytes));
}

/// `1,2,3` for tiles 1, 2, 3.
fn tiles_list(tiles: &[u32]) -> String {
    tiles
        .iter()
        .map(std::string::ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `[#####-----]` for a fraction in 0..=1.
fn bar(fraction: f64) -> String {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "the value lies in 0..=BAR"
    )]
    let full = ((fraction.clamp(0.0, 1.0)) * BAR as f64).round() as usize;
    format!("[{}{}]", "#".repeat(full), "-".repeat(BAR - full))
}

/// `1 h 02 min`, `3 min 07 s`, `12 s`, or `-` when unknown.
fn duration(seconds: Option<f64>) -> String {
    match seconds {
        Some(s) if s.is_finite() && s >= 0.0 => {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "finite and not negative; a float-to-integer cast saturates"
            )]
            let s = s.round() as u64;
            let (h, m, r) = (s / 3600, s / 60 % 60, s % 60);
            if h > 0 {
                format!("{h} h {m:02} min")
            } else if m > 0 {
                format!("{m} min {r:02} s")
            } else {
                format!("{r} s")
            }
        }
        _ => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::progress::{TableProgress, WorkerRow};

    #[test]
    fn bars_durations_and_worker_rows() {
        assert_eq!(bar(0.5), format!("[{}{}]", "#".repeat(15), "-".repeat(15)));
        assert_eq!(bar(7.0), format!("[{}]", "#".repeat(30)));
        assert_eq!(duration(Some(3725.0)), "1 h 02 min");
        assert_eq!(duration(Some(187.0)), "3 min 07 s");
        assert_eq!(duration(None), "-");
        assert_eq!(duration(Some(f64::NAN)), "-");
        let s = Snapshot {
            workers: vec![
                WorkerRow {
                    id: 1,
                    name: "a".into(),
                    alive: true,
                    ..Default::default()
                },
                WorkerRow {
                    id: 2,
                    name: "b".into(),
                    ..Default::default()
                },
            ],
            tables: vec![
                TableProgress {
                    tiles: vec![1, 2],
                    fraction: 0.25,
                    state: "building",
                    states_found: 8,
                    expected_states: 32,
                    layers: vec![1, 2, 5],
                    ..Default::default()
                },
                TableProgress {
                    index: 1,
                    tiles: vec![3, 4, 5, 6],
                    state: "waiting",
                    expected_states: 123_456,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let text = render(&s);
        assert!(text.contains("workers  0 alive of 2 seen"), "{text}");
        assert!(text.contains("  1  a  alive "), "{text}");
        assert!(text.contains(" silent "), "{text}");
        assert!(text.contains(" 25.0 %  building"), "{text}");
        assert!(
            text.contains("layers   table 1, states by depth: 1 2 5"),
            "{text}"
        );
        // The columns of the table rows line up whatever the widths of their numbers.
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("table")).collect();
        assert_eq!(rows.len(), 2, "{text}");
        for column in [" of ", "ETA"] {
            let at: Vec<_> = rows.iter().map(|r| r.find(column)).collect();
            assert!(
                at[0].is_some() && at[0] == at[1],
                "{column:?} misaligned:\n{text}"
            );
        }
    }
}
