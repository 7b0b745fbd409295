//! The proofs by one breadth-first search from the goal over the zero-aware states (the
//! placement and the region of the blank; moves inside a region are free): the search meets
//! every state at its exact distance, and each table it proves is checked against the
//! distances it meets.
//!
//! * [`prove_zero_aware`]: a zero-aware table in any encoding but bytes (whose proof is the
//!   Bellman check, [`crate::bellman`]). In `mod3` and `1-bit` entries every state the search
//!   meets must store its distance's code; in nibbles the distances met are encoded again and
//!   must give the payload.
//! * [`prove_aware`]: an aware table, whose entries are the zero-aware distances of each free
//!   cell's region; for nibbles, which keep too little for the Bellman check.
//! * [`prove_ignored`]: a table that ignores the blank (the search is then over the
//!   placements alone); for min-nibble, which keeps too little for the Bellman check.
//! * [`prove_minimized`]: a minimized table in any encoding. Its entry is the least distance
//!   over the placement's regions, which is the depth at which the search first meets the
//!   placement in any region; the least depths are encoded again and must give the payload.
//!
//! Entries the search never meets are the unreachable ones (a pattern of every tile: the other
//! permutation parity). A table passes exactly when it is the encoding of the distances, so a
//! forged entry is found even when the file's checksums were recomputed to match.
//!
//! The layers walk the region index a block at a time, as the search kernel does: a block is
//! the `k!` orders of one (set of cells, region of the blank); for each move out of it the
//! child block and the order each order goes to are worked out once, and only blocks that
//! gained states in the last layer are looked at. The search keeps two bits per state (unseen,
//! the two layers in flight, done), like the build's; it shares the region index with the
//! build, nothing of its search or merge.
//!
//! ```
//! use tilepdb_common::table::Encoding;
//! use tilepdb_common::table::write::EncodedTable;
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! use tilepdb_coordinator::layer_proof::prove_zero_aware;
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

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::atomic_array::AtomicArray;
use tilepdb_common::region_index::{OrderMoves, RegionIndex, rank_set};
use tilepdb_common::table::Encoding;
use tilepdb_common::table::write::EncodedTable;
use tilepdb_common::{BlankRule, MAX_CELLS, StateCodes, StateSpace};
use tilepdb_worker::region_expand::positions;

use crate::bellman::{BlockMove, for_each_block_move};
use crate::check::{fail, set_chunks};
use crate::error::{Error, Result};
use crate::merge::UNREACHED;

/// What the search of a proven table counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    /// Entries per distance, from the goal's 0.
    pub histogram: Vec<u64>,
    /// Entries the search never met (unreachable).
    pub unreached: u64,
}

/// A state the search meets: its index among the zero-aware states, and its placement as the
/// rank of its set of cells and the rank of the order of the tiles on them.
#[derive(Clone, Copy)]
struct Met {
    state: u64,
    set: u64,
    order: u64,
}

/// Proves that `payload`, in `encoding`, is the zero-aware table of `space`: every entry the
/// exact distance's code (see the module's documentation); the entries per distance. An error
/// names the first entry found wrong.
pub fn prove_zero_aware(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    if space.rule() != BlankRule::ZeroAware {
        return Err(fail(
            space,
            format!(
                "the zero-aware layer proof was given a {} table",
                space.rule()
            ),
        ));
    }
    check_payload_len(space, payload, encoding)?;
    let index = space.region_index()?;
    let entries = space.entries();
    if let Some(code_of) = code_per_entry(encoding) {
        let (histogram, codes) = search(space, &index, |met, depth| {
            let (stored, want) = (encoding.stored(payload, met.state), code_of(depth));
            if stored == want {
                return Ok(());
            }
            let cells = index.placement_cells(met.set, met.order);
            Err(fail(
                space,
                format!(
                    "entry {} (placement {:?}) is at distance {depth} but stores {stored}, not {want}",
                    met.state,
                    &cells[..index.k()]
                ),
            ))
        })?;
        let unmet = if encoding == Encoding::Byte {
            UNREACHED
        } else {
            0
        };
        let met: u64 = histogram.iter().sum();
        if met != entries
            && let Some(e) = (0..entries)
                .into_par_iter()
                .find_first(|&e| codes.get(e) == 0 && encoding.stored(payload, e) != unmet)
        {
            return Err(fail(
                space,
                format!(
                    "entry {e} is unreachable but stores {}, not {unmet}",
                    encoding.stored(payload, e)
                ),
            ));
        }
        return Ok(Layers {
            histogram,
            unreached: entries - met,
        });
    }
    // Nibbles: the distances, encoded again.
    let (histogram, values) = distances(space, &index)?;
    let met: u64 = histogram.iter().sum();
    same_payload(space, encoding, &values, payload)?;
    Ok(Layers {
        histogram,
        unreached: entries - met,
    })
}

