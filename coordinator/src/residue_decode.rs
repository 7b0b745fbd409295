//! Every exact value of a zero-aware table stored in `mod3` or `1-bit` entries, by layers.
//!
//! In a zero-aware table every move of a pattern tile changes the value by exactly one, so a
//! neighbour of a state of value `d` has `d - 1` or `d + 1`, and the stored residue tells which
//! (`d + 1` and `d - 1` differ in `d mod 3` and in bit 1). Starting from the goal (value 0),
//! layer `d + 1` is every unvisited neighbour of layer `d` whose residue is that of `d + 1`.
//! In a right table that is exactly the breadth-first search, and each state is reached once;
//! a wrong residue leaves its state unvisited or visited at a wrong depth, which the Bellman
//! check of the decoded values ([`crate::bellman::check_distances`]) then finds.
//!
//! The layers walk the region index a block at a time, as the search kernel does: a block is
//! the `k!` orders of one (set of cells, region of the blank); for each move out of it the
//! child block and the order each order goes to are worked out once. Only blocks that gained
//! states in the last layer are looked at. Against a descent from each entry to the goal
//! (`Pdb::decode_all`), which unranks and ranks every neighbour of every entry, this reads
//! each neighbour's residue from a contiguous child block.
//!
//! ```
//! use tilepdb_common::table::Encoding;
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! use tilepdb_coordinator::residue_decode::decode_zero_aware;
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::ZeroAware).unwrap();
//! let values = build_table(&space, &BuildOptions::default(), &()).unwrap().values.into_bytes().unwrap();
//! // bit 1 of each value, eight entries a byte
//! let mut payload = vec![0u8; values.len().div_ceil(8)];
//! for (e, &v) in values.iter().enumerate() {
//!     payload[e / 8] |= ((v >> 1) & 1) << (e % 8);
//! }
//! assert_eq!(decode_zero_aware(&space, &payload, Encoding::OneBit).unwrap(), values);
//! ```

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "states are u64 indices into arrays that memory holds; depths stay below 255"
)]

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::region_index::{OrderMoves, rank_set};
use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, StateSpace};
use tilepdb_worker::region_expand::positions;

use crate::check::fail;
use crate::error::Result;
use crate::merge::DepthBytes;

