//! The driver: the distributed job's tables built one after the other by the engine
//! ([`build_set`], [`search_table`]) on the region index
//! ([`crate::engine::StateIndex`], as the single machine searches), with the workers as the executor ([`RemoteExecutor`]) and the data
//! directory's [`Checkpoint`] after every layer.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use tilepdb_common::region_expand::ExpandStats;
use tilepdb_common::table::Pdb;
use tilepdb_common::{StateCodes, StateSpace};

use super::job::{ExpandingLayer, Job, Stage};
use super::lease::LayerTasks;
use super::plan::plan_layer;
use super::store::{Checkpoint, DataDir};
use crate::build::{BuildObserver, BuiltTable, human_bytes};
use crate::engine::{Executor, Layer, Reuse, TableBuilder, build_set, finish_table, search_table};
use crate::error::{Error, Result};
use crate::report::{TableReport, peak_rss_bytes};
use tilepdb_proof::Proof;

/// How often the driver logs the progress of a layer.
const PROGRESS_LOG: Duration = Duration::from_secs(5);

/// Logs the job's progress (layers, tables, the end): at info level, or at debug level while
/// the job's progress is drawn on a terminal ([`Job::progress_drawn`]), whose bars say the same.
macro_rules! progress {
    ($job:expr, $($event:tt)+) => {
        if $job.progress_drawn() {
            tracing::debug!($($event)+)
        } else {
            tracing::info!($($event)+)
        }
    };
}

