//! The lexicographic rank of a k-permutation of n cells (a placement of k pattern tiles).
//!
//! For a placement `p = (p_1 .. p_k)`:
//! `rank = sum_i d_i * P(n-1-i, k-1-i)`, where `d_i` is the number of cells below `p_i` that are
//! not among `p_1 .. p_(i-1)` and `P(a, b) = a! / (a-b)!`. The rank is a bijection onto
//! `[0, n!/(n-k)!)`; `p_1` is the most significant digit, so moving any tile but the first
//! keeps the rank inside its block of `P(n-1, k-1)` ranks.
//!
//! ```
//! use tilepdb_common::PlacementRanker;
//! // Two tiles on the 9 cells of a 3x3 board: 9 * 8 = 72 placements.
//! let ranker = PlacementRanker::new(9, 2).unwrap();
//! assert_eq!(ranker.placements(), 72);
//! assert_eq!(ranker.rank(&[0, 1]), 0);
//! assert_eq!(ranker.rank(&[1, 0]), 8); // first digit 1, second digit 0
//! assert_eq!(ranker.rank(&[8, 7]), 71);
//! let mut cells = [0u8; 2];
//! ranker.unrank(8, &mut cells);
//! assert_eq!(cells, [1, 0]);
//! ```

use crate::board::MAX_CELLS;
use crate::error::{Error, Result};

/// `P(a, b) = a! / (a - b)!`, or `None` on overflow of `u64`.
pub fn falling_factorial(a: u64, b: u64) -> Option<u64> {
    (0..b).try_fold(1u64, |acc, i| acc.checked_mul(a.checked_sub(i)?))
}

/// Ranks and unranks placements of `k` tiles on `n` cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementRanker {
    n: usize,
    k: usize,
    /// `weights[i] = P(n-1-i, k-1-i)`.
    weights: [u64; MAX_CELLS],
    placements: u64,
}

impl PlacementRanker {
    /// A ranker for `k` of `n` cells, `1 <= k < n <= 25`; refuses counts that overflow `u64`.
    pub fn new(n: usize, k: usize) -> Result<PlacementRanker> {
        if n > MAX_CELLS || k == 0 || k >= n {
            return Err(Error::Pattern {
                pattern: format!("of {k} tiles"),
                reason: format!(
                    "a pattern holds between 1 and {} tiles on a board of {n} cells",
                    n.saturating_sub(1)
                ),
            });
        }
        let placements = falling_factorial(n as u64, k as u64).ok_or_else(|| Error::Pattern {
            pattern: format!("of {k} tiles"),
            reason: format!("P({n}, {k}) placements overflow a 64-bit rank"),
        })?;
        let mut weights = [0u64; MAX_CELLS];
        for (i, w) in weights.iter_mut().enumerate().take(k) {
            *w = falling_factorial((n - 1 - i) as u64, (k - 1 - i) as u64)
                .expect("below placements");
        }
        Ok(PlacementRanker {
            n,
            k,
            weights,
            placements,
        })
    }

    /// Number of cells.
    #[inline]
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of tiles placed.
    #[inline]
    pub fn k(&self) -> usize {
        self.k
    }

    /// `n! / (n-k)!`, the number of placements and ranks.
    #[inline]
    pub fn placements(&self) -> u64 {
        self.placements
    }

    /// The weight of each tile's digit, `weights()[i] = P(n-1-i, k-1-i)`: the rank is
    /// `sum_i (p_i - #{j < i : p_j < p_i}) * weights()[i]`.
    ///
    /// ```
    /// use tilepdb_common::PlacementRanker;
    /// let ranker = PlacementRanker::new(9, 2).unwrap();
    /// assert_eq!(ranker.weights(), &[8, 1]);
    /// ```
    #[inline]
    pub fn weights(&self) -> &[u64] {
        &self.weights[..self.k]
    }

