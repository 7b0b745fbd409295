//! The distributed job: what the driver thread and the gRPC handlers share.
//!
//! The job's data is split along its concerns: the tasks and leases of the layer being
//! expanded ([`super::lease::LayerTasks`]), the workers ([`super::workers::Workers`]), the
//! planner ([`super::plan`]) and the driver ([`super::driver`]), which runs the engine's
//! layer loop with the workers as its executor. This module holds the shared state, the
//! answers to the handlers (in domain terms: only the gRPC service makes a `Status`) and the
//! one wake-up of the job (`Job::raise`).
//!
//! ```text
//!  Starting ──▶ Expanding(layer) ──▶ FinishingLayer ──▶ Expanding(next layer) … ──┐
//!                    ▲                                                          │
//!                    └──────────── WritingTable ◀── (a layer added nothing) ◀───┘
//!  WritingTable ──▶ Expanding (next table) │ Done          any ──▶ Failed (stopped)
//! ```
//!
//! Only `Expanding` holds the layer's arrays and tasks: a result can only be checked and
//! merged against the layer it belongs to, and there is no "arrays while expanding" to
//! assume. Layer D (current code `c = code_of_depth(D)`, next code `n = code_of_depth(D+1)`):
//! results only turn unseen states into `n` (and record depths); current states keep `c` for
//! the whole layer, so a task handed out again gets the same input. The driver finishes the
//! layer and checkpoints (the engine's `finish_layer`, the store's `Checkpoint`), so the
//! files only ever hold "layers below D done, layer D current, some of layer D + 1": a
//! coordinator killed at any moment redoes layer D and finishes with the same bytes.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tilepdb_common::StateSpace;
use tilepdb_common::wire::{TaskId, saturating_u32};

use super::audit::{Audit, DEFAULT_AUDIT_FRACTION};
use super::lease::{LayerTasks, Rejection};
use super::workers::{TooManyWorkers, UnknownWorker, Workers};
use crate::build::thread_pool;
use crate::engine::units::StateIndex;
use crate::engine::{SetSpec, TableArrays};
use crate::error::Result;

/// How to run a distributed job.
#[derive(Clone, Debug)]
pub struct JobConfig {
    /// The set the job builds.
    pub spec: SetSpec,
    /// Where the state array, depth bytes and checkpoint live.
    pub data_dir: PathBuf,
    /// Where the table set is written (a directory per set is made inside).
    pub out: PathBuf,
    /// A worker silent for this long loses its leases.
    pub lease_timeout: Duration,
    /// Most ranks per task; `None`: tasks cut along the layer ([`super::plan`]).
    pub task_ranks: Option<u64>,
    /// Without `task_ranks`: cut each layer into about this many tasks (or more, along blocks).
    pub tasks_per_layer: u64,
    /// Flush the arrays and sync the checkpoint after every layer (survives a machine crash);
    /// without it the job survives a killed coordinator but not a crashed machine.
    pub sync: bool,
    /// Threads of the coordinator's own passes (counting, finishing layers).
    pub threads: usize,
    /// zstd level of task inputs.
    pub zstd_level: i32,
    /// Check each table before it is written, and search it again if it fails
    /// ([`crate::engine::TableBuilder::proves`]).
    pub prove: bool,
    /// The share of results (after each worker's first ones) that the coordinator
    /// re-executes and compares ([`super::audit`]), from 0 to 1.
    pub audit_fraction: f64,
}

impl JobConfig {
    /// The job of `spec`, its data in `data_dir`, its set written under `out`, with the
    /// defaults: 30 s lease timeout, layers cut along blocks into about 16 tasks, synced
    /// checkpoints, every core, zstd level 1, every table checked before it is written, a
    /// sixteenth of the results re-executed ([`DEFAULT_AUDIT_FRACTION`]).
    pub fn new(spec: SetSpec, data_dir: PathBuf, out: PathBuf) -> JobConfig {
        JobConfig {
            spec,
            data_dir,
            out,
            lease_timeout: Duration::from_secs(30),
            task_ranks: None,
            tasks_per_layer: 16,
            sync: true,
            threads: 0,
            zstd_level: 1,
            prove: true,
            audit_fraction: DEFAULT_AUDIT_FRACTION,
        }
    }
}