/// The exact value of every entry of the zero-aware table of `space` whose `payload` is in
/// `encoding` (`mod3` or `1-bit`), [`crate::merge::UNREACHED`] for entries no layer reached.
/// An error when the goal's residue is not 0's, or an entry never reached stores anything
/// but 0 (what the format stores for unreached entries).
pub fn decode_zero_aware(
    space: &StateSpace,
    payload: &[u8],
    encoding: Encoding,
) -> Result<Vec<u8>> {
    if space.rule() != BlankRule::ZeroAware
        || !matches!(encoding, Encoding::Mod3 | Encoding::OneBit)
    {
        return Err(fail(
            space,
            format!(
                "a layer decode reads zero-aware tables in mod3 or 1-bit entries, not {} in {encoding}",
                space.rule()
            ),
        ));
    }
    let entries = space.entries();
    if encoding.payload_len(entries) != payload.len() as u64 {
        return Err(fail(
            space,
            format!(
                "a payload of {} bytes for {entries} entries in {encoding}",
                payload.len()
            ),
        ));
    }
    let index = space.region_index()?;
    let moves = OrderMoves::new(index.k());
    let board = space.board();
    let all = board.all_cells();
    let f = index.orders();
    let code_of = |depth: u32| match encoding {
        Encoding::OneBit => ((depth >> 1) & 1) as u8,
        _ => (depth % 3) as u8,
    };
    let goal = index.state_index(space.goal_cells(), space.goal().cell_of(0, board.cells()));
    if encoding.stored(payload, goal) != code_of(0) {
        return Err(fail(
            space,
            format!(
                "the goal entry {goal} stores {}, not the code of 0",
                encoding.stored(payload, goal)
            ),
        ));
    }
    let depths = DepthBytes::new(entries);
    depths.record_first(goal, 0);
    let blocks = index.region_count() as usize;
    let mut active: Vec<AtomicBool> = (0..blocks).map(|_| AtomicBool::new(false)).collect();
    active[(goal / f) as usize].store(true, Relaxed);
    let sets = index.sets();
    let chunk = (sets / 512).max(1);
    let chunks: Vec<Range<u64>> = (0..sets.div_ceil(chunk))
        .map(|i| i * chunk..((i + 1) * chunk).min(sets))
        .collect();
    for depth in 0u32.. {
        if depth >= u32::from(crate::merge::UNREACHED) - 1 {
            return Err(fail(space, format!("the layers go on past depth {depth}")));
        }
        let next: Vec<AtomicBool> = (0..blocks).map(|_| AtomicBool::new(false)).collect();
        let added = AtomicU64::new(0);
        let (here, want) = (depth as u8 + 1, code_of(depth + 1));
        chunks.par_iter().for_each(|sets| {
            let mut current: Vec<u64> = Vec::with_capacity(f as usize);
            let mut layer_added = 0u64;
            for c in sets.clone() {
                let set = index.set_mask(c);
                let free = all & !set;
                let first = index.first_block(c);
                for (r, &region) in index.regions_of(c).iter().enumerate() {
                    let block = first + r as u64;
                    if !active[block as usize].load(Relaxed) {
                        continue;
                    }
                    current.clear();
                    current.extend((0..f).filter(|&o| depths.get(block * f + o) == here));
                    if current.is_empty() {
                        continue;
                    }
                    let mut movers = board.dilate(region) & set;
                    while movers != 0 {
                        let from = movers.trailing_zeros() as usize;
                        movers &= movers - 1;
                        let mut targets = board.neighbours(from) & region;
                        while targets != 0 {
                            let to = targets.trailing_zeros() as usize;
                            targets &= targets - 1;
                            let child_set = set ^ (1 << from) ^ (1 << to);
                            let child_free = free ^ (1 << from) ^ (1 << to);
                            let child_region = board.region(from, child_free);
                            let child_c = rank_set(child_set);
                            let Some(r2) = index
                                .regions_of(child_c)
                                .iter()
                                .position(|&m| m == child_region)
                            else {
                                continue;
                            };
                            let child_block = index.first_block(child_c) + r2 as u64;
                            let (pa, pb) = positions(set, child_set, from, to);
                            let mut gained = false;
                            for &o in &current {
                                let child = child_block * f + moves.moved(pa, pb, o);
                                if depths.get(child) == 0 && encoding.stored(payload, child) == want
                                {
                                    depths.record_first(child, depth + 1);
                                    gained = true;
                                    layer_added += 1;
                                }
                            }
                            if gained {
                                next[child_block as usize].store(true, Relaxed);
                            }
                        }
                    }
                }
            }
            added.fetch_add(layer_added, Relaxed);
        });
        if added.load(Relaxed) == 0 {
            break;
        }
        active = next;
    }
    let values = depths.into_values();
    if let Some(e) = (0..entries).into_par_iter().find_first(|&e| {
        values[e as usize] == crate::merge::UNREACHED && encoding.stored(payload, e) != 0
    }) {
        return Err(fail(
            space,
            format!(
                "entry {e} is reached by no layer but stores {}, not 0",
                encoding.stored(payload, e)
            ),
        ));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{BuildOptions, build_table};
    use tilepdb_common::table::write::EncodedTable;
    use tilepdb_common::{Board, Goal, Pattern};

    #[test]
    fn decodes_what_the_search_found() {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            for (board, tiles) in [
                ("3x3", &[1u8, 2, 3][..]),
                ("3x4", &[1, 5, 6, 2]),
                ("4x4", &[1, 2, 5]),
                ("4x4", &[1, 2, 3, 4, 5]),
                ("4x4", &[1, 2, 3, 4, 5, 6]),
                ("3x3", &[1, 2, 3, 4, 5, 6, 7, 8]),
            ] {
                let board: Board = board.parse().unwrap();
                let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
                let space = StateSpace::new(board, goal, pattern, BlankRule::ZeroAware).unwrap();
                let values = build_table(&space, &BuildOptions::default(), &())
                    .unwrap()
                    .values
                    .into_bytes()
                    .unwrap();
                for encoding in [Encoding::OneBit, Encoding::Mod3] {
                    let full = space.k() + 1 == board.cells();
                    if full && encoding == Encoding::OneBit {
                        continue; // one bit cannot mark the unreached half
                    }
                    let table = EncodedTable::new(&space, encoding, &values).unwrap();
                    let payload = table.payload();
                    let decoded = decode_zero_aware(&space, payload, encoding).unwrap();
                    assert_eq!(decoded, values, "{board} {tiles:?} {goal:?} {encoding}");
                }
            }
        }
    }
}
