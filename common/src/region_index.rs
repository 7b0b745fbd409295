//! The region-indexed state space: a dense index of (placement, region of the blank).
//!
//! A placement of `k` pattern tiles on `n` cells is split into
//!
//! * its **tile set** `S`, the occupied cells as a bitboard, ranked by the combinatorial number
//!   system: `c(S) = sum_i C(s_i, i + 1)` over the cells `s_0 < .. < s_(k-1)` of `S`, in
//!   `[0, C(n, k))` (the rank of `S` among the `k`-cell sets in increasing bitboard order);
//! * its **order** `pi`: the `j`-th smallest cell of `S` holds pattern tile `pi(j)`, ranked by
//!   its Lehmer code in `[0, k!)` ([`order_rank`]).
//!
//! The **regions** of `S` are the connected components of its free cells, ordered by their
//! least cell; `R(S)` of them. Their number depends on `S` only, so with
//! `offset[c] = sum of R over the smaller set ranks` and `T = sum_S R(S)`:
//!
//! * the **state index** of (placement, region `r`) is `(offset[c] + r) * k! + rank(pi)`, dense
//!   in `[0, T * k!)`: every index is a real state;
//! * the **placement index** is `c * k! + rank(pi)`, dense in `[0, C(n, k) * k!)` (one "region"
//!   per set: the state index of the `ignored` rule, and where a minimized build keeps its
//!   least depth per placement).
//!
//! The `k!` states of one (set, region) form a contiguous **block**. A move of a pattern tile
//! from `a` to `b` changes the set, the region and the position of the moved tile in the order
//! in a way that depends on (`S`, `r`, `a`, `b`) only, so every state of a block reaches the
//! same successor block (see `docs/DESIGN.md`).
//!
//! ```
//! use tilepdb_common::{Board, region_index::RegionIndex};
//! let board: Board = "3x3".parse().unwrap();
//! let index = RegionIndex::new(board, 2).unwrap();
//! assert_eq!(index.sets(), 36); // C(9, 2)
//! // Two tiles on cells 0 and 4 of 3x3 leave one region of seven cells; on 1 and 3 the corner
//! // cell 0 is walled off: two regions.
//! assert_eq!(index.regions_of(index.set_rank(0b1_0001)).len(), 1);
//! assert_eq!(index.regions_of(index.set_rank(0b1010)).len(), 2);
//! // Tile 0 on cell 3, tile 1 on cell 1, blank in the corner: the second order, region 0.
//! let state = index.state_index(&[3, 1], 0);
//! let (cells, region) = index.decode(state);
//! assert_eq!(&cells[..2], &[3, 1]);
//! assert_eq!(region, 0b1);
//! ```

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless,
    reason = "cells, orders and indices move between u8, u32, u64 and usize within their proven bounds"
)]

use crate::board::{Board, MAX_CELLS};
use crate::error::{Error, Result};
use crate::rank::PlacementRanker;

/// Largest pattern the order-move table is kept for (`k! <= 40320` fits `u16`).
pub const MAX_TABLED_K: usize = 8;

/// `C(a, b)` for `a, b <= 25`.
const fn binomials() -> [[u64; MAX_CELLS + 1]; MAX_CELLS + 2] {
    let mut t = [[0u64; MAX_CELLS + 1]; MAX_CELLS + 2];
    let mut a = 0;
    while a < MAX_CELLS + 2 {
        t[a][0] = 1;
        let mut b = 1;
        while b <= MAX_CELLS && b <= a {
            t[a][b] = t[a - 1][b - 1] + if b < a { t[a - 1][b] } else { 0 };
            b += 1;
        }
        a += 1;
    }
    t
}

static BINOMIAL: [[u64; MAX_CELLS + 1]; MAX_CELLS + 2] = binomials();

/// `C(a, b)` for `a <= 26`, `b <= 25` (0 when `b > a`).
#[inline]
pub fn binomial(a: usize, b: usize) -> u64 {
    BINOMIAL[a][b]
}

/// `k!`.
pub fn factorial(k: usize) -> u64 {
    (1..=k as u64).product()
}