/// Where a job is (the name of its stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the first layer is published.
    Starting,
    /// The workers expand a layer.
    Expanding,
    /// The coordinator finishes a layer.
    FinishingLayer,
    /// The coordinator writes a table.
    WritingTable,
    /// Every table is written.
    Done,
    /// Stopped by an error.
    Failed,
}

impl Phase {
    /// The phase's name, as the status RPC reports it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Expanding => "expanding",
            Phase::FinishingLayer => "finishing layer",
            Phase::WritingTable => "writing table",
            Phase::Done => "done",
            Phase::Failed => "failed",
        }
    }
}

/// The layer being expanded: its arrays and tasks, owned by the `Expanding` stage.
pub(super) struct ExpandingLayer {
    pub(super) arrays: Arc<TableArrays>,
    pub(super) tasks: LayerTasks,
}

/// A job's stage, with the data that only it has.
pub(super) enum Stage {
    Starting,
    Expanding(ExpandingLayer),
    FinishingLayer,
    WritingTable,
    Done,
    Failed,
}

impl Stage {
    fn phase(&self) -> Phase {
        match self {
            Stage::Starting => Phase::Starting,
            Stage::Expanding(_) => Phase::Expanding,
            Stage::FinishingLayer => Phase::FinishingLayer,
            Stage::WritingTable => Phase::WritingTable,
            Stage::Done => Phase::Done,
            Stage::Failed => Phase::Failed,
        }
    }
}

/// The state shared by the driver and the handlers (under the job's lock).
pub(super) struct JobState {
    pub(super) stage: Stage,
    /// The table and layer depth in progress.
    pub(super) table: usize,
    pub(super) depth: u32,
    pub(super) tables_written: usize,
    pub(super) layer_states: u64,
    pub(super) states_found: u64,
    /// Tasks done and in all of the last layer published (for the status).
    pub(super) tasks_done: usize,
    pub(super) tasks_total: usize,
    /// States of each layer of each table, by depth, as the driver recorded them (the
    /// search's [`crate::engine::SearchProgress::layer_counts`]).
    pub(super) table_layers: Vec<Vec<u64>>,
    pub(super) workers: Workers,
}

/// Bytes and states counted over the whole job.
#[derive(Default)]
pub struct Counters {
    /// Bytes received from workers.
    pub bytes_received: AtomicU64,
    /// Bytes sent to workers.
    pub bytes_sent: AtomicU64,
    /// States expanded by accepted results.
    pub expanded: AtomicU64,
    /// Successors generated by accepted results.
    pub generated: AtomicU64,
    /// Results merged.
    pub results_accepted: AtomicU64,
    /// Results valid but not needed.
    pub results_dropped: AtomicU64,
    /// Leases expired (tasks handed out again).
    pub releases: AtomicU64,
    /// Tables that failed their check before being written (and were searched again).
    pub tables_rejected: AtomicU64,
    /// Results re-executed by the coordinator ([`super::audit`]).
    pub results_audited: AtomicU64,
    /// Workers banned (a result of theirs differed from the coordinator's re-execution).
    pub workers_banned: AtomicU64,
    /// Results refused (their gRPC status), by reason.
    pub refused: crate::observe::refusals::RefusalCounts,
}

/// A leased task, ready to be sent.
pub struct LeasedTask {
    /// The task's identity.
    pub id: TaskId,
    /// The lease's attempt number.
    pub attempt: u64,
    /// The task's units (tile-set ranks of the region index).
    pub ranks: Range<u64>,
    /// Its current states.
    pub states: u64,
    /// The arrays to read the task's input from.
    pub arrays: Arc<TableArrays>,
}

