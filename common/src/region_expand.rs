//! The expansion kernel on the region index ([`RegionIndex`]): successors of the states of a
//! range of tile sets, one block of `k!` orders at a time.
//!
//! For the region rules (`minimized`, `aware`, `zero-aware`) a block is (set `S`, region `R`).
//! A tile on a cell `a` next to `R` may step into any cell `b` of `R` next to `a`; the new set is
//! `S - a + b`, the blank ends in the region of `a` among its free cells, and the moved tile goes
//! from position `p_a` of `S` to position `p_b` of the new set. None of that depends on the
//! order, so it is worked out once per (block, move) and every current state of the block
//! lands in the one successor block, at the order [`OrderMoves`] gives. For `ignored` a block is
//! a set (one "region") and a tile steps to any free neighbour.
//!
//! ```
//! use tilepdb_common::region_index::{OrderMoves, RegionIndex};
//! use tilepdb_common::{Board, LayerBitmap};
//! use tilepdb_common::region_expand::RegionKernel;
//! // Tile 1 alone on 3x3 with the blank ignored: from cell 1 it steps to 0, 2 and 4.
//! let board: Board = "3x3".parse().unwrap();
//! let index = RegionIndex::new(board, 1).unwrap();
//! let moves = OrderMoves::new(1);
//! let kernel = RegionKernel::new(&index, &moves, true);
//! let mut current = LayerBitmap::new(0..index.placements());
//! current.insert(index.placement_index(&[1]));
//! let mut reached = vec![];
//! kernel.expand(0..index.sets(), &current, &mut |s: u64, _p: u64| reached.push(s));
//! reached.sort();
//! assert_eq!(reached, vec![0, 2, 4]); // set ranks of {0}, {2}, {4}
//! ```

use std::ops::Range;

use crate::layer::CurrentLayer;
use crate::region_index::{OrderMoves, RegionIndex, binomial, rank_set};
use crate::{Board, MAX_CELLS};

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

/// The block that one move takes a block's states to: the successors are the states
/// `block * orders + o` and their placement indices `set * orders + o` for orders `o`.
///
/// ```
/// use tilepdb_common::region_expand::ReachedBlock;
/// let into = ReachedBlock { block: 7, set: 3, orders: 720 };
/// assert_eq!((into.state_base(), into.placement_base()), (5040, 2160));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReachedBlock {
    /// The block of the index (the tile set's rank when the blank is ignored).
    pub block: u64,
    /// The rank of the block's tile set.
    pub set: u64,
    /// Orders per block, `k!`.
    pub orders: u64,
}

impl ReachedBlock {
    /// The state of order 0 of the block.
    #[inline]
    pub fn state_base(&self) -> u64 {
        self.block * self.orders
    }

    /// The placement index of order 0 of the block's set.
    #[inline]
    pub fn placement_base(&self) -> u64 {
        self.set * self.orders
    }
}

/// Where the region kernel reports a reached state: its state index and its placement index
/// (`c * k! + order`, where a minimized build keeps its least depth).
pub trait RegionSink {
    /// Reports one state reached and its placement index.
    fn reached(&mut self, state: u64, placement: u64);

    /// Reports the states of the orders `orders` of the block `into`: successors in one
    /// block, from one move.
    #[inline]
    fn reached_orders(&mut self, into: ReachedBlock, orders: impl Iterator<Item = u64>) {
        let (states, placements) = (into.state_base(), into.placement_base());
        for o in orders {
            self.reached(states + o, placements + o);
        }
    }

    /// Hints that the `count` orders `orders` of the block `into` are about to be reported
    /// ([`RegionSink::reached_orders`]): a sink may ask the processor to bring in what they
    /// touch. Does nothing unless the sink says otherwise.
    #[inline]
    fn prefetch_orders(
        &mut self,
        into: ReachedBlock,
        count: usize,
        orders: impl Iterator<Item = u64>,
    ) {
        let _ = (into, count, orders);
    }
}

impl<F: FnMut(u64, u64)> RegionSink for F {
    #[inline]
    fn reached(&mut self, state: u64, placement: u64) {
        self(state, placement);
    }
}

/// A block's current orders (less its first state) and its moves: the block each move takes
/// them to, and the moved tile's positions among the old and the new cells.
type BlockMoves = (Vec<u32>, Vec<(ReachedBlock, usize, usize)>);

/// The kernel of one pattern size on one board.
pub struct RegionKernel<'a> {
    index: &'a RegionIndex,
    moves: &'a OrderMoves,
    /// The blank ignored: blocks are sets.
    ignored: bool,
    neighbours: [u32; MAX_CELLS],
}

impl<'a> RegionKernel<'a> {
    /// A kernel for `index` (the `ignored` rule when `ignored`, else the region rules);
    /// `moves` must be the order moves of `index.k()` tiles.
    pub fn new(index: &'a RegionIndex, moves: &'a OrderMoves, ignored: bool) -> Self {
        let board = index.board();
        RegionKernel {
            index,
            moves,
            ignored,
            neighbours: std::array::from_fn(|c| {
                if c < board.cells() {
                    board.neighbours(c)
                } else {
                    0
                }
            }),
        }
    }

