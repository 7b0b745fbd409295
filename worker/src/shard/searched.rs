//! Shards searched for the unit tests: a small zero-aware table's shards, their first layers
//! expanded and finished together, every successor handed to its owner.

use std::sync::Arc;

use tilepdb_common::region_index::OrderMoves;
use tilepdb_common::shard::{Shard, ShardLayout};
use tilepdb_common::table::DepthCode;
use tilepdb_common::{BlankRule, Goal, Pattern, StateSpace};

/// Shard `shard` of `shards` of the zero-aware table of `tiles` on `board` (blank first), its
/// layers `0..depth` expanded and finished.
pub fn searched_shard(board: &str, tiles: &[u8], shard: u32, shards: u32, depth: u32) -> Shard {
    let board = board.parse().unwrap();
    let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
    let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::ZeroAware).unwrap();
    let index = space.region_index().unwrap();
    let moves = Arc::new(OrderMoves::new(index.k()));
    let layout = ShardLayout::new(index.orders(), shards).unwrap();
    let sets = index.sets();
    let mut parts: Vec<Shard> = (0..shards)
        .map(|p| {
            let (index, moves) = (index.clone(), moves.clone());
            Shard::new(&space, index, moves, layout, p, DepthCode::OneBit).unwrap()
        })
        .collect();
    for d in 0..depth {
        let mut outbox = vec![Vec::new(); shards as usize];
        for part in &parts {
            part.expand_states(0..sets, d, &mut |to, s| outbox[to as usize].push(s));
        }
        for (to, mut states) in outbox.into_iter().enumerate() {
            states.sort_unstable();
            states.dedup();
            parts[to].merge_received(&states, d + 1).unwrap();
        }
        for part in &parts {
            part.finish_layer(0..sets, d);
        }
    }
    parts.swap_remove(shard as usize)
}
