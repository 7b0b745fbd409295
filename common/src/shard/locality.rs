//! How many successors stay on their parent's shard: the planner's estimate of the traffic
//! between shards (`inspect --plan --shards`).
//!
//! Every state of a (set, region) block has the block's tile moves, and a move of the tile at
//! position `pa` among the pattern's cells to position `pb` maps each order to one order
//! ([`OrderMoves::moved`]). So the fraction of successors that stay home under a map from
//! orders to shards is each move's share of the index's (state, move) pairs ([`move_shares`])
//! times the fraction of orders the move keeps on their shard ([`kept_home`]).

use super::ShardLayout;
use crate::region_expand::for_each_tile_move;
use crate::region_index::{OrderMoves, RegionIndex};

/// The share of each tile move among the (state, move) pairs of `index`, estimated over every
/// `sample`-th tile set (1: all of them, exact): `shares[pa * k + pb]` for the move of the
/// tile at position `pa` to position `pb` (the shares sum to 1, or are all 0 when no state
/// has a move); and the moves per state.
///
/// ```
/// use tilepdb_common::Board;
/// use tilepdb_common::region_index::RegionIndex;
/// use tilepdb_common::shard::move_shares;
/// let index = RegionIndex::new(Board::new(3, 3).unwrap(), 2).unwrap();
/// let (shares, moves_per_state) = move_shares(&index, 1);
/// assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9);
/// assert!(moves_per_state > 1.0 && moves_per_state <= 8.0);
/// ```
pub fn move_shares(index: &RegionIndex, sample: u64) -> (Vec<f64>, f64) {
    let k = index.k();
    let board = index.board();
    let mut pairs = vec![0u64; k * k];
    let mut blocks = 0u64;
    for c in (0..index.sets()).step_by(usize::try_from(sample.max(1)).unwrap_or(usize::MAX)) {
        let set = index.set_mask(c);
        for &region in index.regions_of(c) {
            blocks += 1;
            for_each_tile_move(&board, set, region, |m| pairs[m.pa * k + m.pb] += 1);
        }
    }
    let total: u64 = pairs.iter().sum();
    if total == 0 {
        return (vec![0.0; k * k], 0.0);
    }
    let shares = pairs.iter().map(|&n| n as f64 / total as f64).collect();
    (shares, total as f64 / blocks as f64)
}

/// The fraction of successors that stay on their parent's shard when order `o` of every
/// block is on shard `owner(o)`, `shares` being [`move_shares`]'s of the same index.
///
/// ```
/// use tilepdb_common::Board;
/// use tilepdb_common::region_index::{OrderMoves, RegionIndex};
/// use tilepdb_common::shard::{kept_home, move_shares};
/// let index = RegionIndex::new(Board::new(3, 3).unwrap(), 3).unwrap();
/// let (shares, _) = move_shares(&index, 1);
/// let moves = OrderMoves::new(3);
/// // One shard keeps everything home; two keep less.
/// assert!((kept_home(&shares, &moves, |_| 0) - 1.0).abs() < 1e-9);
/// assert!(kept_home(&shares, &moves, |o| u32::from(o >= 3)) < 1.0);
/// ```
pub fn kept_home(shares: &[f64], moves: &OrderMoves, owner: impl Fn(u64) -> u32) -> f64 {
    let k = moves.k();
    let f = moves.orders();
    let mut kept = 0.0;
    for pa in 0..k {
        for pb in 0..k {
            let share = shares[pa * k + pb];
            if share == 0.0 {
                continue;
            }
            let same = (0..f)
                .filter(|&o| owner(moves.moved(pa, pb, o)) == owner(o))
                .count();
            kept += share * same as f64 / f as f64;
        }
    }
    kept
}

/// How many successors stay on their parent's shard under `layout`, estimated over every
/// `sample`-th tile set of `index` (1: all of them, exact): the fraction of (state, move)
/// pairs whose successor is on the parent's shard, and the moves per state.
pub fn locality(
    index: &RegionIndex,
    moves: &OrderMoves,
    layout: ShardLayout,
    sample: u64,
) -> (f64, f64) {
    let (shares, moves_per_state) = move_shares(index, sample);
    if moves_per_state == 0.0 {
        return (1.0, 0.0);
    }
    (
        kept_home(&shares, moves, |o| layout.owner(o)),
        moves_per_state,
    )
}
