//! The layered breadth-first search on the region index ([`RegionIndex`]), run by a pool of
//! in-process threads.
//!
//! The two-bit state array holds one code per state of the dense (set, region, order) index
//! (`T * k!` states; the placements when the blank is ignored). Each layer is cut into ranges
//! of tile-set ranks, a contiguous range of states each; threads expand them with
//! [`RegionKernel`] and mark what they reach. The depths kept during the search:
//!
//! * `minimized`: one byte per placement index (`c * k! + order`), the first depth at which any
//!   region of the placement was reached;
//! * `aware`, `zero-aware`: one byte per state; `ignored`: one per placement (its state).
//!
//! At the end the values are put in the table's order: `minimized`, `aware` and `ignored`
//! tables keep the placement-rank order of [`tilepdb_common::PlacementRanker`] (and
//! `rank * (n - k) + slot` for aware), so their bytes equal those of the cell-indexed search;
//! a `zero-aware` table is in the order of the region index.
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::BuildOptions;
//! use tilepdb_coordinator::region_build::build_region_table;
//! let board: Board = "2x2".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let table = build_region_table(&space, &BuildOptions::default(), &()).unwrap();
//! assert_eq!(table.histogram, vec![1, 2, 2, 2, 2, 2, 1]);
//! ```

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;
use tilepdb_common::layer::CodeLayer;
use tilepdb_common::region_index::{OrderMoves, RegionIndex};
use tilepdb_common::{BlankRule, MAX_CELLS, StateCodes, StateSpace};
use tilepdb_worker::ExpandStats;
use tilepdb_worker::region_expand::{RegionKernel, RegionSink};

use crate::build::{BuildObserver, BuildOptions, BuiltTable, histogram, human_bytes};
use crate::error::{Error, Result};
use crate::merge::{DepthBytes, UNREACHED};

/// The most a region-indexed build of `space` holds in memory at once, in bytes (the depth
/// bytes with the two-bit array during the search, then with the values in placement order),
/// and the parts in words.
pub fn region_build_memory(space: &StateSpace) -> Result<(u64, String)> {
    let states = space.region_search_states()?;
    let codes = StateCodes::file_bytes(states);
    let depths = depth_entries(space, states);
    let output = match space.rule() {
        BlankRule::ZeroAware => 0,
        _ => space.entries(),
    };
    // The index itself: a mask and an offset per set, a mask per region.
    let sets = tilepdb_common::region_index::binomial(space.board().cells(), space.k());
    let orders = tilepdb_common::region_index::factorial(space.k());
    let index = 8 * sets + 4 * (states / orders);
    let mut detail = format!(
        "two-bit array of {states} states {} + {} depth bytes",
        human_bytes(codes),
        human_bytes(depths)
    );
    if output > 0 {
        detail += &format!(
            ", then the depth bytes + {} of values in placement order",
            human_bytes(output)
        );
    }
    // The two-bit array is freed before the values are put in placement order.
    Ok((depths + codes.max(output) + index, detail))
}

/// Depth bytes the search keeps: one per placement index for minimized, else one per state.
fn depth_entries(space: &StateSpace, states: u64) -> u64 {
    match space.rule() {
        BlankRule::Minimized => space.placements(),
        _ => states,
    }
}

/// Refuses, with the figure, a region-indexed build that would not fit in `limit` bytes.
pub fn check_region_memory(space: &StateSpace, limit: Option<u64>) -> Result<()> {
    let (needed, detail) = region_build_memory(space)?;
    if let Some(limit) = limit.filter(|&l| needed > l) {
        return Err(Error::TooLarge {
            pattern: space.pattern().to_string(),
            needed: human_bytes(needed),
            detail,
            limit: human_bytes(limit),
        });
    }
    Ok(())
}

/// Ranges of tile-set ranks of about `parts` equal numbers of states (at most `task_sets`
/// sets each when given).
pub fn set_tasks(
    index: &RegionIndex,
    ignored: bool,
    task_sets: Option<u64>,
    parts: u64,
) -> Vec<Range<u64>> {
    let sets = index.sets();
    let blocks = |c: u64| {
        if ignored { c } else { index.first_block(c) }
    };
    let total = blocks(sets);
    let per_task = (total / parts.max(1)).max(1);
    let mut tasks = Vec::new();
    let mut start = 0;
    while start < sets {
        let mut end = match task_sets {
            Some(max) => (start + max.max(1)).min(sets),
            None => {
                let goal = blocks(start) + per_task;
                let mut lo = start + 1;
                let mut hi = sets;
                // The first set whose blocks reach the goal.
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if blocks(mid) >= goal {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                lo
            }
        };
        end = end.max(start + 1);
        tasks.push(start..end);
        start = end;
    }
    tasks
}

/// The merge of one layer on the region index: marks unseen states with the next layer's code
/// and records their depth (per placement index for minimized, per state otherwise).
struct RegionMerge<'a> {
    codes: &'a StateCodes,
    depths: &'a DepthBytes,
    per_placement: bool,
    depth: u32,
    added: u64,
}

