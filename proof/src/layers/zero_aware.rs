//! The layer proof of a zero-aware table with one code per entry (`mod3`, `1-bit`, bytes),
//! read a part at a time ([`prove_coded_in_parts`]).
//!
//! A zero-aware file is in the region index's order: entry `e` is state `e`
//! ([`tilepdb_common::file_order::for_each_depth_entry`]). The search keeps two bits a state,
//! which tell a state's distance only while its layer is in flight, so each layer is compared
//! once it is expanded and before its states are marked done: the file is read in its own
//! order a part at a time, every state of the layer in the part has its entry checked against
//! the layer's code, and each part's pages are let go once read. At the end the states never
//! met are checked the same way: their entries must store the unreached code. Memory: two
//! bits a state and a part of the file, never a value per entry.

use std::ops::Range;

use rayon::prelude::*;
use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::table::{Encoding, UNREACHED};
use tilepdb_common::{StateCodes, StateSpace};

use super::search::{Expanded, search_by_layers};
use super::{Layers, code_per_entry};
use crate::error::Result;
use crate::walks::fail;

/// Bytes of a packed zero-aware payload that the proof reads between two releases.
pub const ZERO_AWARE_PART: usize = 4 << 20;

/// Proves that `payload`, in `encoding` (`mod3`, `1-bit` or bytes), is the zero-aware table of
/// `space` (see the module's documentation), `index` its region index, calling `release` with
/// each range of the payload once it is read: in order, parts of `part` bytes
/// ([`ZERO_AWARE_PART`] but in tests), once per layer and once for the states never met. The
/// entries per distance; an error names the first entry found wrong (the least distance's
/// first, in file order).
pub(super) fn prove_coded_in_parts(
    space: &StateSpace,
    index: &RegionIndex,
    payload: &[u8],
    encoding: Encoding,
    (part, release): (usize, &(dyn Fn(Range<usize>) + Sync)),
) -> Result<Layers> {
    let Some(code_of) = code_per_entry(encoding) else {
        return Err(fail(
            space,
            format!("the zero-aware layer proof by parts was given a table in {encoding}"),
        ));
    };
    let entries = space.entries();
    let parts = Parts {
        payload,
        encoding,
        entries,
        part: part.max(1),
        release,
    };
    let (histogram, codes) = search_by_layers(
        space,
        index,
        |_, _| Ok(()),
        |layer| {
            let want = code_of(layer.depth);
            let Some(state) =
                parts.first_wrong(|states| first_wrong_in_layer(&parts, layer, want, states))
            else {
                return Ok(());
            };
            let (block, set) = index.block_and_set(state);
            let cells = index.placement_cells(set, state - block * layer.orders);
            Err(fail(
                space,
                format!(
                    "entry {state} (placement {:?}) is at distance {} but stores {}, not {want}",
                    &cells[..index.k()],
                    layer.depth,
                    encoding.stored(payload, state)
                ),
            ))
        },
    )?;
    let met: u64 = histogram.iter().sum();
    if met != entries {
        let unmet = if encoding == Encoding::Byte {
            UNREACHED
        } else {
            0
        };
        if let Some(e) =
            parts.first_wrong(|states| first_wrong_unmet(&parts, &codes, unmet, states))
        {
            return Err(fail(
                space,
                format!(
                    "entry {e} is unreachable but stores {}, not {unmet}",
                    encoding.stored(payload, e)
                ),
            ));
        }
    }
    Ok(Layers {
        histogram,
        unreached: entries - met,
    })
}

/// The first state of `states` in the expanded `layer` whose entry is not `want`.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a block indexes the layer's flags, held in memory"
)]
fn first_wrong_in_layer(
    parts: &Parts<'_>,
    layer: &Expanded<'_>,
    want: u8,
    states: Range<u64>,
) -> Option<u64> {
    let f = layer.orders;
    let mut wrong = None;
    for block in states.start / f..states.end.div_ceil(f) {
        if !layer.active[block as usize].load(std::sync::atomic::Ordering::Relaxed) {
            continue;
        }
        let in_block = (block * f).max(states.start)..((block + 1) * f).min(states.end);
        layer.codes.for_each_with_code(in_block, layer.code, |s| {
            if wrong.is_none() && parts.encoding.stored(parts.payload, s) != want {
                wrong = Some(s);
            }
        });
        if wrong.is_some() {
            break;
        }
    }
    wrong
}

/// The first state of `states` never met (code 0 in `codes`) whose entry is not `unmet`.
fn first_wrong_unmet(
    parts: &Parts<'_>,
    codes: &StateCodes,
    unmet: u8,
    states: Range<u64>,
) -> Option<u64> {
    let mut wrong = None;
    codes.for_each_with_code(states, 0, |s| {
        if wrong.is_none() && parts.encoding.stored(parts.payload, s) != unmet {
            wrong = Some(s);
        }
    });
    wrong
}

/// A payload read in its own order a part at a time, each part let go once read.
struct Parts<'a> {
    payload: &'a [u8],
    encoding: Encoding,
    entries: u64,
    /// Bytes of a part.
    part: usize,
    release: &'a (dyn Fn(Range<usize>) + Sync),
}

impl Parts<'_> {
    /// The first entry that `wrong` finds in a range of entries (pieces of each part in
    /// parallel, the parts in order; `release` called with each part once read).
    fn first_wrong(&self, wrong: impl Fn(Range<u64>) -> Option<u64> + Sync) -> Option<u64> {
        /// Bytes one thread compares at once.
        const PIECE: usize = 1 << 12;
        let per_byte: u64 = match self.encoding {
            Encoding::Mod3 => 5,
            Encoding::OneBit => 8,
            // Bytes, the other encoding with a code per entry.
            _ => 1,
        };
        for (p, bytes) in self.payload.chunks(self.part).enumerate() {
            let first = p * self.part;
            let found = (0..bytes.len().div_ceil(PIECE))
                .into_par_iter()
                .find_map_first(|i| {
                    let start = first + i * PIECE;
                    let end = (start + PIECE).min(first + bytes.len());
                    let entries =
                        start as u64 * per_byte..(end as u64 * per_byte).min(self.entries);
                    wrong(entries)
                });
            (self.release)(first..first + bytes.len());
            if found.is_some() {
                return found;
            }
        }
        None
    }
}
