//! The progress of a single-machine `build`: on a terminal, a bar for the set and one for the
//! table being built ([`tilepdb_coordinator::observe::bars`]); otherwise a log line per layer.

use std::ops::Range;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tilepdb_common::StateSpace;
use tilepdb_common::region_expand::ExpandStats;
use tilepdb_coordinator::build::BuildObserver;
use tilepdb_coordinator::observe::bars::{SetBars, TableView, View, pattern_label};
use tilepdb_coordinator::observe::progress::expected_states;

/// The set's progress, shared by the observers of its tables.
pub struct SetProgress {
    bars: Option<SetBars>,
    state: Mutex<SetState>,
}

struct SetState {
    view: View,
    /// When the first table of this run began building, and the states found by the tables
    /// built since (for the set's ETA).
    building_since: Option<Instant>,
    found_in_built_tables: u64,
}

impl SetProgress {
    /// The progress of a set of these tables (bars only if standard error is a terminal).
    pub fn new(spaces: &[StateSpace]) -> SetProgress {
        let view = View {
            tables: spaces.len(),
            tables_written: 0,
            table_fractions: spaces.iter().map(|s| (expected_states(s), 0.0)).collect(),
            eta_seconds: None,
            table: None,
        };
        let bars = SetBars::on_terminal();
        if let Some(bars) = &bars {
            bars.draw(&view);
        }
        SetProgress {
            bars,
            state: Mutex::new(SetState {
                view,
                building_since: None,
                found_in_built_tables: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SetState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The observer of table `index`'s search.
    pub fn table<'a>(&'a self, index: usize, space: &StateSpace) -> TableProgress<'a> {
        self.lock().building_since.get_or_insert_with(Instant::now);
        let now = Instant::now();
        TableProgress {
            set: self,
            index,
            pattern: pattern_label(space.pattern().tiles()),
            expected: expected_states(space),
            state: Mutex::new(TableState {
                started: now,
                depth: 0,
                found_before_layer: 0,
                layer_states: 1,
                tasks: 0,
                tasks_done: 0,
                rate: 0.0,
            }),
        }
    }

    /// Table `index` is written (or was already built).
    pub fn written(&self, index: usize, built: bool) {
        let mut st = self.lock();
        if let Some(t) = st.view.table_fractions.get_mut(index) {
            t.1 = 1.0;
        }
        if built {
            st.found_in_built_tables += st.view.table_fractions.get(index).map_or(0, |t| t.0);
        }
        st.view.tables_written += 1;
        st.view.table = None;
        st.view.eta_seconds = None;
        self.draw(&st.view);
    }

    /// Prints `line` on standard output, above the bars.
    pub fn println(&self, line: &str) {
        match &self.bars {
            Some(bars) => bars.suspend(|| tilepdb_common::outln!("{line}")),
            None => tilepdb_common::outln!("{line}"),
        }
    }

    /// Leaves the bars at the end of the set (100 % once every table is written).
    pub fn finish(self) {
        let view = self.lock().view.clone();
        if let Some(bars) = self.bars {
            bars.finish(&view);
        }
    }

    fn draw(&self, view: &View) {
        if let Some(bars) = &self.bars {
            bars.draw(view);
        }
    }

    /// Shows the table's progress `table` (and the set's that follows from it).
    fn update(&self, table: TableView) {
        let mut st = self.lock();
        let fraction = table.fraction();
        if let Some(t) = st.view.table_fractions.get_mut(table.index) {
            t.1 = fraction;
        }
        let (found, total) = st.view.set_states();
        let found_this_run =
            st.found_in_built_tables + table.states_found.min(table.expected_states);
        st.view.eta_seconds = st.building_since.and_then(|since| {
            let secs = since.elapsed().as_secs_f64();
            (secs >= 1.0 && found_this_run > 0)
                .then(|| total.saturating_sub(found) as f64 / (found_this_run as f64 / secs))
        });
        st.view.table = Some(table);
        self.draw(&st.view);
    }
}

/// Observes the search of one table of the set.
pub struct TableProgress<'a> {
    set: &'a SetProgress,
    index: usize,
    pattern: String,
    expected: u64,
    state: Mutex<TableState>,
}

struct TableState {
    started: Instant,
    depth: u32,
    /// States of the layers before the current one, and of the current one.
    found_before_layer: u64,
    layer_states: u64,
    tasks: usize,
    tasks_done: usize,
    /// States expanded per second over the table so far.
    rate: f64,
}

impl TableProgress<'_> {
    fn lock(&self) -> MutexGuard<'_, TableState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn show(&self, st: &TableState) {
        if self.set.bars.is_none() {
            return;
        }
        let found = st.found_before_layer + st.layer_states;
        let secs = st.started.elapsed().as_secs_f64();
        let eta_seconds = (secs >= 1.0 && found > 0)
            .then(|| self.expected.saturating_sub(found) as f64 / (found as f64 / secs));
        self.set.update(TableView {
            index: self.index,
            pattern: self.pattern.clone(),
            states_found: found,
            expected_states: self.expected,
            depth: st.depth,
            states_per_second: st.rate,
            eta_seconds,
        });
    }
}

impl BuildObserver for TableProgress<'_> {
    fn layer_started(&self, depth: u32, states: u64, tasks: usize) {
        let mut st = self.lock();
        if depth > st.depth {
            st.found_before_layer += st.layer_states;
        }
        st.depth = depth;
        st.layer_states = states;
        st.tasks = tasks;
        st.tasks_done = 0;
        self.show(&st);
        tracing::debug!(table = self.index, pattern = %self.pattern, depth, states, tasks, "layer started");
    }

    fn task_finished(&self, _units: &Range<u64>) {
        let mut st = self.lock();
        st.tasks_done += 1;
        // States expanded per second over the table so far (the layers before this one, and
        // this one's share of tasks done).
        let secs = st.started.elapsed().as_secs_f64();
        if secs > 0.0 && st.tasks > 0 {
            let expanded = st.found_before_layer as f64
                + st.layer_states as f64 * st.tasks_done as f64 / st.tasks as f64;
            st.rate = expanded / secs;
        }
        self.show(&st);
    }

    fn layer_finished(&self, depth: u32, added: u64, stats: ExpandStats) {
        if self.set.bars.is_none() {
            tracing::info!(
                table = self.index,
                pattern = %self.pattern,
                depth,
                expanded = stats.expanded,
                next_layer = added,
                "layer done"
            );
        }
    }
}
