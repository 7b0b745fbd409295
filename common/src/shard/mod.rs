//! Shards of a table's search: the region index cut by the order digit, so that a cluster
//! holds a table's search state that no one machine holds.
//!
//! Shard `p` of `P` owns the orders `p * k! / P .. (p + 1) * k! / P` ([`ShardLayout`]) of
//! every block of the index, and keeps their two-bit codes and depth store ([`Shard`]). A
//! shard's own state `block * k! + order` is its local state `block * w + order - first`
//! (`w` orders wide); for `minimized` the depth entry of the placement `c * k! + order` is
//! `c * w + order - first`. Every region of a placement shares its set and order, so a
//! placement's least depth over its regions is kept on one shard.
//!
//! A layer is expanded shard by shard ([`Shard::expand`]): the successors that the shard owns
//! are marked at once (the merge rule `next = reached AND unseen`), the others are handed to
//! the caller, which sends them to their owners ([`Shard::merge_received`] there). When every
//! successor has reached its owner, each shard finishes the layer on its own
//! ([`Shard::finish_layer`]). The table's file is then read out shard by shard in file order
//! ([`Shard::own_codes`], [`assemble_values`]).
//!
//! Beside its codes a shard keeps a flag per block and live code ([`LiveBlocks`]), raised
//! whenever a state of the block takes that code: the layer's scans (its expansion, its finish
//! and its checkpoint) look only at the blocks that hold its states.
//!
//! ```
//! use tilepdb_common::shard::ShardLayout;
//! let layout = ShardLayout::new(120, 3).unwrap(); // 5 tiles: 5! orders, 3 shards
//! assert_eq!(layout.orders_of(1), 40..80);
//! assert_eq!(layout.owner(79), 1);
//! ```

use std::ops::Range;
use std::sync::Arc;

use crate::depth_store::DepthBytes;
use crate::error::{Error, Result};
use crate::file_order::for_each_depth_entry;
use crate::layer::{BitPositions, StateCodes};
use crate::region_expand::{ExpandStats, RegionKernel};
use crate::region_index::{OrderMoves, RegionIndex};

mod layout;
mod lists;
mod live;
mod locality;
mod route;
mod values;

use crate::space::{BlankRule, StateSpace};
use crate::table::DepthCode;
pub use layout::{MAX_SHARDS, ShardLayout, ShardSize};
pub use lists::{
    LEAST_LIST_STATES, LEAST_LISTS_BYTES, MAX_PUSH_STATES, list_states, lists_budget, lists_bytes,
};
pub use live::LiveBlocks;
pub use locality::{kept_home, locality, move_shares};
use route::{OwnLayer, Route};
use values::for_each_block_part;
pub use values::{OwnCodes, assemble_values};

/// One shard of one table's search: the two-bit codes and the depth store of the orders it
/// owns in every block.
pub struct Shard {
    space: StateSpace,
    index: Arc<RegionIndex>,
    moves: Arc<OrderMoves>,
    layout: ShardLayout,
    number: u32,
    own: Range<u64>,
    /// The owner of each order.
    owners: Vec<u16>,
    codes: StateCodes,
    depths: DepthBytes,
    /// The blocks that hold states of each live code.
    live: LiveBlocks,
}

impl Shard {
    /// Shard `shard` of `layout` of the table of `space` on `index` (`moves`: the order
    /// moves of its tiles), every state unseen but the goal's, if the shard owns it; the depth
    /// store keeps `code` of each depth.
    pub fn new(
        space: &StateSpace,
        index: Arc<RegionIndex>,
        moves: Arc<OrderMoves>,
        layout: ShardLayout,
        shard: u32,
        code: DepthCode,
    ) -> Result<Shard> {
        if shard >= layout.shards() || layout.orders() != index.orders() {
            return Err(Error::Shard(format!(
                "shard {shard} of {} shards of {} orders does not fit the table's {} orders",
                layout.shards(),
                layout.orders(),
                index.orders()
            )));
        }
        if u32::try_from(index.orders() - 1).is_err() {
            return Err(Error::Shard(format!(
                "a sharded table has at most 12 tiles: its {} orders per block are numbered in 32 bits",
                index.orders()
            )));
        }
        let size = ShardSize::of(space, &index, layout, shard, code);
        let owners = (0..index.orders())
            .map(|o| u16::try_from(layout.owner(o)).expect("at most MAX_SHARDS shards"))
            .collect();
        let shard = Shard {
            owners,
            space: space.clone(),
            own: layout.orders_of(shard),
            codes: StateCodes::new(size.states),
            depths: DepthBytes::packed(size.depth_entries, code),
            live: LiveBlocks::new(size.blocks),
            index,
            moves,
            layout,
            number: shard,
        };
        let goal = shard.goal_state();
        if shard.owns(goal) {
            shard.merge_one(goal, shard.depth_entry(goal), 0);
        }
        Ok(shard)
    }

