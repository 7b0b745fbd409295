//! The distributed job: its layers, tasks, leases and workers, and the driver that runs the
//! layers one after the other.
//!
//! The driver ([`Job::drive`]) runs on a thread of its own: for each table and each layer it
//! cuts the layer into tasks ([`plan_tasks`], or [`cut_units`] as the single-machine build does), publishes
//! them, waits until every task's result is merged, then finishes the layer and checkpoints.
//! The gRPC handlers lease tasks ([`Job::take_task`]) and merge results ([`Job::check_result`],
//! [`Job::commit`]) with the same [`LayerMerge`] as in-process workers.
//!
//! Layer D (current code `c = code_of_depth(D)`, next code `n = code_of_depth(D + 1)`):
//!
//! * results only turn unseen states into `n` (and record depths); current states keep `c`
//!   for the whole layer, so a task handed out again gets the same input;
//! * when all tasks are in, one pass records the depth of every `n` state (repairing depths
//!   that a coordinator killed between a mark and its depth byte did not write), counts them
//!   and retires every `c` state to done; the arrays are flushed and the manifest records
//!   `next_depth = D + 1`.
//!
//! So the files only ever hold "layers below D done, layer D current, some of layer D + 1":
//! a coordinator killed at any moment redoes layer D and finishes with the same bytes.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use tilepdb_common::table::Pdb;
use tilepdb_common::wire::TaskId;
use tilepdb_common::wire::proto::{JobSpec, JobStatusResponse, ResultHeader};
use tilepdb_common::wire::states::{CheckedStates, ListShape};
use tilepdb_common::{StateCodes, StateSpace};
use tilepdb_worker::ExpandStats;
use tonic::Status;

use super::store::{DataDir, MANIFEST_FORMAT, Manifest, TableCheckpoint};
use crate::build::{BuildObserver, BuiltTable, human_bytes, thread_pool};
use crate::engine::units::{cut_units, plan_tasks, unit_states};
use crate::engine::{
    Executor, Layer, Reuse, SearchProgress, SetSpec, TableArrays, TableBuilder, build_set,
    finish_table, search_table,
};
use crate::error::{Error, Result};
use crate::merge::LayerMerge;
use crate::report::{TableReport, peak_rss_bytes};

/// How to run a distributed job.
#[derive(Clone, Debug)]
pub struct JobConfig {
    /// The set the job builds.
    pub spec: SetSpec,
    /// Where the state array, depth bytes and manifest live.
    pub data_dir: PathBuf,
    /// Where the table set is written (a directory per set is made inside).
    pub out: PathBuf,
    /// A worker silent for this long loses its leases.
    pub lease_timeout: Duration,
    /// Most ranks per task; `None`: tasks cut along the layer (see `Job::plan_layer`).
    pub task_ranks: Option<u64>,
    /// Without `task_ranks`: cut each layer into about this many tasks (or more, along blocks).
    pub tasks_per_layer: u64,
    /// Flush the arrays and sync the manifest after every layer (survives a machine crash);
    /// without it the job survives a killed coordinator but not a crashed machine.
    pub sync: bool,
    /// Threads of the coordinator's own passes (counting, finishing layers).
    pub threads: usize,
    /// zstd level of task inputs.
    pub zstd_level: i32,
}

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Starting,
    Expanding,
    FinishingLayer,
    WritingTable,
    Done,
    Failed,
}

