//! What a proof holds in memory, known before it runs: [`proof_memory`] names the proof that
//! [`crate::verify_deep`] runs on a table of a kind and encoding ([`proof_for`]) and the most
//! bytes its own arrays hold at once, by the same arrays the proofs allocate. The table file
//! the proof reads is not counted: the caller maps it.
//!
//! ```
//! use tilepdb_common::table::Encoding;
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_proof::memory::proof_memory;
//! let board: Board = "4x4".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3, 4, 5, 6, 7]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let plan = proof_memory(&space, Encoding::Byte).unwrap();
//! assert_eq!(plan.proof.name(), "layer-search");
//! // The least distance per placement and two bits per (placement, region) state at least.
//! assert!(plan.bytes >= space.placements() + space.region_search_states().unwrap() / 4);
//! ```

use std::fmt::Write as _;

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, StateCodes, StateSpace, human_bytes};

use crate::bellman::Proof;
use crate::error::Result;

/// The proof of a table and the memory it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProofMemory {
    /// The proof [`crate::verify_deep`] runs on the table.
    pub proof: Proof,
    /// The most bytes the proof's own arrays hold at once (not the table file it reads).
    pub bytes: u64,
    /// The most bytes of the table file's payload the proof holds resident at once when it
    /// reads the payload once in order and lets each part go (`None`: it may hold all of it).
    pub file_part: Option<u64>,
    /// What they are, in words.
    pub detail: String,
}

/// The proof [`crate::verify_deep`] runs on a table of blank rule `rule` in `encoding`: the
/// layer search for zero-aware and aware tables in every encoding but bytes,
/// ignored ones in min-nibble and every minimized table; the Bellman check otherwise.
pub fn proof_for(rule: BlankRule, encoding: Encoding) -> Proof {
    let layers = match rule {
        BlankRule::ZeroAware | BlankRule::Aware => encoding != Encoding::Byte,
        BlankRule::Ignored => matches!(encoding, Encoding::MinNibble { .. }),
        BlankRule::Minimized => true,
    };
    if layers {
        Proof::LayerSearch
    } else {
        Proof::BellmanCheck
    }
}

/// The proof of a table of `space` in `encoding` and the most bytes its own arrays hold at
/// once (see the module's documentation): the region index; for a layer search its two bits
/// per state and two flags per block, with the distances it keeps and the values it encodes
/// again; for the Bellman check the decoded values (none for bytes, read where they are
/// mapped).
pub fn proof_memory(space: &StateSpace, encoding: Encoding) -> Result<ProofMemory> {
    let index = space.region_index()?;
    let (sets, regions) = (index.sets(), index.region_count());
    let index_bytes = index.memory_bytes();
    let entries = space.entries();
    let sizes = Sizes {
        states: index.states(),
        placements: index.placements(),
        sets,
        regions,
        entries,
        payload: encoding.payload_len(entries),
    };
    let proof = proof_for(space.rule(), encoding);
    // A minimized byte table is compared in rank order, an aware or zero-aware one in mod3 or
    // 1-bit in file order, a part at a time, each part let go once read
    // ([`crate::layers::prove_minimized_releasing`], [`crate::layers::prove_aware_releasing`],
    // [`crate::layers::prove_zero_aware_releasing`]).
    let packed = matches!(encoding, Encoding::Mod3 | Encoding::OneBit);
    let file_part = match space.rule() {
        BlankRule::Minimized if encoding == Encoding::Byte => {
            Some(crate::layers::MINIMIZED_BYTE_PART as u64)
        }
        BlankRule::Aware if packed => Some(crate::layers::AWARE_PACKED_PART as u64),
        BlankRule::ZeroAware if packed => Some(crate::layers::ZERO_AWARE_PART as u64),
        _ => None,
    };
    let (bytes, detail) = match (proof, space.rule()) {
        (Proof::BellmanCheck, _) => bellman_memory(encoding, entries),
        (Proof::LayerSearch, BlankRule::ZeroAware) => sizes.zero_aware(encoding),
        (Proof::LayerSearch, BlankRule::Aware) => sizes.aware(encoding),
        (Proof::LayerSearch, BlankRule::Ignored) => sizes.ignored(),
        (Proof::LayerSearch, BlankRule::Minimized) => sizes.minimized(encoding),
    };
    Ok(ProofMemory {
        proof,
        bytes: bytes + index_bytes,
        detail,
        file_part,
    })
}

