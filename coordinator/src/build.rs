//! The layered breadth-first search of one pattern, run by a pool of in-process workers.
//!
//! Each layer is cut into rank-range tasks ([`cut_layer`]); workers expand them with
//! [`expand_range`] and hand every state they reach to the [`LayerMerge`]. The search stops
//! when a layer adds no state. The finished values are one byte per entry.
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! // Every tile of the 2x2 board: the exact distances of its 12 reachable states.
//! let board: Board = "2x2".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let table = build_table(&space, &BuildOptions::default(), &()).unwrap();
//! assert_eq!(table.histogram, vec![1, 2, 2, 2, 2, 2, 1]);
//! assert_eq!(table.unreached, 12);
//! ```

use std::ops::Range;
use std::time::{Duration, Instant};
pub use tilepdb_common::human_bytes;

use rayon::prelude::*;
use tilepdb_common::layer::CodeLayer;
use tilepdb_common::table::header::histogram_mean;
use tilepdb_common::{BlankRule, MAX_CELLS, StateCodes, StateSpace, cut_layer};
use tilepdb_worker::{ExpandStats, expand_range};

use crate::error::{Error, Result};
use crate::merge::{DepthBytes, LayerMerge, PrefetchedMerge, UNREACHED};

/// How to run a build.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Worker threads; 0 means every core.
    pub threads: usize,
    /// Most ranks per task; `None` picks a size that gives each thread many tasks.
    pub task_ranks: Option<u64>,
    /// Most bytes the build may hold; `None` means no limit.
    pub memory_limit: Option<u64>,
    /// The state index of the search (zero-aware tables are always built on the region index).
    pub index: SearchIndex,
}

/// Which state index a single-machine build searches on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchIndex {
    /// (set, region, order), dense: [`crate::region_build`].
    #[default]
    Region,
    /// `rank * (n - k) + free-cell slot`, a region represented by its least cell: the first
    /// index, kept to compare the two (and the one the distributed mode uses).
    Cell,
}

impl SearchIndex {
    /// Whether `space` is built on the region index under this choice.
    pub fn is_region_for(self, space: &StateSpace) -> bool {
        self == SearchIndex::Region || space.rule() == BlankRule::ZeroAware
    }
}

/// Hears about a build's progress (a progress bar, log lines, a test).
pub trait BuildObserver: Sync {
    fn layer_started(&self, _depth: u32, _states: u64, _tasks: usize) {}
    fn task_finished(&self, _ranks: &Range<u64>) {}
    fn layer_finished(&self, _depth: u32, _added: u64, _stats: ExpandStats) {}
}

/// Observes nothing.
impl BuildObserver for () {}

/// A finished table: one byte per entry and what the build measured.
#[derive(Clone, Debug)]
pub struct BuiltTable {
    /// The value of each entry, [`UNREACHED`] for entries the search never reached.
    pub values: Vec<u8>,
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
    /// Bytes of the two-bit state array and of the depth bytes.
    pub state_array_bytes: u64,
    pub depth_bytes: u64,
}

impl BuiltTable {
    /// Largest value.
    pub fn max_value(&self) -> u8 {
        self.histogram.len().saturating_sub(1) as u8
    }

    /// Mean value over reached entries.
    pub fn mean_value(&self) -> f64 {
        histogram_mean(&self.histogram).unwrap_or(0.0)
    }
}

/// Bytes a single-machine build of `space` holds, and what they are, in words.
pub fn build_memory(space: &StateSpace, index: SearchIndex) -> Result<(u64, String)> {
    if index.is_region_for(space) {
        return crate::region_build::region_build_memory(space);
    }
    Ok((
        space.build_memory_bytes(),
        format!(
            "two-bit array of {} states {} + {} depth bytes",
            space.states(),
            human_bytes(space.states().div_ceil(4)),
            human_bytes(space.entries())
        ),
    ))
}

/// Refuses, with the figure, a build of `space` on `index` that would not fit in `limit` bytes.
pub fn check_build_memory(
    space: &StateSpace,
    index: SearchIndex,
    limit: Option<u64>,
) -> Result<()> {
    if index.is_region_for(space) {
        return crate::region_build::check_region_memory(space, limit);
    }
    check_memory(space, limit)
}

/// Refuses, with the figure, a cell-indexed build that would not fit in `limit` bytes.
pub fn check_memory(space: &StateSpace, limit: Option<u64>) -> Result<()> {
    let needed = space.build_memory_bytes();
    if let Some(limit) = limit.filter(|&l| needed > l) {
        return Err(Error::TooLarge {
            pattern: space.pattern().to_string(),
            needed: human_bytes(needed),
            detail: format!(
                "two-bit array of {} states {} + {} depth bytes",
                space.states(),
                human_bytes(space.states().div_ceil(4)),
                human_bytes(space.entries())
            ),
            limit: human_bytes(limit),
        });
    }
    Ok(())
}

