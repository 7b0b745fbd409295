//! The fixed-size header of a table file (format 1.0, specified in `docs/format.md`).
//!
//! 4096 bytes, little-endian, then the payload (so the payload starts on a page boundary and
//! can be memory-mapped in place):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `TILEPDB\x1a` |
//! | 8 | 2 | format major version (1) |
//! | 10 | 2 | format minor version (0) |
//! | 12 | 4 | header length = payload offset (4096) |
//! | 16 | 1 | board width W |
//! | 17 | 1 | board height H |
//! | 18 | 1 | goal: 0 blank-first, 1 blank-last |
//! | 19 | 1 | blank rule: 0 minimized, 1 aware, 2 ignored, 3 zero-aware |
//! | 20 | 1 | encoding: 0 byte, 1 nibble, 2 mod3, 3 min-nibble |
//! | 21 | 1 | encoding parameter: log2 of the group for min-nibble, else 0 |
//! | 22 | 1 | k, the number of pattern tiles |
//! | 23 | 1 | largest exact value of a reached entry |
//! | 24 | 32 | the k tiles in pattern order, then zeros |
//! | 56 | 8 | entries |
//! | 64 | 8 | stored units (entries, or groups of min-nibble) |
//! | 72 | 8 | payload length in bytes |
//! | 80 | 8 | unreached entries |
//! | 88 | 4 | CRC-32 of the payload |
//! | 92 | 4 | reserved, zero |
//! | 96 | 2040 | histogram: 255 x u64, entries of exact value v = 0..254 |
//! | 2136 | 1956 | reserved, zero |
//! | 4092 | 4 | CRC-32 of bytes 0..4092 |
//!
//! ```
//! use tilepdb_common::table::{Encoding, Header};
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Aware).unwrap();
//! let plan = Header::plan(&space, Encoding::Mod3).unwrap();
//! assert_eq!(plan.entries, 504 * 6); // P(9, 3) placements, 6 blank cells each
//! assert_eq!(plan.payload_len, 605); // five entries per byte
//! assert_eq!(plan.file_len(), 4096 + 605);
//! ```
//!
//! The parts: `layout` (the constants and each field's offset), `codes` (the goal's and the
//! blank rule's codes), `encode` ([`Header::to_bytes`] and the checksum), `parse`
//! ([`Header::parse`], every field checked against the others), `validate` (a whole file:
//! [`Header::validate_file`]) and `histogram` (counting values, and their mean).

mod codes;
mod encode;
mod histogram;
mod layout;
mod parse;
#[cfg(test)]
mod tests;
mod validate;

pub use codes::{goal_code, rule_code};
pub use histogram::{histogram_mean, histogram_of};
pub use layout::{
    FORMAT_MAJOR, FORMAT_MINOR, HEADER_LEN, HISTOGRAM_SLOTS, MAGIC, OFF_HEADER_CRC, TILE_SLOTS,
};

use crate::board::{Board, Goal};
use crate::pattern::Pattern;
use crate::space::{BlankRule, StateSpace};

use super::encoding::Encoding;
use super::error::TableError;

/// A table file's header, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The format's major version.
    pub major: u16,
    /// The format's minor version.
    pub minor: u16,
    /// The board.
    pub board: Board,
    /// The goal.
    pub goal: Goal,
    /// The blank rule.
    pub rule: BlankRule,
    /// The pattern's tiles, in order (the first is the rank's most significant digit).
    pub tiles: Vec<u8>,
    /// How the payload stores the values.
    pub encoding: Encoding,
    /// Entries of the table: placements, or placements x free cells for aware tables.
    pub entries: u64,
    /// Stored values: the entries, or the groups of min-nibble.
    pub units: u64,
    /// Length of the payload in bytes.
    pub payload_len: u64,
    /// Largest exact value of a reached entry.
    pub max_value: u8,
    /// Entries never reached (only when the pattern holds every tile).
    pub unreached: u64,
    /// `histogram[v]` = reached entries of exact value `v`, up to `max_value`.
    pub histogram: Vec<u64>,
    /// CRC-32 of the payload.
    pub payload_crc32: u32,
}

impl Header {
    /// The header of `space`'s table in `encoding` before it is built: sizes only, an empty
    /// histogram and a zero payload checksum. Refuses mod3 and 1-bit for minimized tables, and
    /// 1-bit for patterns of every tile.
    pub fn plan(space: &StateSpace, encoding: Encoding) -> Result<Header, TableError> {
        encoding.check_rule(space.rule())?;
        if encoding == Encoding::OneBit && space.k() + 1 == space.board().cells() {
            return Err(TableError::Unsupported {
                encoding: encoding.to_string(),
                rule: space.rule(),
                reason: "a pattern of every tile leaves half of its entries unreached (the \
                         other permutation parity), which one bit per entry cannot mark; use \
                         byte, nibble or mod3 for it",
            });
        }
        Ok(Header::sized(space, encoding))
    }

    /// The header of `space`'s table in `encoding`, in the version this code writes: its
    /// sizes, no values and a zero payload checksum.
    fn sized(space: &StateSpace, encoding: Encoding) -> Header {
        let entries = space.entries();
        Header {
            major: FORMAT_MAJOR,
            minor: FORMAT_MINOR,
            board: space.board(),
            goal: space.goal(),
            rule: space.rule(),
            tiles: space.pattern().tiles().to_vec(),
            encoding,
            entries,
            units: encoding.units(entries),
            payload_len: encoding.payload_len(entries),
            max_value: 0,
            unreached: 0,
            histogram: Vec::new(),
            payload_crc32: 0,
        }
    }

    /// Total length of the file: header and payload.
    pub fn file_len(&self) -> u64 {
        HEADER_LEN as u64 + self.payload_len
    }

    /// The abstract state space the header describes.
    pub fn space(&self) -> Result<StateSpace, crate::error::Error> {
        let pattern = Pattern::new(self.board, self.tiles.clone())?;
        StateSpace::new(self.board, self.goal, pattern, self.rule)
    }
}
