//! A job's progress from successive status samples: each table's states found against the
//! states it will have, the states of each layer (as the job recorded them), the rate over
//! the current layer, and estimates of when each table and the set will end.
//!
//! The same [`Tracker`] runs inside the coordinator (for the dashboard and the metrics) and in
//! `tilepdb-coordinator status --watch` (on the samples it asks for over gRPC), so both show
//! the same figures.
//!
//! ```
//! use tilepdb_common::wire::proto::JobStatusResponse;
//! use tilepdb_coordinator::observe::progress::Tracker;
//!
//! let mut tracker = Tracker::default();
//! let status = JobStatusResponse { tables: 1, table_states: vec![100], states_found: 25, ..Default::default() };
//! let snapshot = tracker.update(&status);
//! assert_eq!(snapshot.tables[0].fraction, 0.25);
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use serde::Serialize;
use tilepdb_common::wire::proto::{JobSpec, JobStatusResponse};
use tilepdb_common::{BlankRule, StateSpace};

/// States a table's search reaches when done: the searches run on the region index, so one
/// state per (placement, region of the blank), counted by the region index (its placements if
/// that cannot be made), or one per placement when the blank is ignored. The search reaches
/// all of them unless the pattern holds every tile.
pub fn expected_states(space: &StateSpace) -> u64 {
    match space.rule() {
        BlankRule::Ignored => space.placements(),
        _ => region_states(space),
    }
}

/// [`StateSpace::region_search_states`], counted once per board and pattern size (a status
/// sample asks for it for every table, and the count floods every tile set).
fn region_states(space: &StateSpace) -> u64 {
    static COUNTED: Mutex<BTreeMap<(usize, usize, usize), u64>> = Mutex::new(BTreeMap::new());
    let board = space.board();
    let key = (board.width(), board.height(), space.pattern().tiles().len());
    let mut counted = COUNTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *counted.entry(key).or_insert_with(|| {
        space
            .region_search_states()
            .unwrap_or_else(|_| space.placements())
    })
}

/// The progress of one table of the job.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TableProgress {
    /// Index of the table in the job (0-based).
    pub index: usize,
    /// The pattern's tiles.
    pub tiles: Vec<u32>,
    /// `waiting`, `building` or `written`.
    pub state: &'static str,
    /// States found so far (every state, once written).
    pub states_found: u64,
    /// States the table will have ([`expected_states`]).
    pub expected_states: u64,
    /// `states_found / expected_states`, at most 1; below 1 until the table is written.
    pub fraction: f64,
    /// States of each layer so far, by depth, as the job recorded them (from a coordinator
    /// that does not record them: as sampled, 0 for a layer that began and ended between two
    /// samples).
    pub layers: Vec<u64>,
    /// Seconds until the table is written, at the recent rate of states found.
    pub eta_seconds: Option<f64>,
    /// Entries of each value, once the table is written and its header read.
    pub histogram: Option<Vec<u64>>,
}

/// One worker, as the coordinator sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WorkerRow {
    /// The worker's id.
    pub id: u64,
    /// The name the worker gave.
    pub name: String,
    /// Seconds since its last heartbeat.
    pub seconds_since_heartbeat: f64,
    /// Tasks it holds.
    pub tasks_held: u32,
    /// Whether it is still counted on.
    pub alive: bool,
}

/// Everything the dashboard, the metrics and `status --watch` show, at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// The job's id.
    pub job_id: String,
    /// The partition's name.
    pub partition: String,
    /// The board.
    pub board: String,
    /// The goal.
    pub goal: String,
    /// The blank rule.
    pub blank_rule: String,
    /// How the tables' values are stored (empty from a coordinator that does not say).
    pub encoding: String,
    /// The job's phase.
    pub phase: String,
    /// Whether every table is written.
    pub done: bool,
    /// Seconds since the job started.
    pub elapsed_seconds: f64,
    /// Index of the table being built.
    pub table: usize,
    /// Tables written so far.
    pub tables_written: usize,
    /// Depth of the layer being expanded, its states, and its tasks.
    pub depth: u32,
    /// States of the layer being expanded.
    pub layer_states: u64,
    /// Tasks of the layer done.
    pub tasks_done: u32,
    /// Tasks of the layer.
    pub tasks_total: u32,
    /// States expanded over the whole job.
    pub states_expanded: u64,
    /// States expanded per second over the current layer (for its first second, since the
    /// layer sampled before it began).
    pub layer_states_per_second: f64,
    /// States expanded per second over the whole job.
    pub job_states_per_second: f64,
    /// Bytes received from workers.
    pub bytes_received: u64,
    /// Bytes sent to workers.
    pub bytes_sent: u64,
    /// Peak resident memory of the coordinator.
    pub peak_rss_bytes: u64,
    /// Results accepted.
    pub results_accepted: u64,
    /// Results dropped (late or duplicate).
    pub results_dropped: u64,
    /// Leases that expired.
    pub leases_expired: u64,
    /// Results refused, by reason.
    pub results_refused: BTreeMap<String, u64>,
    /// Workers counted on.
    pub workers_alive: u32,
    /// Every worker registered.
    pub workers: Vec<WorkerRow>,
    /// The progress of each table.
    pub tables: Vec<TableProgress>,
    /// Seconds until every table is written, at the recent rate of states found.
    pub eta_seconds: Option<f64>,
}

