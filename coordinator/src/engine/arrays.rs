//! The arrays of one table's search: the two-bit state array and the depth bytes.

use tilepdb_common::{StateCodes, StateSpace};
use tilepdb_worker::ReachedSink;

use crate::merge::{DepthBytes, LayerMerge};

/// The state array and depth bytes of one table (on the heap, or memory-mapped files of the
/// distributed job's data directory).
pub struct TableArrays {
    /// Two bits per state: unseen, current or next layer, done.
    pub codes: StateCodes,
    /// The depth of every entry, as `depth + 1` (0: not reached yet).
    pub depths: DepthBytes,
}

impl TableArrays {
    /// Arrays on the heap for `space`, every state unseen.
    pub fn on_heap(space: &StateSpace) -> TableArrays {
        TableArrays {
            codes: StateCodes::new(space.states()),
            depths: DepthBytes::new(space.entries()),
        }
    }

    /// Marks the goal of `space` as the layer of depth 0.
    pub fn mark_goal(&self, space: &StateSpace) {
        LayerMerge::new(&self.codes, &self.depths, space.rule(), space.slots(), 0)
            .reached(space.goal_state());
    }

    /// Bytes of memory both arrays hold.
    pub fn bytes(&self) -> u64 {
        self.codes.bytes() + self.depths.len()
    }
}
