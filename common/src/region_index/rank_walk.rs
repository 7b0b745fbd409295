//! The placements of a range of placement ranks, in rank order, with their set and order
//! ranks worked out incrementally ([`RegionIndex::for_each_set_and_order`]).
//!
//! Consecutive ranks differ in the last tile's digit only, except once every `n - k + 1`
//! ranks: the ranks sharing the first `k - 1` tiles (a *prefix*) put the last tile on each
//! cell the prefix leaves free, in increasing order. So the prefix is unranked once, and for
//! each of the `k` positions `p` that the last tile can take among the sorted cells of the
//! whole set, the parts of the set's rank and the order's rank that do not depend on the
//! last tile's cell are worked out once; each rank then costs a population count, a binomial
//! and two additions:
//!
//! * with the prefix's cells `s_0 < .. < s_(k-2)` and the last tile on `x`, at position `p`
//!   among the cells: `c = sum_(i<p) C(s_i, i+1) + C(x, p+1) + sum_(i>=p) C(s_i, i+2)`;
//! * the order is the prefix's order with tile `k - 1` (larger than all) put in at position
//!   `p`: its Lehmer digits are the prefix's, shifted one place from `p` on, and `k - 1 - p`
//!   at `p`.

use super::{BINOMIAL, RegionIndex, factorial};
use crate::MAX_CELLS;
use crate::rank::PlacementRanker;

impl RegionIndex {
    /// Calls `f(rank, c, set, order)` for every placement rank of `ranks` (of `ranker`, on
    /// this index's board and pattern size), in increasing order: the set rank, the bitboard
    /// and the order rank of its placement, as [`RegionIndex::set_and_order`] of the
    /// unranked placement gives them.
    ///
    /// ```
    /// use tilepdb_common::{Board, PlacementRanker, region_index::RegionIndex};
    /// let board: Board = "3x3".parse().unwrap();
    /// let index = RegionIndex::new(board, 3).unwrap();
    /// let ranker = PlacementRanker::new(9, 3).unwrap();
    /// let mut cells = [0u8; 25];
    /// index.for_each_set_and_order(&ranker, 100..200, |rank, c, set, order| {
    ///     ranker.unrank(rank, &mut cells);
    ///     assert_eq!(index.set_and_order(&cells), (c, set, order));
    /// });
    /// ```
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a prefix's digit is below n <= 25 and a cell below 25"
    )]
    pub fn for_each_set_and_order(
        &self,
        ranker: &PlacementRanker,
        ranks: std::ops::Range<u64>,
        mut f: impl FnMut(u64, u64, u32, u64),
    ) {
        debug_assert_eq!((ranker.n(), ranker.k()), (self.board.cells(), self.k));
        if ranks.is_empty() {
            return;
        }
        let (n, k) = (self.board.cells(), self.k);
        let all = self.board.all_cells();
        // Ranks per prefix: the last digit's radix.
        let per_prefix = (n - k + 1) as u64;
        // `(k - 1 - j)!` for the orders of `k` tiles, `(k - 2 - j)!` for the prefix's.
        let radix_k: [u64; MAX_CELLS] = std::array::from_fn(|j| factorial(k.saturating_sub(j + 1)));
        let radix_prefix: [u64; MAX_CELLS] =
            std::array::from_fn(|j| factorial(k.saturating_sub(j + 2)));
        let mut cells = [0u8; MAX_CELLS];
        // Per position `p` of the last tile: the set rank's part and the order rank.
        let mut set_part = [0u64; MAX_CELLS];
        let mut order_at = [0u64; MAX_CELLS];
        let mut prefix = ranks.start / per_prefix;
        let mut rank = ranks.start;
        while rank < ranks.end {
            let first = prefix * per_prefix;
            // The prefix: the first `k - 1` tiles of the placement of rank `first` (its last
            // tile on the lowest cell left free).
            let used = ranker.unrank(first, &mut cells) & !(1u32 << cells[k - 1]);
            // The prefix's cells sorted, and its order's Lehmer digits (by position).
            let mut sorted = [0u8; MAX_CELLS];
            let mut tile_at = [0u8; MAX_CELLS];
            for (i, &cell) in cells[..k - 1].iter().enumerate() {
                let position = (used & ((1u32 << cell) - 1)).count_ones() as usize;
                sorted[position] = cell;
                tile_at[position] = i as u8;
            }
            let mut digits = [0u64; MAX_CELLS];
            for j in 0..k - 1 {
                digits[j] = tile_at[j + 1..k - 1]
                    .iter()
                    .filter(|&&t| t < tile_at[j])
                    .count() as u64;
            }
            // Positions below `p` keep their weights; those from `p` on move up by one.
            let (mut low_set, mut low_order) = (0u64, 0u64);
            let high_set: u64 = (0..k - 1)
                .map(|i| BINOMIAL[sorted[i] as usize][i + 2])
                .sum();
            let high_order: u64 = (0..k - 1).map(|j| digits[j] * radix_prefix[j]).sum();
            let (mut high_set, mut high_order) = (high_set, high_order);
            for p in 0..k {
                set_part[p] = low_set + high_set;
                order_at[p] = low_order + (k - 1 - p) as u64 * radix_k[p] + high_order;
                if p + 1 < k {
                    let s = sorted[p] as usize;
                    low_set += BINOMIAL[s][p + 1];
                    high_set -= BINOMIAL[s][p + 2];
                    low_order += digits[p] * radix_k[p];
                    high_order -= digits[p] * radix_prefix[p];
                }
            }
            // The last tile on each free cell in turn, from the digit of `rank`.
            let mut free = all & !used;
            for _ in 0..rank - first {
                free &= free - 1;
            }
            let end = ranks.end.min(first + per_prefix);
            while rank < end {
                let x = free.trailing_zeros();
                free &= free - 1;
                let p = (used & ((1u32 << x) - 1)).count_ones() as usize;
                let c = set_part[p] + BINOMIAL[x as usize][p + 1];
                f(rank, c, used | 1 << x, order_at[p]);
                rank += 1;
            }
            prefix += 1;
        }
    }
}
