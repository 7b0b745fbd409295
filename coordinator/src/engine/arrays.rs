//! The arrays of one table's search: the two-bit state array and the depth store.

use tilepdb_common::table::DepthCode;
use tilepdb_common::{StateCodes, StateSpace};
use tilepdb_worker::ReachedSink;

use super::units::StateIndex;
use crate::merge::{DepthBytes, LayerMerge};

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

    /// Marks the goal of `space` on `index` as the layer of depth 0.
    pub fn mark_goal(&self, space: &StateSpace, index: &StateIndex) {
        match index {
            StateIndex::Cell => {
                LayerMerge::new(&self.codes, &self.depths, space.rule(), space.slots(), 0)
                    .reached(space.goal_state());
            }
            StateIndex::Region(index) => {
                let (state, entry) = crate::region_build::goal_state_and_entry(space, index);
                if self.codes.try_mark(state, StateCodes::code_of_depth(0)) {
                    self.depths.record_first(entry, 0);
                }
            }
        }
    }

    /// Bytes of memory both arrays hold.
    pub fn bytes(&self) -> u64 {
        self.codes.bytes() + self.depths.memory_bytes()
    }
}
