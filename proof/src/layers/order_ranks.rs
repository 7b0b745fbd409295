//! [`OrderRanks`]: the placement rank of a (set, order) without unranking it.

use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::{MAX_CELLS, StateSpace};

/// The placement rank of (set, order) without unranking: with the set's cells `s` (lowest
/// first) and the order's tile `t(j)` on `s[j]`, the rank
/// (`sum_i (p_i - #{j < i : p_j < p_i}) * w_i`, [`tilepdb_common::PlacementRanker::weights`])
/// is `sum_j s[j] * w_t(j)` less a part that depends on the order alone.
pub(super) struct OrderRanks {
    k: usize,
    /// `k` weights per order: the weight of the tile on each cell of the set.
    weights: Vec<u64>,
    /// Per order: `sum_i #{j < i : p_j < p_i} * w_i`.
    offsets: Vec<u64>,
}

impl OrderRanks {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "`f` (orders per block, at most 8! for tabled patterns) sizes a table in memory, so it fits in usize"
    )]
    pub(super) fn new(space: &StateSpace, index: &RegionIndex) -> OrderRanks {
        let k = index.k();
        let w = space.ranker().weights();
        let f = index.orders() as usize;
        let (mut weights, mut offsets) = (Vec::with_capacity(f * k), Vec::with_capacity(f));
        let mut order = [0u8; MAX_CELLS];
        let mut position = [0usize; MAX_CELLS];
        for o in 0..f as u64 {
            tilepdb_common::region_index::order_unrank(k, o, &mut order[..k]);
            for (j, &tile) in order[..k].iter().enumerate() {
                weights.push(w[tile as usize]);
                position[tile as usize] = j;
            }
            let offset = (0..k)
                .map(|i| (0..i).filter(|&j| position[j] < position[i]).count() as u64 * w[i])
                .sum();
            offsets.push(offset);
        }
        OrderRanks {
            k,
            weights,
            offsets,
        }
    }

    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "an order is below `f`, the length of a table in memory, so it fits in usize"
    )]
    pub(super) fn rank(&self, cells: &[u8; MAX_CELLS], order: u64) -> u64 {
        let o = order as usize;
        let weights = &self.weights[o * self.k..(o + 1) * self.k];
        let sum: u64 = cells
            .iter()
            .zip(weights)
            .map(|(&s, &w)| u64::from(s) * w)
            .sum();
        sum - self.offsets[o]
    }
}