    /// The goal's state on the index (its placement when the blank is ignored).
    pub fn goal_state(&self) -> u64 {
        let cells = self.space.goal_cells();
        if self.space.rule() == BlankRule::Ignored {
            self.index.placement_index(cells)
        } else {
            let blank = self.space.goal().cell_of(0, self.space.board().cells());
            self.index.state_index(cells, blank)
        }
    }

    /// The shard's number.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The layout the shard is one of.
    pub fn layout(&self) -> ShardLayout {
        self.layout
    }

    /// The region index of the table.
    pub fn index(&self) -> &RegionIndex {
        &self.index
    }

    /// The table's space.
    pub fn space(&self) -> &StateSpace {
        &self.space
    }

    /// Bytes of the shard's arrays.
    pub fn bytes(&self) -> u64 {
        self.codes.bytes() + self.depths.memory_bytes() + self.live.bytes()
    }

    /// States of the index (the end of any list's allowed range).
    pub fn index_states(&self) -> u64 {
        if self.space.rule() == BlankRule::Ignored {
            self.index.placements()
        } else {
            self.index.states()
        }
    }

    /// Whether the state `state` of the index is the shard's.
    #[inline]
    pub fn owns(&self, state: u64) -> bool {
        state < self.index_states() && self.own.contains(&(state % self.index.orders()))
    }

    /// The local number of an own global `state` (or own depth entry).
    #[inline]
    fn local(&self, global: u64) -> u64 {
        let f = self.index.orders();
        let width = self.own.end - self.own.start;
        global / f * width + global % f - self.own.start
    }

    /// The depth entry of an own state: its placement index for `minimized`, else itself.
    #[inline]
    fn depth_entry(&self, state: u64) -> u64 {
        if self.space.rule() == BlankRule::Minimized {
            let f = self.index.orders();
            self.index.block_and_set(state).1 * f + state % f
        } else {
            state
        }
    }

    /// Marks the own `state` as the layer `depth` if it was unseen, recording its depth in
    /// its depth `entry` ([`Shard::depth_entry`]).
    #[inline]
    fn merge_one(&self, state: u64, entry: u64, depth: u32) {
        let code = StateCodes::code_of_depth(depth);
        if self.codes.try_mark(self.local(state), code) {
            self.depths.record_first(self.local(entry), depth);
            self.live.raise(code, state / self.index.orders());
        }
    }

    /// Expands the shard's states of the layer `depth` in the sets `sets`: successors the
    /// shard owns are merged as the layer `depth + 1`; the others are handed to `send` a
    /// block and one move at a time, as `send(block, orders)`: the orders (below `k!`, in
    /// no particular order) of the states `block * k! + order` that other shards own
    /// ([`Shard::owner_of_order`]).
    pub fn expand(
        &self,
        sets: Range<u64>,
        depth: u32,
        send: &mut impl FnMut(u64, &[u32]),
    ) -> ExpandStats {
        let kernel = RegionKernel::new(
            &self.index,
            &self.moves,
            self.space.rule() == BlankRule::Ignored,
        );
        let current = OwnLayer {
            shard: self,
            code: StateCodes::code_of_depth(depth),
        };
        let mut sink = Route {
            shard: self,
            depth: depth + 1,
            foreign: Vec::new(),
            send,
        };
        kernel.expand(sets, &current, &mut sink)
    }

    /// [`Shard::expand`], each successor of another shard handed to `send` alone, as
    /// `send(owner, state)`.
    pub fn expand_states(
        &self,
        sets: Range<u64>,
        depth: u32,
        send: &mut impl FnMut(u32, u64),
    ) -> ExpandStats {
        let orders = self.index.orders();
        self.expand(sets, depth, &mut |block, foreign| {
            for &o in foreign {
                send(self.owner_of_order(o), block * orders + u64::from(o));
            }
        })
    }

