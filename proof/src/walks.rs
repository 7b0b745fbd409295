//! The walks the proofs share: over every placement rank, over chunks of tile sets, and over
//! the moves out of a block of the region index. Written here, not taken from the build's
//! kernel, so that a mistake in the kernel cannot hide in its own proof.

use std::ops::Range;

use rayon::prelude::*;
use tilepdb_common::region_index::{RegionIndex, rank_set};
use tilepdb_common::{BlankRule, MAX_CELLS, StateSpace};

use crate::error::{Error, Result};

/// The error of a table of `space` that fails a proof for `reason`.
pub fn fail(space: &StateSpace, reason: String) -> Error {
    Error::Check {
        table: format!("{} {} {}", space.board(), space.rule(), space.pattern()),
        reason,
    }
}

/// Runs `check` on every rank in parallel chunks; the first failure wins.
pub(crate) fn for_all_ranks(
    space: &StateSpace,
    check: impl Fn(u64, &[u8], u32) -> std::result::Result<(), String> + Sync,
) -> Result<()> {
    let placements = space.placements();
    let chunk = (placements / 256).max(1024);
    let chunks: Vec<Range<u64>> = (0..placements.div_ceil(chunk))
        .map(|i| i * chunk..((i + 1) * chunk).min(placements))
        .collect();
    chunks.par_iter().try_for_each(|ranks| {
        let mut cells = [0u8; MAX_CELLS];
        for rank in ranks.clone() {
            let occupied = space.ranker().unrank(rank, &mut cells);
            let free = space.board().all_cells() & !occupied;
            check(rank, &cells[..space.k()], free).map_err(|reason| fail(space, reason))?;
        }
        Ok(())
    })
}

/// The sets `0..sets` of a region index cut into about 512 ranges, for checks that walk
/// them in parallel.
pub(crate) fn set_chunks(sets: u64) -> Vec<Range<u64>> {
    let chunk = (sets / 512).max(1);
    (0..sets.div_ceil(chunk))
        .map(|i| i * chunk..((i + 1) * chunk).min(sets))
        .collect()
}

/// A move of a pattern tile from cell `from` of set `c` into cell `to` of the blank's region
/// on `index`: the child's block (its set's regions' first block plus the region that holds
/// `from` among the child's free cells) and the positions of the moved tile among the cells of
/// the two sets.
pub(crate) struct BlockMove {
    /// The child's block: (set, region) in the region index.
    pub block: u64,
    /// The child's set rank.
    pub set: u64,
    /// The moved tile's position among the cells of set `c`.
    pub pa: usize,
    /// Its position among the cells of the child's set.
    pub pb: usize,
}

/// Checks that every set's regions in `index` are the connected components of its free
/// cells on `space`'s board (each connected, none connected to another, together every free
/// cell), which [`for_each_block_move`] relies on: a proof calls it once before it walks.
/// Nothing to check when `space` ignores the blank (a block is a set).
pub(crate) fn check_regions(space: &StateSpace, index: &RegionIndex) -> Result<()> {
    if space.rule() == BlankRule::Ignored {
        return Ok(());
    }
    let board = space.board();
    set_chunks(index.sets()).par_iter().try_for_each(|sets| {
        for c in sets.clone() {
            let free = board.all_cells() & !index.set_mask(c);
            let mut covered = 0u32;
            for &region in index.regions_of(c) {
                let cell = region.trailing_zeros() as usize;
                if region == 0 || region & covered != 0 || board.region(cell, free) != region {
                    return Err(fail(
                        space,
                        format!(
                            "set {c}: region {region:#x} of the index is not a connected \
                             component of its free cells {free:#x}"
                        ),
                    ));
                }
                covered |= region;
            }
            if covered != free {
                return Err(fail(
                    space,
                    format!(
                        "set {c}: the index's regions leave free cells {:#x} out",
                        free & !covered
                    ),
                ));
            }
        }
        Ok(())
    })
}

/// Calls `visit` with the [`BlockMove`] of every move out of the block of set `c` and the
/// blank's `region`: each pattern tile next to the region stepping into each of its cells
/// next to the tile. When `space` ignores the blank, `region` is every free cell of the set
/// and a block is a set. The index's regions must have passed [`check_regions`]. Stops at
/// the first error.
pub(crate) fn for_each_block_move(
    space: &StateSpace,
    index: &RegionIndex,
    c: u64,
    region: u32,
    mut visit: impl FnMut(BlockMove) -> Result<()>,
) -> Result<()> {
    let board = space.board();
    let mut movers = board.dilate(region) & index.set_mask(c);
    while movers != 0 {
        let from = movers.trailing_zeros() as usize;
        movers &= movers - 1;
        let mut targets = board.neighbours(from) & region;
        while targets != 0 {
            let to = targets.trailing_zeros() as usize;
            targets &= targets - 1;
            visit(block_move(space, index, c, from, to)?)?;
        }
    }
    Ok(())
}

/// The [`BlockMove`] of the tile on `from` of set `c` stepping to `to` (the child's block is
/// its set when `space` ignores the blank): the blank ends on `from`, in the child's region
/// that holds it (the regions being the free cells' components, [`check_regions`]); an
/// error if no region of the child's set holds it.
fn block_move(
    space: &StateSpace,
    index: &RegionIndex,
    c: u64,
    from: usize,
    to: usize,
) -> Result<BlockMove> {
    let set = index.set_mask(c);
    let child_set = set ^ (1 << from) ^ (1 << to);
    let child_c = rank_set(child_set);
    let (pa, pb) = positions(set, child_set, from, to);
    if space.rule() == BlankRule::Ignored {
        return Ok(BlockMove {
            block: child_c,
            set: child_c,
            pa,
            pb,
        });
    }
    let Some(r) = index
        .regions_of(child_c)
        .iter()
        .position(|&m| m & (1 << from) != 0)
    else {
        return Err(fail(
            space,
            format!("set {c}: a move leads to no region of set {child_c}"),
        ));
    };
    Ok(BlockMove {
        block: index.first_block(child_c) + r as u64,
        set: child_c,
        pa,
        pb,
    })
}

/// The positions of a tile moved from `from` to `to` among the cells of its set `set` and of
/// the child's set `next_set`: how many of each set's cells lie below it.
fn positions(set: u32, next_set: u32, from: usize, to: usize) -> (usize, usize) {
    let below = |s: u32, cell: usize| (s & ((1u32 << cell) - 1)).count_ones() as usize;
    (below(set, from), below(next_set, to))
}

#[cfg(test)]
mod tests {
    use super::positions;

    #[test]
    fn positions_count_the_cells_below() {
        // Set {1, 4, 6}: the tile on 4 is second; moved to 7, set {1, 6, 7}: third.
        assert_eq!(positions(0b101_0010, 0b1100_0010, 4, 7), (1, 2));
        assert_eq!(positions(0b1, 0b10, 0, 1), (0, 0));
    }
}
