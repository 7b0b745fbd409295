//! The machine's file: a checksummed header in the style of the table files, then the
//! transition table.
//!
//! 64 bytes of header, little-endian, then the payload:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `TILEFSM\x1a` |
//! | 8 | 2 | format major version (1) |
//! | 10 | 2 | format minor version (0) |
//! | 12 | 4 | header length = payload offset (64) |
//! | 16 | 1 | board width W |
//! | 17 | 1 | board height H |
//! | 18 | 1 | depth learned |
//! | 19 | 1 | reserved, zero |
//! | 20 | 4 | states S |
//! | 24 | 4 | minimal forbidden strings |
//! | 28 | 4 | reserved, zero |
//! | 32 | 8 | payload length in bytes (16 S) |
//! | 40 | 4 | CRC-32 of the payload |
//! | 44 | 16 | reserved, zero |
//! | 60 | 4 | CRC-32 of bytes 0..60 |
//!
//! The payload is `4 S` little-endian `u32`: the state after move `m` (up, left, right, down)
//! from state `s` at index `4 s + m`, or `0xFFFFFFFF` for a forbidden move. The checksums are
//! the CRC-32 (IEEE) the table files use.

use std::path::Path;

use tilepdb_common::Board;

use super::learn::{MAX_DEPTH, MIN_DEPTH};
use super::{FORBIDDEN, MovePruning};
use crate::error::{Error, Result};

/// The first eight bytes of a machine file.
pub const FILE_MAGIC: [u8; 8] = *b"TILEFSM\x1a";
/// The format major version this code writes and reads.
pub const FORMAT_MAJOR: u16 = 1;
/// The format minor version this code writes (readers accept any minor of their major).
const FORMAT_MINOR: u16 = 0;
/// Bytes of the header, and offset of the payload.
pub const HEADER_LEN: usize = 64;
const OFF_HEADER_CRC: usize = HEADER_LEN - 4;

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from(u32_at(b, off)) | u64::from(u32_at(b, off + 4)) << 32
}

fn bad(reason: impl Into<String>) -> Error {
    Error::BadMachine(reason.into())
}

