//! A finished table's values put in file order from the shards' parts.

use std::ops::Range;

use super::ShardLayout;
use crate::error::{Error, Result};
use crate::file_order::for_each_depth_entry;
use crate::region_index::RegionIndex;
use crate::space::{BlankRule, StateSpace};
use crate::table::DepthCode;

/// One shard's stored codes of its entries in a range of the file, in file order, packed as
/// its depth store packs them ([`Shard::own_codes`](super::Shard::own_codes)): `count` codes in
/// `code.bytes_for(count)` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnCodes {
    pub(super) code: DepthCode,
    pub(super) codes: Vec<u8>,
    pub(super) count: u64,
}

impl OwnCodes {
    /// `count` codes of `code` packed in `codes` (as read from a peer): refused unless they
    /// take exactly `code.bytes_for(count)` bytes.
    pub fn new(code: DepthCode, codes: Vec<u8>, count: u64) -> Result<OwnCodes> {
        if codes.len() as u64 != code.bytes_for(count) {
            return Err(Error::Shard(format!(
                "{} bytes for {count} {} codes, which take {}",
                codes.len(),
                code.name(),
                code.bytes_for(count)
            )));
        }
        Ok(OwnCodes { code, codes, count })
    }

    /// The packed codes.
    pub fn codes(&self) -> &[u8] {
        &self.codes
    }

    /// How many codes.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// The file's values of `entries` (in the depth store's `code`, as the single-machine build
/// gives them: a byte per value, or packed codes) from each shard's
/// [`Shard::own_codes`](super::Shard::own_codes) of the same entries (`parts[p]`: shard
/// `p`'s). Refuses parts of another code or of the wrong length.
pub fn assemble_values(
    space: &StateSpace,
    index: &RegionIndex,
    layout: ShardLayout,
    code: DepthCode,
    entries: Range<u64>,
    parts: &[OwnCodes],
) -> Result<Vec<u8>> {
    if let Some(p) = parts.iter().position(|part| part.code != code) {
        return Err(Error::Shard(format!(
            "shard {p} sent {} codes for a {} store",
            parts[p].code.name(),
            code.name()
        )));
    }
    let count = entries.end - entries.start;
    let mut out = vec![0u8; usize::try_from(code.bytes_for(count)).map_err(|_| too_large())?];
    let mut taken = vec![0u64; parts.len()];
    let f = index.orders();
    let (mut at, mut short) = (0u64, None);
    // Shard `p`'s next `n` codes into the values from entry `at`, or the shard noted as short.
    let mut put_run = |p: usize, n: u64| {
        match parts.get(p) {
            Some(part) if taken[p] + n <= part.count => {
                copy_run(part, taken[p], &mut out, at, n);
                taken[p] += n;
            }
            _ => short = short.or(Some(p)),
        }
        at += n;
    };
    if space.rule() == BlankRule::ZeroAware {
        // Each block's entries are a run of each shard's codes in turn: copied run by run.
        let owned: Vec<Range<u64>> = (0..layout.shards()).map(|p| layout.orders_of(p)).collect();
        for_each_block_part(&entries, f, |_, orders| {
            for (p, theirs) in owned.iter().enumerate() {
                let n = orders
                    .end
                    .min(theirs.end)
                    .saturating_sub(orders.start.max(theirs.start));
                if n > 0 {
                    put_run(p, n);
                }
            }
        });
    } else {
        for_each_depth_entry(space, index, entries, |e| {
            put_run(layout.owner(e % f) as usize, 1);
        });
    }
    if let Some(p) = short {
        return Err(Error::Shard(format!("shard {p} sent too few values")));
    }
    if let Some(p) = (0..parts.len()).find(|&p| taken[p] != parts[p].count) {
        return Err(Error::Shard(format!(
            "shard {p} sent {} values where {} were asked for",
            parts[p].count, taken[p]
        )));
    }
    Ok(out)
}

/// Puts the `n` codes of `part` from its code `from` into the values `out` from entry `at`: a
/// byte store's `depth + 1` as the depth (the single machine's byte values), packed codes as
/// they are.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the positions are below the lengths of vectors held in memory"
)]
fn copy_run(part: &OwnCodes, from: u64, out: &mut [u8], at: u64, n: u64) {
    if part.code == DepthCode::Byte {
        let (from, at, n) = (from as usize, at as usize, n as usize);
        for (o, &stored) in out[at..at + n].iter_mut().zip(&part.codes[from..from + n]) {
            *o = stored.wrapping_sub(1);
        }
    } else {
        part.code.copy_codes(|i| part.codes[i], from, out, at, n);
    }
}

/// Calls `f(block, orders)` for each block of `k!` = `orders_per_block` orders that `entries`
/// (states of the index) cross, with the orders of the block in `entries`, in order.
pub(super) fn for_each_block_part(
    entries: &Range<u64>,
    orders_per_block: u64,
    mut f: impl FnMut(u64, Range<u64>),
) {
    if entries.is_empty() {
        return;
    }
    let n = orders_per_block;
    for block in entries.start / n..=(entries.end - 1) / n {
        let first = block * n;
        let start = entries.start.max(first) - first;
        let end = entries.end.min(first + n) - first;
        f(block, start..end);
    }
}

fn too_large() -> Error {
    Error::Shard("the range of entries does not fit in memory".into())
}
