//! Progress bars on a terminal: one for the set (tables written, states found against the
//! states the set will have, ETA) and one for the table being built (states found against
//! its states, layer, rate, ETA), redrawn in place on standard error.
//!
//! The single-machine `build` fills a [`View`] from its search; a distributed job (`serve`,
//! `build --workers N`) from its status samples ([`watch`], through the same
//! [`super::progress::Tracker`] as the dashboard). While bars are shown, log lines written through
//! [`LogWriter`] appear above them instead of tearing them. When standard error is not a
//! terminal there are no bars ([`SetBars::on_terminal`] gives `None`) and the log lines of the
//! build say how far it is.
//!
//! ```
//! use tilepdb_coordinator::observe::bars::{TableView, View};
//! let view = View {
//!     tables: 2,
//!     tables_written: 1,
//!     table_fractions: vec![(100, 1.0), (300, 0.5)],
//!     eta_seconds: None,
//!     table: Some(TableView { index: 1, states_found: 150, expected_states: 300, ..Default::default() }),
//! };
//! // 100 states of the set are written and half of the other 300 are found.
//! assert_eq!(view.set_fraction(), 250.0 / 400.0);
//! ```

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tilepdb_common::wire::proto::JobStatusResponse;

use super::http::Observed;
use super::progress::{Snapshot, Tracker};

/// Steps of a bar: a bar's position is its fraction in thousandths.
const STEPS: u64 = 1000;

/// The table being built, as its bar shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableView {
    /// Index of the table in the set (0-based).
    pub index: usize,
    /// The pattern's tiles, e.g. `{1,2,3}`.
    pub pattern: String,
    /// States found so far.
    pub states_found: u64,
    /// The states the table will have ([`super::progress::expected_states`]).
    pub expected_states: u64,
    /// Depth of the layer being expanded.
    pub depth: u32,
    /// States expanded per second (over the current layer, or the table so far).
    pub states_per_second: f64,
    /// Seconds until the table is written.
    pub eta_seconds: Option<f64>,
}

impl TableView {
    /// States found over the table's states, below 1 until the table is written (a minimized
    /// table's states are estimated from below).
    pub fn fraction(&self) -> f64 {
        if self.expected_states == 0 {
            return 0.0;
        }
        (self.states_found as f64 / self.expected_states as f64).min(0.999)
    }
}

/// What the bars show at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    /// Tables of the set.
    pub tables: usize,
    /// How many of them are written (or were already built).
    pub tables_written: usize,
    /// Each table's expected states and the fraction of them found (1 once written).
    pub table_fractions: Vec<(u64, f64)>,
    /// Seconds until the set is written.
    pub eta_seconds: Option<f64>,
    /// The table being built, if one is.
    pub table: Option<TableView>,
}

impl View {
    /// The view of a distributed job's snapshot.
    pub fn of_snapshot(s: &Snapshot) -> View {
        let table = s
            .tables
            .get(s.table)
            .filter(|t| t.state == "building")
            .map(|t| TableView {
                index: t.index,
                pattern: pattern_label(&t.tiles),
                states_found: t.states_found,
                expected_states: t.expected_states,
                depth: s.depth,
                // Until a rate over a layer is measured, the rate over the whole job.
                states_per_second: if s.layer_states_per_second > 0.0 {
                    s.layer_states_per_second
                } else {
                    s.job_states_per_second
                },
                eta_seconds: t.eta_seconds,
            });
        View {
            tables: s.tables.len(),
            tables_written: if s.done {
                s.tables.len()
            } else {
                s.tables_written
            },
            table_fractions: s
                .tables
                .iter()
                .map(|t| (t.expected_states, t.fraction))
                .collect(),
            eta_seconds: s.eta_seconds,
            table,
        }
    }

    /// States of the set found over the states it will have: each table weighted by its
    /// expected states.
    pub fn set_fraction(&self) -> f64 {
        let total: u64 = self.table_fractions.iter().map(|&(e, _)| e).sum();
        if total == 0 {
            return if self.tables > 0 && self.tables_written == self.tables {
                1.0
            } else {
                0.0
            };
        }
        let found: f64 = self
            .table_fractions
            .iter()
            .map(|&(e, f)| e as f64 * f)
            .sum();
        found / total as f64
    }