/// The Bellman check's own bytes for a table of `entries` in `encoding`, and what they are:
/// bytes are read in the map; packed entries decoded first (mod3 and 1-bit with a bit per
/// entry of what is known).
fn bellman_memory(encoding: Encoding, entries: u64) -> (u64, String) {
    let decoded = match encoding {
        Encoding::Byte => 0,
        Encoding::Mod3 | Encoding::OneBit => entries + entries.div_ceil(64) * 8,
        Encoding::Nibble | Encoding::MinNibble { .. } => entries,
    };
    let detail = if decoded == 0 {
        "the Bellman check on the mapped bytes".to_string()
    } else {
        format!(
            "the Bellman check on {} of decoded values",
            human_bytes(decoded)
        )
    };
    (decoded, detail)
}

/// The sizes of a table's region index and file that a layer search's memory is made of;
/// each method gives the peak bytes of the layer proof of one blank rule, and what they are.
struct Sizes {
    states: u64,
    placements: u64,
    sets: u64,
    regions: u64,
    entries: u64,
    payload: u64,
}

impl Sizes {
    /// The layer search: two bits per state, two flags per block (a block is a (set,
    /// region)'s orders, or a set's when the blank is ignored).
    fn search(states: u64, blocks: u64) -> u64 {
        StateCodes::file_bytes(states) + 2 * blocks
    }

    fn zero_aware(&self, encoding: Encoding) -> (u64, String) {
        let codes = Self::search(self.states, self.regions);
        if matches!(encoding, Encoding::Nibble | Encoding::MinNibble { .. }) {
            // The distances, then encoded again.
            let peak = self.states + codes.max(self.payload);
            (
                peak,
                format!(
                    "a layer search of {} + {} of distances, then the distances + {} encoded again",
                    human_bytes(codes),
                    human_bytes(self.states),
                    human_bytes(self.payload)
                ),
            )
        } else {
            (
                codes,
                format!(
                    "a layer search of {}, each layer compared with the file a part at a time",
                    human_bytes(codes)
                ),
            )
        }
    }

    /// Packed entries (mod3, 1-bit): the search and two bits per state of its code, the file
    /// compared a part at a time; nibbles: the zero-aware distances, spread to every free
    /// cell, encoded again.
    fn aware(&self, encoding: Encoding) -> (u64, String) {
        let codes = Self::search(self.states, self.regions);
        if matches!(encoding, Encoding::Mod3 | Encoding::OneBit) {
            let state_codes = StateCodes::file_bytes(self.states);
            return (
                codes + state_codes,
                format!(
                    "a layer search of {} + {} of each zero-aware state's code, then the file compared a part at a time",
                    human_bytes(codes),
                    human_bytes(state_codes)
                ),
            );
        }
        let peak = self.states + codes.max(self.entries + self.payload);
        (
            peak,
            format!(
                "a layer search of {} + {} of zero-aware distances, then {} of aware values + {} encoded again",
                human_bytes(codes),
                human_bytes(self.states),
                human_bytes(self.entries),
                human_bytes(self.payload)
            ),
        )
    }

    /// The distances by placement, put in rank order, encoded again.
    fn ignored(&self) -> (u64, String) {
        let placements = self.placements;
        let codes = Self::search(placements, self.sets);
        let peak = (placements + codes)
            .max(2 * placements)
            .max(placements + self.payload);
        (
            peak,
            format!(
                "a layer search of {} + {} of distances, then as many in the table's order + {} encoded again",
                human_bytes(codes),
                human_bytes(placements),
                human_bytes(self.payload)
            ),
        )
    }