impl Job {
    /// Runs every remaining layer of every remaining table, checkpointing in `data`, and
    /// writes the tables. Returns a report per table built by this run.
    pub fn drive(&self, data: &DataDir) -> Result<Vec<TableReport>> {
        let checkpoint = Checkpoint::open(data, &self.id, self.config.sync, &self.spaces)?;
        let written = checkpoint.tables_written();
        let mut builder = JobBuilder {
            job: self,
            checkpoint,
            reports: Vec::new(),
            proof: None,
        };
        let set = build_set(
            &self.config.spec,
            &self.config.out,
            Reuse::Written(written),
            &mut builder,
        )?;
        let reports = builder.reports;
        self.set_stage(Stage::Done);
        progress!(
            self,
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
    fn search(&self, table: usize, checkpoint: &mut Checkpoint<'_>) -> Result<BuiltTable> {
        let (space, index) = (&self.spaces[table], &self.indexes[table]);
        let table_started = Instant::now();
        let (arrays, mut progress) = checkpoint.begin_table(table, space, index)?;
        progress!(
            self,
            table,
            pattern = %space.pattern(),
            states = index.states(space),
            arrays = %human_bytes(arrays.bytes()),
            "building table {} of {}",
            table + 1,
            self.spaces.len()
        );
        self.record_layers(table, &progress.layer_counts);
        let arrays = Arc::new(arrays);
        let mut layer_started = Instant::now();
        let mut expanded = progress.layer_states;
        search_table(
            table,
            space,
            index,
            &arrays,
            &mut progress,
            &mut RemoteExecutor {
                job: self,
                flush_codes: checkpoint.codes_to_flush(table),
            },
            &self.pool,
            &(),
            |p| {
                checkpoint.layer_done(table, space, &arrays, p)?;
                self.record_layers(table, &p.layer_counts);
                let (alive, tasks) = {
                    let st = self.lock();
                    (st.workers.alive(Instant::now()), st.tasks_total)
                };
                let secs = layer_started.elapsed().as_secs_f64();
                progress!(
                    self,
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
        // The job has let the arrays go (only `Expanding` holds them): the state array's
        // memory goes before the values are copied out, unless a handler still holds it.
        self.set_stage(Stage::WritingTable);
        Ok(finish_table(
            space,
            index,
            arrays,
            &progress,
            &self.pool,
            table_started,
        ))
    }

    /// Records the states of each layer of table `table` so far, for the status.
    fn record_layers(&self, table: usize, layer_counts: &[u64]) {
        let mut st = self.lock();
        if let Some(layers) = st.table_layers.get_mut(table) {
            layers.clear();
            layers.extend_from_slice(layer_counts);
        }
    }

    /// Publishes the tasks of `layer` to the workers and waits until each one's result is
    /// merged.
    fn expand_with_workers(
        &self,
        layer: &Layer<'_>,
        observer: &dyn BuildObserver,
    ) -> Result<ExpandStats> {
        let (table, space, depth) = (layer.table, layer.space, layer.depth);
        let expanded_before = self.counters.expanded.load(Relaxed);
        let generated_before = self.counters.generated.load(Relaxed);
        let current = StateCodes::code_of_depth(depth);
        let (ranges, counts) = plan_layer(
            space,
            layer.index,
            layer.arrays,
            current,
            self.config.task_ranks,
            self.config.tasks_per_layer,
            &self.pool,
        );
        let layer_states: u64 = counts.iter().sum();
        observer.layer_started(depth, layer_states, ranges.len());
        {
            let mut st = self.lock();
            if matches!(st.stage, Stage::Failed) {
                return Err(stopped());
            }
            let tasks = LayerTasks::new(ranges, &counts);
            st.table = table;
            st.depth = depth;
            st.layer_states = layer_states;
            st.states_found = layer.states_found;
            st.tasks_done = tasks.done();
            st.tasks_total = tasks.len();
            st.workers.clear_holdings();
            st.stage = Stage::Expanding(ExpandingLayer {
                arrays: layer.arrays.clone(),
                tasks,
            });
        }
        self.raise();
        tracing::debug!(table, depth, layer_states, "layer published");

        // Wait for every result, saying how it goes.
        let mut last_log = Instant::now();
        let mut st = self.lock();
        loop {
            match &st.stage {
                Stage::Failed => return Err(stopped()),
                Stage::Expanding(l) if l.tasks.is_complete() => break,
                _ => {}
            }
            let next_log = PROGRESS_LOG.saturating_sub(last_log.elapsed());
            st = self.wait(st, next_log);
            if last_log.elapsed() >= PROGRESS_LOG {
                last_log = Instant::now();
                let alive = st.workers.alive(last_log);
                if alive == 0 {
                    tracing::warn!(
                        table,
                        depth,
                        tasks_done = st.tasks_done,
                        tasks = st.tasks_total,
                        "no worker alive: waiting for workers"
                    );
                } else {
                    let secs = self.started.elapsed().as_secs_f64();
                    progress!(
                        self,
                        table,
                        depth,
                        layer_states,
                        states_found = st.states_found,
                        tasks_done = st.tasks_done,
                        tasks = st.tasks_total,
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
        drop(st);
        self.set_stage(Stage::FinishingLayer);
        Ok(ExpandStats {
            expanded: self.counters.expanded.load(Relaxed) - expanded_before,
            generated: self.counters.generated.load(Relaxed) - generated_before,
        })
    }
}

fn stopped() -> Error {
    Error::Serve("the job was stopped".into())
}

/// The executor of a [`Job`]: a layer's tasks leased to worker processes.
pub struct RemoteExecutor<'j> {
    job: &'j Job,
    /// The state array's file, flushed once a layer is expanded (when the job syncs).
    flush_codes: Option<std::path::PathBuf>,
}

impl Executor for RemoteExecutor<'_> {
    fn expand_layer(
        &mut self,
        layer: &Layer<'_>,
        observer: &dyn BuildObserver,
    ) -> Result<ExpandStats> {
        let stats = self.job.expand_with_workers(layer, observer)?;
        if let Some(path) = &self.flush_codes {
            layer.arrays.codes.flush().map_err(|e| Error::io(path, e))?;
        }
        Ok(stats)
    }
}

/// The job's tables, searched and written in order ([`build_set`]), checkpointed.
struct JobBuilder<'a> {
    job: &'a Job,
    checkpoint: Checkpoint<'a>,
    reports: Vec<TableReport>,
    /// What the check of the table being written proved.
    proof: Option<Proof>,
}

impl TableBuilder for JobBuilder<'_> {
    type Error = Error;

    fn build(&mut self, index: usize, _space: &StateSpace) -> Result<BuiltTable> {
        self.job.search(index, &mut self.checkpoint)
    }

    fn proves(&self) -> bool {
        self.job.config.prove
    }

    fn rejected(&mut self, index: usize, _space: &StateSpace, _error: &Error) -> Result<()> {
        // Where the damage is cannot be told from the table: search it again from its goal,
        // every result re-executed by the coordinator, and compared with the search that
        // failed (a worker whose result differed on the same input is banned).
        self.job.counters.tables_rejected.fetch_add(1, Relaxed);
        self.job.audit.table_rejected(index);
        tracing::warn!(
            table = index,
            "searching the table again with every result re-executed by the coordinator"
        );
        self.checkpoint.restart_table(index)
    }

    fn proven(&mut self, _index: usize, _space: &StateSpace, proof: Proof) -> Result<()> {
        self.proof = Some(proof);
        Ok(())
    }

    fn written(
        &mut self,
        index: usize,
        space: &StateSpace,
        table: &BuiltTable,
        pdb: &Pdb,
    ) -> Result<()> {
        self.checkpoint.table_written(index)?;
        self.job.audit.table_written(index);
        self.job.lock().tables_written = index + 1;
        let report = TableReport::new(space, table, peak_rss_bytes(), None)
            .with_table_file(pdb)
            .with_proof(self.proof.take());
        progress!(self.job, table = index, pattern = %space.pattern(), "{}", report.line());
        self.reports.push(report);
        Ok(())
    }
}
