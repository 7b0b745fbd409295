//! The proofs by one breadth-first search from the goal over the zero-aware states (the
//! placement and the region of the blank; moves inside a region are free), or over the
//! placements when the blank is ignored: the search meets every state at its exact distance,
//! and each table it proves is checked against the distances it meets.
//!
//! * [`prove_zero_aware`]: a zero-aware table in any encoding (bytes are proven by the
//!   Bellman check, [`crate::bellman`], in [`crate::verify_deep`]). In `mod3`, `1-bit` and
//!   bytes every state the search meets must store its distance's code: each layer, once
//!   expanded, is compared with the file in the file's own order a part at a time
//!   ([`prove_zero_aware_releasing`]), so that no part of the file is read at random; in
//!   nibbles the distances met are encoded again and must give the payload.
//! * [`prove_aware`]: an aware table, whose entries are the zero-aware distances of each free
//!   cell's region; for nibbles, which keep too little for the Bellman check, and for `mod3`
//!   and `1-bit`, whose Bellman check would decode every entry to a byte. Those two are
//!   proven on the search's two bits per zero-aware state and two more for the state's code
//!   (its distance mod 3, or bit 1 of it), and the file is then compared in its own order a
//!   part at a time ([`prove_aware_releasing`]): no value per entry is held.
//! * [`prove_ignored`]: a table that ignores the blank (the search is then over the
//!   placements alone); for min-nibble, which keeps too little for the Bellman check.
//! * [`prove_minimized`]: a minimized table in any encoding. Its entry is the least distance
//!   over the placement's regions, which is the depth at which the search first meets the
//!   placement in any region. Bytes are compared with those depths where they lie; other
//!   encodings are encoded again and must give the payload.
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
//! use tilepdb_proof::layers::prove_zero_aware;
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::ZeroAware).unwrap();
//! let values = build_table(&space, &BuildOptions::default(), &()).unwrap().values.into_bytes().unwrap();
//! let table = EncodedTable::new(&space, Encoding::OneBit, &values).unwrap();
//! let layers = prove_zero_aware(&space, table.payload(), Encoding::OneBit).unwrap();
//! assert_eq!(layers.histogram, table.header.histogram);
//! ```

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::atomic_array::AtomicArray;
use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::table::Encoding;
use tilepdb_common::table::write::EncodedTable;
use tilepdb_common::{BlankRule, MAX_CELLS, StateSpace};

use crate::error::Result;
use crate::walks::{fail, set_chunks};
use tilepdb_common::table::UNREACHED;
use tilepdb_common::table::header::histogram_of;

mod aware;
mod order_ranks;
mod search;
#[cfg(test)]
mod tests;
mod zero_aware;

pub use aware::AWARE_PACKED_PART;
use order_ranks::OrderRanks;
use search::search;
pub use zero_aware::ZERO_AWARE_PART;

/// What the search of a proven table counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layers {
    /// Entries per distance, from the goal's 0.
    pub histogram: Vec<u64>,
    /// Entries the search never met (unreachable).
    pub unreached: u64,
}

/// Proves that `payload`, in `encoding`, is the zero-aware table of `space`: every entry the
/// exact distance's code (see the module's documentation); the entries per distance. An error
/// names the first entry found wrong.
pub fn prove_zero_aware(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    prove_zero_aware_releasing(space, payload, encoding, &|_| {})
}