impl MovePruning {
    /// The file's bytes: header and payload.
    ///
    /// ```
    /// use tilepdb_solver::move_pruning::MovePruning;
    /// let m = MovePruning::undo_only("3x3".parse().unwrap());
    /// assert_eq!(MovePruning::from_bytes(&m.to_bytes()).unwrap(), m);
    /// ```
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the board's sides are at most 25 and the depth at most 31"
    )]
    pub fn to_bytes(&self) -> Vec<u8> {
        let payload: Vec<u8> = self
            .transitions
            .iter()
            .flat_map(|t| t.to_le_bytes())
            .collect();
        let mut b = vec![0u8; HEADER_LEN];
        b[..8].copy_from_slice(&FILE_MAGIC);
        b[8..10].copy_from_slice(&FORMAT_MAJOR.to_le_bytes());
        b[10..12].copy_from_slice(&FORMAT_MINOR.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        b[16] = self.board.width() as u8;
        b[17] = self.board.height() as u8;
        b[18] = self.depth;
        b[20..24].copy_from_slice(&self.states().to_le_bytes());
        b[24..28].copy_from_slice(&self.forbidden_strings.to_le_bytes());
        b[32..40].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        b[40..44].copy_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&payload);
        b
    }

    /// Reads a machine from its file's bytes, checking the magic, the version, both checksums,
    /// the board, the depth, the length and that every transition is a state or
    /// [`FORBIDDEN`].
    pub fn from_bytes(b: &[u8]) -> Result<MovePruning> {
        if b.len() < HEADER_LEN || b[..8] != FILE_MAGIC {
            return Err(bad(
                "not a move-pruning machine file (no TILEFSM magic at its start)",
            ));
        }
        let major = u16_at(b, 8);
        if major != FORMAT_MAJOR {
            return Err(bad(format!(
                "format version {major}.{}, this program reads version {FORMAT_MAJOR}",
                u16_at(b, 10)
            )));
        }
        if u32_at(b, OFF_HEADER_CRC) != crc32fast::hash(&b[..OFF_HEADER_CRC]) {
            return Err(bad(
                "the header's checksum does not match: the file is damaged",
            ));
        }
        if u32_at(b, 12) as usize != HEADER_LEN {
            return Err(bad(format!(
                "header length {}, expected {HEADER_LEN}",
                u32_at(b, 12)
            )));
        }
        let board = Board::new(usize::from(b[16]), usize::from(b[17]))
            .map_err(|e| bad(format!("bad board: {e}")))?;
        let depth = b[18];
        if !(MIN_DEPTH..=MAX_DEPTH).contains(&depth) {
            return Err(bad(format!(
                "depth {depth} outside {MIN_DEPTH}..={MAX_DEPTH}"
            )));
        }
        let states = u32_at(b, 20);
        if states == 0 || states == FORBIDDEN {
            return Err(bad(format!("{states} states")));
        }
        let payload_len = u64_at(b, 32);
        if payload_len != 16 * u64::from(states) {
            return Err(bad(format!(
                "payload of {payload_len} bytes for {states} states (expected {})",
                16 * u64::from(states)
            )));
        }
        let payload = &b[HEADER_LEN..];
        if payload.len() as u64 != payload_len {
            return Err(bad(format!(
                "the file is {} bytes, its header says {}: truncated or extended",
                b.len(),
                HEADER_LEN as u64 + payload_len
            )));
        }
        if u32_at(b, 40) != crc32fast::hash(payload) {
            return Err(bad(
                "the payload's checksum does not match: the file is damaged",
            ));
        }
        let transitions: Vec<u32> = payload
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(i) = transitions
            .iter()
            .position(|&t| t != FORBIDDEN && t >= states)
        {
            return Err(bad(format!(
                "the transition of state {} by move {} leads to state {}, out of the {states}",
                i / 4,
                i % 4,
                transitions[i]
            )));
        }
        Ok(MovePruning {
            board,
            depth,
            forbidden_strings: u32_at(b, 24),
            transitions,
        })
    }

    /// Writes the machine's file at `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_bytes()).map_err(|e| Error::io(path, e))
    }

    /// Reads and checks the machine file at `path` ([`MovePruning::from_bytes`]).
    pub fn read(path: &Path) -> Result<MovePruning> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        MovePruning::from_bytes(&bytes).map_err(|e| match e {
            Error::BadMachine(reason) => Error::BadMachine(format!("{}: {reason}", path.display())),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::move_pruning::learn;

    fn machine() -> MovePruning {
        learn("3x3".parse().unwrap(), 8).unwrap().machine
    }

    fn refused(bytes: &[u8]) -> String {
        match MovePruning::from_bytes(bytes) {
            Ok(_) => panic!("a damaged file was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_machine_round_trips_through_its_file() {
        let m = machine();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3x3.fsm");
        m.write(&path).unwrap();
        let back = MovePruning::read(&path).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.depth(), 8);
        assert!(back.states() > 5);
    }

    #[test]
    fn a_flipped_byte_is_refused_by_a_checksum() {
        let bytes = machine().to_bytes();
        for at in [20, HEADER_LEN + 5, bytes.len() - 1] {
            let mut b = bytes.clone();
            b[at] ^= 0x10;
            assert!(
                refused(&b).contains("checksum"),
                "byte {at}: {}",
                refused(&b)
            );
        }
    }

    #[test]
    fn a_truncated_file_is_refused() {
        let bytes = machine().to_bytes();
        assert!(refused(&bytes[..bytes.len() - 4]).contains("truncated"));
        assert!(refused(&bytes[..HEADER_LEN - 1]).contains("not a move-pruning machine"));
        assert!(refused(b"").contains("not a move-pruning machine"));
    }

    #[test]
    fn another_version_is_refused_by_name() {
        let mut b = machine().to_bytes();
        b[8] = 2;
        let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        assert!(
            refused(&b).contains("format version 2.0"),
            "{}",
            refused(&b)
        );
    }

    #[test]
    fn a_transition_out_of_range_is_refused_even_with_good_checksums() {
        let m = machine();
        let mut b = m.to_bytes();
        b[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&m.states().to_le_bytes());
        let crc = crc32fast::hash(&b[HEADER_LEN..]);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        assert!(refused(&b).contains("out of the"), "{}", refused(&b));
    }

    #[test]
    fn a_machine_of_another_board_reads_but_is_refused_for_the_search() {
        let m = machine();
        let back = MovePruning::from_bytes(&m.to_bytes()).unwrap();
        let e = back
            .check_board("2x4".parse().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("for the 3x3 board") && e.contains("on 2x4"),
            "{e}"
        );
    }
}
