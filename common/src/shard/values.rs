//! A finished table's values put in file order from the shards' parts.

use std::ops::Range;

use super::ShardLayout;
use crate::error::{Error, Result};
use crate::file_order::for_each_depth_entry;
use crate::region_index::RegionIndex;
use crate::space::{BlankRule, StateSpace};
use crate::table::DepthCode;

/// The file's values of `entries` (in the depth store's `code`, as the single-machine build
/// gives them: a byte per value, or packed codes) from each shard's [`Shard::own_values`](super::Shard::own_values)
/// of the same entries (`parts[p]`: shard `p`'s). Refuses parts of the wrong length.
pub fn assemble_values(
    space: &StateSpace,
    index: &RegionIndex,
    layout: ShardLayout,
    code: DepthCode,
    entries: Range<u64>,
    parts: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let count = entries.end - entries.start;
    let mut out = vec![0u8; usize::try_from(code.bytes_for(count)).map_err(|_| too_large())?];
    let mut taken = vec![0usize; parts.len()];
    let f = index.orders();
    let (mut at, mut short) = (0u64, None);
    let mut put = |p: usize, at: u64| match parts.get(p).and_then(|part| part.get(taken[p])) {
        Some(&stored) => {
            taken[p] += 1;
            if code == DepthCode::Byte {
                out[usize::try_from(at).expect("below out's length")] = stored.wrapping_sub(1);
            } else {
                code.put(&mut out, at, stored);
            }
        }
        None => short = short.or(Some(p)),
    };
    if space.rule() == BlankRule::ZeroAware {
        // Each block's entries are a run of each shard's values in turn: copied run by run.
        let owned: Vec<Range<u64>> = (0..layout.shards()).map(|p| layout.orders_of(p)).collect();
        for_each_block_part(&entries, f, |_, orders| {
            for (p, theirs) in owned.iter().enumerate() {
                let n = orders
                    .end
                    .min(theirs.end)
                    .saturating_sub(orders.start.max(theirs.start));
                if n == 0 {
                    continue;
                }
                let n = usize::try_from(n).expect("a block's orders fit in memory");
                let run = parts
                    .get(p)
                    .and_then(|part| part.get(taken[p]..taken[p] + n));
                match run {
                    Some(run) if code == DepthCode::Byte => {
                        let at = usize::try_from(at).expect("below out's length");
                        for (o, &stored) in out[at..at + n].iter_mut().zip(run) {
                            *o = stored.wrapping_sub(1);
                        }
                    }
                    Some(run) => {
                        for (i, &stored) in (at..).zip(run) {
                            code.put(&mut out, i, stored);
                        }
                    }
                    None => short = short.or(Some(p)),
                }
                if run.is_some() {
                    taken[p] += n;
                }
                at += n as u64;
            }
        });
    } else {
        for_each_depth_entry(space, index, entries, |e| {
            put(layout.owner(e % f) as usize, at);
            at += 1;
        });
    }
    if let Some(p) = short {
        return Err(Error::Shard(format!("shard {p} sent too few values")));
    }
    if let Some(p) = (0..parts.len()).find(|&p| taken[p] != parts[p].len()) {
        return Err(Error::Shard(format!(
            "shard {p} sent {} values where {} were asked for",
            parts[p].len(),
            taken[p]
        )));
    }
    Ok(out)
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
