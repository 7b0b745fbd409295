//! One table of a set ready for lookups: its entry for a placement of its tiles (and the
//! blank's cell), the Manhattan distance its encoding may need, and its value read from the
//! payload.

use std::sync::Arc;
use tilepdb_common::table::mod3::{child_value, one_bit_child_value, one_bit_step_value};
use tilepdb_common::table::{Encoding, Pdb};

use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::{BlankRule, Board, MAX_CELLS, PlacementRanker};

use super::zero_aware::{RegionCounts, ZeroAwareIndex};
use crate::error::Result;

/// How a table's entries are indexed.
pub(super) enum Index {
    /// By the placement's rank, times the entries per placement (`slots`: the blank's cell
    /// among the free ones for aware tables, 1 for minimized and blank-ignored ones).
    Placement { ranker: PlacementRanker, slots: u64 },
    /// By (tile set, region of the blank, order): zero-aware tables.
    ZeroAware(ZeroAwareIndex),
}

/// What the zero-aware tables looked up together know of their region indices
/// ([`RegionCounts`]), one for each board and tile count.
///
/// A region index depends on the board and the number of tiles alone: tables of one size read
/// one copy of its counts, which stays in the processor's caches.
#[derive(Default)]
pub(super) struct SharedRegions {
    counts: Vec<Arc<RegionCounts>>,
}

impl SharedRegions {
    /// The counts of `region`, made once for its board and tile count.
    pub(super) fn shared(&mut self, region: &RegionIndex) -> Arc<RegionCounts> {
        if let Some(held) = self
            .counts
            .iter()
            .find(|held| held.serves(region.board(), region.k()))
        {
            return Arc::clone(held);
        }
        let counts = Arc::new(RegionCounts::new(region));
        self.counts.push(Arc::clone(&counts));
        counts
    }
}

/// One table of a set, ready for lookups.
pub(super) struct TableLookup<'a> {
    pub(super) pdb: &'a Pdb,
    pub(super) payload: &'a [u8],
    pub(super) encoding: Encoding,
    pub(super) index: Index,
    /// The pattern's tiles, `k` of them (arrays of the largest size: no bounds to check).
    pub(super) tiles: [u8; MAX_CELLS],
    pub(super) k: usize,
    /// The tile of the real state whose mirrored cell is the cell of `tiles[i]` in the
    /// reflected state.
    pub(super) mirror_sources: [u8; MAX_CELLS],
    goal_cells: Vec<u8>,
    /// Whether a value read from the payload needs the placement's Manhattan distance
    /// (nibbles; 1-bit entries of aware tables and of a state evaluated from scratch).
    needs_manhattan: bool,
    /// A 1-bit table whose value changes by exactly one after a move of one of its tiles
    /// (zero-aware and blank-ignored tables: the value has the parity of the placement's
    /// Manhattan distance, and the move changes that distance by one), so that a child's value
    /// needs no Manhattan distance.
    one_bit_steps: bool,
}