/// Proves that `payload`, in `encoding`, is the aware table of `space`: every entry the
/// exact distance's encoding, each free cell of a region with the region's zero-aware
/// distance; the entries per distance. Meant for nibbles, whose entries keep too little for
/// the Bellman check; an error names the first entry found wrong.
pub fn prove_aware(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    if space.rule() != BlankRule::Aware {
        return Err(fail(
            space,
            format!("the aware layer proof was given a {} table", space.rule()),
        ));
    }
    check_payload_len(space, payload, encoding)?;
    let zero_aware = StateSpace::new(
        space.board(),
        space.goal(),
        space.pattern().clone(),
        BlankRule::ZeroAware,
    )?;
    let index = zero_aware.region_index()?;
    let (_, distances) = distances(&zero_aware, &index)?;
    let values = index.aware_from_zero_aware(space.ranker(), &distances);
    same_payload(space, encoding, &values, payload)?;
    let (histogram, unreached) = crate::build::histogram(&values);
    Ok(Layers {
        histogram,
        unreached,
    })
}

/// Proves that `payload`, in `encoding`, is the minimized table of `space`: every entry the
/// least distance over its placement's regions (see the module's documentation); the entries
/// per value. An error names the first entry found wrong.
pub fn prove_minimized(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    if space.rule() != BlankRule::Minimized {
        return Err(fail(
            space,
            format!(
                "the minimized layer proof was given a {} table",
                space.rule()
            ),
        ));
    }
    check_payload_len(space, payload, encoding)?;
    let index = space.region_index()?;
    let f = index.orders();
    // The least distance per placement by (set, order): 0 unmet, else the distance plus one.
    // The search meets states in order of distance, so the first store is the least.
    let least = AtomicArray::<AtomicU8>::zeroed(space.placements() as usize);
    search(space, &index, |met, depth| {
        let slot = &least.as_slice()[(met.set * f + met.order) as usize];
        if slot.load(Relaxed) == 0 {
            slot.store(depth as u8 + 1, Relaxed);
        }
        Ok(())
    })?;
    let least = plain_values(least);
    let ranks = OrderRanks::new(space, &index);
    if encoding == Encoding::Byte {
        // Compared where they are, in set order; the entries of a set are scattered over the
        // payload, so each is asked for a few orders ahead of its compare.
        const AHEAD: usize = 16;
        let wrong = set_chunks(index.sets())
            .into_par_iter()
            .find_map_first(|sets| {
                let mut set_ranks = Vec::with_capacity(f as usize);
                sets.into_iter().find_map(|c| {
                    let cells = set_cells(index.set_mask(c));
                    set_ranks.clear();
                    set_ranks.extend((0..f).map(|o| ranks.rank(&cells, o)));
                    set_ranks.iter().enumerate().find_map(|(o, &rank)| {
                        if let Some(&next) = set_ranks.get(o + AHEAD) {
                            Encoding::Byte.prefetch(payload, next);
                        }
                        let (h, stored) =
                            (least[c as usize * f as usize + o], payload[rank as usize]);
                        (h != stored).then_some((rank, h, stored))
                    })
                })
            });
        if let Some((rank, h, stored)) = wrong {
            return Err(fail(
                space,
                format!(
                    "entry {rank} stores {stored}, but its least distance over the regions is {h}"
                ),
            ));
        }
    } else {
        // Encoded again in the table's order (placement ranks).
        same_payload(
            space,
            encoding,
            &in_rank_order(&index, &ranks, &least),
            payload,
        )?;
    }
    let (histogram, unreached) = crate::build::histogram(&least);
    Ok(Layers {
        histogram,
        unreached,
    })
}

