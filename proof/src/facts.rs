//! The facts every table must satisfy (DESIGN section 4), checked over all entries.
//!
//! * every reached value `h` and the Manhattan distance `m` of the pattern's tiles satisfy
//!   `h >= m` and `h - m` even;
//! * `aware`, `zero-aware` and `ignored` tables are consistent: a legal move changes the value by at most 1;
//! * a `minimized` table's value is the least `aware` value over the placement's free cells.
//!
//! A `zero-aware` table is checked as the aware table it stands for (each free cell given its
//! region's value).
//!
//! Minimized tables are not consistent (a blank walled into a pocket can make the least value
//! jump by more than one across a move), so nothing here assumes it.

use rayon::prelude::*;
use tilepdb_common::space::slot_of;
use tilepdb_common::{BlankRule, MAX_CELLS, StateSpace};

use tilepdb_common::table::UNREACHED;

use crate::error::Result;
use crate::walks::{fail, for_all_ranks, set_chunks};

/// The aware space and values of a zero-aware table (each free cell gets its region's value),
/// on which the facts of the aware table are checked; `None` for other rules.
pub(crate) fn as_aware(space: &StateSpace, values: &[u8]) -> Result<Option<(StateSpace, Vec<u8>)>> {
    if space.rule() != BlankRule::ZeroAware {
        return Ok(None);
    }
    if values.len() as u64 != space.entries() {
        return Err(fail(
            space,
            format!("{} values for {} entries", values.len(), space.entries()),
        ));
    }
    let aware = StateSpace::new(
        space.board(),
        space.goal(),
        space.pattern().clone(),
        BlankRule::Aware,
    )?;
    let index = space.region_index()?;
    let values = index.aware_from_zero_aware(aware.ranker(), values);
    Ok(Some((aware, values)))
}

/// Every reached entry is at least the Manhattan distance, with an even difference; entries
/// are unreached only when the pattern holds every tile (then exactly half are, by parity).
pub fn check_lower_bound(space: &StateSpace, values: &[u8]) -> Result<()> {
    check_bound_and_parity(space, values)?;
    check_unreached_count(space, values)
}

/// Entries are unreached only when the pattern holds every tile, and then exactly half are
/// (the other permutation parity).
pub(crate) fn check_unreached_count(space: &StateSpace, values: &[u8]) -> Result<()> {
    #[expect(clippy::naive_bytecount, reason = "no crate for one count per table")]
    let unreached = values.iter().filter(|&&v| v == UNREACHED).count() as u64;
    let full = space.k() + 1 == space.board().cells();
    let expected = if full { space.entries() / 2 } else { 0 };
    if unreached != expected {
        return Err(fail(
            space,
            format!("{unreached} entries unreached, expected {expected}"),
        ));
    }
    Ok(())
}

/// Every entry other than [`UNREACHED`] is at least the Manhattan distance, with an even
/// difference (the first half of [`check_lower_bound`], for decoded lossy tables, which keep
/// no mark of unreached entries).
#[expect(
    clippy::cast_possible_truncation,
    reason = "entries index `values`, held in memory, so they fit in usize"
)]
pub fn check_bound_and_parity(space: &StateSpace, values: &[u8]) -> Result<()> {
    if values.len() as u64 != space.entries() {
        return Err(fail(
            space,
            format!("{} values for {} entries", values.len(), space.entries()),
        ));
    }
    if space.rule() == BlankRule::ZeroAware {
        return zero_aware_bound_and_parity(space, values);
    }
    let per_rank = space.entries() / space.placements();
    for_all_ranks(space, |rank, cells, _| {
        let m = space.manhattan(cells);
        for entry in rank * per_rank..(rank + 1) * per_rank {
            let h = values[entry as usize];
            if h == UNREACHED {
                continue;
            }
            if u32::from(h) < m || !(u32::from(h) - m).is_multiple_of(2) {
                return Err(format!(
                    "entry {entry} (placement {cells:?}) has value {h} against Manhattan distance {m}"
                ));
            }
        }
        Ok(())
    })
}