    /// States of the set found so far (written tables at their expected states) and the
    /// states it will have.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a table's states times a fraction in 0..=1, rounded: non-negative and at most its states"
    )]
    pub fn set_states(&self) -> (u64, u64) {
        let total = self.table_fractions.iter().map(|&(e, _)| e).sum();
        let found = self
            .table_fractions
            .iter()
            .map(|&(e, f)| (e as f64 * f).round() as u64)
            .sum();
        (found, total)
    }

    /// Whether every table is written.
    pub fn done(&self) -> bool {
        self.tables_written >= self.tables
    }
}

/// `{1,2,3}` for the tiles 1, 2, 3.
pub fn pattern_label<T: ToString>(tiles: &[T]) -> String {
    let tiles: Vec<String> = tiles.iter().map(T::to_string).collect();
    format!("{{{}}}", tiles.join(","))
}

/// A count in short form: 1234 -> `1.23 k`, `5_000_000` -> `5.00 M`.
fn short(n: f64) -> String {
    match n {
        n if n >= 1e9 => format!("{:.2} G", n / 1e9),
        n if n >= 1e6 => format!("{:.2} M", n / 1e6),
        n if n >= 1e4 => format!("{:.1} k", n / 1e3),
        n => format!("{n:.0}"),
    }
}

/// Seconds in words: `42 s`, `3 min 12 s`, `2 h 05 min`.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "seconds made non-negative and rounded; a duration beyond 2^64 s saturates"
)]
fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        s if s >= 3600 => format!("{} h {:02} min", s / 3600, s / 60 % 60),
        s if s >= 60 => format!("{} min {:02} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

fn eta(seconds: Option<f64>) -> String {
    seconds.map_or("ETA ?".into(), |s| format!("ETA {}", duration(s)))
}

/// The set bar's message.
pub fn set_message(view: &View) -> String {
    let (found, total) = view.set_states();
    let tail = if view.done() {
        "done".to_string()
    } else {
        eta(view.eta_seconds)
    };
    format!(
        "{}/{} tables, {}/{} states, {tail}",
        view.tables_written.min(view.tables),
        view.tables,
        short(found as f64),
        short(total as f64)
    )
}

/// The table bar's message.
pub fn table_message(t: &TableView) -> String {
    format!(
        "layer {}, {}/{} states, {} states/s, {}",
        t.depth,
        short(t.states_found as f64),
        short(t.expected_states as f64),
        short(t.states_per_second),
        eta(t.eta_seconds)
    )
}

/// The bars shown while logging goes through [`LogWriter`].
static SHOWN: Mutex<Option<MultiProgress>> = Mutex::new(None);

fn shown() -> std::sync::MutexGuard<'static, Option<MultiProgress>> {
    SHOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The two bars on standard error.
pub struct SetBars {
    multi: MultiProgress,
    set: ProgressBar,
    table: ProgressBar,
}

fn bar(label: &str) -> ProgressBar {
    // The message is cut to the terminal's width (a longer line would break the redraw).
    let template = format!("{label:<5} {{prefix:<20}} [{{bar:24}}] {{percent:>3}}% {{wide_msg}}");
    ProgressBar::new(STEPS).with_style(
        ProgressStyle::with_template(&template)
            .expect("a valid template")
            .progress_chars("=> "),
    )
}

impl SetBars {
    /// Bars on standard error if it is a terminal, else `None`.
    pub fn on_terminal() -> Option<SetBars> {
        std::io::stderr().is_terminal().then(SetBars::new)
    }

    fn new() -> SetBars {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
        let set = multi.add(bar("set"));
        let table = multi.add(bar("table"));
        *shown() = Some(multi.clone());
        SetBars { multi, set, table }
    }

    /// Redraws the bars for `view`.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a fraction in 0..=1 times the bar's steps: non-negative and at most the steps"
    )]
    pub fn draw(&self, view: &View) {
        let steps = |f: f64| ((f * STEPS as f64) as u64).min(STEPS);
        let set_steps = if view.done() {
            STEPS
        } else {
            steps(view.set_fraction()).min(STEPS - 1)
        };
        self.set.set_prefix(format!("{} tables", view.tables));
        self.set.set_position(set_steps);
        self.set.set_message(set_message(view));
        match &view.table {
            Some(t) => {
                self.table
                    .set_prefix(format!("{}/{} {}", t.index + 1, view.tables, t.pattern));
                self.table.set_position(steps(t.fraction()));
                self.table.set_message(table_message(t));
            }
            None if view.done() => {
                self.table.set_position(STEPS);
                self.table.set_message("every table written");
            }
            None => {}
        }
    }

    /// Draws `view` one last time and leaves the bars on the screen (at 100 % if the set is
    /// done); log lines go straight to standard error again.
    pub fn finish(self, view: &View) {
        self.draw(view);
        self.set.finish();
        self.table.finish();
        *shown() = None;
    }

    /// Runs `f` (which prints) with the bars hidden, and redraws them.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.multi.suspend(f)
    }
}

