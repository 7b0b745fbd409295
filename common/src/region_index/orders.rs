//! The orders of a pattern's tiles on the cells of their set: their Lehmer rank
//! ([`order_rank`], [`order_unrank`]) and the table of where an order goes when one tile moves
//! ([`OrderMoves`]).

use super::factorial;
use crate::board::MAX_CELLS;

/// Largest pattern the order-move table is kept for (`k! <= 40320` fits `u16`).
pub const MAX_TABLED_K: usize = 8;

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
        let digit = u64::from((unused & ((1u32 << t) - 1)).count_ones());
        rank = rank * (k - j) as u64 + digit;
        unused &= !(1 << t);
    }
    rank
}

/// Writes the order of Lehmer rank `rank` of `k` elements into `order[..k]`.
#[inline]
#[expect(
    clippy::cast_possible_truncation,
    reason = "a digit is below k <= 25 and an order's tile below k, so both fit in a byte"
)]
pub fn order_unrank(k: usize, mut rank: u64, order: &mut [u8]) {
    let mut digits = [0u8; MAX_CELLS];
    for j in (0..k).rev() {
        let radix = (k - j) as u64;
        digits[j] = (rank % radix) as u8;
        rank /= radix;
    }
    let mut unused = (1u32 << k) - 1;
    for j in 0..k {
        let t = crate::rank::select_bit(unused, u32::from(digits[j]));
        order[j] = t as u8;
        unused &= !(1 << t);
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
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the table is held in memory, so its positions fit in usize; an order rank is below 8! = 40320, so it fits in u16"
    )]
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

    /// The number of tiles.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The number of orders, `k!`.
    pub fn orders(&self) -> u64 {
        self.orders
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
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a row's start is a position in the table held in memory, so it fits in usize"
    )]
    pub fn row(&self, pa: usize, pb: usize) -> Option<&[u16]> {
        if self.table.is_empty() {
            return None;
        }
        let start = ((pa * self.k + pb) as u64 * self.orders) as usize;
        Some(&self.table[start..start + self.orders as usize])
    }

    /// The rank of the order `rank` after moving its element at `pa` to `pb`.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "`rank` is below the row's length, a usize"
    )]
    pub fn moved(&self, pa: usize, pb: usize, rank: u64) -> u64 {
        if let Some(row) = self.row(pa, pb) {
            u64::from(row[rank as usize])
        } else {
            let mut pi = [0u8; MAX_CELLS];
            order_unrank(self.k, rank, &mut pi);
            Self::compute(self.k, &pi, pa, pb)
        }
    }
}