/// The combinatorial rank of a set of cells: `sum_i C(s_i, i + 1)`.
#[inline]
pub fn rank_set(mut set: u32) -> u64 {
    let mut rank = 0;
    let mut i = 1;
    while set != 0 {
        rank += BINOMIAL[set.trailing_zeros() as usize][i];
        set &= set - 1;
        i += 1;
    }
    rank
}

/// The Lehmer rank of the order `order[..k]` (a permutation of `0..k`), in `[0, k!)`:
/// `sum_j d_j * (k - 1 - j)!` with `d_j` the number of later entries smaller than `order[j]`.
///
/// ```
/// use tilepdb_common::region_index::{order_rank, order_unrank};
/// assert_eq!(order_rank(&[0, 1, 2]), 0);
/// assert_eq!(order_rank(&[2, 1, 0]), 5);
/// let mut order = [0u8; 3];
/// order_unrank(3, 3, &mut order); // digits 1, 1, 0
/// assert_eq!(order, [1, 2, 0]);
/// ```
#[inline]
pub fn order_rank(order: &[u8]) -> u64 {
    let k = order.len();
    let mut unused = (1u32 << k) - 1;
    let mut rank = 0u64;
    for (j, &t) in order.iter().enumerate() {
        let digit = (unused & ((1u32 << t) - 1)).count_ones() as u64;
        rank = rank * (k - j) as u64 + digit;
        unused &= !(1 << t);
    }
    rank
}

/// Writes the order of Lehmer rank `rank` of `k` elements into `order[..k]`.
#[inline]
pub fn order_unrank(k: usize, mut rank: u64, order: &mut [u8]) {
    let mut digits = [0u8; MAX_CELLS];
    for j in (0..k).rev() {
        let radix = (k - j) as u64;
        digits[j] = (rank % radix) as u8;
        rank /= radix;
    }
    let mut unused = (1u32 << k) - 1;
    for j in 0..k {
        let t = crate::rank::select_bit(unused, digits[j] as u32);
        order[j] = t as u8;
        unused &= !(1 << t);
    }
}

/// The dense (set, region, order) index of the pattern states of `k` tiles on a board.
#[derive(Clone, Debug)]
pub struct RegionIndex {
    board: Board,
    k: usize,
    factorial: u64,
    /// The bitboard of each set, by set rank.
    set_masks: Vec<u32>,
    /// `offsets[c]`: regions of the sets of smaller rank; `offsets[sets]` = `T`.
    offsets: Vec<u32>,
    /// The regions of every set, ordered by least cell, set after set.
    regions: Vec<u32>,
}

impl RegionIndex {
    /// The index of `k` tiles on `board` (`1 <= k < n`); refuses sizes beyond 64 bits.
    pub fn new(board: Board, k: usize) -> Result<RegionIndex> {
        let n = board.cells();
        if k == 0 || k >= n {
            return Err(Error::Pattern {
                pattern: format!("of {k} tiles"),
                reason: format!(
                    "a pattern holds between 1 and {} tiles on a board of {n} cells",
                    n - 1
                ),
            });
        }
        let sets = binomial(n, k);
        let mut set_masks = Vec::with_capacity(sets as usize);
        let mut offsets = Vec::with_capacity(sets as usize + 1);
        let mut regions = Vec::new();
        let all = board.all_cells();
        // The k-bit masks below 2^n in increasing order (Gosper's hack) are the sets in rank
        // order.
        let mut set: u32 = (1u32 << k) - 1;
        for _ in 0..sets {
            set_masks.push(set);
            offsets.push(u32::try_from(regions.len()).map_err(|_| Error::Pattern {
                pattern: format!("of {k} tiles"),
                reason: "more than 2^32 regions over the tile sets".into(),
            })?);
            let free = all & !set;
            let mut left = free;
            while left != 0 {
                let region = board.region(left.trailing_zeros() as usize, free);
                regions.push(region);
                left &= !region;
            }
            let c = set & set.wrapping_neg();
            let r = set.wrapping_add(c);
            set = if r == 0 {
                0
            } else {
                (((r ^ set) >> 2) / c) | r
            };
        }
        offsets.push(regions.len() as u32);
        let index = RegionIndex {
            board,
            k,
            factorial: factorial(k),
            set_masks,
            offsets,
            regions,
        };
        index
            .region_count()
            .checked_mul(index.factorial)
            .ok_or_else(|| Error::Pattern {
                pattern: format!("of {k} tiles"),
                reason: "the state count overflows 64 bits".into(),
            })?;
        Ok(index)
    }