impl Drop for SetBars {
    fn drop(&mut self) {
        let mut shown = shown();
        if shown.is_some() {
            // Not finished (an error): the bars stay as they were, the logs go on below.
            self.set.abandon();
            self.table.abandon();
            *shown = None;
        }
    }
}

/// Where log lines go: standard error, above the bars while bars are shown.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let multi = shown().clone();
        match multi {
            Some(multi) => multi.suspend(|| std::io::stderr().write_all(buf))?,
            None => std::io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> LogWriter {
        LogWriter
    }
}

/// How often [`watch`] samples the job.
const SAMPLE: Duration = Duration::from_millis(250);

/// Bars of a distributed job, drawn from its status until the job ends (or the value is
/// dropped); `None` when standard error is not a terminal (the driver's log lines then say
/// how far the job is).
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Shows `job`'s progress in bars on a terminal, sampled from its status; the job's driver
/// then logs its layers and tables at debug level ([`Observed::progress_drawn`]), as a
/// single-machine build with bars does not log them.
pub fn watch(job: Arc<dyn Observed>) -> Option<Watch> {
    let bars = SetBars::on_terminal()?;
    // The bars own the terminal: the driver's layer and table log lines go to debug level.
    job.progress_drawn();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::Builder::new()
        .name("tilepdb-bars".into())
        .spawn(move || {
            let mut tracker = Tracker::default();
            loop {
                let status = JobStatusResponse::from(job.status());
                let view = View::of_snapshot(&tracker.update(&status));
                if status.done {
                    bars.finish(&view);
                    return;
                }
                if status.phase == "failed" || stopped.load(Ordering::Relaxed) {
                    // Dropped unfinished: left as they are.
                    return;
                }
                bars.draw(&view);
                std::thread::sleep(SAMPLE);
            }
        })
        .ok()?;
    Some(Watch {
        stop,
        thread: Some(thread),
    })
}

impl Watch {
    /// Waits until the bars are drawn for the last time (the job is done or failed).
    pub fn finish(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.store(true, Ordering::Relaxed);
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_weigh_tables_by_their_states() {
        let mut view = View {
            tables: 3,
            tables_written: 1,
            table_fractions: vec![(100, 1.0), (300, 0.5), (600, 0.0)],
            ..Default::default()
        };
        assert_eq!(view.set_fraction(), 0.25);
        assert_eq!(view.set_states(), (250, 1000));
        assert!(set_message(&view).starts_with("1/3 tables, 250/1000 states, ETA ?"));
        view.tables_written = 3;
        view.table_fractions = vec![(100, 1.0), (300, 1.0), (600, 1.0)];
        assert_eq!(view.set_fraction(), 1.0);
        assert!(set_message(&view).ends_with("done"));
    }

    #[test]
    fn a_table_is_not_shown_done_before_it_is_written() {
        let t = TableView {
            states_found: 2000,
            expected_states: 1000,
            ..Default::default()
        };
        assert_eq!(t.fraction(), 0.999);
    }

    #[test]
    fn short_counts_and_durations() {
        assert_eq!(short(999.0), "999");
        assert_eq!(short(12_345.0), "12.3 k");
        assert_eq!(short(518_918_400.0), "518.92 M");
        assert_eq!(duration(42.4), "42 s");
        assert_eq!(duration(192.0), "3 min 12 s");
        assert_eq!(duration(7500.0), "2 h 05 min");
    }
}
