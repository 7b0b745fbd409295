//! The layer loop: one breadth-first search of a table, whoever expands its layers.
//!
//! For each layer `D` (from the one a [`SearchProgress`] names), the loop asks the
//! [`Executor`] to expand it: every state with code `code_of_depth(D)` is expanded and the
//! unseen successors are marked `code_of_depth(D + 1)`, their depths recorded. Current states
//! keep their code for the whole layer, so a task done twice gets the same input. Then
//! [`finish_layer`] (one pass over the arrays) records the depth of every next-layer state
//! (repairing depths that a killed coordinator did not write), counts them and retires the
//! current states to done (a layer whose expansion is complete, as
//! [`SearchProgress::layer_expanded`] says on a resume, is only finished). The depth guard is
//! checked there, once. The search ends when a
//! layer adds no state; [`finish_table`] turns the arrays into the table's values.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::ThreadPool;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tilepdb_common::region_expand::ExpandStats;
use tilepdb_common::table::header::{histogram_mean, histogram_of};
use tilepdb_common::table::{DepthCode, PackedValues, TableValues};
use tilepdb_common::{BlankRule, StateCodes, StateSpace};

use super::arrays::TableArrays;
use super::kernel::goal_entries;
use super::stream::SearchedStore;
use super::units::StateIndex;
use crate::error::{Error, Result};
use tilepdb_common::depth_store::DepthBytes;
use tilepdb_common::table::UNREACHED;

/// Hears about a build's progress (a progress bar, log lines, a test).
pub trait BuildObserver: Sync {
    /// A layer of `states` states, cut into `tasks` tasks, starts.
    fn layer_started(&self, _depth: u32, _states: u64, _tasks: usize) {}
    /// The task of the units `units` is merged.
    fn task_finished(&self, _units: &Range<u64>) {}
    /// The layer is finished: `added` states in the next layer.
    fn layer_finished(&self, _depth: u32, _added: u64, _stats: ExpandStats) {}
}

/// Observes nothing.
impl BuildObserver for () {}

/// How far the search of a table got (checkpointed by the distributed job).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchProgress {
    /// The layer to expand next: every layer below is expanded and its states are done; its
    /// states carry `StateCodes::code_of_depth(next_depth)`.
    pub next_depth: u32,
    /// The search is over (the last layer added nothing): the table is ready to write.
    pub search_done: bool,
    /// States of the layer `next_depth`.
    pub layer_states: u64,
    /// States reached so far.
    pub states_found: u64,
    /// States expanded so far.
    pub expanded: u64,
    /// Successors generated so far.
    pub generated: u64,
    /// Entries of the table first reached by each finished layer (`layer_entries[d]`: at
    /// depth `d + 1`), counted on the region index for every rule but `minimized`: the
    /// histogram of a table whose depth store keeps only a packed code.
    #[serde(default)]
    pub layer_entries: Vec<u64>,
    /// States of each layer reached so far, by depth (`layer_counts[0]` is the goal's 1):
    /// every layer's count, as the loop finished it. Empty in a checkpoint of an earlier
    /// version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layer_counts: Vec<u64>,
    /// The layer `next_depth` is expanded already and only its finishing pass is left: a
    /// coordinator stopped while finishing it, as its resumed checkpoint showed. Not itself
    /// checkpointed.
    #[serde(skip)]
    pub layer_expanded: bool,
}

impl SearchProgress {
    /// A search whose goal is marked: layer 0 holds one state.
    pub fn start() -> SearchProgress {
        SearchProgress {
            next_depth: 0,
            search_done: false,
            layer_states: 1,
            states_found: 1,
            expanded: 0,
            generated: 0,
            layer_entries: Vec::new(),
            layer_counts: vec![1],
            layer_expanded: false,
        }
    }
}

impl SearchProgress {
    /// Counts the layer `next_depth` as finished: it was expanded with `stats` and reached
    /// `added` new states, standing for `entries` of the table's entries. Refuses a layer
    /// deeper than a byte per entry can hold.
    pub fn layer_finished(
        &mut self,
        space: &StateSpace,
        added: u64,
        entries: u64,
        stats: ExpandStats,
    ) -> Result<()> {
        let depth = self.next_depth;
        if added > 0 && depth + 1 > MAX_DEPTH {
            return Err(Error::Check {
                table: space.pattern().to_string(),
                reason: format!(
                    "distances exceed the {MAX_DEPTH} that one byte per entry can hold"
                ),
            });
        }
        self.next_depth = depth + 1;
        self.search_done = added == 0;
        self.layer_states = added;
        self.states_found += added;
        self.expanded += stats.expanded;
        self.generated += stats.generated;
        self.layer_entries.push(entries);
        if added > 0 && !self.layer_counts.is_empty() {
            self.layer_counts.push(added);
        }
        Ok(())
    }
}

