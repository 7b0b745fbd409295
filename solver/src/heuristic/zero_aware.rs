//! The entry of a zero-aware table for a placement and the blank's cell: (tile set, region of
//! the blank among the set's free cells, order of the tiles on the set's cells), computed with
//! bit operations on the occupied cells.
//!
//! A move of a tile outside the pattern leaves this entry as it was: the pattern's tiles keep
//! their cells, and the blank moves between two adjacent free cells of the pattern, which lie
//! in one region. So a search looks a zero-aware table up again only after a move of one of
//! its own tiles, like a minimized or blank-ignored table.
//!
//! Such a move changes one tile's cell, so the set's rank and the order's rank of the child
//! follow from the parent's ([`ZeroAwareIndex::moved`]): only the terms of the moved tile and
//! of the set's cells between its two cells change.

use std::sync::Arc;

use tilepdb_common::region_index::{MAX_TABLED_K, OrderMoves, RegionIndex, SetBlocks, factorial};
use tilepdb_common::{Board, MAX_CELLS};

/// `BINOMIALS[a][b] = C(a, b)` for `a, b < 32` (0 when `b > a`), the region index's
/// [`binomial`](tilepdb_common::region_index::binomial) where both are defined, in a table of
/// a power of two on each side, so that a lookup with masked indices needs no bounds check.
static BINOMIALS: [[u64; 32]; 32] = {
    let mut t = [[0u64; 32]; 32];
    let mut a = 0;
    while a < 32 {
        t[a][0] = 1;
        let mut b = 1;
        while b <= a {
            t[a][b] = t[a - 1][b - 1] + if b < a { t[a - 1][b] } else { 0 };
            b += 1;
        }
        a += 1;
    }
    t
};

/// `C(a, b)` for `a, b < 32`, without bounds checks.
#[inline(always)]
fn choose(a: usize, b: usize) -> u64 {
    BINOMIALS[a & 31][b & 31]
}

/// How many regions each tile set of a region index has, in a few bits per set so that the
/// whole fits in the processor's caches ([`SetBlocks`]), and the cells of the regions after
/// each set's first (most sets have one region): the first block of a set and the region of
/// the blank, without the index's regions or growing one.
pub(super) struct RegionCounts {
    board: Board,
    k: usize,
    /// The first block and extra regions of each set.
    blocks: SetBlocks,
    /// The cells of each set's regions after its first, set after set (those of the set of
    /// rank `c`, whose first block is `first`, from `first - c` on), and a last 0: the blank's
    /// region is the one whose cells hold it. A copy of part of the region index's regions,
    /// kept because it is denser (no first regions: 297 KB against 1 MB for 6 tiles on 5x5),
    /// which a lookup that reads it on every set feels in the caches.
    later_regions: Vec<u32>,
    /// `order_moves[(p_a * k + p_b) * k! + rank]`: the order of rank `rank` with its element at
    /// position `p_a` moved to `p_b` ([`OrderMoves`]); empty beyond [`MAX_TABLED_K`] tiles.
    order_moves: Vec<u16>,
}

impl RegionCounts {
    /// The counts of `region`'s sets.
    pub(super) fn new(region: &RegionIndex) -> RegionCounts {
        let k = region.k();
        let moves = OrderMoves::new(k);
        let mut order_moves = Vec::new();
        for pa in 0..k {
            for pb in 0..k {
                order_moves.extend_from_slice(moves.row(pa, pb).unwrap_or_default());
            }
        }
        let mut later_regions = Vec::new();
        for c in 0..region.sets() {
            later_regions.extend_from_slice(&region.regions_of(c)[1..]);
        }
        later_regions.push(0);
        RegionCounts {
            board: region.board(),
            k,
            blocks: region.set_blocks().clone(),
            later_regions,
            order_moves,
        }
    }

    /// Whether these are the counts of the region index of `board` and `k` tiles.
    pub(super) fn serves(&self, board: Board, k: usize) -> bool {
        self.board == board && self.k == k
    }
}

/// Where a zero-aware table's tiles stand, kept from a node to its children so that a child's
/// entry is followed from its parent's ([`ZeroAwareIndex::moved`]) instead of ranked from
/// scratch: the set's bitboard (bits 0 to 24), the set's rank (bits 25 to 47) and the order's
/// Lehmer rank (bits 48 to 63).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Placed(u64);

impl Placed {
    const SET_BITS: u32 = 25;
    const RANK_BITS: u32 = 23;

    /// The set `set` of rank `c` (below `2^23`) and the order of rank `order` (below `2^16`).
    #[inline(always)]
    fn new(set: u32, c: u64, order: u64) -> Placed {
        Placed(u64::from(set) | c << Self::SET_BITS | order << (Self::SET_BITS + Self::RANK_BITS))
    }