impl Phase {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status_ {
    Pending,
    Leased,
    Merging,
    Done,
}

struct TaskSlot {
    ranks: Range<u64>,
    /// Current-layer states of the task.
    states: u64,
    status: Status_,
    /// Live leases: (attempt, worker).
    active: Vec<(u64, u64)>,
    /// Every attempt issued for this task in this layer (a result must name one).
    issued: Vec<u64>,
}

struct WorkerInfo {
    name: String,
    last_seen: Instant,
    /// The tasks (index, attempt) leased to the worker and not yet done.
    holding: Vec<(usize, u64)>,
    told_done: bool,
}

struct JobState {
    phase: Phase,
    table: usize,
    tables_written: usize,
    depth: u32,
    arrays: Option<Arc<TableArrays>>,
    tasks: Vec<TaskSlot>,
    pending: VecDeque<usize>,
    tasks_done: usize,
    layer_states: u64,
    states_found: u64,
    workers: HashMap<u64, WorkerInfo>,
    next_worker: u64,
    next_attempt: u64,
}

/// Bytes and states counted over the whole job.
#[derive(Default)]
pub struct Counters {
    pub bytes_received: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub expanded: AtomicU64,
    pub generated: AtomicU64,
    pub results_accepted: AtomicU64,
    pub results_dropped: AtomicU64,
    pub releases: AtomicU64,
}

/// A leased task, ready to be sent.
pub struct LeasedTask {
    pub id: TaskId,
    pub attempt: u64,
    pub ranks: Range<u64>,
    pub states: u64,
    pub arrays: Arc<TableArrays>,
}

/// The answer to a worker asking for a task.
pub enum Lease {
    Task(LeasedTask),
    Wait(&'static str),
    Done,
}

/// What to do with a result whose header was checked.
pub enum ResultCheck {
    /// Needed: read its chunks (of these sizes) and commit it.
    Accept(AcceptedResult),
    /// Valid but not needed (the task is done, or its layer is over).
    Drop(&'static str),
}

/// A result to be read and merged.
pub struct AcceptedResult {
    pub index: usize,
    pub table: usize,
    pub depth: u32,
    /// All states of the table.
    pub states: u64,
    /// The states the result lists, in how many bytes.
    pub reached_states: u64,
    pub reached_bytes: u64,
    pub expanded: u64,
    pub generated: u64,
}

/// A job, shared by the driver thread and the gRPC handlers.
pub struct Job {
    pub id: String,
    pub spec: JobSpec,
    pub spaces: Vec<StateSpace>,
    pub config: JobConfig,
    state: Mutex<JobState>,
    changed: Condvar,
    /// Woken when tasks become available or the job ends (long-polling `TakeTask`s wait on it).
    pub wake: tokio::sync::Notify,
    pub counters: Counters,
    started: Instant,
    pool: rayon::ThreadPool,
}

impl Job {
    pub fn new(config: JobConfig) -> Result<Job> {
        let spaces = config.spec.spaces()?;
        let pool = thread_pool(config.threads, "tilepdb-merge")?;
        Ok(Job {
            id: config.spec.job_id(),
            spec: config.spec.job_spec(),
            spaces,
            config,
            state: Mutex::new(JobState {
                phase: Phase::Starting,
                table: 0,
                tables_written: 0,
                depth: 0,
                arrays: None,
                tasks: Vec::new(),
                pending: VecDeque::new(),
                tasks_done: 0,
                layer_states: 0,
                states_found: 0,
                workers: HashMap::new(),
                // Ids of this run: a worker of a previous run of the coordinator is unknown
                // here (and registers again) rather than mistaken for a new one.
                next_worker: initial_attempt() >> 20,
                next_attempt: initial_attempt(),
            }),
            changed: Condvar::new(),
            wake: tokio::sync::Notify::new(),
            counters: Counters::default(),
            started: Instant::now(),
            pool,
        })
    }

    fn lock(&self) -> MutexGuard<'_, JobState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How often workers must heartbeat.
    pub fn heartbeat_interval(&self) -> Duration {
        (self.config.lease_timeout / 4).max(Duration::from_millis(50))
    }

    pub fn phase(&self) -> Phase {
        self.lock().phase
    }

    /// Adds a worker; its id.
    pub fn register(&self, name: &str) -> u64 {
        let mut st = self.lock();
        // Forget workers long gone (they would register again anyway).
        let forget = 10 * self.config.lease_timeout;
        st.workers
            .retain(|_, w| w.last_seen.elapsed() < forget || !w.holding.is_empty());
        let id = st.next_worker;
        st.next_worker += 1;
        st.workers.insert(
            id,
            WorkerInfo {
                name: name.to_string(),
                last_seen: Instant::now(),
                holding: Vec::new(),
                told_done: false,
            },
        );
        let alive = alive_workers(&st, self.config.lease_timeout);
        drop(st);
        tracing::info!(worker = id, name, alive, "worker registered");
        id
    }

