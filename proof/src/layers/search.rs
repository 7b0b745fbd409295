//! The layer proofs' breadth-first search ([`search`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::region_index::{OrderMoves, RegionIndex};
use tilepdb_common::{BlankRule, StateCodes, StateSpace};

use crate::error::{Error, Result};
use crate::walks::{BlockMove, check_regions, for_each_block_move};
use crate::walks::{fail, set_chunks};
use tilepdb_common::table::UNREACHED;

/// A state the search meets: its index among the zero-aware states, and its placement as the
/// rank of its set of cells and the rank of the order of the tiles on them.
#[derive(Clone, Copy)]
pub(super) struct Met {
    pub(super) state: u64,
    pub(super) set: u64,
    pub(super) order: u64,
}

/// The breadth-first search over the zero-aware states of `space` from the goal (over the
/// placements alone when `space` ignores the blank): calls `visit` once for every state it
/// meets, with its distance, layer by layer; the states per distance and the codes it ends
/// with (0 for the states never met). Stops at `visit`'s first error.
pub(super) fn search(
    space: &StateSpace,
    index: &RegionIndex,
    visit: impl Fn(Met, u32) -> Result<()> + Sync,
) -> Result<(Vec<u64>, StateCodes)> {
    search_by_layers(space, index, visit, |_| Ok(()))
}

/// A layer of the search once it is expanded and before it is retired: its states are the
/// states of the `active` blocks whose code is `code`.
pub(super) struct Expanded<'a> {
    /// The layer's distance from the goal.
    pub(super) depth: u32,
    /// The search's codes.
    pub(super) codes: &'a StateCodes,
    /// The code of the layer's states ([`StateCodes::code_of_depth`]).
    pub(super) code: u8,
    /// A flag per block (the `orders` states `block * orders..`): raised for every block that
    /// holds a state of the layer.
    pub(super) active: &'a [AtomicBool],
    /// The states of a block (k!).
    pub(super) orders: u64,
}