    /// The least distance per placement; bytes are compared in the map, other encodings put
    /// in rank order and encoded again.
    fn minimized(&self, encoding: Encoding) -> (u64, String) {
        let placements = self.placements;
        let codes = Self::search(self.states, self.regions);
        let again = if encoding == Encoding::Byte {
            0
        } else {
            2 * placements + self.payload
        };
        // The two-bit array goes with the search (the least distances stay).
        let peak = (placements + codes).max(again);
        let mut detail = format!(
            "a layer search of {} + {} of least distances",
            human_bytes(codes),
            human_bytes(placements)
        );
        if again > 0 {
            let _ = write!(
                detail,
                ", then as many in the table's order + {} encoded again",
                human_bytes(self.payload)
            );
        }
        (peak, detail)
    }
}

impl ProofMemory {
    /// Bytes of a mapped table file of `file_bytes` that stay resident during the proof: a
    /// part of it when the proof lets the parts it read go, else all of it.
    pub fn file_resident(&self, file_bytes: u64) -> u64 {
        self.file_part
            .map_or(file_bytes, |part| part.min(file_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bellman::tests::table;
    use tilepdb_common::Goal;
    use tilepdb_common::table::Pdb;
    use tilepdb_common::table::write::EncodedTable;

    /// Aware and zero-aware tables in packed entries are proven reading the file a part at a
    /// time: the plan counts that part of the file, not all of it; nibbles, whose proof reads
    /// the payload whole, count all of it.
    #[test]
    fn packed_layer_proofs_hold_a_part_of_the_file() {
        let board: tilepdb_common::Board = "4x4".parse().unwrap();
        let pattern = tilepdb_common::Pattern::new(board, vec![1, 2, 3, 4, 5, 6, 7]).unwrap();
        for rule in [BlankRule::ZeroAware, BlankRule::Aware] {
            let space = StateSpace::new(board, Goal::BlankFirst, pattern.clone(), rule).unwrap();
            for encoding in [Encoding::Mod3, Encoding::OneBit, Encoding::Nibble] {
                let plan = proof_memory(&space, encoding).unwrap();
                let file = encoding.payload_len(space.entries());
                let part = match rule {
                    BlankRule::ZeroAware => crate::layers::ZERO_AWARE_PART,
                    _ => crate::layers::AWARE_PACKED_PART,
                } as u64;
                let resident = if encoding == Encoding::Nibble {
                    file
                } else {
                    part
                };
                assert!(part < file, "{rule} {encoding}");
                assert_eq!(plan.file_resident(file), resident, "{rule} {encoding}");
            }
        }
    }

    /// The proof named for each kind and encoding is the one `verify_deep` runs.
    #[test]
    fn the_proof_named_is_the_one_that_runs() {
        let dir = tempfile::tempdir().unwrap();
        for rule in [
            BlankRule::Minimized,
            BlankRule::ZeroAware,
            BlankRule::Aware,
            BlankRule::Ignored,
        ] {
            let (space, values) = table("3x3", &[1, 2, 3], Goal::BlankFirst, rule);
            for encoding in [
                Encoding::Byte,
                Encoding::Nibble,
                Encoding::Mod3,
                Encoding::OneBit,
                Encoding::min_nibble(4).unwrap(),
            ] {
                let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
                    continue;
                };
                let path = dir.path().join(format!("{rule}-{encoding}.pdb"));
                table.write(&path).unwrap();
                let report = crate::verify_deep(&Pdb::open(&path).unwrap()).unwrap();
                let plan = proof_memory(&space, encoding).unwrap();
                assert_eq!(plan.proof, report.proof, "{rule} {encoding}");
                assert!(plan.bytes > 0 && !plan.detail.is_empty());
            }
        }
    }
}
