//! The memory a single-machine build of a table holds, known before anything is allocated
//! ([`MemoryPlan`]): the two-bit array and the depth store during the search, then the store
//! with the part of the file being written from it; then the table file, mapped and read
//! through (its checksum; a proof that reads it once in order holds a part of it), with the
//! proof's own arrays while it is proven
//! ([`tilepdb_proof::memory`]); and an allowance for the program itself. The most of these at
//! once is what the kernel counts as the process's peak resident memory.

use std::fmt::Write as _;

use tilepdb_common::table::file_writer::WRITE_BUFFER_BYTES;
use tilepdb_common::table::header::HEADER_LEN;
use tilepdb_common::table::{DepthCode, Encoding};
use tilepdb_common::{BlankRule, StateCodes, StateSpace, human_bytes};
use tilepdb_proof::memory::{ProofMemory, proof_memory};

use super::arrays::store_can_be_state;
use super::stream::part_entries;
use super::units::StateIndex;
use crate::error::{Error, Result};

/// What the depth store of a build of `space` keeps when the table is to be
/// written in `encoding` (`None`: not known, a byte per entry).
pub fn depth_code(space: &StateSpace, encoding: Option<Encoding>) -> DepthCode {
    encoding.map_or(DepthCode::Byte, |e| {
        DepthCode::for_encoding(e, space.rule())
    })
}

/// The program's own resident memory beside its arrays: its code and libraries, the threads'
/// stacks, the allocator's arenas and the small buffers of the search and the proof.
pub const PROGRAM_BYTES: u64 = 12 << 20;

/// The memory a build of one table holds, by what holds it, and the most at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// The most at once, in bytes: the program, and the larger of the build and of the file
    /// with its proof.
    pub bytes: u64,
    /// The build: the most its search, values and encoding hold at once, with the region
    /// index.
    pub build_bytes: u64,
    /// The table file after the build, mapped and read through (the header, the payload and,
    /// for a zero-aware table, the region index it is opened with); 0 when no file is
    /// written.
    pub file_bytes: u64,
    /// The proof of the file and its own arrays (`None`: not proven).
    pub proof: Option<ProofMemory>,
    /// [`PROGRAM_BYTES`].
    pub program_bytes: u64,
    /// What the bytes are, in words.
    pub detail: String,
}

impl MemoryPlan {
    /// The file mapped and the proof's arrays, while it is proven (the file alone without
    /// a proof).
    pub fn proof_phase_bytes(&self) -> u64 {
        match &self.proof {
            Some(p) => p.bytes + p.file_resident(self.file_bytes),
            None => self.file_bytes,
        }
    }
}

/// The memory a build of `space` holds at once: the search keeping what `encoding` stores
/// ([`depth_code`]); then, when `file` says the table is written in an encoding, its file
/// mapped and read through, and with `proves` its proof.
pub fn memory_plan(
    space: &StateSpace,
    encoding: Option<Encoding>,
    file: Option<Encoding>,
    proves: bool,
) -> Result<MemoryPlan> {
    let (build_bytes, build_detail) = search_memory(space, encoding)?;
    let mut detail = format!("the build: {build_detail}");
    let (file_bytes, proof) = match file {
        None => (0, None),
        Some(written) => {
            let index = match space.rule() {
                BlankRule::ZeroAware => index_bytes(space, space.region_search_states()?),
                _ => 0,
            };
            let file_bytes = HEADER_LEN as u64 + written.payload_len(space.entries()) + index;
            let proof = proves.then(|| proof_memory(space, written)).transpose()?;
            let _ = match &proof {
                Some(p) => write!(
                    detail,
                    "; then the {} file mapped, {} + its proof ({}): {}",
                    written,
                    human_bytes(file_bytes),
                    p.proof,
                    p.detail
                ),
                None => write!(
                    detail,
                    "; then the {written} file mapped, {} (not proven)",
                    human_bytes(file_bytes)
                ),
            };
            (file_bytes, proof)
        }
    };
    let mut plan = MemoryPlan {
        bytes: 0,
        build_bytes,
        file_bytes,
        proof,
        program_bytes: PROGRAM_BYTES,
        detail,
    };
    plan.bytes = plan.program_bytes + plan.build_bytes.max(plan.proof_phase_bytes());
    let _ = write!(
        plan.detail,
        "; and {} for the program",
        human_bytes(plan.program_bytes)
    );
    Ok(plan)
}

