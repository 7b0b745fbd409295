//! How many of a layer's successors stay on their own shard, for two ways of cutting the
//! region index into P shards (the sharded build's choice, `docs/DESIGN.md` section 5):
//!
//! * **sets**: contiguous ranges of tile-set ranks holding about equal numbers of states;
//! * **orders**: contiguous ranges of the order digit `rank(pi)` (`k!/P` orders each); every
//!   (set, region) block is spread over all shards.
//! * **tile pairs** (for `P = 2^m`, `2m <= k`): also by the order alone, not in ranges: bit `i`
//!   of an order's shard is whether the pattern's tile `2i` (by its place in the pattern) lies
//!   before its tile `2i + 1` in row-major order, which a move changes only when one of the
//!   two steps over the other.
//!
//! A move is local when the child state is on the parent's shard. The fraction is over every
//! (state, move) pair of the index (each state of a block has the block's moves), so it is
//! the fraction of the successors a full search generates that stay put. It depends on the
//! board and the number of tiles only, not on which tiles, nor on the blank rule among
//! minimized, aware and zero-aware (they share the index).
//!
//! For patterns of at most [`SWAP_MOST_TILES`] tiles it also asks whether another assignment of
//! orders to shards keeps more successors home: starting from the order ranges, and from
//! random balanced assignments, it swaps two orders of different shards whenever that keeps
//! more (weighted by each move's share of the index), until no swap does.
//!
//!     cargo bench -p tilepdb-coordinator --bench shard_cut             # 24-puzzle, 6 and 7 tiles
//!     cargo bench -p tilepdb-coordinator --bench shard_cut -- 4x4 7    # any board and size

use std::time::Instant;

use tilepdb_common::Board;
use tilepdb_common::region_expand::for_each_tile_move;
use tilepdb_common::region_index::{OrderMoves, RegionIndex, order_unrank, rank_set};
use tilepdb_common::shard::{ShardLayout, kept_home, move_shares};

const SHARDS: [u32; 6] = [2, 4, 8, 16, 64, 256];

/// Most tiles for which the swaps are tried (each round weighs every pair of `k!` orders).
const SWAP_MOST_TILES: usize = 6;

/// The shard counts the swaps are tried for.
const SWAP_SHARDS: [u32; 3] = [2, 4, 8];

/// Order `o` as an index into a table of orders.
fn at(o: u64) -> usize {
    usize::try_from(o).expect("an order of a table in memory")
}

/// `owner` improved by swaps of two orders of different shards while one keeps more
/// successors home; `neighbours[o]`: the orders one move away from `o` (either way), with the
/// move's weight.
fn swapped(mut owner: Vec<u32>, neighbours: &[Vec<(usize, f64)>]) -> Vec<u32> {
    // What moving order `o` to shard `q` gains: its neighbours there, less those it leaves.
    let gain = |owner: &[u32], o: usize, q: u32| -> f64 {
        neighbours[o]
            .iter()
            .filter(|&&(t, _)| t != o)
            .map(|&(t, w)| {
                if owner[t] == q {
                    w
                } else if owner[t] == owner[o] {
                    -w
                } else {
                    0.0
                }
            })
            .sum()
    };
    let mut improved = true;
    while improved {
        improved = false;
        for a in 0..owner.len() {
            for b in a + 1..owner.len() {
                let (sa, sb) = (owner[a], owner[b]);
                if sa == sb {
                    continue;
                }
                // A move between `a` and `b` themselves stays foreign after the swap.
                let between: f64 = neighbours[a]
                    .iter()
                    .filter(|&&(t, _)| t == b)
                    .map(|&(_, w)| 2.0 * w)
                    .sum();
                if gain(&owner, a, sb) + gain(&owner, b, sa) - between > 1e-12 {
                    owner.swap(a, b);
                    improved = true;
                }
            }
        }
    }
    owner
}

