//! How a task's input and result are laid out on the wire when the table is searched on the
//! region index ([`RegionIndex`]): increasing lists of region-index states as block records.
//!
//! A state of the region index is `block * k! + order`, where a block is a (tile set, region
//! of the blank) pair (a tile set when the blank is ignored) and the order ranks the tiles on
//! the set's cells. A list is a sequence of records, one per block holding states of the list,
//! in increasing block order, each of LEB128 varints:
//!
//! * the block, as the gap after the block before (`block - previous - 1`; for the first
//!   record, `block - first block of the allowed range`);
//! * `2 * (m - 1) + b`: the record's `m >= 1` states, and `b` = 1 for a bitmap;
//! * the orders: a bitmap of `k!` bits (`ceil(k! / 8)` bytes, order `o` at bit `o % 8` of byte
//!   `o / 8`) when that is shorter, else `m` gaps (`order - previous - 1`, the first one the
//!   order itself).
//!
//! What both ends know: every state of a layer at depth `d` has its tile set's parity (the
//! number of tiles on odd cells of the checkerboard changes with every move), so a record of a
//! block of the other parity is refused. The chunks carrying a list are compressed (zstd), which
//! takes most of what the varints leave.
//!
//! Decoding is total: any bytes either give exactly the declared number of increasing states
//! of the layer's parity in the allowed range, or an error, after work bounded by the declared
//! count (a bitmap record must hold at least one state per 64 bits of its bitmap), never by the
//! bytes. Encoding is streaming: the encoder holds one block's orders.
//!
//! ```
//! use tilepdb_common::region_index::RegionIndex;
//! use tilepdb_common::wire::region_lists::{RegionListShape, decode_region_states, encode_region_states};
//! use tilepdb_common::Board;
//! let board: Board = "3x3".parse().unwrap();
//! let index = RegionIndex::new(board, 2).unwrap();
//! // The goal of tiles 1 and 2 (cells 1 and 2, blank on 0): a state of the layer of depth 0.
//! let goal = index.state_index(&[1, 2], 0);
//! let shape = RegionListShape::new(&index, false, &[1, 2], 0);
//! let all = 0..index.states();
//! let bytes = encode_region_states(&shape, all.clone(), &[goal]).unwrap();
//! assert_eq!(decode_region_states(&bytes, 1, &shape, all.clone()).unwrap(), [goal]);
//! assert!(decode_region_states(&bytes[..bytes.len() - 1], 1, &shape, all.clone()).is_err());
//! // The goal is not a state of the layer of depth 1 (its parity is wrong).
//! let odd = RegionListShape::new(&index, false, &[1, 2], 1);
//! assert!(encode_region_states(&odd, all, &[goal]).is_err());
//! ```
//!
//! The encoder is in `encode.rs`, the decoder and the walk in `decode.rs`.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::region_index::RegionIndex;

mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub use decode::{decode_region_states, walk_region_states};
pub use encode::{RegionListEncoder, encode_region_states};

/// What both ends know of a list besides its bytes: the index, whether the blank is ignored,
/// and the parity of the layer its states belong to.
#[derive(Clone, Copy, Debug)]
pub struct RegionListShape<'a> {
    index: &'a RegionIndex,
    ignored: bool,
    orders: u64,
    states: u64,
    /// Cells whose row and column add up to an odd number.
    odd: u32,
    /// How many tiles of a placement of the layer stand on odd cells, modulo 2.
    parity: u32,
}

impl<'a> RegionListShape<'a> {
    /// The shape of lists of states of `index` (of placements when `ignored`) at `depth`, for
    /// the pattern whose goal cells are `goal_cells`.
    pub fn new(
        index: &'a RegionIndex,
        ignored: bool,
        goal_cells: &[u8],
        depth: u32,
    ) -> RegionListShape<'a> {
        let board = index.board();
        let odd = (0..board.cells())
            .filter(|&c| {
                let (r, col) = board.row_col(c);
                (r + col) % 2 == 1
            })
            .fold(0u32, |m, c| m | 1 << c);
        let goal = goal_cells.iter().fold(0u32, |m, &c| m | 1 << c);
        RegionListShape {
            index,
            ignored,
            orders: index.orders(),
            states: if ignored {
                index.placements()
            } else {
                index.states()
            },
            odd,
            parity: ((goal & odd).count_ones() + depth) % 2,
        }
    }

    /// States of the index (the end of any allowed range).
    pub fn states(&self) -> u64 {
        self.states
    }

    /// An upper bound on the bytes of any list of `count` states (a record of three varints of
    /// at most 10 bytes per state; a bitmap record holds at least one state per 8 of its
    /// bytes).
    pub fn max_bytes(&self, count: u64) -> u64 {
        count.saturating_mul(30)
    }

    /// Bytes of a record's bitmap.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the bitmap of a block's k! orders is built in memory, so its byte count fits in usize"
    )]
    fn bitmap_bytes(&self) -> usize {
        self.orders.div_ceil(8) as usize
    }

    /// Whether the states of `block` are of the layer's parity, its set found by a search of
    /// the whole index (the tests' reference for [`SetBlocks::block_has_parity`]).
    #[cfg(test)]
    fn block_has_parity(&self, block: u64) -> bool {
        let set_rank = if self.ignored {
            block
        } else {
            self.index.block_and_set(block * self.orders).1
        };
        self.set_has_parity(set_rank)
    }

    /// Whether the states of the tile set of rank `set` are of the layer's parity.
    fn set_has_parity(&self, set: u64) -> bool {
        self.mask_has_parity(self.index.set_mask(set))
    }

    /// Whether the states of the tile set `mask` (a bitboard) are of the layer's parity.
    fn mask_has_parity(&self, mask: u32) -> bool {
        (mask & self.odd).count_ones() % 2 == self.parity
    }
}

/// The blocks of the tile set a list's last block belongs to, and whether they are of the
/// layer's parity: a sorted list's blocks come set by set, so the set is looked up once per
/// set, not once per block, and from the set before it.
#[derive(Clone, Debug, Default)]
pub(super) struct SetBlocks {
    set: u64,
    blocks: Range<u64>,
    parity: bool,
}

impl SetBlocks {
    /// Whether the states of `block`, of a list's blocks in increasing order, are of the
    /// layer's parity; the set held is `block`'s afterwards.
    #[inline(always)]
    pub(super) fn block_has_parity(&mut self, shape: &RegionListShape<'_>, block: u64) -> bool {
        if !self.blocks.contains(&block) {
            *self = if shape.ignored {
                SetBlocks {
                    set: block,
                    blocks: block..block + 1,
                    parity: shape.set_has_parity(block),
                }
            } else {
                let set = shape.index.set_of_block_from(block, self.set);
                let (first, regions) = shape.index.blocks_of(set);
                SetBlocks {
                    set,
                    blocks: first..first + regions.len() as u64,
                    parity: shape.mask_has_parity(shape.index.set_mask_of_regions(regions)),
                }
            };
        }
        self.parity
    }
}

pub(super) fn bad<T>(why: String) -> Result<T> {
    Err(Error::Wire(format!("region state list: {why}")))
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "the byte keeps the low 7 bits on purpose, then the rest is shifted down"
)]
pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
