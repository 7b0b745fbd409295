//! The arrays of one table's search: the two-bit state array and the depth store, and the
//! merge rule that joins a reached state to the next layer.

use tilepdb_common::table::DepthCode;
use tilepdb_common::{StateCodes, StateSpace};

use super::kernel::goal_state_and_entry;
use super::units::StateIndex;
use tilepdb_common::depth_store::DepthBytes;

/// The state array and depth store of one table (on the heap, or memory-mapped files of the
/// distributed job's data directory).
pub struct TableArrays {
    /// Two bits per state: unseen, current or next layer, done.
    pub codes: StateCodes,
    /// The depth of every entry, as `depth + 1` (0: not reached yet), or what the table's
    /// encoding keeps of it ([`DepthBytes::packed`]).
    pub depths: DepthBytes,
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
        }
    }

    /// The merge rule, `next = reached AND unseen`: marks `state` with the code of the layer
    /// `depth` if it was unseen; whether it was. Idempotent, so a duplicate or late result
    /// changes nothing. The depth is recorded by [`TableArrays::merge`] or, for states marked
    /// from a worker's result, by the layer's finishing pass.
    #[inline]
    pub fn mark_next(&self, state: u64, depth: u32) -> bool {
        self.codes.try_mark(state, StateCodes::code_of_depth(depth))
    }

    /// [`TableArrays::mark_next`], and the depth of a newly marked state recorded in its
    /// depth-store `entry` (its placement index for minimized tables, itself otherwise).
    #[inline]
    pub fn merge(&self, state: u64, entry: u64, depth: u32) {
        if self.mark_next(state, depth) {
            self.depths.record_first(entry, depth);
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