/// How far back the rate of states found is measured, in seconds.
const RATE_WINDOW: f64 = 20.0;

/// Folds successive status samples of one job into [`Snapshot`]s.
#[derive(Debug, Default)]
pub struct Tracker {
    /// States of each layer of each table, by depth.
    layers: Vec<Vec<u64>>,
    histograms: Vec<Option<Vec<u64>>>,
    /// The layer being expanded (table, depth), when it was first seen (elapsed seconds)
    /// and the states expanded by then.
    layer: Option<(u32, u32, f64, u64)>,
    layer_rate: f64,
    /// Recent samples (elapsed seconds, table, states found) for the rate of states found.
    recent: VecDeque<(f64, u32, u64)>,
}

impl Tracker {
    /// Records that table `index` was written with this histogram (entries of each value).
    pub fn set_histogram(&mut self, index: usize, histogram: Vec<u64>) {
        if self.histograms.len() <= index {
            self.histograms.resize(index + 1, None);
        }
        self.histograms[index] = Some(histogram);
    }

    /// Whether table `index`'s histogram is known.
    pub fn has_histogram(&self, index: usize) -> bool {
        self.histograms.get(index).is_some_and(Option::is_some)
    }

    /// Takes in one status sample; the snapshot it gives.
    pub fn update(&mut self, s: &JobStatusResponse) -> Snapshot {
        self.record_layers(s);
        self.measure_layer_rate(s);
        let found_rate = self.measure_found_rate(s);
        let spec = s.job.clone().unwrap_or_default();
        let tables: Vec<TableProgress> = (0..s.tables as usize)
            .map(|index| self.table_progress(s, &spec, index, found_rate))
            .collect();
        let remaining: u64 = tables
            .iter()
            .map(|t| {
                if t.state == "written" {
                    0
                } else {
                    t.expected_states.saturating_sub(t.states_found)
                }
            })
            .sum();
        let eta_seconds = if s.done {
            Some(0.0)
        } else {
            found_rate.map(|r| remaining as f64 / r)
        };
        Snapshot {
            tables,
            eta_seconds,
            layer_states_per_second: self.layer_rate,
            ..Snapshot::of_status(s, &spec)
        }
    }

    /// Keeps the states of each layer of each table: the job's own records when it sends
    /// them (every layer, however fast); from a coordinator that does not, the layer of each
    /// sample (a layer that began and ended between two samples stays 0).
    fn record_layers(&mut self, s: &JobStatusResponse) {
        let tables = s.tables as usize;
        if self.layers.len() < tables {
            self.layers.resize(tables, Vec::new());
        }
        if !s.table_layers.is_empty() {
            for (layers, recorded) in self.layers.iter_mut().zip(&s.table_layers) {
                // A table written before the coordinator restarted has no record there:
                // what was seen of it stays.
                if !recorded.states.is_empty() {
                    layers.clone_from(&recorded.states);
                }
            }
            return;
        }
        if !s.done && (s.table as usize) < tables {
            let layers = &mut self.layers[s.table as usize];
            let depth = s.depth as usize;
            if layers.len() <= depth {
                layers.resize(depth + 1, 0);
            }
            layers[depth] = s.layer_states;
        }
    }

