//! What a sharded job shows of itself: the same status as a coordinator-held job's, for the
//! `status` command (the `JobStatus` call), the dashboard and the metrics
//! ([`crate::observe::http::Observed`]). The builder records each step as it gives it; the
//! shards' membership comes from the [`Control`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use tilepdb_common::StateSpace;

use super::control::Control;
use crate::cluster::job::Phase;
use crate::cluster::progress::{JobProgress, WorkerProgress};
use crate::engine::{SearchProgress, SetSpec};
use crate::observe::http::Observed;
use crate::observe::progress::expected_states;
use crate::output::table_file_name;
use crate::report::peak_rss_bytes;

/// What the shards are doing, as the status names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shown {
    /// Waiting for every shard to join.
    #[default]
    Starting,
    /// Expanding a layer (or opening the table).
    Expanding,
    /// Checkpointing and finishing a layer.
    FinishingLayer,
    /// Writing the table's file from the shards' values, and proving it.
    WritingTable,
}

impl Shown {
    /// The phase a coordinator-held job names the same.
    fn phase(self) -> Phase {
        match self {
            Shown::Starting => Phase::Starting,
            Shown::Expanding => Phase::Expanding,
            Shown::FinishingLayer => Phase::FinishingLayer,
            Shown::WritingTable => Phase::WritingTable,
        }
    }
}

/// The tables as the builder last recorded them.
#[derive(Debug, Default)]
struct Seen {
    shown: Shown,
    table: usize,
    depth: u32,
    layer_states: u64,
    states_found: u64,
    /// States expanded in the tables before this one, and in this one.
    expanded_before: u64,
    expanded: u64,
    tables_written: usize,
    /// States of each layer of each table, by depth.
    layers: Vec<Vec<u64>>,
    /// Compressed bytes of the values read from the shards.
    values_bytes: u64,
}

/// The status of one sharded job.
pub struct ShardedStatus {
    control: Arc<Control>,
    spec: SetSpec,
    spaces: Vec<StateSpace>,
    /// The set's directory, once the build has begun.
    set_dir: OnceLock<PathBuf>,
    started: Instant,
    seen: Mutex<Seen>,
    /// The progress is drawn on a terminal: layers are logged at debug level.
    drawn: AtomicBool,
}

impl ShardedStatus {
    /// The status of the job of `control`: the set `spec` with its `spaces`.
    pub fn new(control: Arc<Control>, spec: SetSpec, spaces: Vec<StateSpace>) -> ShardedStatus {
        ShardedStatus {
            control,
            spec,
            spaces,
            set_dir: OnceLock::new(),
            started: Instant::now(),
            seen: Mutex::default(),
            drawn: AtomicBool::new(false),
        }
    }

    /// The set is written to `dir` (the first directory given stays).
    pub fn set_dir(&self, dir: PathBuf) {
        let _ = self.set_dir.set(dir);
    }

    fn lock(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Table `table` stands at `progress`, its shards doing `shown`.
    pub fn searching(&self, table: usize, progress: &SearchProgress, shown: Shown) {
        let mut seen = self.lock();
        seen.shown = shown;
        seen.table = table;
        seen.depth = progress.next_depth;
        seen.layer_states = progress.layer_states;
        seen.states_found = progress.states_found;
        seen.expanded = progress.expanded;
        if seen.layers.len() <= table {
            seen.layers.resize(table + 1, Vec::new());
        }
        seen.layers[table].clone_from(&progress.layer_counts);
    }

    /// Whether the progress is drawn on a terminal ([`Observed::progress_drawn`]).
    pub fn progress_is_drawn(&self) -> bool {
        self.drawn.load(Ordering::Relaxed)
    }

    /// `bytes` more of values were read from the shards.
    pub fn values_read(&self, bytes: u64) {
        self.lock().values_bytes += bytes;
    }

    /// Table `table` is in the set's directory (written or reused).
    pub fn written(&self, table: usize) {
        let mut seen = self.lock();
        seen.tables_written = seen.tables_written.max(table + 1);
        seen.expanded_before += std::mem::take(&mut seen.expanded);
    }

    /// The job's status now.
    pub fn status(&self) -> JobProgress {
        let seen = self.lock();
        let outcome = self.control.outcome();
        let (reported, shards) = self.control.step_reports();
        let members = self.control.members();
        let done = matches!(outcome, Some(Ok(())));
        JobProgress {
            job_id: self.control.job_id.clone(),
            spec: self.spec.clone(),
            phase: match &outcome {
                None => seen.shown.phase(),
                Some(Ok(())) => Phase::Done,
                Some(Err(_)) => Phase::Failed,
            },
            table: seen.table,
            tables: self.spaces.len(),
            depth: seen.depth,
            layer_states: seen.layer_states,
            states_found: seen.states_found,
            // A step of every shard is the layer's task.
            tasks_done: usize::try_from(reported).unwrap_or(usize::MAX),
            tasks_total: usize::try_from(shards).unwrap_or(usize::MAX),
            workers_alive: members.iter().filter(|m| m.alive).count(),
            states_expanded: seen.expanded_before + seen.expanded,
            bytes_received: seen.values_bytes,
            bytes_sent: 0,
            elapsed: self.started.elapsed(),
            peak_rss_bytes: peak_rss_bytes(),
            tables_written: if done {
                self.spaces.len()
            } else {
                seen.tables_written
            },
            table_states: self.spaces.iter().map(expected_states).collect(),
            workers: members
                .iter()
                .map(|m| WorkerProgress {
                    id: u64::from(m.shard),
                    name: m.name.clone(),
                    silent: m.silent,
                    tasks_held: 0,
                    alive: m.alive,
                })
                .collect(),
            results_accepted: 0,
            results_dropped: 0,
            leases_expired: 0,
            results_refused: std::collections::BTreeMap::new(),
            // Every table's (none for a table not begun).
            table_layers: (0..self.spaces.len())
                .map(|index| seen.layers.get(index).cloned().unwrap_or_default())
                .collect(),
        }
    }
}

impl Observed for ShardedStatus {
    fn status(&self) -> JobProgress {
        ShardedStatus::status(self)
    }

    fn progress_drawn(&self) {
        self.drawn.store(true, Ordering::Relaxed);
    }

    fn table_file(&self, index: usize) -> Option<PathBuf> {
        Some(
            self.set_dir
                .get()?
                .join(table_file_name(self.spaces.get(index)?)),
        )
    }
}