    /// Records a heartbeat; whether the job is done. Unknown workers must register again.
    pub fn heartbeat(&self, worker: u64) -> Result<bool, Status> {
        let mut st = self.lock();
        let done = st.phase == Phase::Done;
        let w = st
            .workers
            .get_mut(&worker)
            .ok_or_else(|| unknown_worker(worker))?;
        w.last_seen = Instant::now();
        if done {
            w.told_done = true;
        }
        Ok(done)
    }

    /// Leases a task to `worker`, if one is free (a pending one, or one whose holders are
    /// silent past the lease timeout). `still_holding` lists the attempts the worker still
    /// works on; its other leases are given up (it lost them: a failed delivery, a restart).
    pub fn take_task(&self, worker: u64, still_holding: &[u64]) -> Result<Lease, Status> {
        let timeout = self.config.lease_timeout;
        let mut st = self.lock();
        let now = Instant::now();
        let phase = st.phase;
        {
            let w = st
                .workers
                .get_mut(&worker)
                .ok_or_else(|| unknown_worker(worker))?;
            w.last_seen = now;
            if phase == Phase::Done {
                w.told_done = true;
                return Ok(Lease::Done);
            }
        }
        let lost: Vec<(usize, u64)> = {
            let w = st.workers.get_mut(&worker).expect("checked above");
            let (kept, lost) = w
                .holding
                .iter()
                .partition(|(_, a)| still_holding.contains(a));
            w.holding = kept;
            lost
        };
        for (index, attempt) in lost {
            release(&mut st, index, attempt);
        }
        match phase {
            Phase::Expanding => {}
            Phase::FinishingLayer => return Ok(Lease::Wait("finishing a layer")),
            Phase::WritingTable => return Ok(Lease::Wait("writing a table")),
            _ => return Ok(Lease::Wait("starting")),
        }
        let index = match st.pending.pop_front() {
            Some(i) => i,
            None => {
                let st_ref = &*st;
                let expired = st_ref.tasks.iter().position(|t| {
                    t.status == Status_::Leased
                        && t.active.iter().all(|&(_, w)| {
                            st_ref
                                .workers
                                .get(&w)
                                .is_none_or(|w| now.duration_since(w.last_seen) > timeout)
                        })
                });
                match expired {
                    Some(i) => {
                        self.counters.releases.fetch_add(1, Relaxed);
                        let holders: Vec<String> = st.tasks[i]
                            .active
                            .iter()
                            .map(|&(_, w)| {
                                st.workers
                                    .get(&w)
                                    .map_or(format!("#{w}"), |i| i.name.clone())
                            })
                            .collect();
                        tracing::warn!(
                            task = i,
                            depth = st.depth,
                            holders = ?holders,
                            "lease expired (no heartbeat for {:.1} s): task handed out again",
                            timeout.as_secs_f64()
                        );
                        st.tasks[i].active.clear();
                        i
                    }
                    None => return Ok(Lease::Wait("every task of the layer is leased")),
                }
            }
        };
        let attempt = st.next_attempt;
        st.next_attempt += 1;
        let (table, depth) = (st.table, st.depth);
        let slot = &mut st.tasks[index];
        slot.status = Status_::Leased;
        slot.active.push((attempt, worker));
        slot.issued.push(attempt);
        let (ranks, states) = (slot.ranks.clone(), slot.states);
        if let Some(w) = st.workers.get_mut(&worker) {
            w.holding.push((index, attempt));
        }
        Ok(Lease::Task(LeasedTask {
            id: TaskId {
                table: table as u32,
                depth,
                index: index as u32,
            },
            attempt,
            ranks,
            states,
            arrays: st.arrays.clone().expect("arrays while expanding"),
        }))
    }