/// [`prove_zero_aware`], calling `release` with each range of the payload once it is read
/// when the table is in `mod3`, `1-bit` or bytes: those are compared in the file's own order a
/// part at a time, once per layer of the search and once for the states never met, so a
/// caller whose payload is a map gives each part's pages back
/// ([`tilepdb_common::table::Pdb::release_payload`]) and never holds the file whole beside the
/// search's two bits a state. Nibbles are proven on the distances encoded again (`release`
/// is not called).
pub fn prove_zero_aware_releasing(
    space: &StateSpace,
    payload: &[u8],
    encoding: Encoding,
    release: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<Layers> {
    if space.rule() != BlankRule::ZeroAware {
        return Err(fail(
            space,
            format!(
                "the zero-aware layer proof was given a {} table",
                space.rule()
            ),
        ));
    }
    // The process's shared index: the one a zero-aware file opened for the proof holds.
    let index = space.region_index()?;
    check_payload_len(space, payload, encoding)?;
    if code_per_entry(encoding).is_some() {
        let parts = (ZERO_AWARE_PART, release);
        return zero_aware::prove_coded_in_parts(space, &index, payload, encoding, parts);
    }
    // Nibbles: the distances, encoded again.
    let (histogram, values) = distances(space, &index)?;
    let met: u64 = histogram.iter().sum();
    same_payload(space, encoding, &values, payload)?;
    Ok(Layers {
        histogram,
        unreached: space.entries() - met,
    })
}

/// Proves that `payload`, in `encoding`, is the aware table of `space`: every entry the
/// exact distance's encoding, each free cell of a region with the region's zero-aware
/// distance; the entries per distance. Meant for the encodings whose entries keep too little
/// for the Bellman check on their own bytes: nibbles, `mod3` and `1-bit` (the packed ones read
/// a part at a time, [`prove_aware_releasing`]); an error names the first entry found wrong.
pub fn prove_aware(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    prove_aware_releasing(space, payload, encoding, &|_| {})
}

/// [`prove_aware`], calling `release` with each range of the payload once it is read (in
/// order, a part at a time) when the table is in `mod3` or `1-bit`: a caller whose payload is
/// a map gives those pages back ([`tilepdb_common::table::Pdb::release_payload`]). Those
/// tables are proven on four bits per zero-aware state and never hold a value per entry (the
/// module's documentation); nibbles are proven on the zero-aware distances spread to every
/// entry and encoded again.
pub fn prove_aware_releasing(
    space: &StateSpace,
    payload: &[u8],
    encoding: Encoding,
    release: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<Layers> {
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
    if matches!(encoding, Encoding::Mod3 | Encoding::OneBit) {
        let parts = (AWARE_PACKED_PART, release);
        return aware::prove_aware_packed(space, &zero_aware, &index, payload, encoding, parts);
    }
    let (_, distances) = distances(&zero_aware, &index)?;
    let values = index.aware_from_zero_aware(space.ranker(), &distances);
    same_payload(space, encoding, &values, payload)?;
    let (histogram, unreached) = histogram_of(&values);
    Ok(Layers {
        histogram,
        unreached,
    })
}

/// Proves that `payload`, in `encoding`, is the minimized table of `space`: every entry the
/// least distance over its placement's regions (see the module's documentation); the entries
/// per value. An error names the first entry found wrong.
pub fn prove_minimized(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    prove_minimized_releasing(space, payload, encoding, &|_| {})
}

/// [`prove_minimized`], calling `release` with each range of the payload once it is read (in
/// order, a part at a time) when the table is in bytes: a caller whose payload is a map gives
/// those pages back ([`tilepdb_common::table::Pdb::release_payload`]), so that the proof never
/// holds the whole file beside its own arrays.
#[expect(
    clippy::cast_possible_truncation,
    reason = "placements, sets and ranks index arrays held in memory, so they fit in usize; the search fails before it meets a depth above 254, so `depth + 1` fits in a byte"
)]
pub fn prove_minimized_releasing(
    space: &StateSpace,
    payload: &[u8],
    encoding: Encoding,
    release: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Result<Layers> {
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
    if encoding == Encoding::Byte {
        // Compared in the payload's order, a part at a time, each part let go once read.
        if let Some((rank, h, stored)) = first_wrong_byte(space, &index, &least, payload, release) {
            return Err(fail(
                space,
                format!(
                    "entry {rank} stores {stored}, but its least distance over the regions is {h}"
                ),
            ));
        }
    } else {
        // Encoded again in the table's order (placement ranks).
        let ranks = OrderRanks::new(space, &index);
        same_payload(
            space,
            encoding,
            &in_rank_order(&index, &ranks, &least),
            payload,
        )?;
    }
    let (histogram, unreached) = histogram_of(&least);
    Ok(Layers {
        histogram,
        unreached,
    })
}

/// Bytes of a minimized byte payload that the proof reads between two releases.
pub const MINIMIZED_BYTE_PART: usize = 4 << 20;

/// The first entry of the byte payload of a minimized table that is not its least distance
/// `least` (by set and order, [`UNREACHED`] unmet): the entry, the distance and the byte
/// stored. The payload is read in rank order, a part at a time (each part's ranks in
/// parallel, each rank's set and order worked out incrementally from the last,
/// [`RegionIndex::for_each_set_and_order`]), and `release` is called with
/// each part once it is read.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a placement index is below the length of `least`, an array in memory"
)]
fn first_wrong_byte(
    space: &StateSpace,
    index: &RegionIndex,
    least: &[u8],
    payload: &[u8],
    release: &(dyn Fn(std::ops::Range<usize>) + Sync),
) -> Option<(u64, u8, u8)> {
    const PART: usize = MINIMIZED_BYTE_PART;
    /// Ranks one thread compares at once.
    const PIECE: usize = 1 << 14;
    /// Placement indices named before they are read.
    const BATCH: usize = 64;
    let ranker = space.ranker();
    let f = index.orders();
    for (p, part) in payload.chunks(PART).enumerate() {
        let first = p * PART;
        let wrong = part
            .par_chunks(PIECE)
            .enumerate()
            .find_map_first(|(i, piece)| {
                let start = (first + i * PIECE) as u64;
                let mut wrong = None;
                let ranks = start..start + piece.len() as u64;
                // The placement indices of a batch of ranks are named first and then read
                // together, so that their reads wait on memory together.
                let mut batch = [0u64; BATCH];
                let mut len = 0;
                let mut compare = |batch: &[u64], next: u64| {
                    let first = next - batch.len() as u64;
                    for (j, &placement) in batch.iter().enumerate() {
                        let rank = first + j as u64;
                        let (h, stored) =
                            (least[placement as usize], piece[(rank - start) as usize]);
                        if h != stored && wrong.is_none() {
                            wrong = Some((rank, h, stored));
                        }
                    }
                };
                index.for_each_set_and_order(ranker, ranks.clone(), |rank, c, _, order| {
                    batch[len] = c * f + order;
                    len += 1;
                    if len == BATCH {
                        compare(&batch, rank + 1);
                        len = 0;
                    }
                });
                compare(&batch[..len], ranks.end);
                wrong
            });
        release(first..first + part.len());
        if wrong.is_some() {
            return wrong;
        }
    }
    None
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
    let (histogram, unreached) = histogram_of(&values);
    Ok(Layers {
        histogram,
        unreached,
    })
}

/// Values by placement index (`set * k! + order`) put in placement-rank order.
#[expect(
    clippy::cast_possible_truncation,
    reason = "states and ranks index arrays held in memory, so they fit in usize"
)]
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
#[expect(
    clippy::cast_possible_truncation,
    reason = "a cell is below 25, so it fits in a byte"
)]
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

/// The code a `mod3`, `1-bit` or byte entry stores for a distance; `None` for nibbles (which
/// need the Manhattan distance, and for min-nibble the group).
#[expect(
    clippy::cast_possible_truncation,
    reason = "a byte table's depths stay below 255; the other codes are a remainder below 3 or one bit"
)]
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
#[expect(
    clippy::cast_possible_truncation,
    reason = "states index an array held in memory, so they fit in usize; the search fails before it meets a depth above 254, so `depth + 1` fits in a byte"
)]
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
#[expect(
    clippy::cast_possible_truncation,
    reason = "entries index `values`, held in memory, so they fit in usize"
)]
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