    /// The shard that owns the order `order` of every block.
    #[inline]
    pub fn owner_of_order(&self, order: u32) -> u32 {
        u32::from(self.owners[order as usize])
    }

    /// Merges `states` reached by another shard as the layer `depth`; refuses (before merging
    /// any) a list holding a state the shard does not own.
    pub fn merge_received(&self, states: &[u64], depth: u32) -> Result<()> {
        if let Some(foreign) = self.first_foreign(states) {
            return Err(Error::Shard(format!(
                "state {foreign} is not one of shard {}'s (orders {:?} of each block)",
                self.number, self.own
            )));
        }
        let Some(&first) = states.first() else {
            return Ok(());
        };
        let f = self.index.orders();
        let code = StateCodes::code_of_depth(depth);
        let mut block = OwnBlock::of(self, first);
        let mut gained = false;
        for &s in states {
            // A state less than `k!` above the block's first state is of that block: no
            // division while the states stay in one block, as a sorted list's do.
            if s.wrapping_sub(block.start) >= f {
                if gained {
                    self.live.raise(code, block.start / f);
                }
                block = OwnBlock::of(self, s);
                gained = false;
            }
            let at = s - block.start - self.own.start;
            if self.codes.try_mark(block.state_local + at, code) {
                self.depths.record_first(block.entry_local + at, depth);
                gained = true;
            }
        }
        if gained {
            self.live.raise(code, block.start / f);
        }
        Ok(())
    }

    /// The first of `states` that the shard does not own, if any.
    fn first_foreign(&self, states: &[u64]) -> Option<u64> {
        let f = self.index.orders();
        let end = self.index_states();
        let mut block_start = states.first().map_or(0, |&s| s - s % f);
        states.iter().copied().find(|&s| {
            if s.wrapping_sub(block_start) >= f {
                block_start = s - s % f;
            }
            s >= end || !self.own.contains(&(s - block_start))
        })
    }