    /// Checks a result's header against the job; says whether to read and merge it.
    pub fn check_result(&self, h: &ResultHeader) -> Result<ResultCheck, Status> {
        let mut st = self.lock();
        st.workers
            .get_mut(&h.worker_id)
            .ok_or_else(|| unknown_worker(h.worker_id))?
            .last_seen = Instant::now();
        let bad = |m: String| Err(Status::invalid_argument(m));
        let Some(id) = TaskId::from_u64(h.task_id) else {
            return bad(format!("task id {:#x} was never issued", h.task_id));
        };
        if id.table != h.table || id.depth != h.depth {
            return bad(format!(
                "task id {:#x} names table {} depth {}, the header table {} depth {}",
                h.task_id, id.table, id.depth, h.table, h.depth
            ));
        }
        let table = id.table as usize;
        let Some(space) = self.spaces.get(table) else {
            return bad(format!(
                "table {table} of a job of {} tables",
                self.spaces.len()
            ));
        };
        if h.first_rank >= h.end_rank || h.end_rank > space.placements() {
            return bad(format!(
                "ranks {}..{} are outside the table's 0..{}",
                h.first_rank,
                h.end_rank,
                space.placements()
            ));
        }
        let current = (st.table, st.depth);
        if (table, id.depth) < current || st.phase == Phase::Done {
            return Ok(ResultCheck::Drop("its layer is over"));
        }
        if (table, id.depth) > current || st.phase != Phase::Expanding {
            if (table, id.depth) == current {
                return Ok(ResultCheck::Drop("its layer is being finished"));
            }
            return bad(format!(
                "task of table {table} depth {} while the job is at table {} depth {}",
                id.depth, current.0, current.1
            ));
        }
        let index = id.index as usize;
        let Some(slot) = st.tasks.get(index) else {
            return bad(format!(
                "task {index} of a layer of {} tasks",
                st.tasks.len()
            ));
        };
        if slot.ranks != (h.first_rank..h.end_rank) {
            return bad(format!(
                "ranks {}..{} are not task {index}'s {:?}",
                h.first_rank, h.end_rank, slot.ranks
            ));
        }
        if !slot.issued.contains(&h.attempt) {
            return bad(format!(
                "attempt {} of task {index} was never issued",
                h.attempt
            ));
        }
        if matches!(slot.status, Status_::Done | Status_::Merging) {
            return Ok(ResultCheck::Drop("the task is done already"));
        }
        // Each state has at most 4 moves per pattern tile.
        let most = (slot.states * 4 * space.k() as u64).min(space.states());
        if h.reached_states > most {
            return bad(format!(
                "{} states reached from {} states expanded (at most {most})",
                h.reached_states, slot.states
            ));
        }
        // The result lists states of the next layer.
        if h.reached_bytes > ListShape::new(space, id.depth + 1).max_bytes(h.reached_states) {
            return bad(format!(
                "{} bytes cannot list {} states",
                h.reached_bytes, h.reached_states
            ));
        }
        if h.expanded > slot.states {
            return bad(format!(
                "{} states expanded of a task of {}",
                h.expanded, slot.states
            ));
        }
        Ok(ResultCheck::Accept(AcceptedResult {
            index,
            table,
            depth: id.depth,
            states: space.states(),
            reached_states: h.reached_states,
            reached_bytes: h.reached_bytes,
            expanded: h.expanded,
            generated: h.generated,
        }))
    }

    /// Merges a result, its states checked (blocking: call off the async threads). Returns
    /// whether it was merged (false: another attempt of the task got there first).
    pub fn commit(&self, r: &AcceptedResult, reached: &CheckedStates) -> bool {
        let arrays = {
            let mut st = self.lock();
            if (st.table, st.depth) != (r.table, r.depth) || st.phase != Phase::Expanding {
                return false;
            }
            let slot = &mut st.tasks[r.index];
            if matches!(slot.status, Status_::Done | Status_::Merging) {
                return false;
            }
            slot.status = Status_::Merging;
            st.arrays.clone().expect("arrays while expanding")
        };
        let space = &self.spaces[r.table];
        let mut merge = LayerMerge::new(
            &arrays.codes,
            &arrays.depths,
            space.rule(),
            space.slots(),
            r.depth + 1,
        );
        reached.for_each(|s| tilepdb_worker::ReachedSink::reached(&mut merge, s));
        self.counters.expanded.fetch_add(r.expanded, Relaxed);
        self.counters.generated.fetch_add(r.generated, Relaxed);
        self.counters.results_accepted.fetch_add(1, Relaxed);
        let mut st = self.lock();
        let slot = &mut st.tasks[r.index];
        slot.status = Status_::Done;
        slot.active.clear();
        st.tasks_done += 1;
        st.states_found += merge.added;
        for w in st.workers.values_mut() {
            w.holding.retain(|&(i, _)| i != r.index);
        }
        if st.tasks_done == st.tasks.len() {
            self.changed.notify_all();
        }
        true
    }

