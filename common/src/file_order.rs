//! The order of a table file's entries, and where the search keeps each entry's value.
//!
//! The search keeps depths on the region index: one per state `block * k! + order`, or one
//! per placement index `c * k! + order` for `minimized` and `ignored` tables (its *depth
//! entries*). A file lists its entries in placement-rank order (`rank * (n - k) + slot` for
//! `aware`), except a `zero-aware` file, which is in the index's own order.
//! [`for_each_depth_entry`] walks a range of a file's entries and names the depth entry of
//! each: the one map that the single-machine build, the shards and the writer of a sharded
//! build share. It walks the ranks incrementally
//! ([`RegionIndex::for_each_set_and_order`]): no full unrank per placement.
//!
//! ```
//! use tilepdb_common::file_order::for_each_depth_entry;
//! use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};
//! let p = Partition::named("8:4-4").unwrap();
//! let space = StateSpace::new(p.board(), Goal::BlankFirst, p.patterns()[0].clone(),
//!                             BlankRule::ZeroAware).unwrap();
//! let index = space.region_index().unwrap();
//! let mut entries = vec![];
//! for_each_depth_entry(&space, &index, 3..6, |e| entries.push(e));
//! assert_eq!(entries, [3, 4, 5]); // a zero-aware file is in the index's order
//! ```

use std::ops::Range;

use crate::region_index::RegionIndex;
use crate::space::{BlankRule, StateSpace};

/// Calls `f` with the depth entry of every file entry of `entries`, in file order.
pub fn for_each_depth_entry(
    space: &StateSpace,
    index: &RegionIndex,
    entries: Range<u64>,
    mut f: impl FnMut(u64),
) {
    if entries.is_empty() {
        return;
    }
    if space.rule() == BlankRule::ZeroAware {
        entries.for_each(f);
        return;
    }
    let ranker = space.ranker();
    let orders = index.orders();
    let per_rank = space.entries() / space.placements();
    let ranks = entries.start / per_rank..(entries.end - 1) / per_rank + 1;
    if space.rule() != BlankRule::Aware {
        // One entry per placement: the file's entries are its ranks.
        index.for_each_set_and_order(ranker, ranks, |_, c, _, order| f(c * orders + order));
        return;
    }
    let all = space.board().all_cells();
    index.for_each_set_and_order(ranker, ranks, |rank, c, set, order| {
        let base = index.first_block(c);
        let regions = index.regions_of(c);
        let mut free = all & !set;
        for slot in 0..per_rank {
            let cell = free.trailing_zeros();
            free &= free - 1;
            if !entries.contains(&(rank * per_rank + slot)) {
                continue;
            }
            let r = regions
                .iter()
                .position(|&m| m & (1 << cell) != 0)
                .expect("a free cell is in a region") as u64;
            f((base + r) * orders + order);
        }
    });
}
