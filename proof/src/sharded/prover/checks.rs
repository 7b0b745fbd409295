//! A prover's entry checks: each state it meets compared with its file entry, a zero-aware
//! layer's entries once the layer is complete (in the shard's entry order, a part of the
//! entries at a time), a minimized placement's entry when any of its regions is first met.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use tilepdb_common::StateCodes;
use tilepdb_common::table::Encoding;

use super::{Met, ShardProver};
use crate::error::Result;
use crate::sharded::entries::PackedCodes;
use crate::walks::fail;

#[expect(
    clippy::cast_possible_truncation,
    reason = "blocks, orders and placements index arrays held in memory, so they fit in usize"
)]
impl ShardProver {
    /// Compares a zero-aware table's entries of the layer at `depth`, just met (the states of
    /// its code in the blocks raised in `next`), with its code, in the shard's order, a part
    /// of the entries at a time; an error names the first wrong one. Nothing for a minimized
    /// table (its entries are compared as they are met).
    pub(super) fn check_layer(&mut self, depth: u32) -> Result<()> {
        if self.minimized {
            return Ok(());
        }
        let (code, want) = (StateCodes::code_of_depth(depth), self.code_of(depth));
        let (width, next, codes) = (self.width, &self.next, &self.codes);
        let blocks = |entries: &Range<u64>| {
            (entries.start / width..entries.end.div_ceil(width))
                .filter(|&b| next[b as usize].load(Relaxed))
        };
        let wrong = self.entries.first_in_parts(
            |entries| blocks(&entries).next().is_some(),
            |entries, part| {
                blocks(&entries).find_map(|b| {
                    let states = (b * width).max(entries.start)..((b + 1) * width).min(entries.end);
                    first_wrong(codes, states, code, want, part, entries.start)
                })
            },
        )?;
        match wrong {
            Some((e, stored)) => Err(fail(
                &self.space,
                format!(
                    "entry {} is at distance {depth} but stores {stored}, not {want} (proof shard {})",
                    self.file_entry(e),
                    self.shard
                ),
            )),
            None => Ok(()),
        }
    }

    /// The code stored for the shard's entry `e`, its entries in memory (a minimized
    /// table's).
    pub(super) fn stored(&self, e: u64) -> Result<u8> {
        self.entries.get(e).ok_or_else(|| {
            fail(
                &self.space,
                format!(
                    "proof shard {} keeps its entries in a file, read only in order",
                    self.shard
                ),
            )
        })
    }

    /// A state of placement (`set`, `order`) just met at `depth`: its entry counted in `met`.
    /// A minimized table's placement entry is checked the first time any of its regions is
    /// met (a zero-aware entry is checked with its layer, [`ShardProver::finish_layer`]).
    #[inline(always)]
    pub(super) fn met_entry(&self, set: u64, order: u64, depth: u32, met: &mut Met) -> Result<()> {
        if self.minimized {
            let p = set * self.width + order - self.own.start;
            let (word, bit) = ((p / 64) as usize, 1u64 << (p % 64));
            if self.placed[word].fetch_or(bit, Relaxed) & bit != 0 {
                return Ok(());
            }
            let (stored, want) = (self.stored(p)?, self.code_of(depth));
            if stored != want {
                return Err(fail(
                    &self.space,
                    format!(
                        "entry {} is at distance {depth} but stores {stored}, not {want} (proof shard {})",
                        self.file_entry(p),
                        self.shard
                    ),
                ));
            }
        }
        met.entries += 1;
        Ok(())
    }

    /// The code an entry of `depth` stores.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a byte table's depths stay below 255 (finish_layer fails first); the other codes are a remainder below 3 or one bit"
    )]
    pub(super) fn code_of(&self, depth: u32) -> u8 {
        match self.encoding {
            Encoding::OneBit => ((depth >> 1) & 1) as u8,
            Encoding::Mod3 => (depth % 3) as u8,
            _ => depth as u8,
        }
    }

    /// The file entry of the shard's entry `e`: its state for a zero-aware table, its
    /// placement's rank for a minimized one.
    pub(super) fn file_entry(&self, e: u64) -> u64 {
        let order = self.own.start + e % self.width;
        if self.minimized {
            let cells = self.index.placement_cells(e / self.width, order);
            self.space.ranker().rank(&cells[..self.index.k()])
        } else {
            (e / self.width) * self.f + order
        }
    }
}

/// The first state of `states` with `code` in `codes` whose entry is not `want`, and what it
/// stores; `part` holds the entries from `first` on.
pub(super) fn first_wrong(
    codes: &StateCodes,
    states: Range<u64>,
    code: u8,
    want: u8,
    part: PackedCodes<'_>,
    first: u64,
) -> Option<(u64, u8)> {
    let mut wrong = None;
    codes.for_each_with_code(states, code, |e| {
        if wrong.is_none() {
            let stored = part.get(e - first);
            if stored != want {
                wrong = Some((e, stored));
            }
        }
    });
    wrong
}