impl Default for SearchProgress {
    fn default() -> Self {
        SearchProgress::start()
    }
}

/// The layer an executor is asked to expand.
pub struct Layer<'a> {
    /// Index of the table in its set.
    pub table: usize,
    /// The table's state space.
    pub space: &'a StateSpace,
    /// The index its states are searched on.
    pub index: &'a StateIndex,
    /// The table's arrays (shared: a remote executor's handlers read them too).
    pub arrays: &'a Arc<TableArrays>,
    /// Depth of the layer expanded.
    pub depth: u32,
    /// States in the layer.
    pub states: u64,
    /// States reached before this layer.
    pub states_found: u64,
}

/// Expands layers: in-process threads ([`super::ThreadsExecutor`]) or remote workers
/// ([`crate::cluster::driver::RemoteExecutor`]).
pub trait Executor {
    /// Expands every state of `layer`, marking its unseen successors as the next layer and
    /// recording their depths; calls `observer.layer_started` and `task_finished`. Returns
    /// what the expansion measured. On return no task of the layer may still write.
    fn expand_layer(
        &mut self,
        layer: &Layer<'_>,
        observer: &dyn BuildObserver,
    ) -> Result<ExpandStats>;
}

/// The deepest layer one byte per entry can hold (255 means unreached, 254 is refused).
pub const MAX_DEPTH: u32 = UNREACHED as u32 - 2;

/// Runs the layers of table `table` (of `space`, on `index`) from `progress` until one adds
/// no state, expanding them with `executor` and finishing them on `pool`; `layer_done` hears
/// of each finished layer (a checkpoint).
#[allow(clippy::too_many_arguments)]
pub fn search_table(
    table: usize,
    space: &StateSpace,
    index: &StateIndex,
    arrays: &Arc<TableArrays>,
    progress: &mut SearchProgress,
    executor: &mut dyn Executor,
    pool: &ThreadPool,
    observer: &dyn BuildObserver,
    mut layer_done: impl FnMut(&SearchProgress) -> Result<()>,
) -> Result<()> {
    while !progress.search_done {
        let depth = progress.next_depth;
        let layer = Layer {
            table,
            space,
            index,
            arrays,
            depth,
            states: progress.layer_states,
            states_found: progress.states_found,
        };
        let stats = if std::mem::take(&mut progress.layer_expanded) {
            // Every state of the layer was expanded before the stop; what the expansion
            // generated was not recorded.
            ExpandStats {
                expanded: progress.layer_states,
                generated: 0,
            }
        } else {
            executor.expand_layer(&layer, observer)?
        };
        let (added, entries) = finish_layer(space, index, arrays, depth, pool);
        observer.layer_finished(depth, added, stats);
        progress.layer_finished(space, added, entries, stats)?;
        layer_done(progress)?;
    }
    Ok(())
}

/// The tasks of the coordinator's own passes over a table's arrays.
fn pass_tasks(space: &StateSpace, index: &StateIndex) -> Vec<Range<u64>> {
    index.cut_units(space, None, 64)
}