    /// The job's progress.
    pub fn status(&self) -> JobStatusResponse {
        let st = self.lock();
        let elapsed = self.started.elapsed().as_secs_f64();
        let expanded = self.counters.expanded.load(Relaxed);
        JobStatusResponse {
            job_id: self.id.clone(),
            job: Some(self.spec.clone()),
            table: st.table as u32,
            tables: self.spaces.len() as u32,
            depth: st.depth,
            layer_states: st.layer_states,
            states_found: st.states_found,
            tasks_done: st.tasks_done as u32,
            tasks_total: st.tasks.len() as u32,
            workers_alive: alive_workers(&st, self.config.lease_timeout) as u32,
            states_per_second: if elapsed > 0.0 {
                expanded as f64 / elapsed
            } else {
                0.0
            },
            states_expanded: expanded,
            bytes_received: self.counters.bytes_received.load(Relaxed),
            bytes_sent: self.counters.bytes_sent.load(Relaxed),
            elapsed_seconds: elapsed,
            phase: st.phase.name().to_string(),
            done: st.phase == Phase::Done,
            peak_rss_bytes: peak_rss_bytes().unwrap_or(0),
            tables_written: st.tables_written as u32,
        }
    }

    /// Whether every worker seen recently has been told that the job is done.
    pub fn all_workers_told(&self) -> bool {
        let st = self.lock();
        let timeout = self.config.lease_timeout;
        st.workers
            .values()
            .all(|w| w.told_done || w.last_seen.elapsed() > timeout)
    }

    fn set_phase(&self, phase: Phase) {
        self.lock().phase = phase;
        self.wake.notify_waiters();
        self.changed.notify_all();
    }

    /// Marks the job failed (the driver's error ends the server).
    pub fn fail(&self) {
        self.set_phase(Phase::Failed);
    }

    /// Runs every remaining layer of every remaining table, checkpointing in `data`, and
    /// writes the tables. Returns a report per table built by this run.
    pub fn drive(&self, data: &DataDir) -> Result<Vec<TableReport>> {
        let mut manifest = match data.read_manifest()? {
            Some(m) if m.job_id != self.id => {
                return Err(Error::DataDir {
                    path: data.path().to_path_buf(),
                    reason: format!(
                        "it holds job {}, not {}; use another --data-dir, or remove it to start over",
                        m.job_id, self.id
                    ),
                });
            }
            Some(m) => {
                tracing::info!(
                    job = %self.id,
                    tables_written = m.tables_written,
                    table = ?m.table.as_ref().map(|t| t.table),
                    next_depth = ?m.table.as_ref().map(|t| t.progress.next_depth),
                    "resuming from the data directory"
                );
                m
            }
            None => {
                let m = Manifest {
                    format: MANIFEST_FORMAT,
                    job_id: self.id.clone(),
                    tables_written: 0,
                    table: None,
                };
                data.write_manifest(&m, true)?;
                m
            }
        };
        let written = manifest.tables_written as usize;
        for table in 0..written {
            // Arrays of tables written before a kill that came before their removal.
            data.remove_arrays(table);
        }
        let mut builder = JobBuilder {
            job: self,
            data,
            manifest: &mut manifest,
            reports: Vec::new(),
        };
        let set = build_set(
            &self.config.spec,
            &self.config.out,
            Reuse::Written(written),
            &mut builder,
        )?;
        let reports = builder.reports;
        self.set_phase(Phase::Done);
        tracing::info!(
            job = %self.id,
            seconds = format!("{:.2}", self.started.elapsed().as_secs_f64()),
            expanded = self.counters.expanded.load(Relaxed),
            bytes_received = self.counters.bytes_received.load(Relaxed),
            bytes_sent = self.counters.bytes_sent.load(Relaxed),
            peak_memory = %peak_rss_bytes().map_or("?".into(), human_bytes),
            "job done: {} table(s) in {}",
            self.spaces.len(),
            set.dir.display()
        );
        Ok(reports)
    }