/// [`check_bound_and_parity`] of a zero-aware table, in the order of its entries (the region
/// index): each placement's Manhattan distance once, against the entries of all its regions.
#[expect(
    clippy::cast_possible_truncation,
    reason = "entries index `values` and `f` (at most 8!) sizes a vector, both in memory, so they fit in usize"
)]
fn zero_aware_bound_and_parity(space: &StateSpace, values: &[u8]) -> Result<()> {
    let index = space.region_index()?;
    let (k, f, sets) = (index.k(), index.orders(), index.sets());
    let chunks = set_chunks(sets);
    chunks.par_iter().try_for_each(|sets| {
        let mut distances = Vec::with_capacity(f as usize);
        for c in sets.clone() {
            let first = index.first_block(c);
            let regions = index.regions_of(c).len() as u64;
            set_manhattan(space, index.set_mask(c), &mut distances);
            for (order, &m) in distances.iter().enumerate() {
                let order = order as u64;
                for r in 0..regions {
                    let entry = (first + r) * f + order;
                    let h = values[entry as usize];
                    if h != UNREACHED && (u32::from(h) < m || !(u32::from(h) - m).is_multiple_of(2))
                    {
                        let cells = index.placement_cells(c, order);
                        return Err(fail(
                            space,
                            format!(
                                "entry {entry} (placement {:?}) has value {h} against Manhattan distance {m}",
                                &cells[..k]
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    })
}

/// The Manhattan distance of every order of the pattern's tiles on the cells of `set`, in
/// order-rank order, into `distances` (cleared first).
pub(crate) fn set_manhattan(space: &StateSpace, set: u32, distances: &mut Vec<u32>) {
    let (board, k) = (space.board(), space.k());
    // cost[j][t]: the distance of tile t on the j-th cell of the set to its goal.
    let mut cost = [[0u32; MAX_CELLS]; MAX_CELLS];
    let mut cells_of_set = set;
    for row in cost.iter_mut().take(k) {
        let cell = cells_of_set.trailing_zeros() as usize;
        cells_of_set &= cells_of_set - 1;
        for (t, &g) in space.goal_cells().iter().enumerate() {
            row[t] = board.distance(cell, g as usize);
        }
    }
    distances.clear();
    manhattan_of_orders(&cost, k, 0, (1u32 << k) - 1, 0, distances);
}

/// Appends the Manhattan distance of every order of a set's cells, in order-rank order: the
/// orders in Lehmer rank order are the permutations in lexicographic order, which a
/// depth-first choice of the tile on each position (least first) visits one by one.
/// `cost[j][t]` is tile `t`'s distance on the set's `j`-th cell; `unused` the tiles not placed
/// on positions `0..j`, `partial` their sum so far.
fn manhattan_of_orders(
    cost: &[[u32; MAX_CELLS]; MAX_CELLS],
    k: usize,
    j: usize,
    unused: u32,
    partial: u32,
    out: &mut Vec<u32>,
) {
    if j == k {
        out.push(partial);
        return;
    }
    let mut left = unused;
    while left != 0 {
        let t = left.trailing_zeros() as usize;
        left &= left - 1;
        manhattan_of_orders(
            cost,
            k,
            j + 1,
            unused & !(1 << t),
            partial + cost[j][t],
            out,
        );
    }
}

/// Across every legal move the value of an `aware` or `ignored` table changes by at most one:
/// moves of pattern tiles, and for `aware` tables the blank's moves between free cells too.
#[expect(
    clippy::cast_possible_truncation,
    reason = "ranks and entries index `values`, held in memory, so they fit in usize; a cell is below 25, so it fits in a byte"
)]
pub fn check_consistent(space: &StateSpace, values: &[u8]) -> Result<()> {
    let board = space.board();
    let slots = space.slots();
    let k = space.k();
    match space.rule() {
        BlankRule::ZeroAware => {
            let (aware, values) = as_aware(space, values)?.expect("zero-aware");
            check_consistent(&aware, &values)
        }
        BlankRule::Minimized => Err(fail(
            space,
            "minimized tables are not consistent; nothing to check".into(),
        )),
        BlankRule::Ignored => for_all_ranks(space, |rank, cells, free| {
            let h = values[rank as usize];
            let mut moved = [0u8; MAX_CELLS];
            moved[..k].copy_from_slice(cells);
            for i in 0..k {
                let mut targets = board.neighbours(cells[i] as usize) & free;
                while targets != 0 {
                    moved[i] = targets.trailing_zeros() as u8;
                    targets &= targets - 1;
                    let child = values[space.ranker().rank(&moved) as usize];
                    if h.abs_diff(child) > 1 {
                        return Err(format!(
                            "placement {cells:?} has {h}, a move of tile {i} gives {child}"
                        ));
                    }
                }
                moved[i] = cells[i];
            }
            Ok(())
        }),
        BlankRule::Aware => for_all_ranks(space, |rank, cells, free| {
            let mut moved = [0u8; MAX_CELLS];
            moved[..k].copy_from_slice(cells);
            // The blank moves onto a free cell next to it: the placement stays, the blank's
            // cell changes (inside one region, so the value should not even change).
            let mut blanks = free;
            while blanks != 0 {
                let blank = blanks.trailing_zeros() as usize;
                blanks &= blanks - 1;
                let h = values[(rank * slots + slot_of(free, blank)) as usize];
                let mut nexts = board.neighbours(blank) & free;
                while nexts != 0 {
                    let next = nexts.trailing_zeros() as usize;
                    nexts &= nexts - 1;
                    let hn = values[(rank * slots + slot_of(free, next)) as usize];
                    if h.abs_diff(hn) > 1 {
                        return Err(format!(
                            "placement {cells:?} with the blank on {blank} has {h}; moving the blank to {next} gives {hn}"
                        ));
                    }
                }
            }
            // The blank swaps with a pattern tile next to it: that tile lands on the blank's
            // cell and the blank on the tile's old cell.
            for i in 0..k {
                let from = cells[i] as usize;
                let mut blanks = board.neighbours(from) & free;
                while blanks != 0 {
                    let blank = blanks.trailing_zeros() as usize;
                    blanks &= blanks - 1;
                    let h = values[(rank * slots + slot_of(free, blank)) as usize];
                    moved[i] = blank as u8;
                    let child_free = (free & !(1 << blank)) | (1 << from);
                    let child = space.ranker().rank(&moved) * slots + slot_of(child_free, from);
                    let hc = values[child as usize];
                    if h.abs_diff(hc) > 1 {
                        return Err(format!(
                            "placement {cells:?} with the blank on {blank} has {h}; moving tile {} there gives {hc}",
                            space.pattern().tiles()[i]
                        ));
                    }
                }
                moved[i] = cells[i];
            }
            Ok(())
        }),
    }
}

/// A minimized table holds, for each placement, the least aware value over its free cells.
#[expect(
    clippy::cast_possible_truncation,
    reason = "ranks and entries index arrays held in memory, so they fit in usize"
)]
pub fn check_minimized_against_aware(
    space: &StateSpace,
    minimized: &[u8],
    aware: &[u8],
) -> Result<()> {
    let slots = (space.board().cells() - space.k()) as u64;
    for_all_ranks(space, |rank, cells, _| {
        let least = aware[(rank * slots) as usize..((rank + 1) * slots) as usize]
            .iter()
            .copied()
            .min()
            .unwrap_or(UNREACHED);
        let h = minimized[rank as usize];
        if h != least {
            return Err(format!(
                "placement {cells:?} has {h}, its least aware value is {least}"
            ));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::{Board, Goal, Pattern};
    use tilepdb_coordinator::build::{BuildOptions, build_table};

    /// The bound check of zero-aware tables walks the orders of each set on its own; against
    /// the Manhattan distance of each entry's placement decoded one by one, it accepts the
    /// built tables and refuses every entry lowered below its bound or given the wrong parity.
    #[test]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a test's Manhattan sum is below 255"
    )]
    fn zero_aware_bounds_are_those_of_each_placement() {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            for (board, tiles) in [("3x4", &[1u8, 5, 6, 2][..]), ("4x4", &[2, 3, 7])] {
                let board: Board = board.parse().unwrap();
                let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
                let space = StateSpace::new(board, goal, pattern, BlankRule::ZeroAware).unwrap();
                let values = build_table(&space, &BuildOptions::default(), &())
                    .unwrap()
                    .values
                    .into_bytes()
                    .unwrap();
                check_lower_bound(&space, &values).unwrap();
                let index = space.region_index().unwrap();
                for e in (0..values.len()).step_by(7) {
                    let (cells, _) = index.decode(e as u64);
                    let m = space.manhattan(&cells[..space.k()]) as u8;
                    let mut bad = values.clone();
                    bad[e] = if m >= 2 { m - 2 } else { m + 1 };
                    assert!(
                        check_lower_bound(&space, &bad).is_err(),
                        "{board} {tiles:?} entry {e}: {} -> {} passed (Manhattan {m})",
                        values[e],
                        bad[e]
                    );
                }
            }
        }
    }
}
