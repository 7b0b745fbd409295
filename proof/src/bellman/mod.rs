//! The Bellman check: a table holds exactly the distance function of its abstraction.
//!
//! For an abstract state `s` other than the goal, the distance is `1 + min` over the states one
//! pattern-tile move away (blank moves inside a region are free), and the goal's is 0. A table
//! passes when every entry satisfies that rule and reachability is closed (an entry is
//! unreached exactly when its neighbours are). That is stronger than consistency (a move
//! changes the value by at most one): a consistent table may still hold a local maximum
//! lowered by two, or a pocket of states raised together; the Bellman rule fixes every value,
//! since the only function satisfying it is the distance itself.
//!
//! The check reads each entry's neighbours once, independently of how the table was built
//! (it shares nothing with the search or the merge but the rank and the board).
//!
//! Minimized tables are not distance functions by themselves (each entry is the least over
//! the placement's regions): their proof is a search that meets every (placement, region)
//! at its distance ([`crate::layers::prove_minimized`]).
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_proof::bellman::check_distances;
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Aware).unwrap();
//! let built = build_table(&space, &BuildOptions::default(), &()).unwrap();
//! let mut values = built.values.into_bytes().unwrap();
//! assert!(check_distances(&space, &values).is_ok());
//! let wrong = values.iter().position(|&v| v == 5).unwrap();
//! values[wrong] = 7; // still at least Manhattan, same parity: the rule sees it
//! assert!(check_distances(&space, &values).is_err());
//! ```

use serde::Serialize;
use tilepdb_common::space::slot_of;
use tilepdb_common::{BlankRule, MAX_CELLS, StateSpace};

use rayon::prelude::*;
use tilepdb_common::region_index::OrderMoves;

use crate::error::Result;
use crate::walks::{
    BlockMove, check_regions, fail, for_all_ranks, for_each_block_move, set_chunks,
};
use tilepdb_common::table::UNREACHED;

/// Checks that `values` (one byte per entry, [`UNREACHED`] for unreached entries) is the exact
/// distance function of `space`'s abstraction: the goal is 0, every other reached entry is one
/// more than the least of its neighbours, and unreached entries have only unreached
/// neighbours. `aware` tables also give every cell of a region the same value.
///
/// A `minimized` table is refused here (it is not a distance function by itself).
pub fn check_distances(space: &StateSpace, values: &[u8]) -> Result<()> {
    if values.len() as u64 != space.entries() {
        return Err(fail(
            space,
            format!("{} values for {} entries", values.len(), space.entries()),
        ));
    }
    match space.rule() {
        BlankRule::Minimized => Err(fail(
            space,
            "a minimized table is the least value over the regions, not a distance function: \
             check its per-region values instead"
                .into(),
        )),
        BlankRule::Ignored => check_ignored(space, values),
        BlankRule::Aware => check_aware(space, values),
        BlankRule::ZeroAware => check_zero_aware(space, values),
    }
}

/// The proof that showed a table's every entry its exact value (or that value's encoding), by
/// its rule and encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Proof {
    /// The Bellman rule, each entry against its neighbours ([`check_distances`]): ignored
    /// tables in an exact encoding, aware and zero-aware ones in bytes, and ignored ones in
    /// nibbles ([`check_ignored_nibbles`]).
    BellmanCheck,
    /// One search from the goal that meets every state at its distance
    /// ([`crate::layers`]): zero-aware and aware tables in packed entries, aware ones in
    /// nibbles, ignored ones in min-nibble, minimized ones in every encoding.
    LayerSearch,
}

impl Proof {
    /// The proof's name, as the summary and its JSON say it.
    pub fn name(self) -> &'static str {
        match self {
            Proof::BellmanCheck => "bellman-check",
            Proof::LayerSearch => "layer-search",
        }
    }
}

