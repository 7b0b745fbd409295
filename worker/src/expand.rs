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

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless,
    reason = "the kernel moves cells and ranks between u8, u32, u64 and usize within their proven bounds"
)]

use std::ops::Range;

use tilepdb_common::layer::CurrentLayer;
use tilepdb_common::rank::{RankedPlacement, select_bit};
use tilepdb_common::space::slot_of;
use tilepdb_common::{BlankRule, MAX_CELLS, StateSpace};

/// Where the kernel reports the states it reaches.
pub trait ReachedSink {
    /// Reports one state reached (it may be reported again).
    fn reached(&mut self, state: u64);
}

impl<F: FnMut(u64)> ReachedSink for F {
    #[inline]
    fn reached(&mut self, state: u64) {
        self(state);
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
    let states = ranks.start * slots..ranks.end * slots;
    let mut stats = ExpandStats::default();
    let mut expander = Expander::new(space);
    match space.rule() {
        BlankRule::Ignored => layer.for_each_current(states, |rank| {
            expander.load(rank);
            expander.expand_ignored(sink, &mut stats);
        }),
        BlankRule::Minimized | BlankRule::Aware | BlankRule::ZeroAware => {
            layer.for_each_current(states, |state| {
                let rank = state / slots;
                expander.load(rank);
                expander.expand_region(state - rank * slots, sink, &mut stats);
            });
        }
    }
    stats
}

/// The placement being expanded and what its moves share.
struct Expander<'a> {
    space: &'a StateSpace,
    placement: RankedPlacement,
    /// Cells free of pattern tiles.
    free: u32,
    loaded: bool,
    /// The cells next to each cell.
    neighbours: [u32; MAX_CELLS],
}

impl<'a> Expander<'a> {
    fn new(space: &'a StateSpace) -> Self {
        Expander {
            space,
            placement: RankedPlacement::new(space.ranker(), 0),
            free: 0,
            loaded: false,
            neighbours: std::array::from_fn(|c| {
                if c < space.board().cells() {
                    space.board().neighbours(c)
                } else {
                    0
                }
            }),
        }
    }

    /// Unranks `rank` unless it is the placement already loaded.
    #[inline]
    fn load(&mut self, rank: u64) {
        if !self.loaded || self.placement.rank != rank {
            self.placement.load(self.space.ranker(), rank);
            self.free = self.space.board().all_cells() & !self.placement.occupied;
            self.loaded = true;
        }
    }

    /// The blank ignored: each tile steps to each free neighbour cell.
    #[inline]
    fn expand_ignored(&self, sink: &mut impl ReachedSink, stats: &mut ExpandStats) {
        let (ranker, p) = (self.space.ranker(), &self.placement);
        stats.expanded += 1;
        for i in 0..self.space.k() {
            let mut targets = self.neighbours[p.cells[i] as usize] & self.free;
            while targets != 0 {
                let to = targets.trailing_zeros() as usize;
                targets &= targets - 1;
                sink.reached(p.rank_after_move(ranker, i, to));
                stats.generated += 1;
            }
        }
    }

    /// The state (placement, region of the free cell of `slot`): each tile next to the region
    /// steps into each region cell next to it; the blank ends in the region of the tile's old
    /// cell.
    ///
    /// The successor's region is worked out from the parent's instead of a flood fill per
    /// move: with tile `a -> b`, the new region of `a` is `a` itself, the parts of `R - b` next
    /// to `a` (all of `R - b` when removing `b` does not split `R`, found once per `b`), and
    /// the other regions of the placement next to `a`.
    #[inline]
    fn expand_region(&self, slot: u64, sink: &mut impl ReachedSink, stats: &mut ExpandStats) {
        let (board, ranker, p) = (self.space.board(), self.space.ranker(), &self.placement);
        let slots = self.space.slots();
        let free = self.free;
        let region = board.region(select_bit(free, slot as u32) as usize, free);
        let others = free & !region;
        stats.expanded += 1;
        // Region cells a tile can step into, and those whose filling splits the region.
        let mut splits = 0u32;
        let mut entries = board.dilate(p.occupied) & region;
        while entries != 0 {
            let to = entries.trailing_zeros() as usize;
            entries &= entries - 1;
            let rest = region & !(1 << to);
            let touching = self.neighbours[to] & rest;
            if touching & touching.wrapping_sub(1) != 0
                && !board.connects(touching & touching.wrapping_neg(), touching, rest)
            {
                splits |= 1 << to;
            }
        }
        let mut movers = board.dilate(region) & p.occupied;
        while movers != 0 {
            let from = movers.trailing_zeros() as usize;
            movers &= movers - 1;
            let i = p.tile_on(from);
            let near = self.neighbours[from];
            // Other regions next to the tile's old cell join the blank's new region.
            let pockets = if near & others != 0 {
                board.flood(near & others, others)
            } else {
                0
            };
            let mut targets = near & region;
            while targets != 0 {
                let to = targets.trailing_zeros() as usize;
                targets &= targets - 1;
                let rest = region & !(1 << to);
                let joined = if splits & (1 << to) != 0 {
                    board.flood(near & rest, rest)
                } else {
                    rest & ((near & rest != 0) as u32).wrapping_neg()
                };
                let next_region = (1 << from) | joined | pockets;
                let next_free = rest | others | (1 << from);
                let least = next_region.trailing_zeros() as usize;
                sink.reached(p.rank_after_move(ranker, i, to) * slots + slot_of(next_free, least));
                stats.generated += 1;
            }
        }
    }
}