/// Proves that `payload`, in `encoding`, is the table of `space`, which ignores the blank:
/// the search meets every placement at its distance, and the distances encoded again must give
/// the payload. Meant for min-nibble, whose groups keep too little for the Bellman check; an
/// error names the first entry found wrong.
pub fn prove_ignored(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    if space.rule() != BlankRule::Ignored {
        return Err(fail(
            space,
            format!("the ignored layer proof was given a {} table", space.rule()),
        ));
    }
    check_payload_len(space, payload, encoding)?;
    let index = space.region_index()?;
    let (_, by_set) = distances(space, &index)?;
    let values = in_rank_order(&index, &OrderRanks::new(space, &index), &by_set);
    drop(by_set);
    same_payload(space, encoding, &values, payload)?;
    let (histogram, unreached) = crate::build::histogram(&values);
    Ok(Layers {
        histogram,
        unreached,
    })
}

/// Values by placement index (`set * k! + order`) put in placement-rank order.
fn in_rank_order(index: &RegionIndex, ranks: &OrderRanks, by_set: &[u8]) -> Vec<u8> {
    let f = index.orders();
    // One byte per placement: 0 unset, else the value plus one.
    let values = AtomicArray::<AtomicU8>::zeroed(by_set.len());
    set_chunks(index.sets()).into_par_iter().for_each(|sets| {
        for c in sets {
            let cells = set_cells(index.set_mask(c));
            for o in 0..f {
                let v = by_set[(c * f + o) as usize].wrapping_add(1);
                values.as_slice()[ranks.rank(&cells, o) as usize].store(v, Relaxed);
            }
        }
    });
    plain_values(values)
}

/// The cells of `set`, lowest first.
fn set_cells(mut set: u32) -> [u8; MAX_CELLS] {
    let mut cells = [0u8; MAX_CELLS];
    let mut i = 0;
    while set != 0 {
        cells[i] = set.trailing_zeros() as u8;
        set &= set - 1;
        i += 1;
    }
    cells
}

/// The placement rank of (set, order) without unranking: with the set's cells `s` (lowest
/// first) and the order's tile `t(j)` on `s[j]`, the rank
/// (`sum_i (p_i - #{j < i : p_j < p_i}) * w_i`, [`tilepdb_common::PlacementRanker::weights`])
/// is `sum_j s[j] * w_t(j)` less a part that depends on the order alone.
struct OrderRanks {
    k: usize,
    /// `k` weights per order: the weight of the tile on each cell of the set.
    weights: Vec<u64>,
    /// Per order: `sum_i #{j < i : p_j < p_i} * w_i`.
    offsets: Vec<u64>,
}

impl OrderRanks {
    fn new(space: &StateSpace, index: &RegionIndex) -> OrderRanks {
        let k = index.k();
        let w = space.ranker().weights();
        let f = index.orders() as usize;
        let (mut weights, mut offsets) = (Vec::with_capacity(f * k), Vec::with_capacity(f));
        let mut order = [0u8; MAX_CELLS];
        let mut position = [0usize; MAX_CELLS];
        for o in 0..f as u64 {
            tilepdb_common::region_index::order_unrank(k, o, &mut order[..k]);
            for (j, &tile) in order[..k].iter().enumerate() {
                weights.push(w[tile as usize]);
                position[tile as usize] = j;
            }
            let offset = (0..k)
                .map(|i| (0..i).filter(|&j| position[j] < position[i]).count() as u64 * w[i])
                .sum();
            offsets.push(offset);
        }
        OrderRanks {
            k,
            weights,
            offsets,
        }
    }