    /// Ranks in one block of the most significant digit: `P(n-1, k-1)`.
    #[inline]
    pub fn block_len(&self) -> u64 {
        self.weights[0]
    }

    /// The rank of the placement `cells[..k]` (distinct cells below `n`).
    #[inline]
    pub fn rank(&self, cells: &[u8]) -> u64 {
        let cells = &cells[..self.k];
        self.rank_by(|i| cells[i]).0
    }

    /// The rank of the placement whose `i`-th cell is `cell_of(i)` (for `i < k`; distinct cells
    /// below `n`), and the bitboard of its cells: [`PlacementRanker::rank`] for a placement
    /// gathered on the fly from a state, without writing it down first.
    #[inline(always)]
    pub fn rank_by(&self, mut cell_of: impl FnMut(usize) -> u8) -> (u64, u32) {
        let mut used = 0u32;
        let mut rank = 0u64;
        for (i, &weight) in self.weights[..self.k].iter().enumerate() {
            let cell = cell_of(i);
            let below = (1u32 << cell) - 1;
            let digit = u32::from(cell) - (used & below).count_ones();
            rank += u64::from(digit) * weight;
            used |= 1 << cell;
        }
        (rank, used)
    }

    /// Writes the placement of `rank` into `cells[..k]` and returns the bitboard of its cells.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a digit is below 25 and a cell below 25, so both fit in u32 and u8"
    )]
    pub fn unrank(&self, mut rank: u64, cells: &mut [u8]) -> u32 {
        debug_assert!(rank < self.placements);
        let mut free = if self.n == 32 {
            u32::MAX
        } else {
            (1u32 << self.n) - 1
        };
        for (slot, &weight) in cells[..self.k].iter_mut().zip(&self.weights) {
            let digit = rank / weight;
            rank -= digit * weight;
            let cell = select_bit(free, digit as u32);
            *slot = cell as u8;
            free &= !(1 << cell);
        }
        !free
            & if self.n == 32 {
                u32::MAX
            } else {
                (1u32 << self.n) - 1
            }
    }
}

/// A placement unranked once, with what it takes to rank any one-tile move of it in a few
/// operations instead of a full [`PlacementRanker::rank`].
///
/// Moving tile `i` from `a` to `b` changes digit `i`, and digit `j > i` only where `p_j` lies
/// strictly between `a` and `b` (by one, up if `a < b`); a move to a horizontal neighbour
/// changes no later digit at all.
///
/// ```
/// use tilepdb_common::PlacementRanker;
/// use tilepdb_common::rank::RankedPlacement;
/// let ranker = PlacementRanker::new(9, 3).unwrap(); // 3 tiles on 3x3
/// let placement = RankedPlacement::new(&ranker, ranker.rank(&[4, 0, 7]));
/// // Tile 0 moves up from cell 4 to cell 1, past the cells 2 and 3 (none of them later tiles').
/// assert_eq!(placement.rank_after_move(&ranker, 0, 1), ranker.rank(&[1, 0, 7]));
/// // Tile 1 moves down from cell 0 to cell 3: no later tile lies between.
/// assert_eq!(placement.rank_after_move(&ranker, 1, 3), ranker.rank(&[4, 3, 7]));
/// ```
#[derive(Clone, Debug)]
pub struct RankedPlacement {
    /// `cells[i]`: the cell of tile `i`.
    pub cells: [u8; MAX_CELLS],
    /// The cells of all the tiles.
    pub occupied: u32,
    /// The placement's rank.
    pub rank: u64,
    digits: [u64; MAX_CELLS],
    /// Cells of the tiles before `i`.
    before: [u32; MAX_CELLS],
    /// Cells of the tiles after `i`.
    after: [u32; MAX_CELLS],
    /// The weight of the digit of the tile on each cell.
    weight_at: [u64; MAX_CELLS],
    /// The index (in pattern order) of the tile on each occupied cell.
    tile_at: [u8; MAX_CELLS],
}