    /// The states of the sets of rank `sets`: a contiguous range of the state index.
    pub fn states_of(&self, sets: Range<u64>) -> Range<u64> {
        let f = self.index.orders();
        if self.ignored {
            sets.start * f..sets.end * f
        } else {
            self.index.first_block(sets.start) * f..self.index.first_block(sets.end) * f
        }
    }

    /// Expands every state of `layer` in the sets of rank `sets`, reporting each successor.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "`f` (orders per block, at most 8!) and a state's offset in its block (below `f`) fit in usize and u32"
    )]
    pub fn expand(
        &self,
        sets: Range<u64>,
        layer: &impl CurrentLayer,
        sink: &mut impl RegionSink,
    ) -> ExpandStats {
        let index = self.index;
        let f = index.orders();
        let all = index.board().all_cells();
        let mut stats = ExpandStats::default();
        let mut current: Vec<u32> = Vec::with_capacity(f as usize);
        // Two blocks in flight: the current orders of a block and its moves (where each takes
        // the block's states, and the moved tile's positions); the one at `next` is filled
        // while the other, if `waiting`, is merged.
        let mut ahead: [BlockMoves; 2] =
            std::array::from_fn(|_| (Vec::with_capacity(f as usize), Vec::with_capacity(64)));
        let (mut next, mut waiting) = (0, false);
        for c in sets {
            if self.ignored {
                let set = index.set_mask(c);
                let free = all & !set;
                current.clear();
                layer.for_each_current(c * f..(c + 1) * f, |s| current.push((s - c * f) as u32));
                if current.is_empty() {
                    continue;
                }
                stats.expanded += current.len() as u64;
                let mut movers = set;
                while movers != 0 {
                    let from = movers.trailing_zeros() as usize;
                    movers &= movers - 1;
                    let mut targets = self.neighbours[from] & free;
                    while targets != 0 {
                        let to = targets.trailing_zeros() as usize;
                        targets &= targets - 1;
                        let next_set = set ^ (1 << from) ^ (1 << to);
                        let next_c = rank_set(next_set);
                        let into = ReachedBlock {
                            block: next_c,
                            set: next_c,
                            orders: f,
                        };
                        let (pa, pb) = positions(set, next_set, from, to);
                        self.emit(&current, pa, pb, into, sink);
                        stats.generated += current.len() as u64;
                    }
                }
                continue;
            }
            let (first, regions) = index.blocks_of(c);
            let set = index.set_mask_of_regions(regions);
            for (r, &region) in regions.iter().enumerate() {
                let block = (first + r as u64) * f;
                let (current, targets) = &mut ahead[next];
                current.clear();
                layer.for_each_current(block..block + f, |s| current.push((s - block) as u32));
                if current.is_empty() {
                    continue;
                }
                stats.expanded += current.len() as u64;
                let board = index.board();
                targets.clear();
                for_each_tile_move(&board, set, region, |m| {
                    // The cell the tile left is free in the new set: its region there is
                    // the successor's.
                    let next_c = m.next_set_rank(c);
                    let into = ReachedBlock {
                        block: index.block_holding(next_c, m.from),
                        set: next_c,
                        orders: f,
                    };
                    targets.push((into, m.pa, m.pb));
                });
                // This block's successors asked for from memory while the block before it is
                // merged.
                for &(into, pa, pb) in targets.iter() {
                    self.prefetch(current, pa, pb, into, sink);
                }
                if waiting {
                    stats.generated += self.emit_block(&ahead[1 - next], sink);
                }
                waiting = true;
                next = 1 - next;
            }
        }
        if waiting {
            stats.generated += self.emit_block(&ahead[1 - next], sink);
        }
        stats
    }

    /// Reports the successors of a block's current orders under each of its moves; how many.
    #[inline]
    fn emit_block(&self, (current, targets): &BlockMoves, sink: &mut impl RegionSink) -> u64 {
        for &(into, pa, pb) in targets {
            self.emit(current, pa, pb, into, sink);
        }
        (current.len() * targets.len()) as u64
    }

    /// Hints to `sink` the successors that [`RegionKernel::emit`] will report.
    #[inline]
    fn prefetch(
        &self,
        current: &[u32],
        pa: usize,
        pb: usize,
        into: ReachedBlock,
        sink: &mut impl RegionSink,
    ) {
        let count = current.len();
        match self.moves.row(pa, pb) {
            Some(row) => sink.prefetch_orders(
                into,
                count,
                current.iter().map(|&o| u64::from(row[o as usize])),
            ),
            None => sink.prefetch_orders(
                into,
                count,
                current
                    .iter()
                    .map(|&o| self.moves.moved(pa, pb, u64::from(o))),
            ),
        }
    }

    /// Reports the successors of the orders `current` of a block under one move, in the block
    /// `into`.
    #[inline]
    fn emit(
        &self,
        current: &[u32],
        pa: usize,
        pb: usize,
        into: ReachedBlock,
        sink: &mut impl RegionSink,
    ) {
        match self.moves.row(pa, pb) {
            Some(row) => {
                sink.reached_orders(into, current.iter().map(|&o| u64::from(row[o as usize])));
            }
            None => sink.reached_orders(
                into,
                current
                    .iter()
                    .map(|&o| self.moves.moved(pa, pb, u64::from(o))),
            ),
        }
    }
}

