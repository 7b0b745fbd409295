//! The breadth-first expansion kernel: successors of the abstract states of a rank range.
//!
//! For the `minimized` and `aware` rules a state is (placement, region of the blank). Moving
//! the blank inside its region is free; a pattern tile next to the region may step into any
//! region cell next to it, at cost 1, and the blank is then in the region of the tile's old
//! cell. For `ignored`, a tile steps to any adjacent cell free of pattern tiles.
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, LayerBitmap, Pattern, StateSpace};
//! use tilepdb_worker::expand_range;
//! // Tile 1 alone on 3x3, blank ignored: from the goal (tile 1 on cell 1) it can step to 0, 2, 4.
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
//! let mut current = LayerBitmap::new(0..space.states());
//! current.insert(space.goal_state());
//! let mut reached = vec![];
//! expand_range(&space, 0..space.placements(), &current, &mut |s: u64| reached.push(s));
//! reached.sort();
//! assert_eq!(reached, vec![0, 2, 4]);
//! ```

use std::ops::Range;

use tilepdb_common::layer::CurrentLayer;
use tilepdb_common::space::slot_of;
use tilepdb_common::{BlankRule, MAX_CELLS, StateSpace};

/// Where the kernel reports the states it reaches.
pub trait ReachedSink {
    fn reached(&mut self, state: u64);
}

impl<F: FnMut(u64)> ReachedSink for F {
    #[inline]
    fn reached(&mut self, state: u64) {
        self(state)
    }
}

/// What one expansion did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpandStats {
    /// Current-layer states expanded.
    pub expanded: u64,
    /// Successors generated (before duplicate detection).
    pub generated: u64,
}

impl std::ops::AddAssign for ExpandStats {
    fn add_assign(&mut self, o: ExpandStats) {
        self.expanded += o.expanded;
        self.generated += o.generated;
    }
}

/// Expands every state of `layer` whose placement rank lies in `ranks`, reporting each
/// successor to `sink`.
pub fn expand_range(
    space: &StateSpace,
    ranks: Range<u64>,
    layer: &impl CurrentLayer,
    sink: &mut impl ReachedSink,
) -> ExpandStats {
    let slots = space.slots();
    let board = space.board();
    let ranker = space.ranker();
    let k = space.k();
    let all = board.all_cells();
    let mut stats = ExpandStats::default();
    let mut cells = [0u8; MAX_CELLS];
    let mut moved = [0u8; MAX_CELLS];
    let mut loaded_rank = u64::MAX;
    let mut free = 0u32;
    let states = ranks.start * slots..ranks.end * slots;
    match space.rule() {
        BlankRule::Ignored => layer.for_each_current(states, |rank| {
            free = all & !ranker.unrank(rank, &mut cells);
            stats.expanded += 1;
            moved[..k].copy_from_slice(&cells[..k]);
            for i in 0..k {
                let from = cells[i];
                let mut targets = board.neighbours(from as usize) & free;
                while targets != 0 {
                    let to = targets.trailing_zeros();
                    targets &= targets - 1;
                    moved[i] = to as u8;
                    sink.reached(ranker.rank(&moved));
                    stats.generated += 1;
                }
                moved[i] = from;
            }
        }),
        BlankRule::Minimized | BlankRule::Aware => layer.for_each_current(states, |state| {
            let rank = state / slots;
            let slot = state - rank * slots;
            if rank != loaded_rank {
                free = all & !ranker.unrank(rank, &mut cells);
                moved[..k].copy_from_slice(&cells[..k]);
                loaded_rank = rank;
            }
            stats.expanded += 1;
            let blank = tilepdb_common::rank::select_bit(free, slot as u32) as usize;
            let region = board.region(blank, free);
            for i in 0..k {
                let from = cells[i] as usize;
                let mut targets = board.neighbours(from) & region;
                while targets != 0 {
                    let to = targets.trailing_zeros() as usize;
                    targets &= targets - 1;
                    moved[i] = to as u8;
                    let next_free = (free & !(1 << to)) | (1 << from);
                    let next_region = board.region(from, next_free);
                    let least = next_region.trailing_zeros() as usize;
                    sink.reached(ranker.rank(&moved) * slots + slot_of(next_free, least));
                    stats.generated += 1;
                }
                moved[i] = from as u8;
            }
        }),
    }
    stats
}