impl RegionSink for RegionMerge<'_> {
    #[inline]
    fn reached(&mut self, state: u64, placement: u64) {
        if self
            .codes
            .try_mark(state, StateCodes::code_of_depth(self.depth))
        {
            self.added += 1;
            let entry = if self.per_placement { placement } else { state };
            self.depths.record_first(entry, self.depth);
        }
    }
}

/// Builds the table of `space` with the region-indexed search.
pub fn build_region_table(
    space: &StateSpace,
    options: &BuildOptions,
    observer: &impl BuildObserver,
) -> Result<BuiltTable> {
    check_region_memory(space, options.memory_limit)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .thread_name(|i| format!("tilepdb-worker-{i}"))
        .build()
        .map_err(|e| Error::ThreadPool(e.to_string()))?;
    let threads = pool.current_num_threads() as u64;
    let started = Instant::now();

    let rule = space.rule();
    let ignored = rule == BlankRule::Ignored;
    let index = space.region_index()?;
    let moves = OrderMoves::new(space.k());
    let kernel = RegionKernel::new(&index, &moves, ignored);
    let states = space.region_search_states()?;
    let codes = StateCodes::new(states);
    let per_placement = rule == BlankRule::Minimized;
    let depths = DepthBytes::new(depth_entries(space, states));

    let goal_cells = space.goal_cells();
    let blank = space.goal().cell_of(0, space.board().cells());
    let goal_placement = index.placement_index(goal_cells);
    let goal_state = if ignored {
        goal_placement
    } else {
        index.state_index(goal_cells, blank)
    };
    let mut goal_merge = RegionMerge {
        codes: &codes,
        depths: &depths,
        per_placement,
        depth: 0,
        added: 0,
    };
    goal_merge.reached(goal_state, goal_placement);

    let tasks = set_tasks(&index, ignored, options.task_ranks, threads * 16);
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
                .map(|sets| {
                    let mut merge = RegionMerge {
                        codes: &codes,
                        depths: &depths,
                        per_placement,
                        depth: depth + 1,
                        added: 0,
                    };
                    let stats = kernel.expand(sets.clone(), &current, &mut merge);
                    codes.retire(
                        kernel.states_of(sets.clone()),
                        StateCodes::code_of_depth(depth),
                    );
                    observer.task_finished(sets);
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
    let state_array_bytes = codes.bytes();
    drop(codes);
    let depth_bytes = depths.len();
    let values = match rule {
        BlankRule::ZeroAware => depths.into_values(),
        _ => pool.install(|| placement_order(space, &index, &depths)),
    };
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

/// The values of a minimized, aware or ignored table in placement-rank order (and
/// `rank * (n - k) + slot` for aware) from the depths of the region-indexed search.
fn placement_order(space: &StateSpace, index: &RegionIndex, depths: &DepthBytes) -> Vec<u8> {
    let ranker = space.ranker();
    let f = index.orders();
    let all = space.board().all_cells();
    let per_rank = (space.entries() / space.placements()) as usize;
    let mut values = vec![0u8; space.entries() as usize];
    const CHUNK: usize = 1 << 14;
    values
        .par_chunks_mut(CHUNK * per_rank)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut cells = [0u8; MAX_CELLS];
            let first = (chunk * CHUNK) as u64;
            for (i, out) in out.chunks_mut(per_rank).enumerate() {
                ranker.unrank(first + i as u64, &mut cells);
                let (c, set, order) = index.set_and_order(&cells);
                match space.rule() {
                    BlankRule::Aware => {
                        let base = index.first_block(c);
                        let mut free = all & !set;
                        let regions = index.regions_of(c);
                        for slot in out.iter_mut() {
                            let cell = free.trailing_zeros();
                            free &= free - 1;
                            let r = regions
                                .iter()
                                .position(|&m| m & (1 << cell) != 0)
                                .expect("a free cell is in a region")
                                as u64;
                            *slot = depths.get((base + r) * f + order).wrapping_sub(1);
                        }
                    }
                    _ => out[0] = depths.get(c * f + order).wrapping_sub(1),
                }
            }
        });
    values
}
