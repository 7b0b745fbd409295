//! The layer proof of an aware table in a packed exact encoding (`mod3`, `1-bit`), read a
//! part at a time ([`prove_aware_packed`]).
//!
//! An aware entry (placement, free cell) is the zero-aware distance of the cell's region, and
//! a packed entry keeps only a code of that distance (the distance mod 3, or its bit 1). So
//! the search over the zero-aware states keeps each state's code beside its two bits (two more
//! bits a state, [`StateCodes`] with the code plus one, 0 for a state never met) and counts the
//! aware entries per distance (a state stands for the free cells of its region). Then the file
//! is compared in its own order, a part at a time: each entry's zero-aware state is named by
//! the file-order map ([`for_each_depth_entry`]), and each part's pages are let go once read.
//! Memory: four bits a zero-aware state and a part of the file, never a value per entry.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::file_order::for_each_depth_entry;
use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::table::Encoding;
use tilepdb_common::{StateCodes, StateSpace};

use super::search::search;
use super::{Layers, code_per_entry};
use crate::error::Result;
use crate::walks::fail;

/// Bytes of a packed aware payload that the proof reads between two releases.
pub const AWARE_PACKED_PART: usize = 4 << 20;

/// Proves that `payload`, in `encoding` (`mod3` or `1-bit`), is the aware table of `space`
/// (see the module's documentation), calling `release` with each range of the payload once it
/// is read, in order, parts of `part` bytes ([`AWARE_PACKED_PART`] but in tests). The entries
/// per distance; an error names the first entry found wrong. `zero_aware` is the zero-aware
/// space of the same pattern, `index` its region index.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a block's region is below its set's regions, held in memory"
)]
pub(super) fn prove_aware_packed(
    space: &StateSpace,
    zero_aware: &StateSpace,
    index: &RegionIndex,
    payload: &[u8],
    encoding: Encoding,
    (part, release): (usize, &(dyn Fn(std::ops::Range<usize>) + Sync)),
) -> Result<Layers> {
    let code_of = code_per_entry(encoding)
        .filter(|_| matches!(encoding, Encoding::Mod3 | Encoding::OneBit))
        .ok_or_else(|| {
            fail(
                space,
                format!("the packed aware layer proof was given a table in {encoding}"),
            )
        })?;
    let f = index.orders();
    // Each state's code plus one (0: never met); the aware entries per distance, per thread.
    let state_codes = StateCodes::new(index.states());
    let counts = EntryCounts::new();
    let (_, search_codes) = search(zero_aware, index, |met, depth| {
        state_codes.try_mark(met.state, code_of(depth) + 1);
        let region =
            index.regions_of(met.set)[(met.state / f - index.first_block(met.set)) as usize];
        counts.add(depth, u64::from(region.count_ones()));
        Ok(())
    })?;
    drop(search_codes);
    if let Some((entry, state, stored)) = first_wrong_entry(
        space,
        index,
        &state_codes,
        (payload, encoding),
        (part, release),
    ) {
        let reason = match state_codes.get(state) {
            0 => format!(
                "entry {entry} (zero-aware state {state}) is unreachable but stores {stored}, not 0"
            ),
            code => format!(
                "entry {entry} (zero-aware state {state}) stores {stored}, not {}, its distance's code",
                code - 1
            ),
        };
        return Err(fail(space, reason));
    }
    let histogram = counts.histogram();
    let met: u64 = histogram.iter().sum();
    Ok(Layers {
        histogram,
        unreached: space.entries() - met,
    })
}

/// The first entry of `payload` (aware entries in `encoding`, file order) whose stored code
/// is not the code of its zero-aware state in `state_codes` (plus one; 0 for a state never
/// met, whose entries store 0): the entry, its state and the code stored. Read `part` bytes at
/// a time (each part's pieces in parallel), `release` called with each part once it is read.
fn first_wrong_entry(
    space: &StateSpace,
    index: &RegionIndex,
    state_codes: &StateCodes,
    (payload, encoding): (&[u8], Encoding),
    (part_len, release): (usize, &(dyn Fn(std::ops::Range<usize>) + Sync)),
) -> Option<(u64, u64, u8)> {
    /// Bytes one thread compares at once.
    const PIECE: usize = 1 << 12;
    /// States named (and their codes fetched) before they are read.
    const BATCH: usize = 64;
    let per_byte: u64 = if encoding == Encoding::Mod3 { 5 } else { 8 };
    let entries = space.entries();
    for (p, part) in payload.chunks(part_len.max(1)).enumerate() {
        let first = p * part_len.max(1);
        let wrong = part
            .par_chunks(PIECE)
            .enumerate()
            .find_map_first(|(i, piece)| {
                let start = (first + i * PIECE) as u64 * per_byte;
                let end = (start + piece.len() as u64 * per_byte).min(entries);
                let mut wrong = None;
                let mut batch = [0u64; BATCH];
                let mut len = 0;
                // The states of a batch of entries are named first, their words asked for,
                // then read together, so that their reads wait on memory together.
                let mut compare = |batch: &[u64], next: u64| {
                    let first = next - batch.len() as u64;
                    for (j, &state) in batch.iter().enumerate() {
                        let entry = first + j as u64;
                        let want = state_codes.get(state).saturating_sub(1);
                        let stored = encoding.stored(piece, entry - start);
                        if stored != want && wrong.is_none() {
                            wrong = Some((entry, state, stored));
                        }
                    }
                };
                let mut entry = start;
                for_each_depth_entry(space, index, start..end, |state| {
                    state_codes.prefetch(state);
                    batch[len] = state;
                    len += 1;
                    entry += 1;
                    if len == BATCH {
                        compare(&batch, entry);
                        len = 0;
                    }
                });
                compare(&batch[..len], end);
                wrong
            });
        release(first..first + part.len());
        if wrong.is_some() {
            return wrong;
        }
    }
    None
}

/// Aware entries per distance, counted by each thread in its own row (no line shared
/// between threads in the search's hot loop), summed at the end.
struct EntryCounts {
    /// A row of 256 counts per thread of the pool, and one for calls from outside it.
    rows: Vec<[AtomicU64; 256]>,
}

impl EntryCounts {
    fn new() -> EntryCounts {
        EntryCounts {
            rows: (0..=rayon::current_num_threads())
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
        }
    }

    /// Counts `entries` at `depth` (below 255: the search stops before).
    fn add(&self, depth: u32, entries: u64) {
        let row = rayon::current_thread_index()
            .map_or(self.rows.len() - 1, |t| t.min(self.rows.len() - 2));
        self.rows[row][depth as usize].fetch_add(entries, Relaxed);
    }

    /// The counts per distance, up to the last one not zero.
    fn histogram(&self) -> Vec<u64> {
        let mut histogram: Vec<u64> = (0..256)
            .map(|d| self.rows.iter().map(|row| row[d].load(Relaxed)).sum())
            .collect();
        while histogram.last() == Some(&0) {
            histogram.pop();
        }
        histogram
    }
}
