//! The expansion kernel alone: every (placement, region) state of a share of a table's ranks
//! expanded once, successors sent to a no-op sink and then to a two-bit array, to see what the
//! search costs per state and per successor apart from the layer loop.
//!
//! ```text
//! cargo bench -p tilepdb-worker --bench kernel            # 4x4 {1,4,5,8,9,12}, a quarter of the ranks
//! TILEPDB_SHARE=64 cargo bench -p tilepdb-worker --bench kernel   # a 64th (for valgrind)
//! ```

use std::time::Instant;

use tilepdb_common::space::slot_of;
use tilepdb_common::{BlankRule, Board, Goal, LayerBitmap, Pattern, StateCodes, StateSpace};
use tilepdb_worker::expand_range;

fn main() {
    let share: u64 = std::env::var("TILEPDB_SHARE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let board: Board = "4x4".parse().unwrap();
    let pattern = Pattern::new(board, vec![1, 4, 5, 8, 9, 12]).unwrap();
    let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
    let ranks = 0..space.placements() / share;
    // Every state of the ranks is current: one per region of each placement.
    let mut current = LayerBitmap::new(0..ranks.end * space.slots());
    let mut cells = [0u8; 25];
    for rank in ranks.clone() {
        let free = board.all_cells() & !space.ranker().unrank(rank, &mut cells);
        let mut left = free;
        while left != 0 {
            let least = left.trailing_zeros() as usize;
            left &= !board.region(least, free);
            current.insert(rank * space.slots() + slot_of(free, least));
        }
    }
    let started = Instant::now();
    let mut checksum = 0u64;
    let stats = expand_range(&space, ranks.clone(), &current, &mut |s: u64| {
        checksum = checksum.wrapping_add(s);
    });
    let secs = started.elapsed().as_secs_f64();
    println!(
        "no-op sink: {} states, {} successors in {secs:.3} s: {:.1} ns/state, {:.1} ns/successor (checksum {checksum})",
        stats.expanded,
        stats.generated,
        secs * 1e9 / stats.expanded as f64,
        secs * 1e9 / stats.generated as f64
    );
    let codes = StateCodes::new(space.states());
    let started = Instant::now();
    expand_range(&space, ranks, &current, &mut |s: u64| {
        codes.try_mark(s, 2);
    });
    let secs = started.elapsed().as_secs_f64();
    println!(
        "two-bit sink: {secs:.3} s: {:.1} ns/state, {:.1} ns/successor",
        secs * 1e9 / stats.expanded as f64,
        secs * 1e9 / stats.generated as f64
    );
}
