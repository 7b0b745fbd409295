//! How many of a layer's successors stay on their own shard, for two ways of cutting the
//! region index into P shards (the sharded build's choice, `docs/DESIGN.md` section 5):
//!
//! * **sets**: contiguous ranges of tile-set ranks holding about equal numbers of states;
//! * **orders**: contiguous ranges of the order digit `rank(pi)` (`k!/P` orders each); every
//!   (set, region) block is spread over all shards.
//!
//! A move is local when the child state is on the parent's shard. The fraction is over every
//! (state, move) pair of the index (each state of a block has the block's moves), so it is
//! the fraction of the successors a full search generates that stay put. It depends on the
//! board and the number of tiles only, not on which tiles, nor on the blank rule among
//! minimized, aware and zero-aware (they share the index).
//!
//!     cargo bench -p tilepdb-coordinator --bench shard_cut             # 24-puzzle, 6 and 7 tiles
//!     cargo bench -p tilepdb-coordinator --bench shard_cut -- 4x4 7    # any board and size

use std::time::Instant;

use tilepdb_common::Board;
use tilepdb_common::region_expand::for_each_tile_move;
use tilepdb_common::region_index::{OrderMoves, RegionIndex, rank_set};
use tilepdb_common::shard::{ShardLayout, locality};

const SHARDS: [u32; 6] = [2, 4, 8, 16, 64, 256];

/// The shard of every tile set when the sets are cut into `shards` contiguous ranges of about
/// equal numbers of blocks (and so of states).
fn set_shards(index: &RegionIndex, shards: u64) -> Vec<u32> {
    let total = index.region_count();
    (0..index.sets())
        .map(|c| u32::try_from(index.first_block(c) * shards / total).expect("few shards"))
        .collect()
}

fn measure(board: Board, k: usize) {
    let started = Instant::now();
    let index = RegionIndex::new(board, k).expect("a region index");
    let moves = OrderMoves::new(k);
    // The order cut is the sharded build's: the planner's count, over every tile set.
    let order_local: Vec<f64> = SHARDS
        .iter()
        .map(|&p| {
            let layout = ShardLayout::new(index.orders(), p).expect("fewer shards than orders");
            locality(&index, &moves, layout, 1).0
        })
        .collect();
    let set_shard: Vec<Vec<u32>> = SHARDS
        .iter()
        .map(|&p| set_shards(&index, u64::from(p)))
        .collect();
    // Sums over every (block, move), each block standing for its k! states.
    let mut total_moves = 0u64;
    let mut same_order = 0u64;
    let mut set_local = vec![0u64; SHARDS.len()];
    for c in 0..index.sets() {
        let set = index.set_mask(c);
        for &region in index.regions_of(c) {
            for_each_tile_move(&board, set, region, |m| {
                let child_c = rank_set(m.next_set);
                total_moves += 1;
                same_order += u64::from(m.pa == m.pb);
                for (i, shards) in set_shard.iter().enumerate() {
                    let c_shard = shards[usize::try_from(c).expect("a set")];
                    let child_shard = shards[usize::try_from(child_c).expect("a set")];
                    set_local[i] += u64::from(c_shard == child_shard);
                }
            });
        }
    }
    let t = total_moves as f64;
    println!(
        "{board} {k} tiles: {} states, {} sets, {} blocks, {:.2} moves per state; the order is \
         kept by {:.1} % of the moves ({:.1} s)",
        index.states(),
        index.sets(),
        index.region_count(),
        t / index.region_count() as f64,
        100.0 * same_order as f64 / t,
        started.elapsed().as_secs_f64()
    );
    println!("  shards | local: set ranges | local: order ranges");
    for (i, p) in SHARDS.iter().enumerate() {
        println!(
            "  {p:>6} | {:>16.1} % | {:>17.1} %",
            100.0 * set_local[i] as f64 / t,
            100.0 * order_local[i]
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let [board, k] = args.as_slice() {
        let board: Board = board.parse().expect("a board, e.g. 5x5");
        measure(board, k.parse().expect("a number of tiles"));
        return;
    }
    let board: Board = "5x5".parse().expect("the 24-puzzle");
    for k in [6, 7] {
        measure(board, k);
    }
}
