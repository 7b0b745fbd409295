//! Executing one task of a job on the region index: expand the current-layer states of a range
//! of tile sets with [`RegionKernel`] (every thread of a pool) and collect the distinct states
//! they reach, in order.
//!
//! Successors inside the task's own states are collected in a bitmap of the own states (one
//! bit per own state removes their duplicates), the others in per-thread lists sorted and
//! deduplicated at the end, so a worker's memory is bounded by its task.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::region_index::{OrderMoves, RegionIndex};
use tilepdb_common::wire::region_lists::RegionListShape;
use tilepdb_common::{BlankRule, LayerBitmap, StateSpace};

use tilepdb_common::region_expand::{ExpandStats, RegionKernel};
use tilepdb_common::wire::proto::{JobSpec, Task};

use crate::error::{Error, Result};

/// What a task reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskOutput {
    /// The distinct states reached, increasing.
    pub reached: Vec<u64>,
    /// What the expansion did.
    pub stats: ExpandStats,
}

/// What a worker keeps of a table searched on the region index: its index and order moves.
pub struct RegionTable {
    /// The region index of the table's board and pattern size (shared: a coordinator that
    /// re-executes tasks uses the index its search holds).
    pub index: Arc<RegionIndex>,
    /// The order moves of its `k` tiles.
    pub moves: OrderMoves,
    /// The blank is ignored: blocks are tile sets.
    pub ignored: bool,
}

impl RegionTable {
    /// The table of `index` (`ignored`: the blank ignored).
    pub fn new(index: RegionIndex, ignored: bool) -> RegionTable {
        RegionTable::shared(Arc::new(index), ignored)
    }

    /// The table of the shared `index` (`ignored`: the blank ignored).
    pub fn shared(index: Arc<RegionIndex>, ignored: bool) -> RegionTable {
        let moves = OrderMoves::new(index.k());
        RegionTable {
            index,
            moves,
            ignored,
        }
    }

    /// The table of `space` (its region index shared, [`StateSpace::region_index`]).
    pub fn of(space: &StateSpace) -> tilepdb_common::Result<RegionTable> {
        Ok(RegionTable::shared(
            space.region_index()?,
            space.rule() == BlankRule::Ignored,
        ))
    }

    /// The shape of the lists of states of `space`'s layer at `depth`.
    pub fn list_shape(&self, space: &StateSpace, depth: u32) -> RegionListShape<'_> {
        RegionListShape::new(&self.index, self.ignored, space.goal_cells(), depth)
    }

    fn kernel(&self) -> RegionKernel<'_> {
        RegionKernel::new(&self.index, &self.moves, self.ignored)
    }

    /// The states of the sets of rank `sets`: a contiguous range of the index.
    pub fn states_of(&self, sets: Range<u64>) -> Range<u64> {
        self.kernel().states_of(sets)
    }
}

