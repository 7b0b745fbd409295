//! The memory a single-machine build holds, known before anything is allocated: the two-bit
//! array and the depth store during the search, then the values in the table's order and the
//! encoded payload.

use tilepdb_common::table::{DepthCode, Encoding};
use tilepdb_common::{BlankRule, StateCodes, StateSpace, human_bytes};

use super::units::StateIndex;
use crate::error::{Error, Result};

/// What the depth store of a build of `space` keeps when the table is to be
/// written in `encoding` (`None`: not known, a byte per entry).
pub fn depth_code(space: &StateSpace, encoding: Option<Encoding>) -> DepthCode {
    encoding.map_or(DepthCode::Byte, |e| {
        DepthCode::for_encoding(e, space.rule())
    })
}

/// The most a build of `space` (to be written in `encoding`, see
/// [`depth_code`]) holds in memory at once, in bytes, and the parts in words: the two-bit
/// array with the depth store during the search; then the store with the values in placement
/// order (every rule but zero-aware, whose store is in table order); then the values with the
/// payload when encoding copies them (not for `byte` from bytes nor `1-bit` from its codes).
pub fn build_memory(space: &StateSpace, encoding: Option<Encoding>) -> Result<(u64, String)> {
    let search_index = StateIndex::region(space)?;
    let code = depth_code(space, encoding);
    let states = search_index.states(space);
    let codes = StateCodes::file_bytes(states);
    let store = code.bytes_for(search_index.depth_entries(space));
    let reordered = match space.rule() {
        BlankRule::ZeroAware => 0,
        _ => code.bytes_for(space.entries()),
    };
    let values = if reordered > 0 { reordered } else { store };
    let payload = match (code, encoding) {
        (_, None) | (DepthCode::Byte, Some(Encoding::Byte)) | (DepthCode::OneBit, _) => 0,
        (_, Some(e)) => e.payload_len(space.entries()),
    };
    // The index itself: a mask and an offset per set, a mask per region.
    let sets = tilepdb_common::region_index::binomial(space.board().cells(), space.k());
    let orders = tilepdb_common::region_index::factorial(space.k());
    let index = 8 * sets + 4 * (states / orders);
    let what = match code {
        DepthCode::Byte => "depth bytes".to_string(),
        code => format!(
            "depth store ({}, {} bit(s) per entry)",
            code.name(),
            code.bits()
        ),
    };
    let mut detail = format!(
        "two-bit array of {states} states {} + {} {what}",
        human_bytes(codes),
        human_bytes(store),
    );
    if reordered > 0 {
        detail.push_str(", then the store + ");
        detail.push_str(&human_bytes(reordered));
        detail.push_str(" of values in placement order");
    }
    if payload > 0 {
        detail.push_str(", then the values + a ");
        detail.push_str(&human_bytes(payload));
        detail.push_str(" payload");
    }
    // The two-bit array is freed before the values are put in placement order.
    let peak = (codes + store).max(store + reordered).max(values + payload);
    Ok((peak + index, detail))
}

/// Refuses, with the figure, a build that would not fit in `limit` bytes.
pub fn check_build_memory(
    space: &StateSpace,
    encoding: Option<Encoding>,
    limit: Option<u64>,
) -> Result<()> {
    let (needed, detail) = build_memory(space, encoding)?;
    if let Some(limit) = limit.filter(|&l| needed > l) {
        return Err(Error::TooLarge {
            pattern: space.pattern().to_string(),
            needed: human_bytes(needed),
            detail,
            limit: human_bytes(limit),
        });
    }
    Ok(())
}