    /// The board of the index.
    pub fn board(&self) -> Board {
        self.board
    }

    /// Number of pattern tiles.
    pub fn k(&self) -> usize {
        self.k
    }

    /// `k!`: orders per set, states per block.
    pub fn orders(&self) -> u64 {
        self.factorial
    }

    /// Number of tile sets, `C(n, k)`.
    pub fn sets(&self) -> u64 {
        self.set_masks.len() as u64
    }

    /// `T`: (set, region) pairs over all sets, i.e. blocks of the state index.
    pub fn region_count(&self) -> u64 {
        self.regions.len() as u64
    }

    /// Number of states, `T * k!` (every index a real state).
    pub fn states(&self) -> u64 {
        self.region_count() * self.factorial
    }

    /// Number of placements, `C(n, k) * k!`.
    pub fn placements(&self) -> u64 {
        self.sets() * self.factorial
    }

    /// The bitboard of the set of rank `c`.
    #[inline]
    pub fn set_mask(&self, c: u64) -> u32 {
        self.set_masks[c as usize]
    }

    /// The rank of a set of `k` cells.
    #[inline]
    pub fn set_rank(&self, set: u32) -> u64 {
        debug_assert_eq!(set.count_ones() as usize, self.k);
        rank_set(set)
    }

    /// The first block of the set of rank `c`: `offset[c]`.
    #[inline]
    pub fn first_block(&self, c: u64) -> u64 {
        self.offsets[c as usize] as u64
    }

    /// The regions of the set of rank `c`, ordered by least cell.
    #[inline]
    pub fn regions_of(&self, c: u64) -> &[u32] {
        let c = c as usize;
        &self.regions[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }

    /// The index among the regions of the set `c` of the region holding free `cell`.
    #[inline]
    pub fn region_holding(&self, c: u64, cell: usize) -> u64 {
        let regions = self.regions_of(c);
        regions
            .iter()
            .position(|&r| r & (1 << cell) != 0)
            .expect("the cell is free") as u64
    }

    /// The set rank and order rank of a placement (`cells[i]`: the cell of pattern tile `i`).
    #[inline]
    pub fn set_and_order(&self, cells: &[u8]) -> (u64, u32, u64) {
        let cells = &cells[..self.k];
        let set = cells.iter().fold(0u32, |m, &c| m | 1 << c);
        let mut order = [0u8; MAX_CELLS];
        for (i, &c) in cells.iter().enumerate() {
            order[(set & ((1u32 << c) - 1)).count_ones() as usize] = i as u8;
        }
        (rank_set(set), set, order_rank(&order[..self.k]))
    }

    /// The placement index `c * k! + rank(pi)` of a placement.
    #[inline]
    pub fn placement_index(&self, cells: &[u8]) -> u64 {
        let (c, _, o) = self.set_and_order(cells);
        c * self.factorial + o
    }

    /// The state index of a placement with the blank (or any free cell of its region) on
    /// `blank`.
    #[inline]
    pub fn state_index(&self, cells: &[u8], blank: usize) -> u64 {
        let (c, _, o) = self.set_and_order(cells);
        (self.first_block(c) + self.region_holding(c, blank)) * self.factorial + o
    }

    /// The block (`offset[c] + r`) of a state index, and its set rank `c`.
    #[inline]
    pub fn block_and_set(&self, state: u64) -> (u64, u64) {
        let block = state / self.factorial;
        let c = self.offsets.partition_point(|&o| o as u64 <= block) - 1;
        (block, c as u64)
    }

    /// The placement (`cells[i]`: cell of tile `i`) of a state index and its region.
    pub fn decode(&self, state: u64) -> ([u8; MAX_CELLS], u32) {
        let (block, c) = self.block_and_set(state);
        let cells = self.placement_cells(c, state % self.factorial);
        (cells, self.regions[block as usize])
    }

    /// The placement of set `c` and order rank `order`.
    pub fn placement_cells(&self, c: u64, order: u64) -> [u8; MAX_CELLS] {
        let mut pi = [0u8; MAX_CELLS];
        order_unrank(self.k, order, &mut pi);
        let mut cells = [0u8; MAX_CELLS];
        let mut set = self.set_mask(c);
        for &tile in &pi[..self.k] {
            cells[tile as usize] = set.trailing_zeros() as u8;
            set &= set - 1;
        }
        cells
    }
}

impl RegionIndex {
    /// The values of an aware table (placement-rank order of `ranker`, `rank * (n - k) + slot`)
    /// from those of the zero-aware table of the same pattern: every free cell of a region
    /// gets the region's value.
    pub fn aware_from_zero_aware(&self, ranker: &PlacementRanker, zero_aware: &[u8]) -> Vec<u8> {
        let slots = self.board.cells() - self.k;
        let mut out = vec![0u8; ranker.placements() as usize * slots];
        self.for_each_cell_state(ranker, |entry, state| {
            out[entry as usize] = zero_aware[state as usize];
        });
        out
    }

