//! The entry of a zero-aware table for a placement and the blank's cell: (tile set, region of
//! the blank among the set's free cells, order of the tiles on the set's cells), computed with
//! bit operations on the occupied cells.
//!
//! A move of a tile outside the pattern leaves this entry as it was: the pattern's tiles keep
//! their cells, and the blank moves between two adjacent free cells of the pattern, which lie
//! in one region. So a search looks a zero-aware table up again only after a move of one of
//! its own tiles, like a minimized or blank-ignored table.

use std::sync::Arc;

use tilepdb_common::region_index::{RegionIndex, binomial, factorial};
use tilepdb_common::{Board, MAX_CELLS};

/// Bit planes of a set's extra regions (its regions but one) in [`RegionCounts`]: at most 15
/// extra regions, more than a board of 25 cells has (two regions never touch, so a board of
/// `n` cells has at most `ceil(n / 2)`).
const PLANES: usize = 4;

/// How many regions each tile set of a region index has, held in a few bits per set so that
/// the whole fits in the processor's caches (the region index itself keeps an offset per set
/// and a mask per region): the first block of a set and whether the set has more than one
/// region, without reading the index.
///
/// Sets are taken 64 at a time in rank order: for each group, the extra regions of the sets
/// before it, then `planes` words whose bit `i` of word `j` is bit `j` of the extra regions of
/// the group's `i`-th set.
pub(super) struct RegionCounts {
    board: Board,
    k: usize,
    /// The board's cells, and those off its first and last column.
    all: u32,
    not_first_column: u32,
    not_last_column: u32,
    width: u32,
    planes: usize,
    /// `planes + 1` words a group: the extra regions before it, then its bit planes.
    groups: Vec<u64>,
}

impl RegionCounts {
    /// The counts of `region`'s sets.
    pub(super) fn new(region: &RegionIndex) -> RegionCounts {
        let board = region.board();
        let sets = region.sets();
        let extra = |c: u64| region.first_block(c + 1) - region.first_block(c) - 1;
        let largest = (0..sets).map(extra).max().unwrap_or(0);
        let planes = (64 - largest.leading_zeros() as usize).clamp(1, PLANES);
        let mut groups = Vec::new();
        for group in 0..sets.div_ceil(64) {
            let first = group * 64;
            groups.push(region.first_block(first) - first);
            let mut words = [0u64; PLANES];
            for i in 0..64.min(sets - first) {
                let e = extra(first + i);
                for (j, word) in words.iter_mut().enumerate().take(planes) {
                    *word |= ((e >> j) & 1) << i;
                }
            }
            groups.extend_from_slice(&words[..planes]);
        }
        let width = board.width();
        let (mut first_column, mut last_column) = (0u32, 0u32);
        for row in 0..board.height() {
            first_column |= 1 << (row * width);
            last_column |= 1 << (row * width + width - 1);
        }
        let all = board.all_cells();
        #[expect(
            clippy::cast_possible_truncation,
            reason = "a board is at most 25 cells wide"
        )]
        let shift = width as u32;
        RegionCounts {
            board,
            k: region.k(),
            all,
            not_first_column: all & !first_column,
            not_last_column: all & !last_column,
            width: shift,
            planes,
            groups,
        }
    }

    /// Whether these are the counts of the region index of `board` and `k` tiles.
    pub(super) fn serves(&self, board: Board, k: usize) -> bool {
        self.board == board && self.k == k
    }

    /// The first block of the set of rank `c` and its extra regions.
    #[inline(always)]
    fn first_block(&self, c: u64) -> (u64, u64) {
        let at = (c / 64) as usize * (self.planes + 1);
        let bit = c % 64;
        let below = (1u64 << bit) - 1;
        let mut first = c + self.groups[at];
        let mut extra = 0;
        for j in 0..self.planes {
            let word = self.groups[at + 1 + j];
            first += u64::from((word & below).count_ones()) << j;
            extra |= ((word >> bit) & 1) << j;
        }
        (first, extra)
    }

    /// The free cells connected to `seed` (cells of `free`).
    #[inline(always)]
    fn fill(&self, seed: u32, free: u32) -> u32 {
        let mut region = seed;
        loop {
            let grown = (region
                | region << self.width
                | region >> self.width
                | (region << 1) & self.not_first_column
                | (region >> 1) & self.not_last_column)
                & free;
            if grown == region {
                return region;
            }
            region = grown;
        }
    }

    /// The index, among the `extra + 1` regions of the free cells of `set` ordered by least
    /// cell, of the one holding `blank`: the regions are grown from their least cells in
    /// order until one holds it (the last needs no growing). The first regions are often
    /// small (a corner closed off by the pattern), so they grow in a few steps.
    #[inline(always)]
    fn region_holding(&self, set: u32, blank: u8, extra: u64) -> u64 {
        let free = self.all & !set;
        let mut rest = free;
        for index in 0..extra {
            let region = self.fill(rest & rest.wrapping_neg(), free);
            if region & (1 << blank) != 0 {
                return index;
            }
            rest &= !region;
        }
        extra
    }
}

/// A zero-aware table's index: what its lookups need of the region index.
#[derive(Clone)]
pub(super) struct ZeroAwareIndex {
    counts: Arc<RegionCounts>,
    /// `k!`: the orders of one (set, region) block.
    orders: u64,
    /// `weights[p] = (k - 1 - p)!`: the weight of the Lehmer digit of the `p`-th smallest cell.
    weights: [u64; MAX_CELLS],
}

impl ZeroAwareIndex {
    /// The lookups of a table of `counts`' board and tile count.
    pub(super) fn new(counts: Arc<RegionCounts>) -> ZeroAwareIndex {
        let k = counts.k;
        let mut weights = [0u64; MAX_CELLS];
        for (p, w) in weights.iter_mut().enumerate().take(k) {
            *w = factorial(k - 1 - p);
        }
        ZeroAwareIndex {
            counts,
            orders: factorial(k),
            weights,
        }
    }

    /// The entry of the placement `at[..k]` (the cell of each pattern tile) with the blank on
    /// `blank`, a free cell.
    ///
    /// The set's rank and the order's Lehmer rank are taken tile by tile, in one pass after the
    /// set is made: the `p`-th smallest cell of the set holds tile `j`, whose digit counts the
    /// tiles before `j` on larger cells. The region is 0 for a set with one region (most
    /// sets), else the index of the blank's among the set's regions, found by growing the
    /// regions cell by cell ([`RegionCounts`]).
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
        let (first, extra) = self.counts.first_block(c);
        let region = if extra == 0 {
            0
        } else {
            self.counts.region_holding(set, blank, extra)
        };
        (first + region) * self.orders + order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::Board;

    /// Every placement of tiles on small boards (sets of up to four regions among them) with
    /// the blank on every free cell: the entry equals the region index's own state index.
    #[test]
    fn entry_equals_the_region_index() {
        for (board, k) in [("3x3", 3), ("4x4", 2), ("3x4", 4), ("4x4", 5), ("4x4", 6)] {
            let board: Board = board.parse().unwrap();
            let n = board.cells();
            let region = RegionIndex::new(board, k).unwrap();
            let index = ZeroAwareIndex::new(std::sync::Arc::new(RegionCounts::new(&region)));
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
