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

use std::sync::{Arc, Mutex, Weak};

use crate::board::{Board, MAX_CELLS};
use crate::error::{Error, Result};
use crate::rank::PlacementRanker;

mod blocks;
mod orders;
mod rank_walk;
#[cfg(test)]
mod tests;

pub use blocks::SetBlocks;
pub use orders::{MAX_TABLED_K, OrderMoves, order_rank, order_unrank};

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

/// Cuts the tile sets of `index` into about `parts` contiguous ranges of ranks of about equal
/// states: of about equal blocks, or of equal sets when the blank is `ignored` (a block a
/// set). Each range ends at the first set whose first block reaches its share past the
/// range's start, found by halving.
///
/// ```
/// use tilepdb_common::board::Board;
/// use tilepdb_common::region_index::{RegionIndex, set_ranges};
///
/// let index = RegionIndex::new(Board::new(3, 3).unwrap(), 2).unwrap();
/// let ranges = set_ranges(&index, true, 4);
/// assert_eq!(ranges, [0..9, 9..18, 18..27, 27..36]); // 36 sets of 2 of 9 cells
/// ```
pub fn set_ranges(index: &RegionIndex, ignored: bool, parts: u64) -> Vec<std::ops::Range<u64>> {
    let sets = index.sets();
    let weight = |c: u64| if ignored { c } else { index.first_block(c) };
    let per = (weight(sets) / parts.max(1)).max(1);
    let mut ranges = Vec::new();
    let mut start = 0;
    while start < sets {
        let goal = weight(start) + per;
        let (mut low, mut high) = (start + 1, sets);
        while low < high {
            let middle = low + (high - low) / 2;
            if weight(middle) >= goal {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        ranges.push(start..low);
        start = low;
    }
    ranges
}

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

/// The dense (set, region, order) index of the pattern states of `k` tiles on a board.
#[derive(Clone, Debug)]
pub struct RegionIndex {
    board: Board,
    k: usize,
    factorial: u64,
    /// The board's cells.
    all: u32,
    /// `offset[c]` of each set and its regions, in a few bits per set.
    blocks: SetBlocks,
    /// The regions of every set, ordered by least cell, set after set: the free cells of set
    /// `c` are the union of its regions, so its bitboard is what they leave.
    regions: Vec<u32>,
}

impl RegionIndex {
    /// The index of `k` tiles on `board` (`1 <= k < n`); refuses sizes beyond 64 bits.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the sets number at most C(25, 12) < 2^32, and a set has fewer than 256 regions"
    )]
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
        let mut counts = Vec::with_capacity(sets as usize);
        let mut regions = Vec::new();
        let all = board.all_cells();
        // The k-bit masks below 2^n in increasing order (Gosper's hack) are the sets in rank
        // order.
        let mut set: u32 = (1u32 << k) - 1;
        for _ in 0..sets {
            let free = all & !set;
            let mut left = free;
            let before = regions.len();
            while left != 0 {
                let region = board.region(left.trailing_zeros() as usize, free);
                regions.push(region);
                left &= !region;
            }
            counts.push((regions.len() - before) as u8);
            let c = set & set.wrapping_neg();
            let r = set.wrapping_add(c);
            set = if r == 0 {
                0
            } else {
                (((r ^ set) >> 2) / c) | r
            };
        }
        regions.shrink_to_fit();
        let index = RegionIndex {
            board,
            k,
            factorial: factorial(k),
            all,
            blocks: SetBlocks::new(&counts)?,
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

    /// The index of `k` tiles on `board` shared by everyone in this process who holds it: built
    /// by [`RegionIndex::new`] when no one holds it, otherwise the one already built (a build,
    /// its proof and a solver's tables of one size need one index between them).
    ///
    /// ```
    /// use tilepdb_common::region_index::RegionIndex;
    /// let board = "4x4".parse().unwrap();
    /// let a = RegionIndex::shared(board, 3).unwrap();
    /// let b = RegionIndex::shared(board, 3).unwrap();
    /// assert!(std::sync::Arc::ptr_eq(&a, &b));
    /// ```
    pub fn shared(board: Board, k: usize) -> Result<Arc<RegionIndex>> {
        static HELD: Mutex<Vec<(Board, usize, Weak<RegionIndex>)>> = Mutex::new(Vec::new());
        // A poisoned lock only means another thread panicked while holding it: the list of
        // weak references is still whole.
        let mut held = HELD
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        held.retain(|(_, _, weak)| weak.strong_count() > 0);
        if let Some(index) = held
            .iter()
            .filter(|(b, size, _)| *b == board && *size == k)
            .find_map(|(_, _, weak)| weak.upgrade())
        {
            return Ok(index);
        }
        let index = Arc::new(RegionIndex::new(board, k)?);
        held.push((board, k, Arc::downgrade(&index)));
        Ok(index)
    }

    /// Bytes the index holds: a few bits per set and a mask per region.
    pub fn memory_bytes(&self) -> u64 {
        self.blocks.memory_bytes() + 4 * self.region_count()
    }

    /// The most bytes an index of `sets` tile sets and `regions` regions holds.
    ///
    /// ```
    /// use tilepdb_common::region_index::RegionIndex;
    /// let index = RegionIndex::new("4x4".parse().unwrap(), 3).unwrap();
    /// assert!(index.memory_bytes() <= RegionIndex::most_memory_bytes(index.sets(), index.region_count()));
    /// ```
    pub fn most_memory_bytes(sets: u64, regions: u64) -> u64 {
        SetBlocks::most_memory_bytes(sets) + 4 * regions
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
        self.blocks.sets()
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

    /// The bitboard of the set of rank `c`: the cells its regions leave.
    #[inline]
    pub fn set_mask(&self, c: u64) -> u32 {
        self.set_mask_of_regions(self.regions_of(c))
    }

    /// The bitboard of the set whose regions are `regions` (all of them): the regions share
    /// out the free cells, so the set's cells are what they leave.
    #[inline]
    pub fn set_mask_of_regions(&self, regions: &[u32]) -> u32 {
        self.all & !regions.iter().fold(0, |free, &region| free | region)
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
        self.blocks.first_block(c).0
    }

    /// The blocks of every set: their first blocks and regions in a few bits per set.
    pub fn set_blocks(&self) -> &SetBlocks {
        &self.blocks
    }

    /// The regions of the set of rank `c`, ordered by least cell.
    #[inline]
    pub fn regions_of(&self, c: u64) -> &[u32] {
        self.blocks_of(c).1
    }

    /// The first block of the set of rank `c` and its regions (the set's counts read once).
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the offsets are positions in `regions`, a vector held in memory"
    )]
    pub fn blocks_of(&self, c: u64) -> (u64, &[u32]) {
        let (first, extra) = self.blocks.first_block(c);
        (
            first,
            &self.regions[first as usize..=(first + extra) as usize],
        )
    }

    /// The index among the regions of the set `c` of the region holding free `cell`.
    #[inline]
    pub fn region_holding(&self, c: u64, cell: usize) -> u64 {
        Self::position_of(self.regions_of(c), cell)
    }

    /// The block of the set `c` whose region holds the free `cell` (its first block plus the
    /// region's index): the set's regions read once, no flood fill.
    ///
    /// ```
    /// use tilepdb_common::board::Board;
    /// use tilepdb_common::region_index::{RegionIndex, rank_set};
    ///
    /// // 3 wide, 2 high; tiles on the middle column (cells 1 and 4) leave two regions,
    /// // {0, 3} and {2, 5}, in the order of their least cells.
    /// let index = RegionIndex::new(Board::new(3, 2).unwrap(), 2).unwrap();
    /// let c = rank_set(1 << 1 | 1 << 4);
    /// assert_eq!(index.block_holding(c, 3), index.first_block(c));
    /// assert_eq!(index.block_holding(c, 5), index.first_block(c) + 1);
    /// ```
    #[inline]
    pub fn block_holding(&self, c: u64, cell: usize) -> u64 {
        let (first, regions) = self.blocks_of(c);
        first + Self::position_of(regions, cell)
    }

    /// The index of the region of `regions` that holds `cell`.
    #[inline]
    fn position_of(regions: &[u32], cell: usize) -> u64 {
        regions
            .iter()
            .position(|&r| r & (1 << cell) != 0)
            .expect("the cell is free") as u64
    }

    /// The set rank and order rank of a placement (`cells[i]`: the cell of pattern tile `i`).
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles are below 25, so they fit in a byte"
    )]
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
        self.block_holding(c, blank) * self.factorial + o
    }

    /// The block (`offset[c] + r`) of a state index, and its set rank `c`.
    #[inline]
    pub fn block_and_set(&self, state: u64) -> (u64, u64) {
        let block = state / self.factorial;
        (block, self.blocks.set_of_block(block))
    }

    /// The set rank of `block`, found from `from` on (a set whose first block is at or below
    /// `block`, such as the set of an earlier block of an increasing list): the sets `from`,
    /// `from + 1`, `from + 2`, `from + 4`, .. until one starts past the block, then a binary
    /// search between the last two, so the search costs the logarithm of the sets skipped, not
    /// of all the sets; the whole index is searched when `from` starts past the block.
    ///
    /// ```
    /// use tilepdb_common::region_index::RegionIndex;
    /// let index = RegionIndex::new("4x4".parse().unwrap(), 3).unwrap();
    /// let block = index.first_block(10) + 1;
    /// assert_eq!(index.set_of_block_from(block, 7), index.block_and_set(block * 6).1);
    /// assert_eq!(index.set_of_block_from(index.first_block(500), 0), 500);
    /// ```
    #[inline]
    pub fn set_of_block_from(&self, block: u64, from: u64) -> u64 {
        let sets = self.sets();
        if from >= sets {
            return self.blocks.set_of_block(block);
        }
        let (first, extra) = self.blocks.first_block(from);
        if first > block {
            return self.blocks.set_of_block(block);
        }
        if first + extra >= block {
            return from;
        }
        // The set lies in `low..high`: `low` starts at or below the block, `high` past it.
        let (mut low, mut step) = (from, 1);
        let mut high = loop {
            let probe = low + step;
            if probe >= sets {
                break sets;
            }
            if self.first_block(probe) > block {
                break probe;
            }
            low = probe;
            step *= 2;
        };
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.first_block(middle) <= block {
                low = middle;
            } else {
                high = middle;
            }
        }
        low
    }

    /// The placement (`cells[i]`: cell of tile `i`) of a state index and its region.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a block is below the number of regions held in memory, so it fits in usize"
    )]
    pub fn decode(&self, state: u64) -> ([u8; MAX_CELLS], u32) {
        let (block, c) = self.block_and_set(state);
        let cells = self.placement_cells(c, state % self.factorial);
        (cells, self.regions[block as usize])
    }

    /// The placement of set `c` and order rank `order`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "cells are below 25, so they fit in a byte"
    )]
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
    #[expect(
        clippy::cast_possible_truncation,
        reason = "entries and states index the arrays in memory, so they fit in usize"
    )]
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
    #[expect(
        clippy::cast_possible_truncation,
        reason = "entries and states index the arrays in memory, so they fit in usize"
    )]
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