    /// Searches table `table` from its checkpoint (or from its goal), checkpointing after
    /// every layer.
    fn search(&self, table: usize, data: &DataDir, manifest: &mut Manifest) -> Result<BuiltTable> {
        let space = &self.spaces[table];
        let table_started = Instant::now();
        let resumed = manifest.table.clone().filter(|c| c.table as usize == table);
        let (arrays, mut progress) = match resumed {
            Some(c) => (data.arrays(table, space, false)?, c.progress),
            None => {
                let arrays = data.arrays(table, space, true)?;
                arrays.mark_goal(space);
                data.flush_arrays(table, &arrays)?;
                let progress = SearchProgress::start();
                manifest.table = Some(TableCheckpoint {
                    table: table as u32,
                    progress: progress.clone(),
                });
                data.write_manifest(manifest, self.config.sync)?;
                (arrays, progress)
            }
        };
        tracing::info!(
            table,
            pattern = %space.pattern(),
            states = space.states(),
            arrays = %human_bytes(arrays.bytes()),
            "building table {} of {}",
            table + 1,
            self.spaces.len()
        );
        let arrays = Arc::new(arrays);
        let mut layer_started = Instant::now();
        let mut expanded = progress.layer_states;
        search_table(
            table,
            space,
            &arrays,
            &mut progress,
            &mut RemoteExecutor { job: self },
            &self.pool,
            &(),
            |p| {
                if self.config.sync {
                    data.flush_arrays(table, &arrays)?;
                }
                manifest.table = Some(TableCheckpoint {
                    table: table as u32,
                    progress: p.clone(),
                });
                data.write_manifest(manifest, self.config.sync)?;
                let (alive, tasks) = {
                    let st = self.lock();
                    (
                        alive_workers(&st, self.config.lease_timeout),
                        st.tasks.len(),
                    )
                };
                let secs = layer_started.elapsed().as_secs_f64();
                tracing::info!(
                    table,
                    depth = p.next_depth - 1,
                    expanded,
                    next_layer = p.layer_states,
                    states_found = p.states_found,
                    tasks,
                    workers = alive,
                    seconds = format!("{secs:.2}"),
                    rate = format!("{:.2} M states/s", expanded as f64 / secs.max(1e-9) / 1e6),
                    "layer done"
                );
                layer_started = Instant::now();
                expanded = p.layer_states;
                Ok(())
            },
        )?;
        self.set_phase(Phase::WritingTable);
        // The job lets the arrays go: the state array's memory goes before the values are
        // copied out, unless a handler that leased a task still holds it.
        self.lock().arrays = None;
        Ok(finish_table(
            space,
            arrays,
            &progress,
            &self.pool,
            table_started,
        ))
    }

    /// The tasks of a layer and their current states. With `task_ranks`, fixed ranges (as
    /// the single-machine build cuts them); otherwise [`plan_tasks`]. Ranges without a current
    /// state are left out.
    fn plan_layer(
        &self,
        space: &StateSpace,
        arrays: &TableArrays,
        code: u8,
    ) -> (Vec<Range<u64>>, Vec<u64>) {
        let count = |ranges: &[Range<u64>]| -> Vec<u64> {
            self.pool.install(|| {
                ranges
                    .par_iter()
                    .map(|r| arrays.codes.count_with_code(unit_states(space, r), code))
                    .collect()
            })
        };
        if let Some(task_ranks) = self.config.task_ranks {
            let ranges = cut_units(space, Some(task_ranks), 1);
            let counts = count(&ranges);
            return ranges
                .into_iter()
                .zip(counts)
                .filter(|(_, c)| *c > 0)
                .unzip();
        }
        plan_tasks(space, self.config.tasks_per_layer, count)
    }

