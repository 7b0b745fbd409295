//! The entry of a zero-aware table for a placement and the blank's cell: (tile set, region of
//! the blank among the set's free cells, order of the tiles on the set's cells), computed with
//! bit operations on the occupied cells.
//!
//! A move of a tile outside the pattern leaves this entry as it was: the pattern's tiles keep
//! their cells, and the blank moves between two adjacent free cells of the pattern, which lie
//! in one region. So a search looks a zero-aware table up again only after a move of one of
//! its own tiles, like a minimized or blank-ignored table.

use tilepdb_common::MAX_CELLS;
use tilepdb_common::region_index::{RegionIndex, binomial, factorial};

/// A zero-aware table's region index with what its lookups need beside it.
#[derive(Clone, Copy)]
pub(super) struct ZeroAwareIndex<'a> {
    region: &'a RegionIndex,
    /// `k!`: the orders of one (set, region) block.
    orders: u64,
    /// `weights[p] = (k - 1 - p)!`: the weight of the Lehmer digit of the `p`-th smallest cell.
    weights: [u64; MAX_CELLS],
}

impl<'a> ZeroAwareIndex<'a> {
    /// The lookups of the table indexed by `region`.
    pub(super) fn new(region: &'a RegionIndex) -> ZeroAwareIndex<'a> {
        let k = region.k();
        let mut weights = [0u64; MAX_CELLS];
        for (p, w) in weights.iter_mut().enumerate().take(k) {
            *w = factorial(k - 1 - p);
        }
        ZeroAwareIndex {
            region,
            orders: region.orders(),
            weights,
        }
    }

    /// The entry of the placement `at[..k]` (the cell of each pattern tile) with the blank on
    /// `blank`, a free cell.
    ///
    /// The set's rank and the order's Lehmer rank are taken tile by tile, in one pass after the
    /// set is made: the `p`-th smallest cell of the set holds tile `j`, whose digit counts the
    /// tiles before `j` on larger cells. The region is
    /// 0 for a set with one region (most sets), else the one of the set's regions (bitboards
    /// made with the index) that holds the blank.
    #[inline(always)]
    pub(super) fn entry(&self, at: &[u8; MAX_CELLS], k: usize, blank: u8) -> u64 {
        let mut set = 0u32;
        for &c in &at[..k] {
            set |= 1 << c;
        }
        let mut order = 0u64;
        let mut c = 0u64;
        let mut before = 0u32;
        for &cell in &at[..k] {
            let bit = 1u32 << cell;
            let below = bit - 1;
            let p = (set & below).count_ones() as usize;
            let digit = (before & !below & !bit).count_ones();
            order += u64::from(digit) * self.weights[p];
            // Cell `cell`, the `p`-th smallest of the set, adds `C(cell, p + 1)` to its rank.
            c += binomial(cell as usize, p + 1);
            before |= bit;
        }
        let first = self.region.first_block(c);
        let region = if self.region.first_block(c + 1) - first == 1 {
            0
        } else {
            self.region.region_holding(c, blank as usize)
        };
        (first + region) * self.orders + order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::Board;

    /// Every placement of 3 tiles on 3x3 and 2 tiles on 4x4 with the blank on every free cell:
    /// the entry equals the region index's own state index.
    #[test]
    fn entry_equals_the_region_index() {
        for (board, k) in [("3x3", 3), ("4x4", 2), ("3x4", 4)] {
            let board: Board = board.parse().unwrap();
            let n = board.cells();
            let region = RegionIndex::new(board, k).unwrap();
            let index = ZeroAwareIndex::new(&region);
            let mut at = [0u8; MAX_CELLS];
            let mut checked = 0;
            for placement in 0..region.placements() {
                let cells = region
                    .placement_cells(placement / region.orders(), placement % region.orders());
                at[..k].copy_from_slice(&cells[..k]);
                let set = at[..k].iter().fold(0u32, |s, &c| s | 1 << c);
                for blank in (0..n).filter(|&b| set & (1 << b) == 0) {
                    #[expect(clippy::cast_possible_truncation, reason = "a cell is below 25")]
                    let got = index.entry(&at, k, blank as u8);
                    assert_eq!(got, region.state_index(&at[..k], blank));
                    checked += 1;
                }
            }
            assert!(checked > 0);
        }
    }
}
