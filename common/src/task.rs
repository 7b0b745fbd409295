//! The unit of work of a build: expand the current-layer states of one rank range.
//!
//! ```
//! use tilepdb_common::cut_layer;
//! // 72 placements of 2 tiles on 3x3 (blocks of 8 ranks) cut into tasks of at most 16 ranks.
//! let tasks = cut_layer(72, 8, 16);
//! assert_eq!(tasks.len(), 5);
//! assert_eq!(tasks[0], 0..16);
//! assert_eq!(tasks[4], 64..72);
//! ```

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// One task: the current-layer states of `ranks` at `depth`, to be expanded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Which table of the job (index into the partition's patterns).
    pub table: u32,
    /// Depth of the layer being expanded.
    pub depth: u32,
    /// Ranks (placements) whose states this task expands.
    pub ranks: Range<u64>,
}

/// Cuts `[0, placements)` into rank ranges of at most `max_ranks` ranks that never straddle
/// two blocks of `block_len` ranks unless a whole number of blocks fits (so that the moves of
/// every tile but the first stay inside the task's own ranks).
pub fn cut_layer(placements: u64, block_len: u64, max_ranks: u64) -> Vec<Range<u64>> {
    let max_ranks = max_ranks.max(1);
    let step = if max_ranks >= block_len {
        (max_ranks / block_len) * block_len
    } else {
        // Whole divisions of a block: the largest power-of-two fraction that fits.
        let mut parts = 2;
        while block_len.div_ceil(parts) > max_ranks {
            parts *= 2;
        }
        block_len.div_ceil(parts)
    };
    let mut tasks = Vec::new();
    let mut start = 0;
    while start < placements {
        let block_end = if step % block_len == 0 {
            placements
        } else {
            ((start / block_len) + 1) * block_len
        };
        let end = (start + step).min(block_end).min(placements);
        tasks.push(start..end);
        start = end;
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_cover_every_rank_once_and_respect_blocks() {
        for placements in [72u64, 1000, 57_657_600] {
            for block in [8u64, 100, 3_603_600] {
                if block > placements || placements % block != 0 {
                    continue;
                }
                for max in [1u64, 7, 16, 100, 1 << 20, u64::MAX / 2] {
                    let tasks = cut_layer(placements, block, max);
                    let mut next = 0;
                    for t in &tasks {
                        assert_eq!(t.start, next);
                        assert!(t.end > t.start);
                        assert!(t.end - t.start <= max.max(1));
                        if t.end - t.start < block {
                            assert_eq!(t.start / block, (t.end - 1) / block);
                        }
                        next = t.end;
                    }
                    assert_eq!(next, placements);
                }
            }
        }
    }
}
