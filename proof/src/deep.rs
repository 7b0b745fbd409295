//! Deep verification of a table file: decode every entry and re-check the facts of
//! [`crate::facts`] and the header's histogram.
//!
//! * aware tables in bytes, ignored tables in an exact encoding (byte, mod3, 1-bit), and
//!   zero-aware tables in bytes, are the exact distance function of their abstraction ([`crate::bellman`]: the
//!   goal is 0 and every other entry one more than its least neighbour), so a forged entry is
//!   found even when the file's checksums were recomputed to match; ignored tables in nibbles
//!   are the nibbles of it (the same rule, a saturated entry at most one more than its least
//!   neighbour, [`crate::bellman::check_ignored_nibbles`]);
//! * zero-aware tables in other encodings, aware ones in nibbles, mod3 and 1-bit, ignored ones
//!   in min-nibble and minimized ones in every encoding are proven by one search from the goal
//!   that meets each state at its distance ([`crate::layers`]): every entry must be its exact
//!   value's encoding; minimized bytes and aware and zero-aware mod3 and 1-bit are read a
//!   part at a time, each part's pages let go once read;
//! * every decoded value `h` is at least the Manhattan distance `m`, with `h - m` even;
//! * exact encodings give back the header's histogram and unreached count; lossy ones give
//!   lower bounds, so at every value at least as many entries decode to it or less as the
//!   histogram has;
//! * the payload is canonical: base-3 bytes below 243, padding digits and nibbles zero.

use tilepdb_common::table::header::histogram_of;
use tilepdb_common::table::{Encoding, Pdb};
use tilepdb_common::{BlankRule, StateSpace};

use crate::bellman::{Proof, check_distances, check_ignored_nibbles};
use crate::error::{Error, Result};
use crate::facts::{check_bound_and_parity, check_lower_bound};
use crate::layers::{
    AWARE_PACKED_PART, Layers, prove_aware, prove_aware_releasing, prove_ignored,
    prove_minimized_releasing, prove_zero_aware_releasing,
};

/// What a deep verification checked.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeepReport {
    /// Entries decoded.
    pub entries: u64,
    /// Histogram of the decoded values (reached entries); of the exact values where a layer
    /// proof showed the entries their encoding.
    pub decoded_histogram: Vec<u64>,
    /// Entries decoded as unreached.
    pub decoded_unreached: u64,
    /// Whether the decoded histogram must equal the header's (exact encodings).
    pub exact: bool,
    /// What proved every entry its exact value (or that value's encoding).
    pub proof: Proof,
}

fn fail(pdb: &Pdb, reason: String) -> Error {
    Error::Check {
        table: pdb.path().display().to_string(),
        reason,
    }
}

/// Decodes every entry of `pdb` and checks it (see the module's documentation).
pub fn verify_deep(pdb: &Pdb) -> Result<DeepReport> {
    let space = pdb.space();
    let encoding = pdb.encoding();
    // Aware and zero-aware tables in packed entries are read in order a part at a time by
    // their proof: the canonical check lets each part's pages go too.
    let packed = matches!(encoding, Encoding::Mod3 | Encoding::OneBit);
    let aware_packed = space.rule() == BlankRule::Aware && packed;
    let in_parts = packed && matches!(space.rule(), BlankRule::Aware | BlankRule::ZeroAware);
    check_canonical_payload(pdb, in_parts)?;
    let release = |range| pdb.release_payload(range);
    match space.rule() {
        BlankRule::ZeroAware if encoding != Encoding::Byte => {
            // Packed entries are compared a part at a time, each part's pages let go.
            return verify_by_layers(pdb, |space, payload, encoding| {
                prove_zero_aware_releasing(space, payload, encoding, &release)
            });
        }
        BlankRule::Aware if aware_packed => {
            return verify_by_layers(pdb, |space, payload, encoding| {
                prove_aware_releasing(space, payload, encoding, &release)
            });
        }
        BlankRule::Aware if !encoding.is_exact() => return verify_by_layers(pdb, prove_aware),
        BlankRule::Ignored if matches!(encoding, Encoding::MinNibble { .. }) => {
            return verify_by_layers(pdb, prove_ignored);
        }
        BlankRule::Minimized => {
            // Bytes are read once in order: each part's pages go once compared.
            return verify_by_layers(pdb, |space, payload, encoding| {
                prove_minimized_releasing(space, payload, encoding, &release)
            });
        }
        _ => {}
    }
    // A byte payload is its values: read it where it is mapped rather than copy it.
    let values: std::borrow::Cow<'_, [u8]> = if encoding == Encoding::Byte {
        std::borrow::Cow::Borrowed(pdb.payload())
    } else {
        std::borrow::Cow::Owned(pdb.decode_all()?)
    };
    let in_file = |e: Error| match e {
        Error::Check { reason, .. } => fail(pdb, reason),
        e => e,
    };
    if encoding.is_exact() {
        check_lower_bound(space, &values).map_err(in_file)?;
    } else {
        check_bound_and_parity(space, &values).map_err(in_file)?;
    }
    // Aware and ignored tables in exact encodings, zero-aware ones in bytes: the Bellman
    // check; ignored ones in nibbles: its form with saturation.
    if encoding.is_exact() {
        check_distances(space, &values).map_err(in_file)?;
    } else {
        check_ignored_nibbles(space, &values).map_err(in_file)?;
    }
    let (decoded_histogram, decoded_unreached) = histogram_of(&values);
    let header = pdb.header();
    if encoding.is_exact() {
        if decoded_histogram != header.histogram || decoded_unreached != header.unreached {
            return Err(fail(
                pdb,
                format!(
                    "the decoded values' histogram {decoded_histogram:?} ({decoded_unreached} unreached) \
                     differs from the header's {:?} ({} unreached)",
                    header.histogram, header.unreached
                ),
            ));
        }
    } else {
        // Lower bounds: the decoded values' cumulative counts dominate the exact ones.
        let (mut decoded, mut exact) = (0u64, 0u64);
        let len = decoded_histogram.len().max(header.histogram.len());
        for v in 0..len {
            decoded += decoded_histogram.get(v).copied().unwrap_or(0);
            exact += header.histogram.get(v).copied().unwrap_or(0);
            if decoded < exact {
                return Err(fail(
                    pdb,
                    format!(
                        "{decoded} entries decode to {v} or less, but the header counts {exact} \
                         entries of exact value {v} or less: a decoded value is above the exact one"
                    ),
                ));
            }
        }
    }
    Ok(DeepReport {
        entries: values.len() as u64,
        decoded_histogram,
        decoded_unreached,
        exact: encoding.is_exact(),
        proof: Proof::BellmanCheck,
    })
}