    /// Publishes the tasks of `layer` to the workers and waits until each one's result is
    /// merged.
    fn expand_layer(&self, layer: &Layer<'_>, observer: &dyn BuildObserver) -> Result<ExpandStats> {
        let (table, space, depth) = (layer.table, layer.space, layer.depth);
        let expanded_before = self.counters.expanded.load(Relaxed);
        let generated_before = self.counters.generated.load(Relaxed);
        let current = StateCodes::code_of_depth(depth);
        let (ranges, counts) = self.plan_layer(space, layer.arrays, current);
        let layer_states: u64 = counts.iter().sum();
        observer.layer_started(depth, layer_states, ranges.len());
        {
            let mut st = self.lock();
            if st.phase == Phase::Failed {
                return Err(Error::Serve("the job was stopped".into()));
            }
            st.table = table;
            st.depth = depth;
            st.arrays = Some(layer.arrays.clone());
            st.layer_states = layer_states;
            st.states_found = layer.states_found;
            st.tasks = ranges
                .into_iter()
                .zip(&counts)
                .map(|(ranks, &states)| TaskSlot {
                    ranks,
                    states,
                    status: if states == 0 {
                        Status_::Done
                    } else {
                        Status_::Pending
                    },
                    active: Vec::new(),
                    issued: Vec::new(),
                })
                .collect();
            st.pending = (0..st.tasks.len()).filter(|&i| counts[i] > 0).collect();
            st.tasks_done = st.tasks.len() - st.pending.len();
            for w in st.workers.values_mut() {
                w.holding.clear();
            }
            st.phase = Phase::Expanding;
        }
        self.wake.notify_waiters();
        tracing::debug!(table, depth, layer_states, "layer published");

        // Wait for every result, saying how it goes.
        let mut last_log = Instant::now();
        let mut st = self.lock();
        while st.tasks_done < st.tasks.len() {
            let (guard, _) = self
                .changed
                .wait_timeout(st, Duration::from_millis(500))
                .unwrap_or_else(|e| e.into_inner());
            st = guard;
            if st.phase == Phase::Failed {
                return Err(Error::Serve("the job was stopped".into()));
            }
            if last_log.elapsed() >= Duration::from_secs(5) {
                last_log = Instant::now();
                let alive = alive_workers(&st, self.config.lease_timeout);
                if alive == 0 {
                    tracing::warn!(
                        table,
                        depth,
                        tasks_done = st.tasks_done,
                        tasks = st.tasks.len(),
                        "no worker alive: waiting for workers"
                    );
                } else {
                    let secs = self.started.elapsed().as_secs_f64();
                    tracing::info!(
                        table,
                        depth,
                        layer_states,
                        states_found = st.states_found,
                        tasks_done = st.tasks_done,
                        tasks = st.tasks.len(),
                        workers = alive,
                        rate = format!(
                            "{:.2} M states/s",
                            self.counters.expanded.load(Relaxed) as f64 / secs / 1e6
                        ),
                        "progress"
                    );
                }
            }
        }
        st.phase = Phase::FinishingLayer;
        drop(st);
        Ok(ExpandStats {
            expanded: self.counters.expanded.load(Relaxed) - expanded_before,
            generated: self.counters.generated.load(Relaxed) - generated_before,
        })
    }
}

/// The executor of a [`Job`]: a layer's tasks leased to worker processes.
struct RemoteExecutor<'j> {
    job: &'j Job,
}

impl Executor for RemoteExecutor<'_> {
    fn expand_layer(
        &mut self,
        layer: &Layer<'_>,
        observer: &dyn BuildObserver,
    ) -> Result<ExpandStats> {
        self.job.expand_layer(layer, observer)
    }
}

/// The job's tables, searched and written in order ([`build_set`]), checkpointed.
struct JobBuilder<'a> {
    job: &'a Job,
    data: &'a DataDir,
    manifest: &'a mut Manifest,
    reports: Vec<TableReport>,
}

impl TableBuilder for JobBuilder<'_> {
    type Error = Error;

    fn build(&mut self, index: usize, _space: &StateSpace) -> Result<BuiltTable> {
        self.job.search(index, self.data, self.manifest)
    }

    fn written(
        &mut self,
        index: usize,
        space: &StateSpace,
        table: &BuiltTable,
        pdb: &Pdb,
    ) -> Result<()> {
        {
            let mut st = self.job.lock();
            st.arrays = None;
            st.tables_written = index + 1;
        }
        self.manifest.tables_written = index as u32 + 1;
        self.manifest.table = None;
        self.data
            .write_manifest(self.manifest, self.job.config.sync)?;
        self.data.remove_arrays(index);
        let report = TableReport::new(space, table, peak_rss_bytes(), None).with_table_file(pdb);
        tracing::info!(table = index, "{}", report.line());
        self.reports.push(report);
        Ok(())
    }
}