impl RankedPlacement {
    /// Unranks `rank` and prepares its moves.
    #[inline]
    pub fn new(ranker: &PlacementRanker, rank: u64) -> RankedPlacement {
        let mut p = RankedPlacement {
            cells: [0; MAX_CELLS],
            occupied: 0,
            rank,
            digits: [0; MAX_CELLS],
            before: [0; MAX_CELLS],
            after: [0; MAX_CELLS],
            weight_at: [0; MAX_CELLS],
            tile_at: [0; MAX_CELLS],
        };
        p.load(ranker, rank);
        p
    }

    /// Reuses this value for another rank.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a tile number is below k <= 25, so it fits in a byte"
    )]
    pub fn load(&mut self, ranker: &PlacementRanker, rank: u64) {
        let k = ranker.k;
        self.occupied = ranker.unrank(rank, &mut self.cells);
        self.rank = rank;
        let mut used = 0u32;
        for i in 0..k {
            let cell = self.cells[i];
            self.before[i] = used;
            self.digits[i] =
                u64::from(u32::from(cell) - (used & ((1u32 << cell) - 1)).count_ones());
            self.weight_at[cell as usize] = ranker.weights[i];
            self.tile_at[cell as usize] = i as u8;
            used |= 1 << cell;
        }
        for i in 0..k {
            self.after[i] = self.occupied & !self.before[i] & !(1u32 << self.cells[i]);
        }
    }

    /// The index (in pattern order) of the tile on the occupied `cell`.
    #[inline]
    pub fn tile_on(&self, cell: usize) -> usize {
        self.tile_at[cell] as usize
    }

    /// The rank of this placement with tile `i` moved to the free cell `to`.
    #[inline]
    #[expect(clippy::cast_possible_truncation, reason = "`to` is a cell, below 25")]
    pub fn rank_after_move(&self, ranker: &PlacementRanker, i: usize, to: usize) -> u64 {
        let from = self.cells[i] as usize;
        let digit = u64::from(to as u32 - (self.before[i] & ((1u32 << to) - 1)).count_ones());
        let mut rank = self.rank - self.digits[i] * ranker.weights[i] + digit * ranker.weights[i];
        let (lo, hi) = if from < to { (from, to) } else { (to, from) };
        let mut between = ((1u32 << hi) - 1) & !((2u32 << lo) - 1) & self.after[i];
        while between != 0 {
            let w = self.weight_at[between.trailing_zeros() as usize];
            if from < to {
                rank += w;
            } else {
                rank -= w;
            }
            between &= between - 1;
        }
        rank
    }
}