impl std::fmt::Display for Proof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The value `h` of a state given the least value `least` of its neighbours (`UNREACHED` when
/// it has none reached) and whether one of them is unreached.
pub(crate) fn bellman_rule(
    h: u8,
    least: u8,
    any_unreached: bool,
    is_goal: bool,
) -> std::result::Result<(), String> {
    if is_goal {
        return if h == 0 {
            Ok(())
        } else {
            Err(format!("the goal has {h}, not 0"))
        };
    }
    if h == UNREACHED {
        return if least == UNREACHED {
            Ok(())
        } else {
            Err(format!(
                "it is marked unreached but a neighbour has {least}"
            ))
        };
    }
    if any_unreached {
        return Err(format!("it has {h} but a neighbour is marked unreached"));
    }
    if least == UNREACHED || u32::from(least) + 1 != u32::from(h) {
        return Err(format!(
            "it has {h}, but the least of its neighbours is {least}, so it should have {}",
            u32::from(least) + 1
        ));
    }
    Ok(())
}

/// The Bellman rule on a zero-aware table, in the order of its entries: the states of the
/// region index, a block of `k!` orders per (set of cells, region of the blank). A pattern tile
/// next to the region steps into a cell of it; the child's set, its region (the one holding
/// the tile's old cell) and its block are worked out once per move, and the children of every
/// order of the block are read from the child's block, which is contiguous. So each entry's
/// neighbours are read once, mostly from a few cache lines, with no aware table in memory.
///
/// The check shares the region index and its order moves with the search kernel (both are
/// tested against naive searches); it shares nothing with the merge or the depth store.
#[expect(
    clippy::cast_possible_truncation,
    reason = "blocks, states and orders index `values`, held in memory, so they fit in usize"
)]
fn check_zero_aware(space: &StateSpace, values: &[u8]) -> Result<()> {
    let index = space.region_index()?;
    check_regions(space, &index)?;
    let moves = OrderMoves::new(index.k());
    let board = space.board();
    let f = index.orders() as usize;
    let goal_cells = space.goal_cells();
    let goal = index.state_index(goal_cells, space.goal().cell_of(0, board.cells()));
    let sets = index.sets();
    let chunks = set_chunks(sets);
    chunks.par_iter().try_for_each(|sets| {
        let mut least = vec![UNREACHED; f];
        let mut any_unreached = vec![false; f];
        for c in sets.clone() {
            let first = index.first_block(c);
            for (r, &region) in index.regions_of(c).iter().enumerate() {
                let block = ((first + r as u64) as usize) * f;
                least.fill(UNREACHED);
                any_unreached.fill(false);
                for_each_block_move(
                    space,
                    &index,
                    c,
                    region,
                    |BlockMove { block, pa, pb, .. }| {
                        let child_block = block as usize * f;
                        let children = &values[child_block..child_block + f];
                        let visit = |(l, u): (&mut u8, &mut bool), moved: usize| {
                            let v = children[moved];
                            *l = (*l).min(v);
                            *u |= v == UNREACHED;
                        };
                        let acc = least.iter_mut().zip(any_unreached.iter_mut());
                        match moves.row(pa, pb) {
                            Some(row) => {
                                for (a, &moved) in acc.zip(row) {
                                    visit(a, moved as usize);
                                }
                            }
                            None => {
                                for (o, a) in acc.enumerate() {
                                    visit(a, moves.moved(pa, pb, o as u64) as usize);
                                }
                            }
                        }
                        Ok(())
                    },
                )?;
                for o in 0..f {
                    let state = block + o;
                    bellman_rule(
                        values[state],
                        least[o],
                        any_unreached[o],
                        state as u64 == goal,
                    )
                    .map_err(|why| {
                        let cells = index.placement_cells(c, o as u64);
                        let cells = &cells[..index.k()];
                        let around = region.trailing_zeros();
                        fail(
                            space,
                            format!(
                                "placement {cells:?} with the blank's region around {around}: {why}"
                            ),
                        )
                    })?;
                }
            }
        }
        Ok(())
    })
}

fn check_ignored(space: &StateSpace, values: &[u8]) -> Result<()> {
    check_ignored_by(space, values, |h, least, any_unreached, is_goal, _| {
        bellman_rule(h, least, any_unreached, is_goal)
    })
}

/// Checks that `values`, decoded from the nibbles of an ignored table, are the nibbles of its
/// exact distances: the goal is 0; an entry below saturation (`h < m + 30`, with `m` its
/// Manhattan distance) is one more than the least of its neighbours; a saturated one is at
/// most one more. That proves them: a neighbour of an entry below saturation is exact (a move
/// changes the distance by at most one and the Manhattan distance by one, so it stays at or
/// below its own saturation), the rule fixes every entry below saturation to its distance, and
/// a saturated entry's distance, one more than its least neighbour's, is at least `m + 30`.
///
/// ```
/// use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
/// use tilepdb_proof::bellman::check_ignored_nibbles;
/// use tilepdb_coordinator::build::{BuildOptions, build_table};
/// let board: Board = "3x3".parse().unwrap();
/// let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
/// let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
/// let mut values = build_table(&space, &BuildOptions::default(), &()).unwrap().values.into_bytes().unwrap();
/// assert!(check_ignored_nibbles(&space, &values).is_ok());
/// let wrong = values.iter().position(|&v| v == 5).unwrap();
/// values[wrong] = 7;
/// assert!(check_ignored_nibbles(&space, &values).is_err());
/// ```
pub fn check_ignored_nibbles(space: &StateSpace, values: &[u8]) -> Result<()> {
    if space.rule() != BlankRule::Ignored || values.len() as u64 != space.entries() {
        return Err(fail(
            space,
            format!(
                "the nibble rule reads the {} values of an ignored table, not {} of a {} one",
                space.entries(),
                values.len(),
                space.rule()
            ),
        ));
    }
    check_ignored_saturated(
        space,
        values,
        2 * u32::from(tilepdb_common::table::encoding::NIBBLE_MAX),
    )
}