/// [`search`], calling `layer` with each layer once it is expanded, from the goal's 0 up,
/// before its states are marked done: a caller that reads each state's entry in the order
/// of the states, layer by layer, does it there. Stops at `visit`'s or `layer`'s first error.
#[expect(
    clippy::cast_possible_truncation,
    reason = "blocks index arrays held in memory, so they fit in usize"
)]
pub(super) fn search_by_layers(
    space: &StateSpace,
    index: &RegionIndex,
    visit: impl Fn(Met, u32) -> Result<()> + Sync,
    mut layer: impl FnMut(&Expanded<'_>) -> Result<()>,
) -> Result<(Vec<u64>, StateCodes)> {
    check_regions(space, index)?;
    let walk = Walk::new(space, index);
    let goal = walk.goal();
    walk.codes
        .try_mark(goal.state, StateCodes::code_of_depth(0));
    visit(goal, 0)?;
    let mut active = walk.flags();
    active[(goal.state / walk.f) as usize].store(true, Relaxed);
    let mut histogram = vec![1u64];
    for depth in 0u32.. {
        if depth >= u32::from(UNREACHED) - 1 {
            return Err(fail(space, format!("the layers go on past depth {depth}")));
        }
        let next = walk.flags();
        let added = walk.expand(depth, &active, &next, &visit)?;
        layer(&Expanded {
            depth,
            codes: &walk.codes,
            code: StateCodes::code_of_depth(depth),
            active: &active,
            orders: walk.f,
        })?;
        walk.retire(depth, &active);
        if added == 0 {
            break;
        }
        histogram.push(added);
        active = next;
    }
    Ok((histogram, walk.codes))
}

/// The search's space and state: the codes of every state, in blocks of the `f` orders of
/// one (set, region), or of one set when the blank is ignored (its "region" is then every
/// free cell).
struct Walk<'a> {
    space: &'a StateSpace,
    index: &'a RegionIndex,
    moves: OrderMoves,
    /// The orders of a block (k!).
    f: u64,
    ignored: bool,
    blocks: u64,
    codes: StateCodes,
    /// The sets, in chunks for the threads.
    chunks: Vec<std::ops::Range<u64>>,
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "blocks, states and orders index arrays held in memory, so they fit in usize"
)]
impl<'a> Walk<'a> {
    fn new(space: &'a StateSpace, index: &'a RegionIndex) -> Walk<'a> {
        let ignored = space.rule() == BlankRule::Ignored;
        let f = index.orders();
        let blocks = if ignored {
            index.sets()
        } else {
            index.region_count()
        };
        Walk {
            space,
            index,
            moves: OrderMoves::new(index.k()),
            f,
            ignored,
            blocks,
            codes: StateCodes::new(blocks * f),
            chunks: set_chunks(index.sets()),
        }
    }

    /// The first block of set `c`.
    fn first_block(&self, c: u64) -> u64 {
        if self.ignored {
            c
        } else {
            self.index.first_block(c)
        }
    }

    /// The goal state.
    fn goal(&self) -> Met {
        let (space, index) = (self.space, self.index);
        let (set, _, order) = index.set_and_order(space.goal_cells());
        let state = if self.ignored {
            set * self.f + order
        } else {
            let blank = space.goal().cell_of(0, space.board().cells());
            index.state_index(space.goal_cells(), blank)
        };
        Met { state, set, order }
    }

    /// A flag per block, all down.
    fn flags(&self) -> Vec<AtomicBool> {
        (0..self.blocks).map(|_| AtomicBool::new(false)).collect()
    }

    /// Expands the layer at `depth` in the `active` blocks: every state it reaches first is
    /// marked, visited and its block raised in `next`. The states added.
    fn expand(
        &self,
        depth: u32,
        active: &[AtomicBool],
        next: &[AtomicBool],
        visit: &(impl Fn(Met, u32) -> Result<()> + Sync),
    ) -> Result<u64> {
        let added = AtomicU64::new(0);
        self.chunks.par_iter().try_for_each(|sets| {
            let mut current: Vec<u64> = Vec::with_capacity(self.f as usize);
            let mut layer_added = 0u64;
            for c in sets.clone() {
                let first = self.first_block(c);
                let all_free = [self.space.board().all_cells() & !self.index.set_mask(c)];
                let regions = if self.ignored {
                    &all_free[..]
                } else {
                    self.index.regions_of(c)
                };
                for (r, &region) in regions.iter().enumerate() {
                    let block = first + r as u64;
                    if !active[block as usize].load(Relaxed) {
                        continue;
                    }
                    layer_added +=
                        self.expand_block(depth, c, region, block, &mut current, next, visit)?;
                }
            }
            added.fetch_add(layer_added, Relaxed);
            Ok::<(), Error>(())
        })?;
        Ok(added.load(Relaxed))
    }

    /// Expands the states of `block` (set `c`, free cells `region`) at `depth`, `current`
    /// a buffer for their orders: each move of a pattern tile out of the block takes every
    /// order through one row of the order moves. The states added.
    #[expect(
        clippy::too_many_arguments,
        reason = "one block's context, handed down by the layer's loop"
    )]
    fn expand_block(
        &self,
        depth: u32,
        c: u64,
        region: u32,
        block: u64,
        current: &mut Vec<u64>,
        next: &[AtomicBool],
        visit: &(impl Fn(Met, u32) -> Result<()> + Sync),
    ) -> Result<u64> {
        let (f, codes, moves) = (self.f, &self.codes, &self.moves);
        let (here, there) = (
            StateCodes::code_of_depth(depth),
            StateCodes::code_of_depth(depth + 1),
        );
        current.clear();
        codes.for_each_with_code(block * f..(block + 1) * f, here, |s| {
            current.push(s - block * f);
        });
        if current.is_empty() {
            return Ok(0);
        }
        let mut added = 0;
        for_each_block_move(self.space, self.index, c, region, |m| {
            let BlockMove {
                block: child_block,
                set: child_set,
                pa,
                pb,
            } = m;
            let row = moves.row(pa, pb);
            let mut gained = false;
            for &o in current.iter() {
                let moved = match row {
                    Some(row) => u64::from(row[o as usize]),
                    None => moves.moved(pa, pb, o),
                };
                let child = child_block * f + moved;
                if codes.get(child) != 0 || !codes.try_mark(child, there) {
                    continue;
                }
                added += 1;
                gained = true;
                let met = Met {
                    state: child,
                    set: child_set,
                    order: moved,
                };
                visit(met, depth + 1)?;
            }
            if gained {
                next[child_block as usize].store(true, Relaxed);
            }
            Ok(())
        })?;
        Ok(added)
    }

    /// The layer at `depth` is expanded: its states in the `active` blocks are done.
    fn retire(&self, depth: u32, active: &[AtomicBool]) {
        let here = StateCodes::code_of_depth(depth);
        self.chunks.par_iter().for_each(|sets| {
            for block in self.first_block(sets.start)..self.first_block(sets.end) {
                if active[block as usize].load(Relaxed) {
                    self.codes
                        .retire(block * self.f..(block + 1) * self.f, here);
                }
            }
        });
    }
}
