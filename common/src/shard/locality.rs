//! How many successors stay on their parent's shard: the planner's estimate of the traffic
//! between shards (`inspect --plan --shards`).

use super::ShardLayout;
use crate::region_expand::for_each_tile_move;
use crate::region_index::{OrderMoves, RegionIndex};

/// How many successors stay on their parent's shard under `layout`, estimated over every
/// `sample`-th tile set of `index` (1: all of them, exact): the fraction of (state, move)
/// pairs whose successor is on the parent's shard, and the moves per state.
pub fn locality(
    index: &RegionIndex,
    moves: &OrderMoves,
    layout: ShardLayout,
    sample: u64,
) -> (f64, f64) {
    let k = index.k();
    let f = index.orders();
    // For each move of the tile at position `pa` to position `pb`: the fraction of orders
    // whose image has the same owner.
    let mut same = vec![0.0f64; k * k];
    for pa in 0..k {
        for pb in 0..k {
            let kept = (0..f)
                .filter(|&o| layout.owner(moves.moved(pa, pb, o)) == layout.owner(o))
                .count();
            same[pa * k + pb] = kept as f64 / f as f64;
        }
    }
    let board = index.board();
    let (mut pairs, mut local, mut blocks) = (0u64, 0.0f64, 0u64);
    for c in (0..index.sets()).step_by(usize::try_from(sample.max(1)).unwrap_or(usize::MAX)) {
        let set = index.set_mask(c);
        for &region in index.regions_of(c) {
            blocks += 1;
            for_each_tile_move(&board, set, region, |m| {
                pairs += 1;
                local += same[m.pa * k + m.pb];
            });
        }
    }
    if pairs == 0 {
        return (1.0, 0.0);
    }
    (local / pairs as f64, pairs as f64 / blocks as f64)
}