/// [`check_ignored_nibbles`] with entries saturated at `m + saturation`.
fn check_ignored_saturated(space: &StateSpace, values: &[u8], saturation: u32) -> Result<()> {
    check_ignored_by(space, values, |h, least, any_unreached, is_goal, cells| {
        if is_goal || u32::from(h) < space.manhattan(cells) + saturation {
            return bellman_rule(h, least, any_unreached, is_goal);
        }
        if least == UNREACHED || u32::from(least) + 1 < u32::from(h) {
            return Err(format!(
                "it has {h} (saturated), more than one above the least of its neighbours ({least})"
            ));
        }
        Ok(())
    })
}

/// Calls `rule(h, least, any_unreached, is_goal, cells)` for every placement of an ignored
/// table: its value, the least of its neighbours' and whether one of them is unreached.
#[expect(
    clippy::cast_possible_truncation,
    reason = "ranks index `values`, held in memory, so they fit in usize; a cell is below 25, so it fits in a byte"
)]
fn check_ignored_by(
    space: &StateSpace,
    values: &[u8],
    rule: impl Fn(u8, u8, bool, bool, &[u8]) -> std::result::Result<(), String> + Sync,
) -> Result<()> {
    let board = space.board();
    let k = space.k();
    let goal = space.goal_rank();
    for_all_ranks(space, |rank, cells, free| {
        let h = values[rank as usize];
        let mut moved = [0u8; MAX_CELLS];
        moved[..k].copy_from_slice(cells);
        let (mut least, mut any_unreached) = (UNREACHED, false);
        for i in 0..k {
            let mut targets = board.neighbours(cells[i] as usize) & free;
            while targets != 0 {
                moved[i] = targets.trailing_zeros() as u8;
                targets &= targets - 1;
                let child = values[space.ranker().rank(&moved[..k]) as usize];
                any_unreached |= child == UNREACHED;
                least = least.min(child);
            }
            moved[i] = cells[i];
        }
        rule(h, least, any_unreached, rank == goal, cells)
            .map_err(|why| format!("placement {cells:?}: {why}"))
    })
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "entries index `values`, held in memory, so they fit in usize; a cell is below 25, so it fits in a byte"
)]
fn check_aware(space: &StateSpace, values: &[u8]) -> Result<()> {
    let board = space.board();
    let k = space.k();
    let slots = space.slots();
    let goal_rank = space.goal_rank();
    let goal_blank = space.goal().cell_of(0, board.cells());
    for_all_ranks(space, |rank, cells, free| {
        let base = rank * slots;
        let occupied = board.all_cells() & !free;
        let mut moved = [0u8; MAX_CELLS];
        moved[..k].copy_from_slice(cells);
        let mut left = free;
        while left != 0 {
            let least_cell = left.trailing_zeros() as usize;
            let region = board.region(least_cell, free);
            left &= !region;
            let h = values[(base + slot_of(free, least_cell)) as usize];
            // Blank moves inside the region are free: one value for all its cells.
            let mut cells_of_region = region;
            while cells_of_region != 0 {
                let cell = cells_of_region.trailing_zeros() as usize;
                cells_of_region &= cells_of_region - 1;
                let other = values[(base + slot_of(free, cell)) as usize];
                if other != h {
                    return Err(format!(
                        "placement {cells:?}: the blank on {least_cell} has {h} but on {cell}, \
                         in the same region, {other}"
                    ));
                }
            }
            // A pattern tile next to the region steps into a region cell next to it; the blank
            // ends on the tile's old cell.
            let (mut least, mut any_unreached) = (UNREACHED, false);
            let mut movers = board.dilate(region) & occupied;
            while movers != 0 {
                let from = movers.trailing_zeros() as usize;
                movers &= movers - 1;
                let i = cells
                    .iter()
                    .position(|&c| c as usize == from)
                    .expect("a mover is an occupied cell");
                let mut targets = board.neighbours(from) & region;
                while targets != 0 {
                    let to = targets.trailing_zeros() as usize;
                    targets &= targets - 1;
                    moved[i] = to as u8;
                    let child_free = (free & !(1 << to)) | (1 << from);
                    let child =
                        space.ranker().rank(&moved[..k]) * slots + slot_of(child_free, from);
                    let hc = values[child as usize];
                    any_unreached |= hc == UNREACHED;
                    least = least.min(hc);
                }
                moved[i] = cells[i];
            }
            let is_goal = rank == goal_rank && region & (1 << goal_blank) != 0;
            bellman_rule(h, least, any_unreached, is_goal).map_err(|why| {
                format!("placement {cells:?} with the blank's region around {least_cell}: {why}")
            })?;
        }
        Ok(())
    })
}

#[cfg(test)]
pub(crate) mod tests;