/// The answer to a worker asking for a task.
pub enum Lease {
    /// A task to expand.
    Task(LeasedTask),
    /// Nothing now: ask again (the reason).
    Wait(&'static str),
    /// The job is done.
    Done,
}

/// Why the job refuses a worker's request (the gRPC service turns it into a `Status`).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The worker must register again.
    #[error(transparent)]
    UnknownWorker(#[from] UnknownWorker),
    /// The request names what the job never had (a forged or corrupt result).
    #[error("{0}")]
    Invalid(String),
    /// The request names a lease of another worker.
    #[error("{0}")]
    NotYours(String),
    /// The job keeps no more workers.
    #[error(transparent)]
    TooManyWorkers(#[from] TooManyWorkers),
    /// The worker is banned: a result of its differed from the coordinator's re-execution.
    #[error("{0}")]
    Banned(String),
}

/// The refusal of a banned worker's request.
pub(super) fn banned() -> Refusal {
    Refusal::Banned(
        "this worker is banned: a result of its differed from the coordinator's re-execution"
            .into(),
    )
}

impl From<Rejection> for Refusal {
    fn from(r: Rejection) -> Refusal {
        match r {
            Rejection::Invalid(m) => Refusal::Invalid(m),
            Rejection::NotYours(m) => Refusal::NotYours(m),
        }
    }
}

/// A job, shared by the driver thread and the gRPC handlers.
pub struct Job {
    /// The job's identity ([`SetSpec::job_id`]).
    pub id: String,
    /// The state space of each table.
    pub spaces: Vec<StateSpace>,
    /// The index each table is searched on (its region index, [`StateIndex`]).
    pub indexes: Vec<StateIndex>,
    /// How the job runs.
    pub config: JobConfig,
    state: Mutex<JobState>,
    /// Raised with `wake` ([`Job::raise`]): the driver thread waits on it.
    changed: Condvar,
    /// Raised with `changed`: long-polling `TakeTask`s wait on it.
    wake: tokio::sync::Notify,
    /// Bytes and states counted over the whole job.
    pub counters: Counters,
    pub(super) started: Instant,
    pub(super) pool: rayon::ThreadPool,
    /// The job's progress is drawn on a terminal ([`crate::observe::bars::watch`]): the
    /// driver logs its layers and tables at debug level, not through the bars.
    progress_drawn: AtomicBool,
    /// The results re-executed and the records that find wrong ones.
    pub(super) audit: Audit,
}

impl Job {
    /// A job of `config`, not started.
    pub fn new(config: JobConfig) -> Result<Job> {
        let spaces = config.spec.spaces()?;
        let indexes = spaces
            .iter()
            .map(StateIndex::region)
            .collect::<Result<Vec<_>>>()?;
        let pool = thread_pool(config.threads, "tilepdb-merge")?;
        let tables = spaces.len();
        let config_audit = config.audit_fraction;
        Ok(Job {
            id: config.spec.job_id(),
            spaces,
            indexes,
            state: Mutex::new(JobState {
                stage: Stage::Starting,
                table: 0,
                depth: 0,
                tables_written: 0,
                layer_states: 0,
                states_found: 0,
                tasks_done: 0,
                tasks_total: 0,
                table_layers: vec![Vec::new(); tables],
                // Random ids: a worker of a previous run of the coordinator is unknown here
                // (and registers again), and no client can guess another's.
                workers: Workers::new(config.lease_timeout),
            }),
            config,
            changed: Condvar::new(),
            wake: tokio::sync::Notify::new(),
            counters: Counters::default(),
            started: Instant::now(),
            pool,
            progress_drawn: AtomicBool::new(false),
            audit: Audit::new(config_audit, tables),
        })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, JobState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The job's one wake-up: every waiter (the driver thread, long-polling handlers) looks
    /// again. Raised when a layer is published, a lease released, a task done, the stage
    /// changes.
    pub(super) fn raise(&self) {
        self.changed.notify_all();
        self.wake.notify_waiters();
    }

    /// Waits (the driver thread) until [`Job::raise`] or `timeout`.
    pub(super) fn wait<'a>(
        &self,
        guard: MutexGuard<'a, JobState>,
        timeout: Duration,
    ) -> MutexGuard<'a, JobState> {
        self.changed
            .wait_timeout(guard, timeout)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0
    }

    /// Moves the job to `stage` and raises the wake-up.
    pub(super) fn set_stage(&self, stage: Stage) {
        let mut st = self.lock();
        if let Stage::Expanding(l) = &st.stage {
            st.tasks_done = l.tasks.done();
        }
        st.stage = stage;
        drop(st);
        self.raise();
    }

    /// How long a lease of a task of `states` input states lasts even if its holder
    /// heartbeats: two lease timeouts plus 10 µs per state (a worker a hundred times slower
    /// than one core expanding 10 M states per second still makes it).
    pub fn task_deadline(&self, states: u64) -> Duration {
        2 * self.config.lease_timeout
            + Duration::from_micros(10).saturating_mul(u32::try_from(states).unwrap_or(u32::MAX))
    }

    /// How often workers must heartbeat.
    pub fn heartbeat_interval(&self) -> Duration {
        (self.config.lease_timeout / 4).max(Duration::from_millis(50))
    }

    /// Where the job is.
    pub fn phase(&self) -> Phase {
        self.lock().stage.phase()
    }

    /// Adds a worker; its id (its credential: never logged).
    pub fn register(&self, name: &str) -> Result<u64, Refusal> {
        self.register_from(name, None)
    }

    /// Adds a worker that registered from `peer`; its id (its credential: never logged).
    pub fn register_from(
        &self,
        name: &str,
        peer: Option<std::net::IpAddr>,
    ) -> Result<u64, Refusal> {
        let now = Instant::now();
        let mut st = self.lock();
        if st.workers.is_banned_name(name, peer) {
            drop(st);
            tracing::warn!(worker = %name, ?peer, "registration of a banned worker refused");
            return Err(Refusal::Banned(format!(
                "a worker named {name:?} from this address is banned: a result of its differed \
                 from the coordinator's re-execution"
            )));
        }
        let id = st.workers.register_from(name, peer, now)?;
        let alive = st.workers.alive(now);
        let name = st.workers.name(id);
        drop(st);
        tracing::info!(worker = %name, alive, "worker registered");
        Ok(id)
    }

    /// Records a heartbeat; whether the job is done.
    pub fn heartbeat(&self, worker: u64) -> Result<bool, Refusal> {
        let mut st = self.lock();
        if st.workers.is_banned(worker) {
            return Err(banned());
        }
        let done = matches!(st.stage, Stage::Done);
        let w = st.workers.seen(worker, Instant::now())?;
        if done {
            w.told_done = true;
        }
        Ok(done)
    }

    /// When a `TakeTask` that found nothing should look again even if nothing is raised:
    /// when the next lease may expire (`None`: only a raise can free a task).
    pub fn next_expiry(&self) -> Option<Instant> {
        let st = self.lock();
        let Stage::Expanding(layer) = &st.stage else {
            return None;
        };
        let lost = layer
            .tasks
            .leased()
            .filter_map(|holders| {
                holders
                    .iter()
                    .map(|h| st.workers.lost_at(h.worker))
                    .max()
                    .flatten()
            })
            .min();
        let overdue = layer
            .tasks
            .next_deadline()
            .map(|d| d + Duration::from_millis(1));
        [lost, overdue].into_iter().flatten().min()
    }

    /// A future that resolves at the next `Job::raise` (created before looking, so that
    /// a raise between the look and the wait is not missed).
    pub fn raised(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }

    /// Leases a task to `worker`, if one is free (a pending one, or one whose holders are
    /// silent past the lease timeout). `still_holding` lists the attempts the worker still
    /// works on; its other leases are given up (it lost them: a failed delivery, a restart).
    /// `asked_at` is when the worker asked: a request that waits and looks again does not
    /// count as hearing from the worker again (a stopped process's parked request would keep
    /// it alive).
    pub fn take_task(
        &self,
        worker: u64,
        still_holding: &[u64],
        asked_at: Instant,
    ) -> Result<Lease, Refusal> {
        let now = Instant::now();
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.workers.is_banned(worker) {
            return Err(banned());
        }
        let w = st.workers.seen(worker, asked_at.min(now))?;
        w.last_asked = w.last_asked.max(asked_at.min(now));
        if matches!(st.stage, Stage::Done) {
            w.told_done = true;
            return Ok(Lease::Done);
        }
        let (kept, lost): (Vec<_>, Vec<_>) = w
            .holding
            .iter()
            .partition(|(_, a)| still_holding.contains(a));
        w.holding = kept;
        let layer = match &mut st.stage {
            Stage::Expanding(layer) => layer,
            Stage::FinishingLayer => return Ok(Lease::Wait("finishing a layer")),
            Stage::WritingTable => return Ok(Lease::Wait("writing a table")),
            _ => return Ok(Lease::Wait("starting")),
        };
        let released = !lost.is_empty();
        for (index, attempt) in lost {
            layer.tasks.release(index, attempt);
        }
        // 64 random bits: a result names the attempt only its worker was told.
        let attempt = rand::random::<u64>();
        let workers = &st.workers;
        let deadline = |states| now + self.task_deadline(states);
        let Some(leased) = layer
            .tasks
            .lease(worker, attempt, now, deadline, |w| workers.is_lost(w, now))
        else {
            drop(guard);
            if released {
                self.raise();
            }
            return Ok(Lease::Wait("every task of the layer is leased"));
        };
        if !leased.expired.is_empty() {
            self.counters.releases.fetch_add(1, Relaxed);
            let holders: Vec<String> = leased
                .expired
                .iter()
                .map(|h| st.workers.name(h.worker))
                .collect();
            if leased.overdue {
                tracing::warn!(
                    task = leased.index,
                    depth = st.depth,
                    holders = ?holders,
                    "task past its deadline of {:.1} s: task handed out again",
                    self.task_deadline(leased.states).as_secs_f64()
                );
            } else {
                tracing::warn!(
                    task = leased.index,
                    depth = st.depth,
                    holders = ?holders,
                    "lease expired (no heartbeat for {:.1} s): task handed out again",
                    self.config.lease_timeout.as_secs_f64()
                );
            }
        }
        let arrays = layer.arrays.clone();
        if let Ok(w) = st.workers.seen(worker, asked_at.min(now)) {
            w.holding.push((leased.index, attempt));
            w.leased_any = true;
        }
        let task = LeasedTask {
            id: TaskId {
                table: saturating_u32(st.table),
                depth: st.depth,
                index: saturating_u32(leased.index),
            },
            attempt,
            ranks: leased.units,
            states: leased.states,
            arrays,
        };
        drop(guard);
        if released {
            self.raise();
        }
        Ok(Lease::Task(task))
    }

    /// Whether every worker seen recently has been told that the job is done.
    pub fn all_workers_told(&self) -> bool {
        self.lock().workers.all_told(Instant::now())
    }

    /// How many workers have been told that the job is done.
    pub fn workers_told(&self) -> usize {
        self.lock().workers.told()
    }

    /// Says that the job's progress is drawn on a terminal from its status (progress bars):
    /// from now on the driver logs each layer, each table written and the job's end at debug
    /// level, so that one renderer owns the terminal.
    pub fn set_progress_drawn(&self) {
        self.progress_drawn.store(true, Relaxed);
    }

    /// Whether the job's progress is drawn on a terminal ([`Job::set_progress_drawn`]).
    pub fn progress_drawn(&self) -> bool {
        self.progress_drawn.load(Relaxed)
    }

    /// Marks the job failed (the driver's error ends the server).
    pub fn fail(&self) {
        self.set_stage(Stage::Failed);
    }
}

mod status;
#[cfg(test)]
mod tests;