/// Expands the states of `input` (the layer's states of the sets `sets`, increasing), cutting
/// the sets into pieces for the threads of the current rayon pool.
///
/// ```
/// use tilepdb_common::region_index::RegionIndex;
/// use tilepdb_worker::region_task::{RegionTable, run_region_task};
/// // Tile 1 alone on 3x3 with the blank ignored: from cell 1 it steps to 0, 2 and 4.
/// let table = RegionTable::new(RegionIndex::new("3x3".parse().unwrap(), 1).unwrap(), true);
/// let sets = 0..table.index.sets();
/// let out = run_region_task(&table, sets, &[table.index.placement_index(&[1])]);
/// assert_eq!(out.reached, vec![0, 2, 4]);
/// ```
pub fn run_region_task(table: &RegionTable, sets: Range<u64>, input: &[u64]) -> TaskOutput {
    let kernel = table.kernel();
    let own = kernel.states_of(sets.clone());
    let mut current = LayerBitmap::new(own.clone());
    for &s in input {
        current.insert(s);
    }
    let own_len = own.end - own.start;
    let bits: Vec<AtomicU64> = (0..own_len.div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    let threads = rayon::current_num_threads() as u64;
    let piece = (sets.end - sets.start).div_ceil(threads * 8).max(1);
    let pieces: Vec<Range<u64>> = (sets.start..sets.end)
        .step_by(
            usize::try_from(piece).expect("a piece is a share of the sets of a task in memory"),
        )
        .map(|s| s..(s + piece).min(sets.end))
        .collect();
    let (stats, mut outside) = pieces
        .into_par_iter()
        .map(|piece| {
            let mut outside = Vec::new();
            let mut sink = |s: u64, _placement: u64| {
                if own.contains(&s) {
                    let i = s - own.start;
                    let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
                    if bits[w].load(Relaxed) & bit == 0 {
                        bits[w].fetch_or(bit, Relaxed);
                    }
                } else {
                    outside.push(s);
                }
            };
            let stats = kernel.expand(piece, &current, &mut sink);
            outside.sort_unstable();
            outside.dedup();
            (stats, outside)
        })
        .reduce(
            || (ExpandStats::default(), Vec::new()),
            |(mut a, mut x), (b, mut y)| {
                a += b;
                if x.len() < y.len() {
                    std::mem::swap(&mut x, &mut y);
                }
                x.append(&mut y);
                (a, x)
            },
        );
    outside.par_sort_unstable();
    outside.dedup();
    // Below the own states, the own states, above them: one increasing list.
    let split = outside.partition_point(|&s| s < own.start);
    let own_count: usize = bits
        .iter()
        .map(|w| w.load(Relaxed).count_ones() as usize)
        .sum();
    let mut reached = Vec::with_capacity(outside.len() + own_count);
    reached.extend_from_slice(&outside[..split]);
    for (i, w) in bits.iter().enumerate() {
        let mut w = w.load(Relaxed);
        while w != 0 {
            reached.push(own.start + i as u64 * 64 + u64::from(w.trailing_zeros()));
            w &= w - 1;
        }
    }
    reached.extend_from_slice(&outside[split..]);
    TaskOutput { reached, stats }
}

/// The region index of each table of a job, which must be searched on it: a job that searches
/// on another index is refused.
pub fn region_tables(job: Option<&JobSpec>, spaces: &[StateSpace]) -> Result<Vec<RegionTable>> {
    let index = job.map_or("", |j| j.search_index.as_str());
    if index != tilepdb_common::wire::SEARCH_INDEX {
        let named = if index.is_empty() { "cell" } else { index };
        return Err(Error::Refused(format!(
            "its job searches on the {named} index; this worker expands the {} index only",
            tilepdb_common::wire::SEARCH_INDEX
        )));
    }
    Ok(spaces
        .iter()
        .map(RegionTable::of)
        .collect::<tilepdb_common::Result<Vec<_>>>()?)
}

/// The task's table and its region index, if its fields are consistent with the job.
pub fn check_task<'a>(
    task: &Task,
    spaces: &'a [StateSpace],
    regions: &'a [RegionTable],
) -> Result<(&'a StateSpace, &'a RegionTable), String> {
    let (space, region) = spaces
        .get(task.table as usize)
        .zip(regions.get(task.table as usize))
        .ok_or_else(|| format!("task for table {} of {}", task.table, spaces.len()))?;
    let sets = region.index.sets();
    if task.first_rank >= task.end_rank || task.end_rank > sets {
        return Err(format!(
            "task tile sets {}..{} outside 0..{sets}",
            task.first_rank, task.end_rank,
        ));
    }
    let own = region.states_of(task.first_rank..task.end_rank);
    let most_bytes = region.list_shape(space, task.depth).max_bytes(task.states);
    if task.states > own.end - own.start || task.input_bytes > most_bytes {
        return Err(format!(
            "{} bytes cannot list {} states of tile sets {}..{}",
            task.input_bytes, task.states, task.first_rank, task.end_rank
        ));
    }
    Ok((space, region))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::Board;

    /// A task reports exactly the distinct successors of its states, in order.
    #[test]
    fn reports_the_distinct_successors() {
        let board: Board = "3x4".parse().unwrap();
        for ignored in [false, true] {
            let table = RegionTable::new(RegionIndex::new(board, 3).unwrap(), ignored);
            let sets = table.index.sets();
            let all = table.states_of(0..sets);
            for task in [0..sets, 3..40, 100..101] {
                let own = table.states_of(task.clone());
                let input: Vec<u64> = own.clone().step_by(5).collect();
                let out = rayon::ThreadPoolBuilder::new()
                    .num_threads(3)
                    .build()
                    .unwrap()
                    .install(|| run_region_task(&table, task.clone(), &input));
                let mut layer = LayerBitmap::new(all.clone());
                for &s in &input {
                    layer.insert(s);
                }
                let mut want = vec![];
                let stats = table
                    .kernel()
                    .expand(task, &layer, &mut |s: u64, _p: u64| want.push(s));
                want.sort_unstable();
                want.dedup();
                assert_eq!(out.reached, want);
                assert_eq!(out.stats, stats);
            }
        }
    }
}