    #[inline]
    fn rank(&self, cells: &[u8; MAX_CELLS], order: u64) -> u64 {
        let o = order as usize;
        let weights = &self.weights[o * self.k..(o + 1) * self.k];
        let sum: u64 = cells
            .iter()
            .zip(weights)
            .map(|(&s, &w)| u64::from(s) * w)
            .sum();
        sum - self.offsets[o]
    }
}

/// The code a `mod3`, `1-bit` or byte entry stores for a distance; `None` for nibbles (which
/// need the Manhattan distance, and for min-nibble the group).
fn code_per_entry(encoding: Encoding) -> Option<fn(u32) -> u8> {
    match encoding {
        Encoding::Byte => Some(|depth| depth as u8),
        Encoding::Mod3 => Some(|depth| (depth % 3) as u8),
        Encoding::OneBit => Some(|depth| ((depth >> 1) & 1) as u8),
        Encoding::Nibble | Encoding::MinNibble { .. } => None,
    }
}

fn check_payload_len(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<()> {
    let entries = space.entries();
    if encoding.payload_len(entries) == payload.len() as u64 {
        return Ok(());
    }
    Err(fail(
        space,
        format!(
            "a payload of {} bytes for {entries} entries in {encoding}",
            payload.len()
        ),
    ))
}

/// The distance of every zero-aware state of `space`, or of every placement by its index
/// (`set * k! + order`) when `space` ignores the blank ([`UNREACHED`] for those never met),
/// and the states per distance.
fn distances(space: &StateSpace, index: &RegionIndex) -> Result<(Vec<u64>, Vec<u8>)> {
    // One byte per state: 0 unmet, else the distance plus one.
    let states = if space.rule() == BlankRule::Ignored {
        index.placements()
    } else {
        index.states()
    };
    let distances = AtomicArray::<AtomicU8>::zeroed(states as usize);
    let (histogram, _) = search(space, index, |met, depth| {
        distances.as_slice()[met.state as usize].store(depth as u8 + 1, Relaxed);
        Ok(())
    })?;
    Ok((histogram, plain_values(distances)))
}

/// One byte per entry from the search's bytes (0 unmet, else the distance plus one).
fn plain_values(distances: AtomicArray<AtomicU8>) -> Vec<u8> {
    let mut values = distances
        .into_vec()
        .unwrap_or_else(|a| a.as_slice().iter().map(|v| v.load(Relaxed)).collect());
    values
        .par_iter_mut()
        .for_each(|v| *v = v.checked_sub(1).unwrap_or(UNREACHED));
    values
}

/// `values` (the exact ones) encoded in `encoding` give `payload`; an error names the first
/// entry whose stored value differs.
fn same_payload(
    space: &StateSpace,
    encoding: Encoding,
    values: &[u8],
    payload: &[u8],
) -> Result<()> {
    let exact = EncodedTable::new(space, encoding, values).map_err(|e| {
        fail(
            space,
            format!("the distances cannot be encoded in {encoding}: {e}"),
        )
    })?;
    let Some(byte) = exact
        .payload()
        .par_iter()
        .zip(payload.par_iter())
        .position_first(|(a, b)| a != b)
    else {
        return Ok(());
    };
    let byte = byte as u64;
    let (exact, group) = (exact.payload(), encoding.group());
    let entry = (0..space.entries())
        .into_par_iter()
        .find_first(|&e| {
            encoding.byte_of(e) == byte && encoding.stored(payload, e) != encoding.stored(exact, e)
        })
        .unwrap_or(byte);
    Err(fail(
        space,
        format!(
            "entry {entry} stores {} where its value {} gives {}{}",
            encoding.stored(payload, entry),
            values[entry as usize],
            encoding.stored(exact, entry),
            if group > 1 {
                format!(" (the least over its group of {group})")
            } else {
                String::new()
            }
        ),
    ))
}

/// The breadth-first search over the zero-aware states of `space` from the goal (over the
/// placements alone when `space` ignores the blank): calls `visit` once for every state it
/// meets, with its distance, layer by layer; the states per distance and the codes it ends
/// with (0 for the states never met). Stops at `visit`'s first error.
fn search(
    space: &StateSpace,
    index: &RegionIndex,
    visit: impl Fn(Met, u32) -> Result<()> + Sync,
) -> Result<(Vec<u64>, StateCodes)> {
    let moves = OrderMoves::new(index.k());
    let board = space.board();
    let f = index.orders();
    let ignored = space.rule() == BlankRule::Ignored;
    // A block is the k! orders of one (set, region), or of one set when the blank is ignored
    // (its "region" is then every free cell).
    let first_block = |c: u64| if ignored { c } else { index.first_block(c) };
    let (goal_set, _, goal_order) = index.set_and_order(space.goal_cells());
    let goal = if ignored {
        goal_set * f + goal_order
    } else {
        index.state_index(space.goal_cells(), space.goal().cell_of(0, board.cells()))
    };
    let blocks = if ignored {
        index.sets()
    } else {
        index.region_count()
    };
    let codes = StateCodes::new(blocks * f);
    codes.try_mark(goal, StateCodes::code_of_depth(0));
    visit(
        Met {
            state: goal,
            set: goal_set,
            order: goal_order,
        },
        0,
    )?;
    let flags = || {
        (0..blocks)
            .map(|_| AtomicBool::new(false))
            .collect::<Vec<_>>()
    };
    let mut active = flags();
    active[(goal / f) as usize].store(true, Relaxed);
    let chunks = set_chunks(index.sets());
    let mut histogram = vec![1u64];
    for depth in 0u32.. {
        if depth >= u32::from(UNREACHED) - 1 {
            return Err(fail(space, format!("the layers go on past depth {depth}")));
        }
        let next = flags();
        let added = AtomicU64::new(0);
        let (here, there) = (
            StateCodes::code_of_depth(depth),
            StateCodes::code_of_depth(depth + 1),
        );
        chunks.par_iter().try_for_each(|sets| {
            let mut current: Vec<u64> = Vec::with_capacity(f as usize);
            let mut layer_added = 0u64;
            for c in sets.clone() {
                let first = first_block(c);
                let all_free = [board.all_cells() & !index.set_mask(c)];
                let regions = if ignored {
                    &all_free[..]
                } else {
                    index.regions_of(c)
                };
                for (r, &region) in regions.iter().enumerate() {
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
                    let each_move = |visit: &mut dyn FnMut(BlockMove) -> Result<()>| {
                        if ignored {
                            for_each_set_move(space, index, c, visit)
                        } else {
                            for_each_block_move(space, index, c, region, visit)
                        }
                    };
                    each_move(&mut |m| {
                        let BlockMove {
                            block: child_block,
                            set: child_set,
                            pa,
                            pb,
                        } = m;
                        let row = moves.row(pa, pb);
                        let mut gained = false;
                        for &o in &current {
                            let moved = match row {
                                Some(row) => u64::from(row[o as usize]),
                                None => moves.moved(pa, pb, o),
                            };
                            let child = child_block * f + moved;
                            if codes.get(child) != 0 || !codes.try_mark(child, there) {
                                continue;
                            }
                            layer_added += 1;
                            gained = true;
                            let met = Met {
                                state: child,
                                set: child_set,
                                order: moved,
                            };
                            visit(met, depth + 1)?;
                        }
                        if gained {
                            next[child_block as usize].store(true, Relaxed);
                        }
                        Ok(())
                    })?;
                }
            }
            added.fetch_add(layer_added, Relaxed);
            Ok::<(), Error>(())
        })?;
        // The layer is expanded: its states are done.
        chunks.par_iter().for_each(|sets| {
            for block in first_block(sets.start)..first_block(sets.end) {
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
    Ok((histogram, codes))
}

/// Calls `visit` with the move of every pattern tile of set `c` into each free cell next to
/// it, when the blank is ignored: the child's block is its set.
fn for_each_set_move(
    space: &StateSpace,
    index: &RegionIndex,
    c: u64,
    visit: &mut dyn FnMut(BlockMove) -> Result<()>,
) -> Result<()> {
    let board = space.board();
    let set = index.set_mask(c);
    let free = board.all_cells() & !set;
    let mut movers = board.dilate(free) & set;
    while movers != 0 {
        let from = movers.trailing_zeros() as usize;
        movers &= movers - 1;
        let mut targets = board.neighbours(from) & free;
        while targets != 0 {
            let to = targets.trailing_zeros() as usize;
            targets &= targets - 1;
            let child_set = set ^ (1 << from) ^ (1 << to);
            let (pa, pb) = positions(set, child_set, from, to);
            let child = rank_set(child_set);
            visit(BlockMove {
                block: child,
                set: child,
                pa,
                pb,
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bellman::tests::table as built;
    use tilepdb_common::Goal;
    use tilepdb_common::table::encoding::nibble;

    fn prove(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
        match space.rule() {
            BlankRule::Minimized => prove_minimized(space, payload, encoding),
            BlankRule::Aware => prove_aware(space, payload, encoding),
            BlankRule::Ignored => prove_ignored(space, payload, encoding),
            BlankRule::ZeroAware => prove_zero_aware(space, payload, encoding),
        }
    }

    const BOARDS: [(&str, &[u8]); 5] = [
        ("3x3", &[1, 2, 3]),
        ("3x4", &[1, 5, 6, 2]),
        ("4x4", &[1, 2, 5]),
        ("4x4", &[1, 2, 3, 4, 5]),
        ("3x3", &[1, 2, 3, 4, 5, 6, 7, 8]),
    ];

    fn encodings(rule: BlankRule) -> Vec<Encoding> {
        let mut all = vec![
            Encoding::Byte,
            Encoding::Nibble,
            Encoding::min_nibble(4).unwrap(),
        ];
        if matches!(rule, BlankRule::ZeroAware | BlankRule::Ignored) {
            all.extend([Encoding::Mod3, Encoding::OneBit]);
        }
        all
    }

    #[test]
    fn order_ranks_are_the_rankers_ranks() {
        for (board, tiles) in BOARDS {
            let (space, _) = built(board, tiles, Goal::BlankFirst, BlankRule::Minimized);
            let index = space.region_index().unwrap();
            let ranks = OrderRanks::new(&space, &index);
            for c in 0..index.sets() {
                let cells = set_cells(index.set_mask(c));
                for o in 0..index.orders() {
                    let placement = index.placement_cells(c, o);
                    let want = space.ranker().rank(&placement[..index.k()]);
                    assert_eq!(
                        ranks.rank(&cells, o),
                        want,
                        "{board} {tiles:?} set {c} order {o}"
                    );
                }
            }
        }
    }

    #[test]
    fn built_tables_pass_with_their_histogram() {
        for rule in [
            BlankRule::ZeroAware,
            BlankRule::Aware,
            BlankRule::Minimized,
            BlankRule::Ignored,
        ] {
            for goal in [Goal::BlankFirst, Goal::BlankLast] {
                for (board, tiles) in BOARDS {
                    let (space, values) = built(board, tiles, goal, rule);
                    for encoding in encodings(rule) {
                        let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
                            // 1-bit and nibbles cannot mark the unreached half of a pattern of
                            // every tile.
                            assert_eq!(space.k() + 1, space.board().cells());
                            continue;
                        };
                        let layers = prove(&space, table.payload(), encoding).unwrap();
                        let what = format!("{rule} {board} {tiles:?} {goal:?} {encoding}");
                        assert_eq!(layers.histogram, table.header.histogram, "{what}");
                        assert_eq!(layers.unreached, table.header.unreached, "{what}");
                    }
                }
            }
        }
    }

    /// The payload with the value stored for unit `u` (an entry, or a group of min-nibble)
    /// replaced by another one the encoding can hold.
    fn altered(payload: &[u8], encoding: Encoding, u: u64) -> Vec<u8> {
        let mut bad = payload.to_vec();
        match encoding {
            Encoding::Byte => bad[u as usize] = bad[u as usize].wrapping_add(2),
            Encoding::Nibble | Encoding::MinNibble { .. } => {
                let shift = (u & 1) * 4;
                let n = (nibble(payload, u) + 1) & 0x0f;
                let b = &mut bad[(u >> 1) as usize];
                *b = *b & !(0x0f << shift) | n << shift;
            }
            Encoding::OneBit => bad[(u >> 3) as usize] ^= 1 << (u & 7),
            Encoding::Mod3 => {
                let digit = 3u8.pow((u % 5) as u32);
                let b = &mut bad[(u / 5) as usize];
                let d = *b / digit % 3;
                *b = *b - d * digit + (d + 1) % 3 * digit;
            }
        }
        bad
    }

    #[test]
    fn every_single_wrong_entry_is_found() {
        // Each stored value in turn changed (a byte by two, so that it keeps its parity; a
        // nibble, a base-3 digit or a bit to the next value): the proof fails.
        for rule in [
            BlankRule::ZeroAware,
            BlankRule::Aware,
            BlankRule::Minimized,
            BlankRule::Ignored,
        ] {
            // Every stored value of the 3x3 tables, every 11th of the 3x4 ones; every 5th and
            // 37th of the aware ones, which have an entry per free cell.
            let every = if rule == BlankRule::Aware {
                [5, 37]
            } else {
                [1, 11]
            };
            for (board, tiles, step) in [
                ("3x3", &[1u8, 2, 3][..], every[0]),
                ("3x4", &[1, 5, 6], every[1]),
            ] {
                let (space, values) = built(board, tiles, Goal::BlankFirst, rule);
                for encoding in encodings(rule) {
                    let table = EncodedTable::new(&space, encoding, &values).unwrap();
                    for u in (0..encoding.units(space.entries())).step_by(step) {
                        let bad = altered(table.payload(), encoding, u);
                        assert!(
                            prove(&space, &bad, encoding).is_err(),
                            "{rule} {board} {tiles:?} {encoding}: unit {u} changed passed"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_minimized_value_raised_where_the_blank_has_several_regions_is_found() {
        // Each reached placement whose free cells are several regions, raised by two in turn
        // (its parity kept). The rule a minimized table keeps on its own (no entry above one
        // more than its least neighbour's, exact where the blank has one region) let most of
        // these through; the search's least depth over the regions does not.
        let (space, values) = built("3x3", &[1, 2, 3, 4], Goal::BlankFirst, BlankRule::Minimized);
        let board = space.board();
        let mut cells = [0u8; MAX_CELLS];
        let mut raised = 0;
        for rank in 0..space.placements() as usize {
            let free = board.all_cells() & !space.ranker().unrank(rank as u64, &mut cells);
            let least = free.trailing_zeros() as usize;
            if board.region(least, free) == free || values[rank] == UNREACHED {
                continue;
            }
            let mut bad = values.clone();
            bad[rank] += 2;
            let err = prove_minimized(&space, &bad, Encoding::Byte)
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("entry {rank} stores")), "{err}");
            raised += 1;
        }
        assert!(raised > 1000, "{raised} placements with several regions");
    }
}
