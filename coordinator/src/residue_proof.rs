//! The proof of a zero-aware table stored in `mod3` or `1-bit` entries: a breadth-first
//! search from the goal that checks every state it meets against the table.
//!
//! In a zero-aware table every move of a pattern tile changes the value by exactly one, so a
//! neighbour of a state of value `d` has `d - 1` or `d + 1`, and the stored residue tells which
//! (`d + 1` and `d - 1` differ in `d mod 3` and in bit 1). The search starts at the goal, whose
//! entry must store the code of 0; every unseen neighbour of layer `d` must store the code of
//! `d + 1`, and joins layer `d + 1`. When it ends, every entry it met stores its exact
//! distance's code, and the entries it never met are the unreachable ones (a pattern of every
//! tile: the other permutation parity), which must store 0. That is the whole Bellman check,
//! without the values: a table passes exactly when it is the distance function's codes. (A
//! neighbour met earlier at `d - 2` or lower cannot be: when that layer was expanded the state
//! was unseen and stored the code of `d`, not of the layer after it.)
//!
//! The layers walk the region index a block at a time, as the search kernel does: a block is
//! the `k!` orders of one (set of cells, region of the blank); for each move out of it the
//! child block and the order each order goes to are worked out once, and only blocks that
//! gained states in the last layer are looked at. The search keeps two bits per state (unseen,
//! the two layers in flight, done), like the build's, and reads the table's residues from its
//! payload; it shares the region index with the build, nothing of its search or merge.
//!
//! ```
//! use tilepdb_common::table::Encoding;
//! use tilepdb_common::table::write::EncodedTable;
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! use tilepdb_coordinator::residue_proof::prove_zero_aware;
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::ZeroAware).unwrap();
//! let values = build_table(&space, &BuildOptions::default(), &()).unwrap().values.into_bytes().unwrap();
//! let table = EncodedTable::new(&space, Encoding::OneBit, &values).unwrap();
//! let layers = prove_zero_aware(&space, table.payload(), Encoding::OneBit).unwrap();
//! assert_eq!(layers.histogram, table.header.histogram);
//! ```

#![allow(
    clippy::cast_possible_truncation,
    reason = "states are u64 indices into arrays that memory holds; depths stay below 255"
)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::region_index::OrderMoves;
use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, StateCodes, StateSpace};

use crate::bellman::{BlockMove, for_each_block_move};
use crate::check::{fail, set_chunks};
use crate::error::Result;

/// What the search of a proven table counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    /// States per depth, from the goal's 0.
    pub histogram: Vec<u64>,
    /// Entries the search never met (unreachable).
    pub unreached: u64,
}