/// Finishes the layer `depth`: records the depth of every state of the next layer (a no-op
/// unless a merge was cut short), retires every current state to done; returns the number of
/// states of the next layer and the number of the table's entries they stand for (an aware
/// state stands for the cells of its region; for the other rules the states again).
pub fn finish_layer(
    space: &StateSpace,
    index: &StateIndex,
    arrays: &TableArrays,
    depth: u32,
    pool: &ThreadPool,
) -> (u64, u64) {
    let current = StateCodes::code_of_depth(depth);
    let next = StateCodes::code_of_depth(depth + 1);
    let both = |n: u64| (n, n);
    pool.install(|| {
        pass_tasks(space, index)
            .par_iter()
            .map(|units| {
                let states = index.unit_states(space, units);
                let region = index.regions();
                let added = match space.rule() {
                    BlankRule::Minimized => {
                        // One depth byte per placement index `c * k! + order`: each block's
                        // orders onto its set's.
                        let f = region.orders();
                        let mut added = 0;
                        for c in units.clone() {
                            let first = region.first_block(c);
                            for r in 0..region.regions_of(c).len() as u64 {
                                let block = (first + r) * f;
                                added +=
                                    record_next(arrays, block..block + f, next, depth + 1, |s| {
                                        c * f + (s - block)
                                    });
                            }
                        }
                        both(added)
                    }
                    BlankRule::Aware => {
                        // A state (set, region, order) stands for every cell of its region.
                        let f = region.orders();
                        let mut counts = (0, 0);
                        for c in units.clone() {
                            let first = region.first_block(c);
                            for (r, &mask) in region.regions_of(c).iter().enumerate() {
                                let block = (first + r as u64) * f;
                                let n =
                                    record_next(arrays, block..block + f, next, depth + 1, |s| s);
                                counts.0 += n;
                                counts.1 += n * u64::from(mask.count_ones());
                            }
                        }
                        counts
                    }
                    _ => both(record_next(arrays, states.clone(), next, depth + 1, |s| s)),
                };
                if !arrays.store_is_state {
                    arrays.codes.retire(states, current);
                }
                added
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    })
}

/// Records the depth `depth` of every state of `states` whose code is `next` in its entry
/// `entry_of(state)` (the merge recorded it already when the depth store is the state: then
/// the states of that depth are counted); the number of such states.
#[inline]
fn record_next(
    arrays: &TableArrays,
    states: Range<u64>,
    next: u8,
    depth: u32,
    entry_of: impl Fn(u64) -> u64,
) -> u64 {
    if arrays.store_is_state {
        return arrays.depths.count_at_depth(states, depth);
    }
    let mut added = 0;
    arrays.codes.for_each_with_code(states, next, |s| {
        arrays.depths.record_first(entry_of(s), depth);
        added += 1;
    });
    added
}

/// A finished table: its values and what the build measured.
#[derive(Clone, Debug)]
pub struct BuiltTable {
    /// The value of each entry ([`UNREACHED`] for entries the search never reached), or only
    /// what the table's encoding stores of it when the build kept a packed depth store. Empty
    /// when the values are left in [`BuiltTable::store`].
    pub values: TableValues,
    /// The search's depth store, when the values were not put in the file's order but are
    /// to be streamed from it to the file ([`BuiltTable::write_file`], [`finish_search`]).
    pub store: Option<Arc<SearchedStore>>,
    /// Layers expanded, the goal's included.
    pub layers: u32,
    /// `histogram[v]` = entries of value `v` (reached entries only).
    pub histogram: Vec<u64>,
    /// Entries never reached.
    pub unreached: u64,
    /// Abstract states expanded over all layers.
    pub expanded: u64,
    /// Successors generated over all layers.
    pub generated: u64,
    /// Wall time of the search.
    pub elapsed: Duration,
    /// Bytes of the two-bit state array.
    pub state_array_bytes: u64,
    /// Bytes of the depth store.
    pub depth_bytes: u64,
}

impl BuiltTable {
    /// Largest value.
    pub fn max_value(&self) -> u8 {
        u8::try_from(self.histogram.len().saturating_sub(1)).expect("at most 256 values")
    }

    /// Mean value over reached entries.
    pub fn mean_value(&self) -> f64 {
        histogram_mean(&self.histogram).unwrap_or(0.0)
    }

    /// Lets the values go once they are written (the counts and figures stay).
    pub fn release_values(&mut self) {
        self.values = TableValues::Bytes(Vec::new());
        self.store = None;
    }

    /// Writes the table's file of `space` in `encoding` in `dir`, then lets the values go:
    /// streamed from the depth store part by part in file order when the build kept it
    /// ([`BuiltTable::store`]; the histogram and unreached count of a byte store are then
    /// the file's), else from the values. The file's path.
    pub fn write_file(
        &mut self,
        dir: &std::path::Path,
        space: &StateSpace,
        encoding: tilepdb_common::table::Encoding,
    ) -> Result<std::path::PathBuf> {
        let written = match self.store.take() {
            Some(store) => {
                let path = dir.join(crate::output::table_file_name(space));
                let packed = (self.histogram.as_slice(), self.unreached);
                store
                    .write(&path, space, encoding, Some(packed))
                    .map(|header| {
                        self.histogram = header.histogram;
                        self.unreached = header.unreached;
                        path
                    })
            }
            None => crate::output::write_table_file(dir, space, encoding, &self.values),
        };
        // On disk now: opening the file reads it, so the values go first.
        self.release_values();
        written
    }
}

/// The table of a finished search with its values left in the depth store, to be streamed to
/// its file in file order ([`BuiltTable::write_file`]): the two-bit array is let go first (if
/// no one else holds it). A packed store's histogram is the count of each layer's entries; a
/// byte store's is known once the file is written (empty until then). The parts of the file
/// are put in order on `pool`.
pub fn finish_search(
    space: &StateSpace,
    index: &StateIndex,
    arrays: Arc<TableArrays>,
    progress: &SearchProgress,
    pool: Arc<ThreadPool>,
    started: Instant,
) -> BuiltTable {
    let (state_array_bytes, depth_bytes) = (arrays.codes.bytes(), arrays.depths.memory_bytes());
    let code = arrays.depths.code();
    let store = SearchedStore::new(arrays, Arc::clone(index.regions()), pool);
    let mut table = table_of_values(
        space,
        code,
        Vec::new(),
        progress,
        started,
        (state_array_bytes, depth_bytes),
    );
    table.store = Some(Arc::new(store));
    table
}

/// The table of a finished search: the state array is let go first (if no one else holds
/// it), and the depth store becomes the values in the table's order: placement-rank order
/// ([`super::stream::file_order`]) except for a zero-aware table (whose order is the index's). A packed store gives packed values, whose histogram
/// is the count of each layer's entries. `started`: when the table's build started.
pub fn finish_table(
    space: &StateSpace,
    index: &StateIndex,
    arrays: Arc<TableArrays>,
    progress: &SearchProgress,
    pool: &ThreadPool,
    started: Instant,
) -> BuiltTable {
    let (state_array_bytes, depth_bytes) = (arrays.codes.bytes(), arrays.depths.memory_bytes());
    let code = arrays.depths.code();
    let values = |depths: DepthOrShared<'_>| match space.rule() {
        BlankRule::ZeroAware => depths.into_values(),
        _ => pool.install(|| super::stream::file_order(space, index.regions(), depths.get())),
    };
    let data = match Arc::try_unwrap(arrays) {
        Ok(TableArrays { codes, depths, .. }) => {
            drop(codes);
            values(DepthOrShared::Owned(depths))
        }
        Err(shared) => values(DepthOrShared::Shared(&shared.depths)),
    };
    table_of_values(
        space,
        code,
        data,
        progress,
        started,
        (state_array_bytes, depth_bytes),
    )
}

/// The table of a finished search from its values in the file's order (`data`: a byte per
/// entry for a byte store, else the packed codes of `code`, whose histogram is the count of
/// each layer's entries in `progress`); `arrays`: the bytes of the two-bit array and of the
/// depth store that the search held.
pub fn table_of_values(
    space: &StateSpace,
    code: DepthCode,
    data: Vec<u8>,
    progress: &SearchProgress,
    started: Instant,
    arrays: (u64, u64),
) -> BuiltTable {
    let (values, histogram, unreached) = if code == DepthCode::Byte {
        let (histogram, unreached) = histogram_of(&data);
        (TableValues::Bytes(data), histogram, unreached)
    } else {
        let mut histogram = vec![goal_entries(space)];
        histogram.extend(&progress.layer_entries);
        let len = histogram.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
        histogram.truncate(len);
        let unreached = space.entries() - histogram.iter().sum::<u64>();
        let packed = PackedValues {
            code,
            data,
            entries: space.entries(),
            histogram: histogram.clone(),
            unreached,
        };
        (TableValues::Packed(packed), histogram, unreached)
    };
    BuiltTable {
        values,
        store: None,
        layers: progress.next_depth,
        histogram,
        unreached,
        expanded: progress.expanded,
        generated: progress.generated,
        elapsed: started.elapsed(),
        state_array_bytes: arrays.0,
        depth_bytes: arrays.1,
    }
}

/// Depth bytes owned by the finishing pass, or still shared with a request handler.
enum DepthOrShared<'a> {
    Owned(DepthBytes),
    Shared(&'a DepthBytes),
}

impl DepthOrShared<'_> {
    fn get(&self) -> &DepthBytes {
        match self {
            DepthOrShared::Owned(d) => d,
            DepthOrShared::Shared(d) => d,
        }
    }

    fn into_values(self) -> Vec<u8> {
        match self {
            DepthOrShared::Owned(d) => d.into_values(),
            DepthOrShared::Shared(d) => d.values(),
        }
    }
}
