//! What a sharded job shows of itself: the same status as a coordinator-held job's, for the
//! `status` command (the `JobStatus` call), the dashboard and the metrics
//! ([`crate::observe::http::Observed`]). The builder records each step as it gives it; the
//! shards' membership comes from the [`Control`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use tilepdb_common::StateSpace;
use tilepdb_common::wire::proto::{JobSpec, JobStatusResponse, LayerCounts, WorkerStatus};

use super::control::Control;
use crate::engine::SearchProgress;
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
    /// The phase's name, as a coordinator-held job names it.
    fn name(self) -> &'static str {
        match self {
            Shown::Starting => "starting",
            Shown::Expanding => "expanding",
            Shown::FinishingLayer => "finishing layer",
            Shown::WritingTable => "writing table",
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
    job: JobSpec,
    encoding: String,
    spaces: Vec<StateSpace>,
    /// The set's directory, once the build has begun.
    set_dir: OnceLock<PathBuf>,
    started: Instant,
    seen: Mutex<Seen>,
    /// The progress is drawn on a terminal: layers are logged at debug level.
    drawn: AtomicBool,
}

impl ShardedStatus {
    /// The status of the job of `control`: `job` with its `spaces`, written in `encoding`.
    pub fn new(
        control: Arc<Control>,
        job: JobSpec,
        encoding: String,
        spaces: Vec<StateSpace>,
    ) -> ShardedStatus {
        ShardedStatus {
            control,
            job,
            encoding,
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
    #[expect(
        clippy::cast_precision_loss,
        reason = "a rate: states below 2^53 are exact, and a rate needs no more"
    )]
    pub fn status(&self) -> JobStatusResponse {
        let seen = self.lock();
        let elapsed = self.started.elapsed().as_secs_f64();
        let expanded = seen.expanded_before + seen.expanded;
        let outcome = self.control.outcome();
        let (reported, shards) = self.control.step_reports();
        let members = self.control.members();
        let u32_of = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        JobStatusResponse {
            job_id: self.control.job_id.clone(),
            job: Some(self.job.clone()),
            table: u32_of(seen.table),
            tables: u32_of(self.spaces.len()),
            depth: seen.depth,
            layer_states: seen.layer_states,
            states_found: seen.states_found,
            // A step of every shard is the layer's task.
            tasks_done: reported,
            tasks_total: shards,
            workers_alive: u32_of(members.iter().filter(|m| m.alive).count()),
            states_per_second: if elapsed > 0.0 {
                expanded as f64 / elapsed
            } else {
                0.0
            },
            states_expanded: expanded,
            bytes_received: seen.values_bytes,
            bytes_sent: 0,
            elapsed_seconds: elapsed,
            phase: match &outcome {
                None => seen.shown.name(),
                Some(Ok(())) => "done",
                Some(Err(_)) => "failed",
            }
            .to_string(),
            done: matches!(outcome, Some(Ok(()))),
            peak_rss_bytes: peak_rss_bytes().unwrap_or(0),
            tables_written: u32_of(if matches!(outcome, Some(Ok(()))) {
                self.spaces.len()
            } else {
                seen.tables_written
            }),
            table_states: self.spaces.iter().map(expected_states).collect(),
            workers: members
                .iter()
                .map(|m| WorkerStatus {
                    id: u64::from(m.shard),
                    name: m.name.clone(),
                    seconds_since_heartbeat: m.silent.as_secs_f64(),
                    tasks_held: 0,
                    alive: m.alive,
                })
                .collect(),
            results_accepted: 0,
            results_dropped: 0,
            leases_expired: 0,
            results_refused: std::collections::HashMap::new(),
            // Every table's (none for a table not begun).
            table_layers: (0..self.spaces.len())
                .map(|index| LayerCounts {
                    states: seen.layers.get(index).cloned().unwrap_or_default(),
                })
                .collect(),
            encoding: self.encoding.clone(),
        }
    }
}

impl Observed for ShardedStatus {
    fn status(&self) -> JobStatusResponse {
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