    /// The set's bitboard.
    #[inline(always)]
    fn set(self) -> u32 {
        (self.0 & ((1 << Self::SET_BITS) - 1)) as u32
    }

    /// The set's rank.
    #[inline(always)]
    fn set_rank(self) -> u64 {
        (self.0 >> Self::SET_BITS) & ((1 << Self::RANK_BITS) - 1)
    }

    /// The order's rank.
    #[inline(always)]
    fn order(self) -> u64 {
        self.0 >> (Self::SET_BITS + Self::RANK_BITS)
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

    /// Whether [`Placed`] holds this table's placements ([`ZeroAwareIndex::placed`]): patterns
    /// of at most [`MAX_TABLED_K`] tiles, whose moved orders are tabled.
    pub(super) fn follows_moves(&self) -> bool {
        self.counts.k <= MAX_TABLED_K
    }

    /// The set and order of the placement `at[..k]`, from scratch, for
    /// [`ZeroAwareIndex::moved`] (a table that [`ZeroAwareIndex::follows_moves`]).
    #[inline(always)]
    pub(super) fn placed(&self, at: &[u8; MAX_CELLS], k: usize) -> Placed {
        let (set, c, order) = self.set_and_order(at, k);
        Placed::new(set, c, order)
    }

    /// `placed` after its tile on `from` moved to the free cell `to`, from its parts: the cells
    /// of the set strictly between `from` and `to` (none after a move along a row of the
    /// table's board) change their positions by one, so their terms of the set's rank change;
    /// the moved tile's term is taken out at its old position and put back at its new one, and
    /// the order's rank is read from the table of moved orders when the moved tile's position
    /// changed.
    #[inline(always)]
    pub(super) fn moved(&self, placed: Placed, from: u8, to: u8) -> Placed {
        let set = placed.set();
        let (bit_from, bit_to) = (1u32 << from, 1u32 << to);
        let p_from = (set & (bit_from - 1)).count_ones() as usize;
        let (low, high) = if from < to {
            (bit_from, bit_to)
        } else {
            (bit_to, bit_from)
        };
        // The set's cells strictly between the two.
        let mut between = set & (high - 1) & !(low | (low - 1));
        let mut c = placed
            .set_rank()
            .wrapping_sub(choose(from as usize, p_from + 1));
        let mut order = placed.order();
        let p_to = if between == 0 {
            p_from
        } else {
            let m = between.count_ones() as usize;
            // The cells between move down a position when the tile moves up, else up one.
            let (p_to, mut p, shift_up) = if from < to {
                (p_from + m, p_from + 1, false)
            } else {
                (p_from - m, p_from - m, true)
            };
            while between != 0 {
                let s = between.trailing_zeros() as usize;
                between &= between - 1;
                let (old, new) = if shift_up { (p, p + 1) } else { (p, p - 1) };
                c = c
                    .wrapping_add(choose(s, new + 1))
                    .wrapping_sub(choose(s, old + 1));
                p += 1;
            }
            let k = self.counts.k;
            #[expect(
                clippy::cast_possible_truncation,
                reason = "an order's rank is below k! <= 8!, a position in the table in memory"
            )]
            let at = (p_from * k + p_to) * self.orders as usize + order as usize;
            order = u64::from(self.counts.order_moves[at]);
            p_to
        };
        c = c.wrapping_add(choose(to as usize, p_to + 1));
        Placed::new(set ^ bit_from ^ bit_to, c, order)
    }

    /// The entry of `placed` with the blank on `blank`, a free cell.
    #[inline(always)]
    pub(super) fn placed_entry(&self, placed: Placed, blank: u8) -> u64 {
        self.block_entry(placed.set_rank(), placed.order(), blank)
    }

    /// The set's bitboard, its rank and the order's rank of the placement `at[..k]`.
    ///
    /// The set's rank and the order's Lehmer rank are taken tile by tile, in one pass after the
    /// set is made: the `p`-th smallest cell of the set holds tile `j`, whose digit counts the
    /// tiles before `j` on larger cells.
    #[inline(always)]
    fn set_and_order(&self, at: &[u8; MAX_CELLS], k: usize) -> (u32, u64, u64) {
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
            c += choose(cell as usize, p + 1);
            before |= bit;
        }
        (set, c, order)
    }

    /// The entry of the set of rank `c` and the order of rank `order` with the blank on
    /// `blank`. The region is 0 for a set with one region (most sets), else the index of the
    /// blank's among the set's regions: the later region whose cells hold it, or 0
    /// ([`RegionCounts`]), read without a branch on where the blank is.
    #[inline(always)]
    fn block_entry(&self, c: u64, order: u64, blank: u8) -> u64 {
        let counts = &*self.counts;
        let (first, extra) = counts.blocks.first_block(c);
        let later = first - c;
        #[expect(
            clippy::cast_possible_truncation,
            reason = "`first - c + j` counts later regions of the index, held in memory"
        )]
        let holds = |j: u64| u64::from((counts.later_regions[(later + j) as usize] >> blank) & 1);
        let region = if extra <= 1 {
            // A set of one region reads the next set's second region, and ignores it.
            holds(0) & extra
        } else {
            (0..extra).fold(0, |region, j| region | (holds(j) * (j + 1)))
        };
        (first + region) * self.orders + order
    }

    /// The entry of the placement `at[..k]` (the cell of each pattern tile) with the blank on
    /// `blank`, a free cell, from scratch.
    #[inline(always)]
    pub(super) fn entry(&self, at: &[u8; MAX_CELLS], k: usize, blank: u8) -> u64 {
        let (_, c, order) = self.set_and_order(at, k);
        self.block_entry(c, order, blank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::Board;

    /// The unchecked binomials equal the region index's wherever those are defined.
    #[test]
    fn choose_equals_the_region_index_binomial() {
        for a in 0..=MAX_CELLS + 1 {
            for b in 0..=MAX_CELLS {
                assert_eq!(
                    choose(a, b),
                    tilepdb_common::region_index::binomial(a, b),
                    "C({a}, {b})"
                );
            }
        }
    }

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

    /// Random placements on small boards and on 5x5 (the sizes the catalogues use, up to the
    /// largest pattern whose orders are tabled), every move of every tile onto a free
    /// neighbour: the placement followed from the parent's equals the child's from scratch,
    /// and so does its entry with the blank on the cell the tile left.
    #[test]
    fn a_followed_placement_equals_the_placement_from_scratch() {
        use rand::seq::SliceRandom;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(38);
        for (board, k, states) in [
            ("3x3", 3, 200),
            ("3x4", 4, 200),
            ("4x4", 5, 300),
            ("4x4", 6, 300),
            ("5x5", 6, 2000),
            ("5x5", 7, 500),
            ("5x5", 8, 200),
        ] {
            let board: Board = board.parse().unwrap();
            let (n, width) = (board.cells(), board.width());
            let region = RegionIndex::new(board, k).unwrap();
            let index = ZeroAwareIndex::new(std::sync::Arc::new(RegionCounts::new(&region)));
            assert!(index.follows_moves());
            #[expect(clippy::cast_possible_truncation, reason = "a cell is below 25")]
            let mut cells: Vec<u8> = (0..n as u8).collect();
            let mut moves = 0;
            let mut between = 0;
            for _ in 0..states {
                cells.shuffle(&mut rng);
                let mut at = [0u8; MAX_CELLS];
                at[..k].copy_from_slice(&cells[..k]);
                let placed = index.placed(&at, k);
                let set = at[..k].iter().fold(0u32, |s, &c| s | 1 << c);
                for j in 0..k {
                    let from = at[j] as usize;
                    let (row, column) = (from / width, from % width);
                    let neighbours = [
                        (row > 0).then(|| from - width),
                        (column > 0).then(|| from - 1),
                        (column + 1 < width).then(|| from + 1),
                        (from + width < n).then(|| from + width),
                    ];
                    for to in neighbours.into_iter().flatten() {
                        if set & (1 << to) != 0 {
                            continue;
                        }
                        let mut after = at;
                        #[expect(clippy::cast_possible_truncation, reason = "a cell is below 25")]
                        let to_cell = to as u8;
                        after[j] = to_cell;
                        let followed = index.moved(placed, at[j], to_cell);
                        assert_eq!(followed, index.placed(&after, k));
                        let entry = index.placed_entry(followed, at[j]);
                        assert_eq!(entry, index.entry(&after, k, at[j]));
                        assert_eq!(entry, region.state_index(&after[..k], from));
                        let low = from.min(to);
                        let high = from.max(to);
                        between += usize::from((low + 1..high).any(|c| set & (1 << c) != 0));
                        moves += 1;
                    }
                }
                // A random free cell for the blank: the entry from the placed parts.
                let free: Vec<usize> = (0..n).filter(|&c| set & (1 << c) == 0).collect();
                let blank = free[rng.random_range(0..free.len())];
                #[expect(clippy::cast_possible_truncation, reason = "a cell is below 25")]
                let blank_cell = blank as u8;
                assert_eq!(
                    index.placed_entry(placed, blank_cell),
                    region.state_index(&at[..k], blank)
                );
            }
            // Both kinds of move were checked: with and without cells of the set between.
            assert!(
                moves > between && between > 0,
                "{board} {k}: {moves} {between}"
            );
        }
    }
}