/// The position of the moved tile among the cells of its old set and of its new set: the
/// tile moved from cell `from` of `set` to cell `to` of `next_set`.
///
/// ```
/// use tilepdb_common::region_expand::positions;
/// // {1, 4, 6}: the tile on 4 (position 1) steps to 7, the last of {1, 6, 7}.
/// assert_eq!(positions(0b101_0010, 0b1100_0010, 4, 7), (1, 2));
/// ```
#[inline]
#[must_use]
pub fn positions(set: u32, next_set: u32, from: usize, to: usize) -> (usize, usize) {
    (
        (set & ((1u32 << from) - 1)).count_ones() as usize,
        (next_set & ((1u32 << to) - 1)).count_ones() as usize,
    )
}

/// A move of a pattern tile into the blank's region: the tile on cell `from` steps to cell
/// `to`, and the tiles' cells become `next_set`; `pa` and `pb` are the tile's positions among
/// the old and the new cells ([`positions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileMove {
    /// The cell the tile leaves.
    pub from: usize,
    /// The cell it steps to.
    pub to: usize,
    /// The tiles' cells after the move.
    pub next_set: u32,
    /// The tile's position among the cells before the move.
    pub pa: usize,
    /// Its position among the cells after it.
    pub pb: usize,
}

impl TileMove {
    /// The rank of the new cells, `c` being the rank of the old ones. When no other tile lies
    /// between the two cells (`pa == pb`) every other cell keeps its position, so only the
    /// moved cell's term of the rank changes; otherwise the rank is computed afresh.
    ///
    /// ```
    /// use tilepdb_common::Board;
    /// use tilepdb_common::region_expand::for_each_tile_move;
    /// use tilepdb_common::region_index::rank_set;
    /// let board = Board::new(3, 3).unwrap();
    /// let set = 0b1_0001;
    /// for_each_tile_move(&board, set, board.all_cells() & !set, |m| {
    ///     assert_eq!(m.next_set_rank(rank_set(set)), rank_set(m.next_set));
    /// });
    /// ```
    #[inline]
    pub fn next_set_rank(&self, c: u64) -> u64 {
        if self.pa == self.pb {
            c - binomial(self.from, self.pa + 1) + binomial(self.to, self.pa + 1)
        } else {
            rank_set(self.next_set)
        }
    }
}

/// Calls `visit` with every move out of the block of the tiles on `set` and the blank's
/// `region` (free cells): each tile next to the region stepping to each cell of the region
/// next to it, tiles and cells in increasing order. The one walk over a block's moves that
/// the kernel, the shard planner and the benchmarks share.
///
/// ```
/// use tilepdb_common::Board;
/// use tilepdb_common::region_expand::for_each_tile_move;
/// // 3x3, tiles on cells 0 and 4, every other cell free (one region).
/// let board = Board::new(3, 3).unwrap();
/// let set = 0b1_0001;
/// let mut moves = Vec::new();
/// for_each_tile_move(&board, set, board.all_cells() & !set, |m| moves.push((m.from, m.to)));
/// assert_eq!(moves, [(0, 1), (0, 3), (4, 1), (4, 3), (4, 5), (4, 7)]);
/// ```
#[inline]
pub fn for_each_tile_move(board: &Board, set: u32, region: u32, mut visit: impl FnMut(TileMove)) {
    let mut movers = board.dilate(region) & set;
    while movers != 0 {
        let from = movers.trailing_zeros() as usize;
        movers &= movers - 1;
        let mut targets = board.neighbours(from) & region;
        while targets != 0 {
            let to = targets.trailing_zeros() as usize;
            targets &= targets - 1;
            let next_set = set ^ (1 << from) ^ (1 << to);
            let (pa, pb) = positions(set, next_set, from, to);
            visit(TileMove {
                from,
                to,
                next_set,
                pa,
                pb,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every set of up to 6 tiles on the 4x4 board, and of 6 on the 5x5 one: each move's
    /// set rank from its parent's equals the rank computed afresh.
    #[test]
    fn a_moves_set_rank_follows_from_its_parents() {
        for (board, sizes) in [
            (Board::new(4, 4).unwrap(), 1..=6),
            (Board::new(5, 5).unwrap(), 6..=6),
        ] {
            let cells = board.cells();
            for k in sizes {
                let mut moves = 0;
                for set in (0u32..1 << cells).filter(|s| s.count_ones() as usize == k) {
                    let c = rank_set(set);
                    for_each_tile_move(&board, set, board.all_cells() & !set, |m| {
                        assert_eq!(m.next_set_rank(c), rank_set(m.next_set), "{m:?}");
                        moves += 1;
                    });
                }
                assert!(moves > 0);
            }
        }
    }
}