    /// Finishes the layer `depth` on the sets `sets`: retires the current states and counts
    /// the next layer's (whose depths were recorded as they were marked); the number of
    /// next-layer states and of the table's entries they stand for (an aware state stands for
    /// the cells of its region).
    pub fn finish_layer(&self, sets: Range<u64>, depth: u32) -> (u64, u64) {
        let (current, next) = (
            StateCodes::code_of_depth(depth),
            StateCodes::code_of_depth(depth + 1),
        );
        let width = self.own.end - self.own.start;
        // A block's current states retired and its next ones counted, in one pass over the
        // codes when it holds both.
        let finish_block = |block: u64| -> u64 {
            let local = block * width..(block + 1) * width;
            let counted = self.live.is_raised(next, block).then_some(next);
            if self.live.lower(current, block) {
                self.codes.retire_and_count(local, current, counted)
            } else {
                counted.map_or(0, |next| self.codes.count_with_code(local, next))
            }
        };
        if matches!(self.space.rule(), BlankRule::ZeroAware | BlankRule::Ignored) {
            // A state is its own depth entry and one entry of the table: the live blocks of
            // the sets' run of blocks, one after the other.
            let blocks = if self.space.rule() == BlankRule::Ignored {
                sets
            } else {
                self.index.first_block(sets.start)..self.index.first_block(sets.end)
            };
            let added = blocks.map(finish_block).sum();
            return (added, added);
        }
        // Minimized and aware, block by block: an aware state stands for the cells of its
        // region.
        let (mut added, mut entries) = (0, 0);
        for c in sets {
            let blocks = self.index.first_block(c)..self.index.first_block(c + 1);
            let regions = self.index.regions_of(c);
            for block in blocks.clone() {
                let n = finish_block(block);
                added += n;
                entries += match self.space.rule() {
                    BlankRule::Aware => {
                        #[expect(
                            clippy::cast_possible_truncation,
                            reason = "a region's position among its set's regions fits in usize"
                        )]
                        let region = regions[(block - blocks.start) as usize];
                        n * u64::from(region.count_ones())
                    }
                    _ => n,
                };
            }
        }
        (added, entries)
    }

    /// Calls `f` with every state of the layer `depth` that the shard holds in the sets
    /// `sets`, as global state numbers, in increasing order
    /// ([`Shard::for_each_block_of_layer`], block by block).
    pub fn for_each_state_of_layer(&self, sets: Range<u64>, depth: u32, mut f: impl FnMut(u64)) {
        let orders = self.index.orders();
        self.for_each_block_of_layer(sets, depth, |block, own| {
            for &order in own {
                f(block * orders + order);
            }
        });
    }

    /// Calls `f(block, orders)` for every block of the sets `sets` in which the shard holds
    /// states of the layer `depth`, in increasing block order, with the orders of those
    /// states (of the whole block's `k!`), increasing.
    pub fn for_each_block_of_layer(
        &self,
        sets: Range<u64>,
        depth: u32,
        mut f: impl FnMut(u64, &[u64]),
    ) {
        let mut orders = Vec::new();
        self.for_each_block_bits_of_layer(sets, depth, |block, first, bits, _| {
            orders.clear();
            orders.extend(BitPositions::new(bits, first));
            f(block, &orders);
        });
    }

    /// Calls `f(block, first, bits, count)` for every block of the sets `sets` in which the
    /// shard holds states of the layer `depth`, in increasing block order: the shard's orders
    /// of the block (of the whole block's `k!`) start at `first`, and bit `i` of `bits` (bit
    /// `i % 64` of word `i / 64`) is set when the order `first + i` is a state of the layer;
    /// `count` of them are. [`for_each_block_of_layer`](Self::for_each_block_of_layer)'s
    /// blocks, read a word of codes at a time.
    pub fn for_each_block_bits_of_layer(
        &self,
        sets: Range<u64>,
        depth: u32,
        mut f: impl FnMut(u64, u64, &[u64], u64),
    ) {
        let code = StateCodes::code_of_depth(depth);
        let width = self.own.end - self.own.start;
        let blocks = if self.space.rule() == BlankRule::Ignored {
            sets
        } else {
            self.index.first_block(sets.start)..self.index.first_block(sets.end)
        };
        let mut bits = Vec::new();
        for block in blocks {
            if !self.live.is_raised(code, block) {
                continue;
            }
            let count =
                self.codes
                    .bits_with_code(block * width..(block + 1) * width, code, &mut bits);
            if count > 0 {
                f(block, self.own.start, &bits, count);
            }
        }
    }

    /// The shard's stored codes (`depth + 1` for a byte store) of the file entries `entries`
    /// that it owns, in file order, packed as its depth store packs them. Room for every entry
    /// of the range is reserved: the caller bounds it (a peer's read takes at most 2^24
    /// entries).
    pub fn own_codes(&self, entries: Range<u64>) -> OwnCodes {
        let code = self.depths.code();
        let room = code.bytes_for(entries.end - entries.start);
        // Zeroed pages that no code reaches are never touched (a block this large is a
        // mapping of its own, `crate::allocator`).
        let mut codes = vec![0u8; usize::try_from(room).unwrap_or(0)];
        let mut count = 0;
        let f = self.index.orders();
        if self.space.rule() == BlankRule::ZeroAware {
            // The file is in the index's order: each block's own orders, block after block,
            // a run of the store each.
            let width = self.own.end - self.own.start;
            for_each_block_part(&entries, f, |block, orders| {
                let own = orders.start.max(self.own.start)..orders.end.min(self.own.end);
                if own.is_empty() {
                    return;
                }
                let n = own.end - own.start;
                let first = block * width + own.start - self.own.start;
                self.depths.copy_codes(first, &mut codes, count, n);
                count += n;
            });
        } else {
            for_each_depth_entry(&self.space, &self.index, entries, |e| {
                if self.own.contains(&(e % f)) {
                    code.put(&mut codes, count, self.depths.get(self.local(e)));
                    count += 1;
                }
            });
        }
        codes.truncate(usize::try_from(code.bytes_for(count)).unwrap_or(usize::MAX));
        OwnCodes { code, codes, count }
    }
}

/// Where the own states of one block lie in a shard's arrays.
struct OwnBlock {
    /// The block's first state (order 0).
    start: u64,
    /// The local state of the block's first own order.
    state_local: u64,
    /// The local depth entry of the block's first own order.
    entry_local: u64,
}

impl OwnBlock {
    /// The block of `state`.
    fn of(shard: &Shard, state: u64) -> OwnBlock {
        let f = shard.index.orders();
        let width = shard.own.end - shard.own.start;
        let block = state / f;
        let state_local = block * width;
        OwnBlock {
            start: block * f,
            state_local,
            entry_local: if shard.space.rule() == BlankRule::Minimized {
                shard.index.block_and_set(state).1 * width
            } else {
                state_local
            },
        }
    }
}

#[cfg(test)]
mod tests;