    /// The rate of states expanded over the current layer once it has lasted a second; until
    /// then the rate since the layer seen before it began (layers shorter than the time
    /// between two samples are measured together).
    fn measure_layer_rate(&mut self, s: &JobStatusResponse) {
        let key = (s.table, s.depth);
        let now = s.elapsed_seconds;
        match self.layer {
            Some((t, d, since, expanded_then)) if (t, d) == key => {
                let dt = now - since;
                if dt >= 1.0 {
                    self.layer_rate = s.states_expanded.saturating_sub(expanded_then) as f64 / dt;
                }
            }
            previous => {
                if let Some((_, _, since, expanded_then)) = previous {
                    let dt = now - since;
                    if dt > 0.0 && s.states_expanded > expanded_then {
                        self.layer_rate = (s.states_expanded - expanded_then) as f64 / dt;
                    }
                }
                self.layer = Some((key.0, key.1, now, s.states_expanded));
            }
        }
    }

    /// The rate of states found over the recent samples of the table being built, once
    /// they span a second and found some.
    fn measure_found_rate(&mut self, s: &JobStatusResponse) -> Option<f64> {
        let now = s.elapsed_seconds;
        self.recent
            .retain(|&(t, table, _)| table == s.table && now - t <= RATE_WINDOW && t <= now);
        self.recent.push_back((now, s.table, s.states_found));
        match (self.recent.front(), self.recent.back()) {
            (Some(&(t0, _, f0)), Some(&(t1, _, f1))) if t1 - t0 >= 1.0 && f1 > f0 => {
                Some((f1 - f0) as f64 / (t1 - t0))
            }
            _ => None,
        }
    }

    /// The progress of table `index`: written, building (with its estimate at `found_rate`)
    /// or waiting.
    fn table_progress(
        &self,
        s: &JobStatusResponse,
        spec: &JobSpec,
        index: usize,
        found_rate: Option<f64>,
    ) -> TableProgress {
        let expected = s.table_states.get(index).copied().unwrap_or(0);
        let written = index < s.tables_written as usize || s.done;
        let current = index == s.table as usize && !written;
        let layers = self.layers.get(index).cloned().unwrap_or_default();
        let (state, found) = if written {
            ("written", layers.iter().sum::<u64>().max(expected))
        } else if current {
            ("building", s.states_found)
        } else {
            ("waiting", 0)
        };
        let fraction = if written {
            1.0
        } else if expected == 0 {
            0.0
        } else {
            (found as f64 / expected as f64).min(0.999)
        };
        let eta_seconds = if written {
            Some(0.0)
        } else if current {
            found_rate.map(|r| expected.saturating_sub(found) as f64 / r)
        } else {
            None
        };
        TableProgress {
            index,
            tiles: spec
                .patterns
                .get(index)
                .map(|p| p.tiles.clone())
                .unwrap_or_default(),
            state,
            states_found: found,
            expected_states: expected,
            fraction,
            layers,
            eta_seconds,
            histogram: self.histograms.get(index).cloned().flatten(),
        }
    }
}