/// Proves that `payload`, in `encoding` (`mod3` or `1-bit`), stores the exact distance of
/// every entry of the zero-aware table of `space` (see the module's documentation); the
/// states per depth. An error names the first entry found wrong.
pub fn prove_zero_aware(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    if space.rule() != BlankRule::ZeroAware
        || !matches!(encoding, Encoding::Mod3 | Encoding::OneBit)
    {
        return Err(fail(
            space,
            format!(
                "the layer proof reads zero-aware tables in mod3 or 1-bit entries, not {} in {encoding}",
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
    let codes = StateCodes::new(entries);
    codes.try_mark(goal, StateCodes::code_of_depth(0));
    let blocks = index.region_count() as usize;
    let flags = || {
        (0..blocks)
            .map(|_| AtomicBool::new(false))
            .collect::<Vec<_>>()
    };
    let mut active = flags();
    active[(goal / f) as usize].store(true, Relaxed);
    let sets = index.sets();
    let chunks = set_chunks(sets);
    let mut histogram = vec![1u64];
    for depth in 0u32.. {
        if depth >= u32::from(crate::merge::UNREACHED) - 1 {
            return Err(fail(space, format!("the layers go on past depth {depth}")));
        }
        let next = flags();
        let added = AtomicU64::new(0);
        let (here, there, want) = (
            StateCodes::code_of_depth(depth),
            StateCodes::code_of_depth(depth + 1),
            code_of(depth + 1),
        );
        chunks.par_iter().try_for_each(|sets| {
            let mut current: Vec<u64> = Vec::with_capacity(f as usize);
            let mut layer_added = 0u64;
            for c in sets.clone() {
                let first = index.first_block(c);
                for (r, &region) in index.regions_of(c).iter().enumerate() {
                    let block = first + r as u64;
                    if !active[block as usize].load(Relaxed) {
                        continue;
                    }
                    current.clear();
                    codes.for_each_with_code(block * f..(block + 1) * f, here, |s| {
                        current.push(s - block * f);
                    });
                    if current.is_empty() {
                        continue;
                    }
                    for_each_block_move(space, &index, c, region, |m| {
                        let BlockMove { block: child_block, pa, pb } = m;
                    let row = moves.row(pa, pb);
                    let mut gained = false;
                    for &o in &current {
                        let moved = match row {
                            Some(row) => u64::from(row[o as usize]),
                            None => moves.moved(pa, pb, o),
                        };
                        let child = child_block * f + moved;
                        if codes.get(child) != 0 {
                            continue;
                        }
                        let stored = encoding.stored(payload, child);
                        if stored != want {
                            let (cells, _) = index.decode(child);
                            return Err(fail(
                                space,
                                format!(
                                    "entry {child} (placement {:?}) is at distance {} but stores {stored}, not {want}",
                                    &cells[..index.k()],
                                    depth + 1
                                ),
                            ));
                        }
                        if codes.try_mark(child, there) {
                            layer_added += 1;
                        }
                        gained = true;
                    }
                    if gained {
                        next[child_block as usize].store(true, Relaxed);
                    }
                        Ok(())
                    })?;
                }
            }
            added.fetch_add(layer_added, Relaxed);
            Ok::<(), crate::error::Error>(())
        })?;
        // The layer is expanded: its states are done.
        chunks.par_iter().for_each(|sets| {
            for block in index.first_block(sets.start)..index.first_block(sets.end) {
                if active[block as usize].load(Relaxed) {
                    codes.retire(block * f..(block + 1) * f, here);
                }
            }
        });
        let added = added.load(Relaxed);
        if added == 0 {
            break;
        }
        histogram.push(added);
        active = next;
    }
    let met: u64 = histogram.iter().sum();
    let unreached = entries - met;
    if unreached != 0
        && let Some(e) = (0..entries)
            .into_par_iter()
            .find_first(|&e| codes.get(e) == 0 && encoding.stored(payload, e) != 0)
    {
        return Err(fail(
            space,
            format!(
                "entry {e} is unreachable but stores {}, not 0",
                encoding.stored(payload, e)
            ),
        ));
    }
    Ok(Layers {
        histogram,
        unreached,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{BuildOptions, build_table};
    use tilepdb_common::table::write::EncodedTable;
    use tilepdb_common::{Board, Goal, Pattern};

    fn zero_aware(board: &str, tiles: &[u8], goal: Goal) -> (StateSpace, Vec<u8>) {
        let board: Board = board.parse().unwrap();
        let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
        let space = StateSpace::new(board, goal, pattern, BlankRule::ZeroAware).unwrap();
        let values = build_table(&space, &BuildOptions::default(), &())
            .unwrap()
            .values
            .into_bytes()
            .unwrap();
        (space, values)
    }

    #[test]
    fn built_tables_pass_with_their_histogram() {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            for (board, tiles) in [
                ("3x3", &[1u8, 2, 3][..]),
                ("3x4", &[1, 5, 6, 2]),
                ("4x4", &[1, 2, 5]),
                ("4x4", &[1, 2, 3, 4, 5]),
                ("3x3", &[1, 2, 3, 4, 5, 6, 7, 8]),
            ] {
                let (space, values) = zero_aware(board, tiles, goal);
                for encoding in [Encoding::OneBit, Encoding::Mod3] {
                    let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
                        // 1-bit cannot mark the unreached half of a pattern of every tile.
                        assert_eq!(space.k() + 1, space.board().cells());
                        continue;
                    };
                    let layers = prove_zero_aware(&space, table.payload(), encoding).unwrap();
                    assert_eq!(
                        layers.histogram, table.header.histogram,
                        "{board} {tiles:?}"
                    );
                    assert_eq!(
                        layers.unreached, table.header.unreached,
                        "{board} {tiles:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_single_wrong_entry_is_found() {
        // Each entry given another residue (one more for mod3, two more for 1-bit: the other
        // bit 1; parity and the Manhattan bound kept): the proof fails.
        for (board, tiles) in [("3x3", &[1u8, 2, 3][..]), ("3x4", &[1, 5, 6])] {
            let (space, values) = zero_aware(board, tiles, Goal::BlankFirst);
            for (encoding, step) in [(Encoding::OneBit, 2u8), (Encoding::Mod3, 1)] {
                for e in 0..values.len() {
                    let mut bad = values.clone();
                    bad[e] += step;
                    let table = EncodedTable::new(&space, encoding, &bad).unwrap();
                    assert!(
                        prove_zero_aware(&space, table.payload(), encoding).is_err(),
                        "{board} {tiles:?} {encoding} entry {e}: {} -> {} passed",
                        values[e],
                        bad[e]
                    );
                }
            }
        }
    }
}