    /// The values of a zero-aware table from those of the aware table of the same pattern (the
    /// value of a region is that of any of its cells; the aware table gives them all the same).
    pub fn zero_aware_from_aware(&self, ranker: &PlacementRanker, aware: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; self.states() as usize];
        self.for_each_cell_state(ranker, |entry, state| {
            out[state as usize] = aware[entry as usize];
        });
        out
    }

    /// Calls `f(aware entry, state index)` for every (placement, free cell).
    fn for_each_cell_state(&self, ranker: &PlacementRanker, mut f: impl FnMut(u64, u64)) {
        let slots = (self.board.cells() - self.k) as u64;
        let all = self.board.all_cells();
        let mut cells = [0u8; MAX_CELLS];
        for rank in 0..ranker.placements() {
            ranker.unrank(rank, &mut cells);
            let (c, set, order) = self.set_and_order(&cells);
            let first = self.first_block(c);
            let regions = self.regions_of(c);
            let mut free = all & !set;
            for slot in 0..slots {
                let cell = free.trailing_zeros();
                free &= free - 1;
                let r = regions
                    .iter()
                    .position(|&m| m & (1 << cell) != 0)
                    .expect("a free cell is in a region") as u64;
                f(rank * slots + slot, (first + r) * self.factorial + order);
            }
        }
    }
}

/// `moved(p_a, p_b, rank(pi))` = the rank of `pi` with its element at position `p_a` taken out
/// and put back at position `p_b` (the order after a tile moves from the `p_a`-th cell of its
/// set to the `p_b`-th cell of the new set): a table of `k * k * k!` `u16` for `k <= 8`,
/// computed for larger `k`.
///
/// ```
/// use tilepdb_common::region_index::{OrderMoves, order_rank};
/// let moves = OrderMoves::new(4);
/// // [2, 0, 3, 1]: the element at position 0 (tile 2) moved to position 2 gives [0, 3, 2, 1].
/// assert_eq!(moves.moved(0, 2, order_rank(&[2, 0, 3, 1])), order_rank(&[0, 3, 2, 1]));
/// ```
#[derive(Clone, Debug)]
pub struct OrderMoves {
    k: usize,
    orders: u64,
    table: Vec<u16>,
}

impl OrderMoves {
    /// The moves between the orders of `k` tiles.
    pub fn new(k: usize) -> OrderMoves {
        let orders = factorial(k);
        let mut table = Vec::new();
        if k <= MAX_TABLED_K {
            table = vec![0u16; k * k * orders as usize];
            let mut pi = [0u8; MAX_CELLS];
            for rank in 0..orders {
                order_unrank(k, rank, &mut pi);
                for pa in 0..k {
                    for pb in 0..k {
                        table[((pa * k + pb) as u64 * orders + rank) as usize] =
                            Self::compute(k, &pi, pa, pb) as u16;
                    }
                }
            }
        }
        OrderMoves { k, orders, table }
    }

