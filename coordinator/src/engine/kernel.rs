//! The kernel seam of the in-process executor: a task's tile sets expanded by the region
//! kernel ([`RegionKernel`], the one the workers run) and merged into the table's arrays.
//!
//! The two-bit state array holds one code per state of the dense (set, region, order) index
//! (`T * k!` states; the placements when the blank is ignored). The depth store
//! ([`tilepdb_common::depth_store::DepthBytes`]) keeps, for `minimized`, one entry per
//! placement index (`c * k! + order`): the first depth at which any region of the placement
//! was reached; for the other rules one entry per state. At the end the values are put in the
//! table's order ([`super::stream::file_order`]): `minimized`, `aware` and `ignored` tables keep the placement-rank order of
//! [`tilepdb_common::PlacementRanker`] (and `rank * (n - k) + slot` for aware), the file
//! format's; a `zero-aware` table is in the order of the region index.
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! let board: Board = "2x2".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let table = build_table(&space, &BuildOptions::default(), &()).unwrap();
//! assert_eq!(table.histogram, vec![1, 2, 2, 2, 2, 2, 1]);
//! ```

use std::ops::Range;
use std::sync::Arc;

use tilepdb_common::depth_store::StoreLayer;
use tilepdb_common::layer::CodeLayer;
use tilepdb_common::region_expand::{ExpandStats, ReachedBlock, RegionKernel, RegionSink};
use tilepdb_common::region_index::{OrderMoves, RegionIndex};
use tilepdb_common::{BlankRule, StateSpace};

use super::{Kernel, TableArrays};

/// The entries of the goal's depth 0: its region's cells for an aware table, else one.
pub fn goal_entries(space: &StateSpace) -> u64 {
    if space.rule() != BlankRule::Aware {
        return 1;
    }
    let board = space.board();
    let mut set = 0u32;
    for &c in space.goal_cells() {
        set |= 1 << c;
    }
    let blank = space.goal().cell_of(0, board.cells());
    u64::from(board.region(blank, board.all_cells() & !set).count_ones())
}

/// The merge of one layer: each reached state through [`TableArrays::merge`] (a block's
/// successors under one move through [`TableArrays::merge_orders`]), its depth recorded per
/// placement index for minimized, per state otherwise.
struct RegionMerge<'a> {
    arrays: &'a TableArrays,
    per_placement: bool,
    depth: u32,
}

impl RegionSink for RegionMerge<'_> {
    #[inline]
    fn reached(&mut self, state: u64, placement: u64) {
        let entry = if self.per_placement { placement } else { state };
        self.arrays.merge(state, entry, self.depth);
    }

    #[inline]
    fn reached_orders(&mut self, into: ReachedBlock, orders: impl Iterator<Item = u64>) {
        let entry_base = if self.per_placement {
            into.placement_base()
        } else {
            into.state_base()
        };
        self.arrays
            .merge_orders(into.state_base(), entry_base, orders, self.depth);
    }

    #[inline]
    fn prefetch_orders(
        &mut self,
        into: ReachedBlock,
        count: usize,
        orders: impl Iterator<Item = u64>,
    ) {
        let first = into.state_base();
        let (states, each) = (first..first + into.orders, orders.map(|o| first + o));
        if self.arrays.store_is_state {
            // The store's entries are the states.
            self.arrays.depths.prefetch_within(states, count, each);
        } else {
            self.arrays.codes.prefetch_within(states, count, each);
        }
    }
}

/// The state of the goal of `space` on `index` and the entry of its depth.
pub fn goal_state_and_entry(space: &StateSpace, index: &RegionIndex) -> (u64, u64) {
    let goal_cells = space.goal_cells();
    let blank = space.goal().cell_of(0, space.board().cells());
    let placement = index.placement_index(goal_cells);
    let state = if space.rule() == BlankRule::Ignored {
        placement
    } else {
        index.state_index(goal_cells, blank)
    };
    let entry = if space.rule() == BlankRule::Minimized {
        placement
    } else {
        state
    };
    (state, entry)
}

/// The [`Kernel`] of the region index: a task's sets expanded by [`RegionKernel`] into a
/// `RegionMerge`.
pub struct RegionSetKernel {
    index: Arc<RegionIndex>,
    moves: OrderMoves,
}

impl RegionSetKernel {
    /// The kernel of `index`.
    pub fn new(index: Arc<RegionIndex>) -> RegionSetKernel {
        let moves = OrderMoves::new(index.k());
        RegionSetKernel { index, moves }
    }
}

impl Kernel for RegionSetKernel {
    fn expand_task(
        &self,
        space: &StateSpace,
        units: Range<u64>,
        arrays: &TableArrays,
        depth: u32,
    ) -> ExpandStats {
        let rule = space.rule();
        let kernel = RegionKernel::new(&self.index, &self.moves, rule == BlankRule::Ignored);
        let mut merge = RegionMerge {
            arrays,
            per_placement: rule == BlankRule::Minimized,
            depth: depth + 1,
        };
        if arrays.store_is_state {
            let current = StoreLayer {
                depths: &arrays.depths,
                depth,
            };
            return kernel.expand(units, &current, &mut merge);
        }
        let current = CodeLayer {
            codes: &arrays.codes,
            depth,
        };
        kernel.expand(units, &current, &mut merge)
    }
}