impl<'a> TableLookup<'a> {
    /// The lookups of `pdb`; `mirror_tile[t]`: the tile whose goal cell is the reflection of
    /// `t`'s (`t` itself without reflection). A zero-aware table reads the region counts of
    /// `regions` for its board and tile count ([`SharedRegions`]).
    pub(super) fn new(
        pdb: &'a Pdb,
        mirror_tile: &[u8],
        regions: &mut SharedRegions,
    ) -> TableLookup<'a> {
        let space = pdb.space();
        let pattern = space.pattern().tiles();
        let (mut tiles, mut mirror_sources) = ([0u8; MAX_CELLS], [0u8; MAX_CELLS]);
        for (j, &t) in pattern.iter().enumerate() {
            tiles[j] = t;
            mirror_sources[j] = mirror_tile[t as usize];
        }
        let index = match pdb.region_index() {
            Some(region) => Index::ZeroAware(ZeroAwareIndex::new(regions.shared(region))),
            None => Index::Placement {
                ranker: space.ranker().clone(),
                slots: space.entries() / space.placements(),
            },
        };
        let encoding = pdb.encoding();
        TableLookup {
            pdb,
            payload: pdb.payload(),
            encoding,
            index,
            tiles,
            k: pattern.len(),
            mirror_sources,
            goal_cells: space.goal_cells().to_vec(),
            needs_manhattan: encoding.needs_manhattan() || encoding == Encoding::OneBit,
            one_bit_steps: encoding == Encoding::OneBit && space.rule() != BlankRule::Aware,
        }
    }

    /// Whether a child's value comes from its entry's bit and the parent's value alone
    /// ([`TableLookup::one_bit_step`]): a 1-bit table whose value moves by exactly one.
    #[inline(always)]
    pub(super) fn steps_by_one(&self) -> bool {
        self.one_bit_steps
    }

    /// [`TableLookup::child_value`] of a table that [`TableLookup::steps_by_one`]: the value of
    /// entry `index` for a child whose parent's value is `old`, one more or one less.
    #[inline(always)]
    pub(super) fn one_bit_step(&self, index: u64, old: u8) -> u8 {
        let bit = (self.payload[(index >> 3) as usize] >> (index & 7)) & 1;
        one_bit_step_value(old, bit)
    }

    /// Asks the processor to fetch entry `index` ([`Encoding::prefetch`]).
    #[inline(always)]
    pub(super) fn prefetch(&self, index: u64) {
        if self.one_bit_steps {
            Encoding::OneBit.prefetch(self.payload, index);
        } else {
            self.encoding.prefetch(self.payload, index);
        }
    }

    /// Whether a child's value needs the Manhattan distance of the table's placement.
    #[inline(always)]
    pub(super) fn child_needs_manhattan(&self) -> bool {
        self.needs_manhattan && !self.one_bit_steps
    }

    /// The entry of the placement `at[..k]` (the cell of each of the table's tiles) with the
    /// blank on `blank`, on a board whose cells are `all_cells`.
    #[inline(always)]
    pub(super) fn entry(&self, at: &[u8; MAX_CELLS], blank: u8, all_cells: u32) -> u64 {
        match &self.index {
            Index::ZeroAware(index) => index.entry(at, self.k, blank),
            Index::Placement { ranker, slots } => {
                let (rank, occupied) = ranker.rank_by(|j| at[j]);
                if *slots == 1 {
                    return rank;
                }
                let free = all_cells & !occupied;
                rank * slots + u64::from((free & ((1u32 << blank) - 1)).count_ones())
            }
        }
    }

    /// The Manhattan distance of the placement `at[..k]` when the table's values need it (from
    /// scratch), else 0.
    #[inline(always)]
    pub(super) fn manhattan(&self, board: Board, at: &[u8; MAX_CELLS]) -> u32 {
        if !self.needs_manhattan {
            return 0;
        }
        (0..self.k)
            .map(|j| board.distance(at[j] as usize, self.goal_cells[j] as usize))
            .sum()
    }

    /// The value of entry `index` (placement Manhattan distance `m`, when needed) for a child
    /// whose parent's value in this table is `old`, after a move of one of the table's tiles
    /// (every move, for aware tables); mod3 and 1-bit values from `old`.
    #[inline(always)]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "an index is below the table's entries, whose payload is mapped into memory, so it fits in usize"
    )]
    pub(super) fn child_value(&self, index: u64, m: u32, old: u8) -> u8 {
        match self.encoding {
            Encoding::Byte => self.payload[index as usize],
            Encoding::Mod3 => child_value(old, Encoding::Mod3.stored(self.payload, index)),
            Encoding::OneBit => {
                let m = if self.one_bit_steps {
                    u32::from(old) ^ 1
                } else {
                    m
                };
                one_bit_child_value(old, Encoding::OneBit.stored(self.payload, index), m)
            }
            e => e.decode(e.stored(self.payload, index), m),
        }
    }

    /// The value of the placement `at[..k]` with the blank on `blank`, from scratch (a mod3 or
    /// 1-bit value by a descent to the goal).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "an index is below the table's entries, whose payload is mapped into memory, so it fits in usize"
    )]
    pub(super) fn root_value(&self, board: Board, at: &[u8; MAX_CELLS], blank: u8) -> Result<u8> {
        let index = self.entry(at, blank, board.all_cells());
        Ok(match self.encoding {
            Encoding::Mod3 | Encoding::OneBit => self.pdb.root_value(index)?,
            Encoding::Byte => self.payload[index as usize],
            e => e.decode(e.stored(self.payload, index), self.manhattan(board, at)),
        })
    }
}