/// The most bytes of the region index of `space`, whose search has `states` states.
fn index_bytes(space: &StateSpace, states: u64) -> u64 {
    use tilepdb_common::region_index::{RegionIndex, binomial, factorial};
    let sets = binomial(space.board().cells(), space.k());
    RegionIndex::most_memory_bytes(sets, states / factorial(space.k()))
}

/// The most a build of `space` (written in `encoding`) holds at once with its proof, in bytes,
/// and the parts in words: [`memory_plan`] of a table written in `encoding` (bytes when
/// `None`) and proven.
pub fn build_memory(space: &StateSpace, encoding: Option<Encoding>) -> Result<(u64, String)> {
    let written = encoding.unwrap_or(Encoding::Byte);
    let plan = memory_plan(space, encoding, Some(written), true)?;
    Ok((plan.bytes, plan.detail))
}

/// The most the search of `space` (to be written in `encoding`, see [`depth_code`]) holds in
/// memory at once, in bytes, and the parts in words: the two-bit array with the depth store
/// during the search (the store alone when it is the search's state,
/// [`store_can_be_state`]); then the store with the part of the file being written, put in file
/// order and encoded from the store ([`super::stream`]: a part's values, its payload when
/// encoding makes a new one, and the file's buffer); and the region index.
fn search_memory(space: &StateSpace, encoding: Option<Encoding>) -> Result<(u64, String)> {
    let search_index = StateIndex::region(space)?;
    let code = depth_code(space, encoding);
    let states = search_index.states(space);
    let store_is_state = store_can_be_state(space, code);
    let codes = if store_is_state {
        0
    } else {
        StateCodes::file_bytes(states)
    };
    let store = code.bytes_for(search_index.depth_entries(space));
    let entries_per_part = part_entries(code).min(space.entries());
    // The part in file order, and its payload when encoding makes a new one (a byte part of
    // a byte file and a 1-bit part are written as they are).
    let part_bytes = code.bytes_for(entries_per_part);
    let as_is = match code {
        DepthCode::Byte => encoding.unwrap_or(Encoding::Byte) == Encoding::Byte,
        DepthCode::OneBit => true,
        DepthCode::Mod3 => false,
    };
    let payload_bytes = if as_is { 0 } else { part_bytes };
    let part = part_bytes + payload_bytes + WRITE_BUFFER_BYTES as u64;
    let index = index_bytes(space, states);
    let what = match code {
        DepthCode::Byte => "depth bytes".to_string(),
        code => format!(
            "depth store ({}, {} bit(s) per entry)",
            code.name(),
            code.bits()
        ),
    };
    let search = if store_is_state {
        format!(
            "{} {what} of {states} states, the search's state",
            human_bytes(store)
        )
    } else {
        format!(
            "two-bit array of {states} states {} + {} {what}",
            human_bytes(codes),
            human_bytes(store)
        )
    };
    let detail = format!(
        "{search}, then the store + {} of the file's part being written",
        human_bytes(part),
    );
    // The two-bit array is freed before the file is written.
    let peak = (codes + store).max(store + part);
    Ok((peak + index, detail))
}

/// Refuses, with the figure, a build of `space` (written in `encoding` and proven, see
/// [`build_memory`]) that would not fit in `limit` bytes.
pub fn check_build_memory(
    space: &StateSpace,
    encoding: Option<Encoding>,
    limit: Option<u64>,
) -> Result<()> {
    let written = encoding.unwrap_or(Encoding::Byte);
    check_memory_plan(
        space,
        &memory_plan(space, encoding, Some(written), true)?,
        limit,
    )
}