    fn compute(k: usize, pi: &[u8], pa: usize, pb: usize) -> u64 {
        let mut moved = [0u8; MAX_CELLS];
        moved[..k].copy_from_slice(&pi[..k]);
        let t = moved[pa];
        if pa < pb {
            moved.copy_within((pa + 1)..=pb, pa);
        } else {
            moved.copy_within(pb..pa, pb + 1);
        }
        moved[pb] = t;
        order_rank(&moved[..k])
    }

    /// The row of the table for one (`p_a`, `p_b`): `row[rank]` is the moved rank (`None` for
    /// patterns beyond [`MAX_TABLED_K`] tiles).
    #[inline]
    pub fn row(&self, pa: usize, pb: usize) -> Option<&[u16]> {
        if self.table.is_empty() {
            return None;
        }
        let start = ((pa * self.k + pb) as u64 * self.orders) as usize;
        Some(&self.table[start..start + self.orders as usize])
    }

    /// The rank of the order `rank` after moving its element at `pa` to `pb`.
    #[inline]
    pub fn moved(&self, pa: usize, pb: usize, rank: u64) -> u64 {
        if let Some(row) = self.row(pa, pb) {
            row[rank as usize] as u64
        } else {
            let mut pi = [0u8; MAX_CELLS];
            order_unrank(self.k, rank, &mut pi);
            Self::compute(self.k, &pi, pa, pb)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashSet, VecDeque};

    /// Regions of the free cells of `set` by a queue-based search on (row, column), sharing no
    /// code with the index.
    fn naive_region_count(w: usize, h: usize, set: u32) -> u64 {
        let n = w * h;
        let mut seen = vec![false; n];
        let mut count = 0;
        for start in 0..n {
            if set & (1 << start) != 0 || seen[start] {
                continue;
            }
            count += 1;
            seen[start] = true;
            let mut queue = VecDeque::from([start]);
            while let Some(c) = queue.pop_front() {
                let (r, col) = (c / w, c % w);
                let mut next = vec![];
                if r > 0 {
                    next.push(c - w);
                }
                if r + 1 < h {
                    next.push(c + w);
                }
                if col > 0 {
                    next.push(c - 1);
                }
                if col + 1 < w {
                    next.push(c + 1);
                }
                for d in next {
                    if set & (1 << d) == 0 && !seen[d] {
                        seen[d] = true;
                        queue.push_back(d);
                    }
                }
            }
        }
        count
    }

    /// `sum over k-subsets of R(S)` enumerated by recursion over cells, with naive regions.
    fn naive_total(w: usize, h: usize, k: usize) -> u64 {
        fn go(w: usize, h: usize, from: usize, left: usize, set: u32, total: &mut u64) {
            if left == 0 {
                *total += naive_region_count(w, h, set);
                return;
            }
            for c in from..w * h {
                if w * h - c >= left {
                    go(w, h, c + 1, left - 1, set | 1 << c, total);
                }
            }
        }
        let mut total = 0;
        go(w, h, 0, k, 0, &mut total);
        total
    }

    #[test]
    fn counts_of_the_15_puzzle() {
        let board: Board = "15".parse().unwrap();
        for (k, want) in [
            (5, 874_080u64),
            (6, 11_816_640),
            (7, 139_849_920),
            (8, 1_425_191_040),
        ] {
            let index = RegionIndex::new(board, k).unwrap();
            assert_eq!(index.states(), want, "15-puzzle, {k} tiles");
            assert_eq!(
                naive_total(4, 4, k) * factorial(k),
                want,
                "naive, {k} tiles"
            );
        }
    }

    #[test]
    fn counts_of_the_24_puzzle() {
        let board: Board = "24".parse().unwrap();
        for (k, want) in [(6, 181_008_000u64), (7, 4_066_655_040), (8, 87_358_400_640)] {
            let index = RegionIndex::new(board, k).unwrap();
            assert_eq!(index.states(), want, "24-puzzle, {k} tiles");
            assert_eq!(index.sets(), binomial(25, k));
        }
        // The 6-tile count checked by the naive enumeration too (177,100 sets).
        assert_eq!(naive_total(5, 5, 6) * 720, 181_008_000);
    }

    #[test]
    fn set_ranks_are_the_gosper_order() {
        let board: Board = "3x4".parse().unwrap();
        for k in 1..12 {
            let index = RegionIndex::new(board, k).unwrap();
            for c in 0..index.sets() {
                assert_eq!(index.set_rank(index.set_mask(c)), c);
                assert_eq!(index.set_mask(c).count_ones() as usize, k);
            }
        }
    }

    #[test]
    fn orders_round_trip() {
        for k in 1..=7 {
            let mut seen = HashSet::new();
            let mut pi = [0u8; MAX_CELLS];
            for rank in 0..factorial(k) {
                order_unrank(k, rank, &mut pi);
                assert_eq!(order_rank(&pi[..k]), rank);
                let mut sorted = pi[..k].to_vec();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..k as u8).collect::<Vec<_>>());
                assert!(seen.insert(pi[..k].to_vec()));
            }
        }
    }

    #[test]
    fn order_moves_agree_with_the_computation() {
        for k in [1, 2, 5, 9] {
            let moves = OrderMoves::new(k);
            let mut pi = [0u8; MAX_CELLS];
            for rank in (0..factorial(k)).step_by(7) {
                order_unrank(k, rank, &mut pi);
                for pa in 0..k {
                    for pb in 0..k {
                        let mut v: Vec<u8> = pi[..k].to_vec();
                        let t = v.remove(pa);
                        v.insert(pb, t);
                        assert_eq!(moves.moved(pa, pb, rank), order_rank(&v));
                    }
                }
            }
        }
    }

    /// Every (placement, free cell) of small boards maps to a state index in range; cells of
    /// one region share it, different regions do not; every index is hit; decode inverts it.
    #[test]
    fn state_index_is_a_bijection_on_small_boards() {
        for (board, ks) in [
            ("3x3", vec![1, 2, 3, 4]),
            ("3x4", vec![2, 3]),
            ("2x2", vec![1, 2, 3]),
        ] {
            let board: Board = board.parse().unwrap();
            for k in ks {
                let index = RegionIndex::new(board, k).unwrap();
                let ranker = PlacementRanker::new(board.cells(), k).unwrap();
                let mut hit = vec![false; index.states() as usize];
                let mut placement_hit = vec![false; index.placements() as usize];
                let mut cells = [0u8; MAX_CELLS];
                for rank in 0..ranker.placements() {
                    let occupied = ranker.unrank(rank, &mut cells);
                    let p = index.placement_index(&cells) as usize;
                    assert!(!placement_hit[p]);
                    placement_hit[p] = true;
                    let free = board.all_cells() & !occupied;
                    let mut left = free;
                    while left != 0 {
                        let least = left.trailing_zeros() as usize;
                        let region = board.region(least, free);
                        left &= !region;
                        let s = index.state_index(&cells, least);
                        let mut rest = region;
                        while rest != 0 {
                            assert_eq!(
                                index.state_index(&cells, rest.trailing_zeros() as usize),
                                s
                            );
                            rest &= rest - 1;
                        }
                        assert!(!hit[s as usize], "{board} k {k}: index {s} twice");
                        hit[s as usize] = true;
                        let (back, back_region) = index.decode(s);
                        assert_eq!(&back[..k], &cells[..k]);
                        assert_eq!(back_region, region);
                    }
                }
                assert!(
                    hit.iter().all(|&h| h),
                    "{board} k {k}: an index is never hit"
                );
                assert!(placement_hit.iter().all(|&h| h));
            }
        }
    }

    #[test]
    fn refuses_bad_sizes() {
        let board: Board = "3x3".parse().unwrap();
        assert!(RegionIndex::new(board, 0).is_err());
        assert!(
            RegionIndex::new(board, 9)
                .unwrap_err()
                .to_string()
                .contains("between 1 and 8")
        );
    }
}