/// The swaps' answer, `shares` being each move's share of the index's (state, move) pairs
/// ([`move_shares`]): the fraction kept home by the order ranges, by the ranges after swaps,
/// and by random balanced starts after swaps.
fn swaps(index: &RegionIndex, moves: &OrderMoves, shares: &[f64]) {
    let k = moves.k();
    let f = usize::try_from(index.orders()).expect("k! orders in memory");
    let mut neighbours: Vec<Vec<(usize, f64)>> = vec![Vec::new(); f];
    for pa in 0..k {
        for pb in (0..k).filter(|&pb| pb != pa) {
            for o in 0..f {
                let t = at(moves.moved(pa, pb, o as u64));
                neighbours[o].push((t, shares[pa * k + pb]));
                neighbours[t].push((o, shares[pa * k + pb]));
            }
        }
    }
    println!("  shards | kept: order ranges | ranges, swapped | 4 random starts, swapped");
    for p in SWAP_SHARDS {
        let layout = ShardLayout::new(index.orders(), p).expect("fewer shards than orders");
        let ranges: Vec<u32> = (0..index.orders()).map(|o| layout.owner(o)).collect();
        let kept = |owner: &[u32]| 100.0 * kept_home(shares, moves, |o| owner[at(o)]);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let random: Vec<String> = (0..4)
            .map(|_| {
                let mut owner = ranges.clone();
                for i in (1..f).rev() {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    owner.swap(i, at(seed % (i as u64 + 1)));
                }
                format!("{:.2}", kept(&swapped(owner, &neighbours)))
            })
            .collect();
        println!(
            "  {p:>6} | {:>17.2} % | {:>13.2} % | {} %",
            kept(&ranges),
            kept(&swapped(ranges.clone(), &neighbours)),
            random.join(", ")
        );
    }
}

/// The shard of every tile set when the sets are cut into `shards` contiguous ranges of about
/// equal numbers of blocks (and so of states).
fn set_shards(index: &RegionIndex, shards: u64) -> Vec<u32> {
    let total = index.region_count();
    (0..index.sets())
        .map(|c| u32::try_from(index.first_block(c) * shards / total).expect("few shards"))
        .collect()
}

/// The shard of every order under the tile-pairs cut of `shards` shards (a power of two of at
/// most `k / 2` bits), or `None` for other counts.
fn pair_shards(k: usize, orders: u64, shards: u32) -> Option<Vec<u32>> {
    let pairs = shards.trailing_zeros() as usize;
    if !shards.is_power_of_two() || 2 * pairs > k {
        return None;
    }
    let mut order = vec![0u8; k];
    Some(
        (0..orders)
            .map(|o| {
                // `order[position]` is the tile at that position in row-major order.
                order_unrank(k, o, &mut order);
                let position = |t: usize| order.iter().position(|&x| usize::from(x) == t);
                (0..pairs)
                    .map(|i| u32::from(position(2 * i) < position(2 * i + 1)) << i)
                    .sum()
            })
            .collect(),
    )
}

fn measure(board: Board, k: usize) {
    let started = Instant::now();
    let index = RegionIndex::new(board, k).expect("a region index");
    let moves = OrderMoves::new(k);
    // The order cut is the sharded build's: the planner's count, over every tile set.
    let (shares, moves_per_state) = move_shares(&index, 1);
    // A move keeps the order when the tile keeps its position among the pattern's cells.
    let same_order: f64 = (0..k).map(|p| shares[p * k + p]).sum();
    let order_local: Vec<f64> = SHARDS
        .iter()
        .map(|&p| {
            let layout = ShardLayout::new(index.orders(), p).expect("fewer shards than orders");
            kept_home(&shares, &moves, |o| layout.owner(o))
        })
        .collect();
    let pair_local: Vec<Option<f64>> = SHARDS
        .iter()
        .map(|&p| {
            let owner = pair_shards(k, index.orders(), p)?;
            Some(kept_home(&shares, &moves, |o| owner[at(o)]))
        })
        .collect();
    let set_shard: Vec<Vec<u32>> = SHARDS
        .iter()
        .map(|&p| set_shards(&index, u64::from(p)))
        .collect();
    // Sums over every (block, move), each block standing for its k! states.
    let mut total_moves = 0u64;
    let mut set_local = vec![0u64; SHARDS.len()];
    for c in 0..index.sets() {
        let set = index.set_mask(c);
        for &region in index.regions_of(c) {
            for_each_tile_move(&board, set, region, |m| {
                let child_c = rank_set(m.next_set);
                total_moves += 1;
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
        moves_per_state,
        100.0 * same_order,
        started.elapsed().as_secs_f64()
    );
    println!("  shards | local: set ranges | local: order ranges | local: tile pairs");
    for (i, p) in SHARDS.iter().enumerate() {
        let pairs = pair_local[i].map_or("-".to_string(), |l| format!("{:.1} %", 100.0 * l));
        println!(
            "  {p:>6} | {:>16.1} % | {:>17.1} % | {pairs:>16}",
            100.0 * set_local[i] as f64 / t,
            100.0 * order_local[i]
        );
    }
    if k <= SWAP_MOST_TILES {
        swaps(&index, &moves, &shares);
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