/// Refuses, with its figure and parts, a build of `space` whose `plan` does not fit in `limit`
/// bytes.
pub fn check_memory_plan(space: &StateSpace, plan: &MemoryPlan, limit: Option<u64>) -> Result<()> {
    if let Some(limit) = limit.filter(|&l| plan.bytes > l) {
        return Err(Error::TooLarge {
            pattern: space.pattern().to_string(),
            needed: human_bytes(plan.bytes),
            detail: plan.detail.clone(),
            limit: human_bytes(limit),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::{Board, Goal, Pattern};
    use tilepdb_proof::Proof;

    fn space(board: &str, tiles: &[u8], rule: BlankRule) -> StateSpace {
        let board: Board = board.parse().unwrap();
        StateSpace::new(
            board,
            Goal::BlankFirst,
            Pattern::new(board, tiles.to_vec()).unwrap(),
            rule,
        )
        .unwrap()
    }

    /// The plan of a proven build counts the file mapped and the proof's arrays beside the
    /// build, and names the proof; without the proof it counts the file alone.
    #[test]
    fn the_plan_counts_the_file_and_the_proof() {
        // 15-puzzle, 7 tiles, minimized bytes: the layer search's least distance per
        // placement and two bits per state, beside a part of the mapped file.
        let s = space("4x4", &[1, 2, 3, 4, 5, 6, 7], BlankRule::Minimized);
        let e = Some(Encoding::Byte);
        let proven = memory_plan(&s, e, e, true).unwrap();
        let unproven = memory_plan(&s, e, e, false).unwrap();
        let build = memory_plan(&s, e, None, false).unwrap();
        let proof = proven.proof.clone().expect("a proof is planned");
        assert_eq!(proof.proof, Proof::LayerSearch);
        let placements = s.placements();
        let codes = StateCodes::file_bytes(s.region_search_states().unwrap());
        assert!(proof.bytes >= placements + codes, "{proof:?}");
        assert_eq!(proven.file_bytes, HEADER_LEN as u64 + placements);
        // The proof compares the byte file a part at a time, letting each part go.
        let part = proof
            .file_part
            .expect("a minimized byte file is read in parts");
        assert!(part < proven.file_bytes);
        assert_eq!(
            proven.bytes,
            PROGRAM_BYTES + proven.build_bytes.max(part + proof.bytes)
        );
        assert!(proven.bytes > unproven.bytes && unproven.bytes >= build.bytes);
        assert_eq!(build.bytes, PROGRAM_BYTES + build.build_bytes);
        assert!(unproven.proof.is_none() && unproven.file_bytes == proven.file_bytes);
        for words in ["layer-search", "file mapped", "for the program"] {
            assert!(proven.detail.contains(words), "{words}: {}", proven.detail);
        }
        // `build_memory`, which the distributed job's room check uses too, counts the proof.
        assert_eq!(build_memory(&s, e).unwrap().0, proven.bytes);

        // A zero-aware 1-bit table: the layer search's two bits per state; a byte one: the
        // Bellman check on the mapped bytes.
        let z = space("4x4", &[1, 2, 3, 4, 5], BlankRule::ZeroAware);
        let one_bit = Some(Encoding::OneBit);
        let plan = memory_plan(&z, one_bit, one_bit, true).unwrap();
        let proof = plan.proof.unwrap();
        assert_eq!(proof.proof, Proof::LayerSearch);
        assert!(proof.bytes >= StateCodes::file_bytes(z.region_search_states().unwrap()));
        let byte = Some(Encoding::Byte);
        let plan = memory_plan(&z, byte, byte, true).unwrap();
        assert_eq!(plan.proof.unwrap().proof, Proof::BellmanCheck);
    }

    /// A limit between the plans without and with the proof refuses the proven build, and the
    /// refusal names the proof; the same limit lets the unproven build through.
    #[test]
    fn the_refusal_names_the_proof() {
        let s = space("4x4", &[1, 2, 3, 4, 5, 6, 7], BlankRule::Minimized);
        let e = Some(Encoding::Byte);
        let proven = memory_plan(&s, e, e, true).unwrap();
        let unproven = memory_plan(&s, e, e, false).unwrap();
        let limit = Some(u64::midpoint(proven.bytes, unproven.bytes));
        assert!(check_memory_plan(&s, &unproven, limit).is_ok());
        let refusal = check_memory_plan(&s, &proven, limit)
            .unwrap_err()
            .to_string();
        for words in [
            "pattern 1,2,3,4,5,6,7 needs",
            &human_bytes(proven.bytes),
            "its proof (layer-search)",
            "more than the",
        ] {
            assert!(refusal.contains(words), "{words}: {refusal}");
        }
        assert!(
            !refusal.contains("--"),
            "a library message names no flag: {refusal}"
        );
        // Exactly the plan fits.
        assert!(check_memory_plan(&s, &proven, Some(proven.bytes)).is_ok());
    }
}
