//! The arrays of one table's search: the two-bit state array and the depth store, and the
//! merge rule that joins a reached state to the next layer.
//!
//! When the depth store keeps a byte per state (a table written from exact values, of any
//! rule but `minimized`, whose store is per placement), the single-machine search keeps no
//! two-bit array: the store is its state ([`TableArrays::store_is_state`]), 0 unseen and
//! `depth + 1` the layer of `depth`, as the ZIB code marks its table.

use tilepdb_common::table::DepthCode;
use tilepdb_common::{BlankRule, StateCodes, StateSpace};

use super::kernel::goal_state_and_entry;
use super::units::StateIndex;
use tilepdb_common::depth_store::DepthBytes;

/// The state array and depth store of one table (on the heap, or memory-mapped files of the
/// distributed job's data directory).
pub struct TableArrays {
    /// Two bits per state: unseen, current or next layer, done. Empty when the depth store is
    /// the search's state ([`TableArrays::store_is_state`]).
    pub codes: StateCodes,
    /// The depth of every entry, as `depth + 1` (0: not reached yet), or what the table's
    /// encoding keeps of it ([`DepthBytes::packed`]).
    pub depths: DepthBytes,
    /// Whether the depth store is the search's state and [`TableArrays::codes`] is empty: a
    /// byte per state, a layer's states those of its depth.
    pub store_is_state: bool,
}

impl TableArrays {
    /// Arrays on the heap for `space` searched on `index`, every state unseen.
    pub fn on_heap(space: &StateSpace, index: &StateIndex) -> TableArrays {
        TableArrays::on_heap_keeping(space, index, DepthCode::Byte)
    }

    /// Arrays on the heap whose depth store keeps `code` of each depth.
    pub fn on_heap_keeping(space: &StateSpace, index: &StateIndex, code: DepthCode) -> TableArrays {
        TableArrays {
            codes: StateCodes::new(index.states(space)),
            depths: DepthBytes::packed(index.depth_entries(space), code),
            store_is_state: false,
        }
    }

    /// Arrays on the heap whose depth store keeps `code`, with no two-bit array when that store
    /// can be the search's state ([`store_can_be_state`]).
    pub fn leanest_on_heap(space: &StateSpace, index: &StateIndex, code: DepthCode) -> TableArrays {
        if !store_can_be_state(space, code) {
            return TableArrays::on_heap_keeping(space, index, code);
        }
        TableArrays {
            codes: StateCodes::new(0),
            depths: DepthBytes::packed(index.depth_entries(space), code),
            store_is_state: true,
        }
    }

    /// The merge rule, `next = reached AND unseen`: marks `state` with the code of the layer
    /// `depth` if it was unseen; whether it was. Idempotent, so a duplicate or late result
    /// changes nothing. The depth is recorded by [`TableArrays::merge`] or, for states marked
    /// from a worker's result, by the layer's finishing pass. Two-bit arrays only.
    #[inline]
    pub fn mark_next(&self, state: u64, depth: u32) -> bool {
        debug_assert!(!self.store_is_state, "marks need the two-bit array");
        self.codes.try_mark(state, StateCodes::code_of_depth(depth))
    }

    /// [`TableArrays::mark_next`], and the depth of a newly marked state recorded in its
    /// depth-store `entry` (its placement index for minimized tables, itself otherwise); when
    /// the store is the state, the depth recorded if the entry had none.
    #[inline]
    pub fn merge(&self, state: u64, entry: u64, depth: u32) {
        // With the store as the state, recording the first depth is the whole merge.
        if self.store_is_state || self.mark_next(state, depth) {
            self.depths.record_first(entry, depth);
        }
    }

    /// [`TableArrays::merge`] of the states `state_base + o` and their entries `entry_base + o`
    /// for each order `o` of `orders`: one block's successors under one move, taken by the
    /// kernel's sink as a run.
    #[inline]
    pub fn merge_orders(
        &self,
        state_base: u64,
        entry_base: u64,
        orders: impl Iterator<Item = u64>,
        depth: u32,
    ) {
        for o in orders {
            self.merge(state_base + o, entry_base + o, depth);
        }
    }

    /// Marks the goal of `space` on `index` as the layer of depth 0.
    pub fn mark_goal(&self, space: &StateSpace, index: &StateIndex) {
        let (state, entry) = goal_state_and_entry(space, index.regions());
        self.merge(state, entry, 0);
    }

    /// Bytes of memory both arrays hold.
    pub fn bytes(&self) -> u64 {
        self.codes.bytes() + self.depths.memory_bytes()
    }
}

/// Whether a depth store keeping `code` for `space` can be the search's state: a byte per
/// state (every rule's store but `minimized`'s, which keeps a byte per placement).
pub fn store_can_be_state(space: &StateSpace, code: DepthCode) -> bool {
    code == DepthCode::Byte && space.rule() != BlankRule::Minimized
}
