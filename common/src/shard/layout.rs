//! How a block's orders are cut among shards ([`ShardLayout`]), and what one shard holds
//! ([`ShardSize`]).

use std::ops::Range;

use crate::error::{Error, Result};
use crate::layer::StateCodes;
use crate::region_index::RegionIndex;
use crate::space::{BlankRule, StateSpace};
use crate::table::DepthCode;

/// Most shards a table may be cut into.
pub const MAX_SHARDS: u32 = 4096;

/// How the orders of a block are cut among `P` shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardLayout {
    orders: u64,
    shards: u32,
}

impl ShardLayout {
    /// `shards` shards of blocks of `orders` orders; refuses no shard, more than
    /// [`MAX_SHARDS`], or more shards than orders (a shard would own nothing).
    pub fn new(orders: u64, shards: u32) -> Result<ShardLayout> {
        if shards == 0 || shards > MAX_SHARDS || u64::from(shards) > orders {
            return Err(Error::Shard(format!(
                "{shards} shards: a table of {orders} orders per block is cut into 1 to {} shards",
                orders.min(u64::from(MAX_SHARDS))
            )));
        }
        Ok(ShardLayout { orders, shards })
    }

    /// The number of shards.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The orders of a block that are cut among the shards.
    pub fn orders(&self) -> u64 {
        self.orders
    }

    /// The orders that shard `shard` owns in every block.
    pub fn orders_of(&self, shard: u32) -> Range<u64> {
        let at = |p: u32| u64::from(p) * self.orders / u64::from(self.shards);
        at(shard)..at(shard + 1)
    }

    /// The shard that owns `order`.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the result is below the number of shards, a u32"
    )]
    pub fn owner(&self, order: u64) -> u32 {
        (((order + 1) * u64::from(self.shards) - 1) / self.orders) as u32
    }
}

/// The figures of one shard of a table: its states and the bytes of its arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardSize {
    /// The shard's states (its two-bit codes).
    pub states: u64,
    /// The entries of its depth store.
    pub depth_entries: u64,
    /// Bytes of the two-bit codes.
    pub code_bytes: u64,
    /// Bytes of the depth store.
    pub depth_bytes: u64,
    /// Blocks of the index (the shard holds `width` orders of each).
    pub blocks: u64,
}

impl ShardSize {
    /// The size of shard `shard` of `layout` for a table of `space` on `index`, whose depth
    /// store keeps `code`.
    pub fn of(
        space: &StateSpace,
        index: &RegionIndex,
        layout: ShardLayout,
        shard: u32,
        code: DepthCode,
    ) -> ShardSize {
        let width = {
            let o = layout.orders_of(shard);
            o.end - o.start
        };
        let blocks = if space.rule() == BlankRule::Ignored {
            index.sets()
        } else {
            index.region_count()
        };
        let states = blocks * width;
        let depth_entries = if space.rule() == BlankRule::Minimized {
            index.sets() * width
        } else {
            states
        };
        ShardSize {
            states,
            depth_entries,
            code_bytes: StateCodes::file_bytes(states),
            depth_bytes: code.bytes_for(depth_entries),
            blocks,
        }
    }

    /// Bytes of the shard's arrays: its codes, its depth store and its blocks' flags
    /// ([`super::LiveBlocks`]).
    pub fn bytes(&self) -> u64 {
        self.code_bytes + self.depth_bytes + super::LiveBlocks::bytes_for(self.blocks)
    }
}