impl Snapshot {
    /// The figures a status sample gives as they are (no table, rate or estimate).
    fn of_status(s: &JobStatusResponse, spec: &JobSpec) -> Snapshot {
        Snapshot {
            job_id: s.job_id.clone(),
            partition: spec.name.clone(),
            board: spec.board.clone(),
            goal: spec.goal.clone(),
            blank_rule: spec.blank_rule.clone(),
            encoding: s.encoding.clone(),
            phase: s.phase.clone(),
            done: s.done,
            elapsed_seconds: s.elapsed_seconds,
            table: s.table as usize,
            tables_written: s.tables_written as usize,
            depth: s.depth,
            layer_states: s.layer_states,
            tasks_done: s.tasks_done,
            tasks_total: s.tasks_total,
            states_expanded: s.states_expanded,
            layer_states_per_second: 0.0,
            job_states_per_second: s.states_per_second,
            bytes_received: s.bytes_received,
            bytes_sent: s.bytes_sent,
            peak_rss_bytes: s.peak_rss_bytes,
            results_accepted: s.results_accepted,
            results_dropped: s.results_dropped,
            leases_expired: s.leases_expired,
            results_refused: s
                .results_refused
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            workers_alive: s.workers_alive,
            workers: s
                .workers
                .iter()
                .map(|w| WorkerRow {
                    id: w.id,
                    name: w.name.clone(),
                    seconds_since_heartbeat: w.seconds_since_heartbeat,
                    tasks_held: w.tasks_held,
                    alive: w.alive,
                })
                .collect(),
            tables: Vec::new(),
            eta_seconds: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::wire::proto::{LayerCounts, PatternSpec};

    fn sample(
        elapsed: f64,
        table: u32,
        depth: u32,
        layer: u64,
        found: u64,
        expanded: u64,
    ) -> JobStatusResponse {
        JobStatusResponse {
            job: Some(JobSpec {
                name: "test".into(),
                patterns: vec![
                    PatternSpec { tiles: vec![1, 2] },
                    PatternSpec { tiles: vec![3] },
                ],
                ..Default::default()
            }),
            tables: 2,
            table_states: vec![1000, 500],
            table,
            depth,
            layer_states: layer,
            states_found: found,
            states_expanded: expanded,
            tables_written: table,
            elapsed_seconds: elapsed,
            ..Default::default()
        }
    }

    #[test]
    fn layers_rates_and_estimates_follow_the_samples() {
        let mut t = Tracker::default();
        let s = t.update(&sample(0.0, 0, 0, 1, 3, 0));
        assert_eq!(s.tables[0].state, "building");
        assert_eq!(s.tables[1].state, "waiting");
        assert_eq!(s.eta_seconds, None, "no rate yet");
        t.update(&sample(1.0, 0, 1, 2, 10, 1));
        // Depth 2 begins at 2 s with 3 states expanded; 4 s later 403 are.
        t.update(&sample(2.0, 0, 2, 7, 110, 3));
        let s = t.update(&sample(6.0, 0, 2, 7, 510, 403));
        assert_eq!(s.tables[0].layers, vec![1, 2, 7]);
        assert_eq!(s.layer_states_per_second, 100.0);
        // Found went from 3 to 510 in 6 s: 84.5/s; 490 left of table 0, 500 of table 1.
        let rate = (510.0 - 3.0) / 6.0;
        assert_eq!(s.tables[0].fraction, 0.51);
        assert_eq!(s.tables[0].eta_seconds, Some(490.0 / rate));
        assert_eq!(s.eta_seconds, Some(990.0 / rate));
        // Table 0 written: it counts in full, the rate starts again on table 1.
        let s = t.update(&sample(7.0, 1, 0, 1, 1, 404));
        assert_eq!(s.tables[0].state, "written");
        assert_eq!(s.tables[0].fraction, 1.0);
        assert_eq!(s.tables[0].eta_seconds, Some(0.0));
        assert_eq!(s.tables[1].state, "building");
        assert_eq!(s.tables[1].tiles, vec![3]);
        assert_eq!(s.eta_seconds, None);
    }

    #[test]
    fn a_minimized_table_never_shows_done_before_it_is_written() {
        let mut t = Tracker::default();
        let s = t.update(&sample(0.0, 0, 5, 10, 1500, 0));
        assert_eq!(s.tables[0].fraction, 0.999);
        let mut done = sample(1.0, 1, 0, 0, 0, 0);
        done.done = true;
        done.tables_written = 2;
        t.set_histogram(1, vec![1, 2]);
        let s = t.update(&done);
        assert!(
            s.tables
                .iter()
                .all(|p| p.fraction == 1.0 && p.state == "written")
        );
        assert_eq!(s.tables[1].histogram, Some(vec![1, 2]));
        assert_eq!(s.eta_seconds, Some(0.0));
    }

    #[test]
    fn the_jobs_layer_records_win_over_samples() {
        let mut t = Tracker::default();
        t.update(&sample(0.0, 0, 0, 1, 1, 0));
        // Layers 1 to 4 began and ended between two samples: the job recorded them.
        let mut later = sample(1.0, 0, 5, 9, 40, 30);
        later.table_layers = vec![
            LayerCounts {
                states: vec![1, 2, 4, 8, 16, 9],
            },
            LayerCounts::default(),
        ];
        later.encoding = "nibble".into();
        let s = t.update(&later);
        assert_eq!(s.tables[0].layers, vec![1, 2, 4, 8, 16, 9]);
        assert!(s.tables[1].layers.is_empty());
        assert_eq!(s.encoding, "nibble");
        // Without records (an older coordinator) the samples are all there is.
        let mut t = Tracker::default();
        t.update(&sample(0.0, 0, 0, 1, 1, 0));
        let s = t.update(&sample(1.0, 0, 3, 9, 40, 30));
        assert_eq!(s.tables[0].layers, vec![1, 0, 0, 9]);
    }
}