/// The index of the `nth` (from 0) set bit of `bits`.
#[inline]
pub fn select_bit(mut bits: u32, nth: u32) -> u32 {
    for _ in 0..nth {
        bits &= bits - 1;
    }
    bits.trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bijection_on_every_small_case() {
        for n in 2..=9 {
            for k in 1..n {
                let r = PlacementRanker::new(n, k).unwrap();
                let mut cells = [0u8; MAX_CELLS];
                let mut seen = std::collections::HashSet::new();
                for rank in 0..r.placements() {
                    let occupied = r.unrank(rank, &mut cells);
                    assert_eq!(occupied.count_ones() as usize, k);
                    assert!(seen.insert(cells[..k].to_vec()));
                    assert_eq!(r.rank(&cells), rank, "n={n} k={k}");
                }
                assert_eq!(seen.len() as u64, r.placements());
            }
        }
    }

    #[test]
    fn lexicographic_order() {
        let r = PlacementRanker::new(6, 3).unwrap();
        let mut prev = [0u8; 3];
        r.unrank(0, &mut prev);
        for rank in 1..r.placements() {
            let mut cur = [0u8; 3];
            r.unrank(rank, &mut cur);
            assert!(cur > prev);
            prev = cur;
        }
    }

    #[test]
    fn sizes_of_the_design() {
        assert_eq!(
            PlacementRanker::new(25, 6).unwrap().placements(),
            127_512_000
        );
        assert_eq!(
            PlacementRanker::new(16, 8).unwrap().placements(),
            518_918_400
        );
        assert_eq!(
            PlacementRanker::new(16, 7).unwrap().placements(),
            57_657_600
        );
        assert!(PlacementRanker::new(25, 24).is_err());
        assert!(PlacementRanker::new(9, 9).is_err());
        assert!(PlacementRanker::new(9, 0).is_err());
    }

    proptest! {
        #[test]
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "n is at most 25 and `k_frac` in [0, 1): the values stay below 25"
        )]
        fn rank_after_move_matches_rank(n in 2usize..=25, k_frac in 0.0f64..1.0, seed in any::<u64>(), tile in any::<usize>(), target in any::<u32>()) {
            let k = 1 + ((n - 2) as f64 * k_frac) as usize;
            let Ok(r) = PlacementRanker::new(n, k) else { return Ok(()) };
            let p = RankedPlacement::new(&r, seed % r.placements());
            let i = tile % k;
            let free = !p.occupied & ((1u64 << n) - 1) as u32;
            let to = select_bit(free, target % free.count_ones());
            let mut moved = p.cells;
            moved[i] = to as u8;
            prop_assert_eq!(p.rank_after_move(&r, i, to as usize), r.rank(&moved));
        }

        #[test]
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "n is at most 25 and `k_frac` in [0, 1): the values stay below 25"
        )]
        fn rank_by_matches_rank(n in 2usize..=25, k_frac in 0.0f64..1.0, seed in any::<u64>()) {
            let k = 1 + ((n - 2) as f64 * k_frac) as usize;
            let Ok(r) = PlacementRanker::new(n, k) else { return Ok(()) };
            let mut cells = [0u8; MAX_CELLS];
            let occupied = r.unrank(seed % r.placements(), &mut cells);
            prop_assert_eq!(r.rank_by(|i| cells[i]), (seed % r.placements(), occupied));
        }

        #[test]
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "n is at most 25 and `k_frac` in [0, 1): the values stay below 25"
        )]
        fn rank_unrank_roundtrip(n in 2usize..=25, k_frac in 0.0f64..1.0, seed in any::<u64>()) {
            let k = 1 + ((n - 2) as f64 * k_frac) as usize;
            let Ok(r) = PlacementRanker::new(n, k) else { return Ok(()) };
            let rank = seed % r.placements();
            let mut cells = [0u8; MAX_CELLS];
            r.unrank(rank, &mut cells);
            prop_assert_eq!(r.rank(&cells), rank);
            // Moving any tile but the first keeps the block.
            let block = rank / r.block_len();
            let occupied: u32 = cells[..k].iter().fold(0, |m, &c| m | 1 << c);
            if k > 1 {
                let free = !occupied & ((1u32 << n) - 1);
                let target = free.trailing_zeros() as u8;
                let mut moved = cells;
                moved[k - 1] = target;
                prop_assert_eq!(r.rank(&moved) / r.block_len(), block);
            }
        }

        #[test]
        #[expect(
            clippy::cast_possible_truncation,
            reason = "n is at most 25; the remainder is below n - 1"
        )]
        fn rank_of_random_placement(n in 2usize..=25, seed in any::<u64>()) {
            use rand::{SeedableRng, seq::SliceRandom};
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut cells: Vec<u8> = (0..n as u8).collect();
            cells.shuffle(&mut rng);
            let k = 1 + (seed as usize % (n - 1)).min(12);
            if let Ok(r) = PlacementRanker::new(n, k) {
                let rank = r.rank(&cells);
                prop_assert!(rank < r.placements());
                let mut back = [0u8; MAX_CELLS];
                r.unrank(rank, &mut back);
                prop_assert_eq!(&back[..k], &cells[..k]);
            }
        }
    }
}