/// [`verify_deep`] by a layer proof ([`crate::layers`]): it shows every entry its exact
/// value's encoding, and its counts per value must be the header's histogram.
fn verify_by_layers(
    pdb: &Pdb,
    prove: impl FnOnce(&StateSpace, &[u8], Encoding) -> Result<Layers>,
) -> Result<DeepReport> {
    let space = pdb.space();
    let layers = prove(space, pdb.payload(), pdb.encoding()).map_err(|e| match e {
        Error::Check { reason, .. } => fail(pdb, reason),
        e => e,
    })?;
    let header = pdb.header();
    if layers.histogram != header.histogram || layers.unreached != header.unreached {
        return Err(fail(
            pdb,
            format!(
                "the entries per distance {:?} ({} unreached) differ from the header's histogram {:?} ({} unreached)",
                layers.histogram, layers.unreached, header.histogram, header.unreached
            ),
        ));
    }
    Ok(DeepReport {
        entries: space.entries(),
        decoded_histogram: layers.histogram,
        decoded_unreached: layers.unreached,
        exact: pdb.encoding().is_exact(),
        proof: Proof::LayerSearch,
    })
}

/// Base-3 bytes are below 3^5 = 243; the digits or nibble after the last entry are zero.
/// `release_parts`: the base-3 bytes are read a part at a time, each part's pages let go once
/// read ([`Pdb::release_payload`]).
fn check_canonical_payload(pdb: &Pdb, release_parts: bool) -> Result<()> {
    let payload = pdb.payload();
    let units = pdb.header().units;
    match pdb.encoding() {
        Encoding::Byte => {}
        Encoding::Mod3 => {
            let part = if release_parts {
                AWARE_PACKED_PART
            } else {
                payload.len().max(1)
            };
            let above = payload.chunks(part).enumerate().find_map(|(p, bytes)| {
                let found = bytes.iter().position(|&b| b >= 243).map(|i| p * part + i);
                if release_parts {
                    pdb.release_payload(p * part..p * part + bytes.len());
                }
                found
            });
            if let Some(i) = above {
                return Err(fail(
                    pdb,
                    format!(
                        "payload byte {i} is {}, not five base-3 digits (at most 242)",
                        payload[i]
                    ),
                ));
            }
            let used = units % 5;
            if used != 0 {
                let last = *payload.last().expect("a table has entries");
                if u64::from(last) >= 3u64.pow(used as u32) {
                    return Err(fail(
                        pdb,
                        "the padding digits of the last byte are not zero".into(),
                    ));
                }
            }
        }
        Encoding::OneBit => {
            let used = units % 8;
            if used != 0 && payload.last().is_some_and(|&b| b >> used != 0) {
                return Err(fail(
                    pdb,
                    "the padding bits of the last byte are not zero".into(),
                ));
            }
        }
        Encoding::Nibble | Encoding::MinNibble { .. } => {
            if units % 2 == 1 && payload.last().is_some_and(|&b| b >> 4 != 0) {
                return Err(fail(
                    pdb,
                    "the padding nibble of the last byte is not zero".into(),
                ));
            }
        }
    }
    Ok(())
}
