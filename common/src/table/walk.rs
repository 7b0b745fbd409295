//! Every placement of a pattern in rank order, with its Manhattan distance, in O(1) per
//! placement (encoders and full decoders need `m` for each of millions of ranks; unranking
//! each would cost k divisions).
//!
//! Rank order is the lexicographic order of the cell tuples (the rank's digits grow with the
//! cells), so a depth-first enumeration of free cells in increasing order visits ranks
//! 0, 1, 2, ... in turn.
//!
//! ```
//! use tilepdb_common::table::walk::manhattan_by_rank;
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let m = manhattan_by_rank(&space);
//! assert_eq!(m.len(), 72);
//! assert_eq!(m[0], 1 + 1); // tiles 1 and 2 on cells 0 and 1: one step each from cells 1, 2
//! assert_eq!(m[space.goal_rank() as usize], 0);
//! ```

use crate::board::MAX_CELLS;
use crate::space::StateSpace;

/// Calls `visit(rank, cells, m)` for every placement of `space`'s pattern in rank order:
/// `cells[i]` is the cell of the pattern's `i`-th tile, `m` the Manhattan distance.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a distance on a board of at most 25 cells is below 50, so it fits in a byte"
)]
pub fn for_each_placement(space: &StateSpace, mut visit: impl FnMut(u64, &[u8], u32)) {
    let k = space.k();
    let board = space.board();
    let n = board.cells();
    // dist[i][c]: distance of the i-th tile on cell c from its goal cell.
    let mut dist = [[0u8; MAX_CELLS]; MAX_CELLS];
    for (i, &g) in space.goal_cells().iter().enumerate() {
        for (c, d) in dist[i].iter_mut().enumerate().take(n) {
            *d = board.distance(c, g as usize) as u8;
        }
    }
    let mut cells = [0u8; MAX_CELLS];
    let mut rank = 0u64;
    walk(
        &dist,
        k,
        board.all_cells(),
        0,
        0,
        &mut cells,
        &mut rank,
        &mut visit,
    );
}

#[allow(clippy::too_many_arguments)]
#[expect(
    clippy::cast_possible_truncation,
    reason = "a cell is below 25, so it fits in a byte"
)]
fn walk(
    dist: &[[u8; MAX_CELLS]; MAX_CELLS],
    k: usize,
    free: u32,
    depth: usize,
    m: u32,
    cells: &mut [u8; MAX_CELLS],
    rank: &mut u64,
    visit: &mut impl FnMut(u64, &[u8], u32),
) {
    let mut left = free;
    if depth + 1 == k {
        while left != 0 {
            let c = left.trailing_zeros();
            left &= left - 1;
            cells[depth] = c as u8;
            visit(*rank, &cells[..k], m + u32::from(dist[depth][c as usize]));
            *rank += 1;
        }
        return;
    }
    while left != 0 {
        let c = left.trailing_zeros();
        left &= left - 1;
        cells[depth] = c as u8;
        walk(
            dist,
            k,
            free & !(1 << c),
            depth + 1,
            m + u32::from(dist[depth][c as usize]),
            cells,
            rank,
            visit,
        );
    }
}

/// Calls `visit(entry, cells, m)` for every entry of `space`'s table in entry order: the
/// placement of the entry (`cells[i]`: the cell of the pattern's `i`-th tile) and its Manhattan
/// distance. Entries of one placement (aware) come together; a zero-aware table's entries are
/// in the order of the region index (set, region, order).
pub fn for_each_entry(space: &StateSpace, mut visit: impl FnMut(u64, &[u8], u32)) {
    if space.rule() == crate::space::BlankRule::ZeroAware {
        let index = space
            .region_index()
            .expect("the space's index was built before");
        let k = space.k();
        let f = index.orders();
        let mut entry = 0u64;
        for c in 0..index.sets() {
            for _region in index.regions_of(c) {
                for order in 0..f {
                    let cells = index.placement_cells(c, order);
                    visit(entry, &cells[..k], space.manhattan(&cells));
                    entry += 1;
                }
            }
        }
        debug_assert_eq!(entry, space.entries());
        return;
    }
    let per_rank = space.entries() / space.placements();
    for_each_placement(space, |rank, cells, m| {
        for j in 0..per_rank {
            visit(rank * per_rank + j, cells, m);
        }
    });
}

/// [`for_each_entry`] over the entries `entries` only, in entry order: for a table written in
/// parts. Each placement is found from its entry (one unrank per placement, or per block of a
/// zero-aware table), not walked from the first.
pub fn for_each_entry_in(
    space: &StateSpace,
    entries: std::ops::Range<u64>,
    mut visit: impl FnMut(u64, &[u8], u32),
) {
    let entries = entries.start..entries.end.min(space.entries());
    if entries.is_empty() {
        return;
    }
    let k = space.k();
    if space.rule() == crate::space::BlankRule::ZeroAware {
        let index = space
            .region_index()
            .expect("the space's index was built before");
        let f = index.orders();
        let (first, last) = (entries.start / f, (entries.end - 1) / f);
        // The set of the first block: the last set whose first block is at most it.
        let (mut lo, mut hi) = (0, index.sets());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if index.first_block(mid) <= first {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut c = lo;
        for block in first..=last {
            while c + 1 < index.sets() && index.first_block(c + 1) <= block {
                c += 1;
            }
            let base = block * f;
            for order in entries.start.max(base) - base..entries.end.min(base + f) - base {
                let cells = index.placement_cells(c, order);
                visit(base + order, &cells[..k], space.manhattan(&cells));
            }
        }
        return;
    }
    let per_rank = space.entries() / space.placements();
    let ranker = space.ranker();
    let mut cells = [0u8; MAX_CELLS];
    for rank in entries.start / per_rank..=(entries.end - 1) / per_rank {
        ranker.unrank(rank, &mut cells);
        let m = space.manhattan(&cells);
        let base = rank * per_rank;
        for entry in entries.start.max(base)..entries.end.min(base + per_rank) {
            visit(entry, &cells[..k], m);
        }
    }
}

/// The Manhattan distance of every placement, by rank (one byte each).
#[expect(
    clippy::cast_possible_truncation,
    reason = "the placements are held in memory, so their count fits in usize; a Manhattan sum of at most 24 tiles is below 255"
)]
pub fn manhattan_by_rank(space: &StateSpace) -> Vec<u8> {
    let mut out = Vec::with_capacity(space.placements() as usize);
    for_each_placement(space, |_, _, m| out.push(m as u8));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlankRule, Board, Goal, Pattern};

    #[test]
    fn ranks_in_order_and_distances_match() {
        for (board, tiles) in [
            ("3x3", vec![3, 1, 8]),
            ("2x2", vec![1, 2, 3]),
            ("4x2", vec![7]),
        ] {
            let board: Board = board.parse().unwrap();
            for goal in [Goal::BlankFirst, Goal::BlankLast] {
                let pattern = Pattern::new(board, tiles.clone()).unwrap();
                let space = StateSpace::new(board, goal, pattern, BlankRule::Minimized).unwrap();
                let mut next = 0;
                for_each_placement(&space, |rank, cells, m| {
                    assert_eq!(rank, next);
                    assert_eq!(space.ranker().rank(cells), rank);
                    assert_eq!(space.manhattan(cells), m);
                    next += 1;
                });
                assert_eq!(next, space.placements());
            }
        }
    }
}