/// Gives up `attempt`'s lease of task `index`; a task left without live leases is pending
/// again (its attempts stay valid: a late result is still welcome).
fn release(st: &mut JobState, index: usize, attempt: u64) {
    let Some(slot) = st.tasks.get_mut(index) else {
        return;
    };
    if slot.status != Status_::Leased {
        return;
    }
    slot.active.retain(|&(a, _)| a != attempt);
    if slot.active.is_empty() {
        slot.status = Status_::Pending;
        st.pending.push_front(index);
    }
}

fn alive_workers(st: &JobState, timeout: Duration) -> usize {
    st.workers
        .values()
        .filter(|w| w.last_seen.elapsed() <= timeout && !w.told_done)
        .count()
}

fn unknown_worker(worker: u64) -> Status {
    Status::not_found(format!(
        "unknown worker {worker} (the coordinator may have restarted): register again"
    ))
}

/// Attempt numbers and worker ids start at a value of this run (time-based), so that those of
/// a previous run of the coordinator are not mistaken for this run's.
fn initial_attempt() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (nanos ^ (std::process::id() as u64) << 40) & ((1 << 62) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::DepthBytes;
    use tilepdb_common::table::Encoding;
    use tilepdb_common::{BlankRule, Goal, Partition};

    fn job(task_ranks: Option<u64>, tiles: &[&str]) -> Job {
        let tiles: Vec<String> = tiles.iter().map(|t| t.to_string()).collect();
        Job::new(JobConfig {
            spec: SetSpec::new(
                Partition::custom("4x4".parse().unwrap(), &tiles).unwrap(),
                Goal::BlankFirst,
                BlankRule::Minimized,
                Encoding::Byte,
            )
            .unwrap(),
            data_dir: "unused".into(),
            out: "unused".into(),
            lease_timeout: Duration::from_secs(1),
            task_ranks,
            tasks_per_layer: 16,
            sync: false,
            threads: 1,
            zstd_level: 1,
        })
        .unwrap()
    }

    /// The tasks of a layer hold every current state once, whatever the layer's shape.
    #[test]
    fn layer_plans_cover_every_current_state_once() {
        for task_ranks in [None, Some(100), Some(5000)] {
            let job = job(task_ranks, &["1,2,3,4"]);
            let space = &job.spaces[0];
            for (step, offset) in [(1u64, 0u64), (7, 3), (1000, 11), (50_000, 5), (u64::MAX, 7)] {
                let arrays = TableArrays {
                    codes: StateCodes::new(space.states()),
                    depths: DepthBytes::new(space.entries()),
                };
                let code = StateCodes::code_of_depth(3);
                let mut marked = 0;
                let mut s = offset;
                while s < space.states() {
                    arrays.codes.try_mark(s, code);
                    marked += 1;
                    s = s.saturating_add(step);
                }
                let (ranges, counts) = job.plan_layer(space, &arrays, code);
                assert_eq!(counts.iter().sum::<u64>(), marked);
                assert!(counts.iter().all(|&c| c > 0));
                for w in ranges.windows(2) {
                    assert!(w[0].end <= w[1].start, "overlapping tasks {ranges:?}");
                }
                for (r, &c) in ranges.iter().zip(&counts) {
                    let own = unit_states(space, r);
                    assert_eq!(arrays.codes.count_with_code(own, code), c);
                }
                if task_ranks.is_none() && step == 1 {
                    // A full layer: tasks of whole blocks.
                    let block = space.ranker().block_len();
                    assert!(
                        ranges
                            .iter()
                            .all(|r| r.start % block == 0 && r.end % block == 0)
                    );
                }
            }
        }
    }

    #[test]
    fn task_ids_round_trip() {
        let id = TaskId {
            table: 3,
            depth: 77,
            index: 123_456,
        };
        assert_eq!(TaskId::from_u64(id.to_u64()), Some(id));
    }
}