/// Builds the table of `space`.
pub fn build_table(
    space: &StateSpace,
    options: &BuildOptions,
    observer: &impl BuildObserver,
) -> Result<BuiltTable> {
    if options.index.is_region_for(space) {
        return crate::region_build::build_region_table(space, options, observer);
    }
    check_memory(space, options.memory_limit)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .thread_name(|i| format!("tilepdb-worker-{i}"))
        .build()
        .map_err(|e| Error::ThreadPool(e.to_string()))?;
    let threads = pool.current_num_threads() as u64;
    let started = Instant::now();

    let codes = StateCodes::new(space.states());
    let depths = DepthBytes::new(space.entries());
    let goal = space.goal_state();
    LayerMerge::new(&codes, &depths, space.rule(), space.slots(), 0).reached_goal(goal);

    let tasks = layer_tasks(space, options.task_ranks, threads * 16);

    let mut total = ExpandStats::default();
    let mut layer_states = 1u64;
    let mut depth = 0u32;
    loop {
        observer.layer_started(depth, layer_states, tasks.len());
        let current = CodeLayer {
            codes: &codes,
            depth,
        };
        let (stats, added) = pool.install(|| {
            tasks
                .par_iter()
                .map(|ranks| {
                    let merge =
                        LayerMerge::new(&codes, &depths, space.rule(), space.slots(), depth + 1);
                    let mut prefetched = PrefetchedMerge::new(merge);
                    let stats = expand_range(space, ranks.clone(), &current, &mut prefetched);
                    let merge = prefetched.finish();
                    merge.retire_task(ranks.clone());
                    observer.task_finished(ranks);
                    (stats, merge.added)
                })
                .reduce(
                    || (ExpandStats::default(), 0),
                    |(mut a, x), (b, y)| {
                        a += b;
                        (a, x + y)
                    },
                )
        });
        total += stats;
        observer.layer_finished(depth, added, stats);
        if added == 0 {
            break;
        }
        if depth + 1 >= UNREACHED as u32 - 1 {
            return Err(Error::Check {
                table: space.pattern().to_string(),
                reason: "distances exceed the 253 that one byte per entry can hold".into(),
            });
        }
        layer_states = added;
        depth += 1;
    }

    if space.rule() == BlankRule::Aware {
        pool.install(|| spread_region_values(space, &depths, &tasks));
    }
    let state_array_bytes = codes.bytes();
    drop(codes);
    let depth_bytes = depths.len();
    let values = depths.into_values();
    let (histogram, unreached) = histogram(&values);
    Ok(BuiltTable {
        values,
        layers: depth + 1,
        histogram,
        unreached,
        expanded: total.expanded,
        generated: total.generated,
        elapsed: started.elapsed(),
        state_array_bytes,
        depth_bytes,
    })
}

/// The tasks of each layer of `space`, for both single-machine and distributed builds:
/// rank ranges of at most `task_ranks` ranks (default: about `parts` tasks, at least 4096
/// ranks each) cut along the rank's blocks ([`cut_layer`]).
pub fn layer_tasks(space: &StateSpace, task_ranks: Option<u64>, parts: u64) -> Vec<Range<u64>> {
    let placements = space.placements();
    let max_ranks = task_ranks.unwrap_or_else(|| (placements / parts.max(1)).max(4096));
    cut_layer(placements, space.ranker().block_len(), max_ranks)
}

impl LayerMerge<'_> {
    /// Marks the goal as the layer of depth 0 (`self.depth` must be 0).
    pub fn reached_goal(mut self, goal: u64) {
        use tilepdb_worker::ReachedSink;
        self.reached(goal);
    }
}

/// An aware table gives every cell of a region the value of the region's least cell
/// (idempotent: the least cell's value never changes).
pub fn spread_region_values(space: &StateSpace, depths: &DepthBytes, tasks: &[Range<u64>]) {
    let slots = space.slots();
    let board = space.board();
    tasks.par_iter().for_each(|ranks| {
        let mut cells = [0u8; MAX_CELLS];
        for rank in ranks.clone() {
            let free = board.all_cells() & !space.ranker().unrank(rank, &mut cells);
            let base = rank * slots;
            let mut left = free;
            let mut slot = 0u64;
            let mut slot_of_cell = [0u64; MAX_CELLS];
            let mut f = free;
            while f != 0 {
                slot_of_cell[f.trailing_zeros() as usize] = slot;
                slot += 1;
                f &= f - 1;
            }
            while left != 0 {
                let least = left.trailing_zeros() as usize;
                let region = board.region(least, free);
                left &= !region;
                let value = depths.get(base + slot_of_cell[least]);
                let mut others = region & !(1 << least);
                while others != 0 {
                    depths.set(base + slot_of_cell[others.trailing_zeros() as usize], value);
                    others &= others - 1;
                }
            }
        }
    });
}

/// Counts of each value of reached entries, and the number of unreached entries.
pub fn histogram(values: &[u8]) -> (Vec<u64>, u64) {
    let mut counts = [0u64; 256];
    for &v in values {
        counts[v as usize] += 1;
    }
    let unreached = counts[UNREACHED as usize];
    counts[UNREACHED as usize] = 0;
    let len = counts.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    (counts[..len].to_vec(), unreached)
}
