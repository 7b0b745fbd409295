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

use crate::board::{Board, Goal};
use crate::pattern::Pattern;
use crate::space::{BlankRule, StateSpace};

use super::encoding::Encoding;
use super::error::{Defect, TableError};

/// The first eight bytes of every table file.
pub const MAGIC: [u8; 8] = *b"TILEPDB\x1a";
/// The format major version this code writes and reads; a reader refuses other majors.
pub const FORMAT_MAJOR: u16 = 1;
/// The format minor version this code writes; readers accept any minor of their major.
pub const FORMAT_MINOR: u16 = 0;
/// Bytes of the header, and offset of the payload.
pub const HEADER_LEN: usize = 4096;

/// The mean value of a histogram (`histogram[v]` = entries of value `v`); `None` if empty.
///
/// ```
/// use tilepdb_common::table::header::histogram_mean;
/// assert_eq!(histogram_mean(&[1, 2, 1]), Some(1.0)); // values 0, 1, 1, 2
/// assert_eq!(histogram_mean(&[0, 0]), None);
/// ```
pub fn histogram_mean(histogram: &[u64]) -> Option<f64> {
    let (sum, count) = histogram
        .iter()
        .enumerate()
        .fold((0f64, 0u64), |(s, c), (v, &n)| {
            (s + v as f64 * n as f64, c + n)
        });
    (count > 0).then(|| sum / count as f64)
}

/// Counts of each value of reached entries (`histogram[v]`: entries of value `v`, up to the
/// largest value), and the number of unreached entries ([`super::UNREACHED`]).
///
/// ```
/// use tilepdb_common::table::header::histogram_of;
/// assert_eq!(histogram_of(&[0, 2, 2, 255]), (vec![1, 0, 2], 1));
/// ```
pub fn histogram_of(values: &[u8]) -> (Vec<u64>, u64) {
    let mut counts = [0u64; 256];
    for &v in values {
        counts[usize::from(v)] += 1;
    }
    let unreached = counts[usize::from(super::UNREACHED)];
    counts[usize::from(super::UNREACHED)] = 0;
    let len = counts.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    (counts[..len].to_vec(), unreached)
}

/// Values 0..=254 have a histogram slot (255 is [`super::UNREACHED`]).
pub const HISTOGRAM_SLOTS: usize = 255;
/// Room for the tiles of the largest pattern.
pub const TILE_SLOTS: usize = 32;

const OFF_MAJOR: usize = 8;
const OFF_MINOR: usize = 10;
const OFF_HEADER_LEN: usize = 12;
const OFF_WIDTH: usize = 16;
const OFF_HEIGHT: usize = 17;
const OFF_GOAL: usize = 18;
const OFF_RULE: usize = 19;
const OFF_ENCODING: usize = 20;
const OFF_PARAMETER: usize = 21;
const OFF_K: usize = 22;
const OFF_MAX: usize = 23;
const OFF_TILES: usize = 24;
const OFF_ENTRIES: usize = 56;
const OFF_UNITS: usize = 64;
const OFF_PAYLOAD_LEN: usize = 72;
const OFF_UNREACHED: usize = 80;
const OFF_PAYLOAD_CRC: usize = 88;
const OFF_HISTOGRAM: usize = 96;
/// Offset of the header's own CRC-32, which covers every byte before it.
pub const OFF_HEADER_CRC: usize = HEADER_LEN - 4;

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

fn field(field: &'static str, reason: impl Into<String>) -> Defect {
    Defect::Field {
        field,
        reason: reason.into(),
    }
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(b[off..off + 2].try_into().unwrap())
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
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
        let entries = space.entries();
        Ok(Header {
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
        })
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

    /// The 4096 header bytes, its CRC-32 in the last four.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the header is 4096 bytes; width, height and the tiles are at most 25"
    )]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[OFF_MAJOR..OFF_MAJOR + 2].copy_from_slice(&self.major.to_le_bytes());
        b[OFF_MINOR..OFF_MINOR + 2].copy_from_slice(&self.minor.to_le_bytes());
        b[OFF_HEADER_LEN..OFF_HEADER_LEN + 4].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        b[OFF_WIDTH] = self.board.width() as u8;
        b[OFF_HEIGHT] = self.board.height() as u8;
        b[OFF_GOAL] = goal_code(self.goal);
        b[OFF_RULE] = rule_code(self.rule);
        b[OFF_ENCODING] = self.encoding.code();
        b[OFF_PARAMETER] = self.encoding.parameter();
        b[OFF_K] = self.tiles.len() as u8;
        b[OFF_MAX] = self.max_value;
        b[OFF_TILES..OFF_TILES + self.tiles.len()].copy_from_slice(&self.tiles);
        for (off, v) in [
            (OFF_ENTRIES, self.entries),
            (OFF_UNITS, self.units),
            (OFF_PAYLOAD_LEN, self.payload_len),
            (OFF_UNREACHED, self.unreached),
        ] {
            b[off..off + 8].copy_from_slice(&v.to_le_bytes());
        }
        b[OFF_PAYLOAD_CRC..OFF_PAYLOAD_CRC + 4].copy_from_slice(&self.payload_crc32.to_le_bytes());
        for (v, &count) in self.histogram.iter().enumerate().take(HISTOGRAM_SLOTS) {
            let off = OFF_HISTOGRAM + 8 * v;
            b[off..off + 8].copy_from_slice(&count.to_le_bytes());
        }
        let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
        b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The header's CRC-32 (of its first 4092 bytes as written): with the payload's CRC
    /// inside them, it identifies the whole file.
    pub fn header_crc32(&self) -> u32 {
        crc32fast::hash(&self.to_bytes()[..OFF_HEADER_CRC])
    }

    /// The table's identity, `crc32:` and the header's CRC-32 in hex.
    pub fn checksum(&self) -> String {
        format!("crc32:{:08x}", self.header_crc32())
    }

    /// Decodes and validates a header: magic, version, header checksum, then every field
    /// against the others (sizes, pattern, histogram). Does not look at the payload.
    pub fn parse(bytes: &[u8]) -> Result<Header, Defect> {
        let len = bytes.len() as u64;
        if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
            if bytes.len() < MAGIC.len() && MAGIC.starts_with(bytes) {
                return Err(Defect::ShortHeader {
                    len,
                    header: HEADER_LEN as u64,
                });
            }
            return Err(Defect::Magic {
                found: bytes[..bytes.len().min(MAGIC.len())].to_vec(),
                expected: MAGIC.to_vec(),
            });
        }
        if bytes.len() < OFF_MINOR + 2 {
            return Err(Defect::ShortHeader {
                len,
                header: HEADER_LEN as u64,
            });
        }
        let (major, minor) = (u16_at(bytes, OFF_MAJOR), u16_at(bytes, OFF_MINOR));
        if major != FORMAT_MAJOR {
            return Err(Defect::Version {
                major,
                minor,
                supported: FORMAT_MAJOR,
            });
        }
        if bytes.len() < HEADER_LEN {
            return Err(Defect::ShortHeader {
                len,
                header: HEADER_LEN as u64,
            });
        }
        let b = &bytes[..HEADER_LEN];
        let stored = u32_at(b, OFF_HEADER_CRC);
        let computed = crc32fast::hash(&b[..OFF_HEADER_CRC]);
        if stored != computed {
            return Err(Defect::HeaderChecksum { stored, computed });
        }
        Self::parse_fields(b, major, minor)
    }

    fn parse_fields(b: &[u8], major: u16, minor: u16) -> Result<Header, Defect> {
        let header_len = u32_at(b, OFF_HEADER_LEN);
        if header_len as usize != HEADER_LEN {
            return Err(field(
                "header length",
                format!("{header_len}, version {major}.x headers are {HEADER_LEN} bytes"),
            ));
        }
        let (space, encoding) = Self::parse_definition(b)?;
        let (entries, units, payload_len) = Self::parse_sizes(b, &space, encoding)?;
        let (max_value, unreached, histogram) = Self::parse_values(b, &space, entries)?;
        Ok(Header {
            major,
            minor,
            board: space.board(),
            goal: space.goal(),
            rule: space.rule(),
            tiles: space.pattern().tiles().to_vec(),
            encoding,
            entries,
            units,
            payload_len,
            max_value,
            unreached,
            histogram,
            payload_crc32: u32_at(b, OFF_PAYLOAD_CRC),
        })
    }

    /// The table's definition: its board, goal, blank rule and tiles (as a state space),
    /// and its encoding, each a known code that fits the others.
    fn parse_definition(b: &[u8]) -> Result<(StateSpace, Encoding), Defect> {
        let (w, h) = (b[OFF_WIDTH] as usize, b[OFF_HEIGHT] as usize);
        let board = Board::new(w, h).map_err(|e| field("board", e.to_string()))?;
        let goal = match b[OFF_GOAL] {
            0 => Goal::BlankFirst,
            1 => Goal::BlankLast,
            other => return Err(field("goal", format!("unknown code {other}"))),
        };
        let rule = match b[OFF_RULE] {
            0 => BlankRule::Minimized,
            1 => BlankRule::Aware,
            2 => BlankRule::Ignored,
            3 => BlankRule::ZeroAware,
            other => return Err(field("blank rule", format!("unknown code {other}"))),
        };
        let encoding = Encoding::from_code(b[OFF_ENCODING], b[OFF_PARAMETER])
            .map_err(|r| field("encoding", r))?;
        encoding
            .check_rule(rule)
            .map_err(|e| field("encoding", e.to_string()))?;
        let k = b[OFF_K] as usize;
        if k == 0 || k > TILE_SLOTS {
            return Err(field("tile count", format!("{k}")));
        }
        let tiles = b[OFF_TILES..OFF_TILES + k].to_vec();
        if b[OFF_TILES + k..OFF_TILES + TILE_SLOTS]
            .iter()
            .any(|&t| t != 0)
        {
            return Err(field("tiles", "bytes after the last tile are not zero"));
        }
        let pattern = Pattern::new(board, tiles).map_err(|e| field("tiles", e.to_string()))?;
        let space = StateSpace::new(board, goal, pattern, rule)
            .map_err(|e| field("tiles", e.to_string()))?;
        Ok((space, encoding))
    }

    /// The entries, stored units and payload length, each the one `space` in `encoding` has.
    fn parse_sizes(
        b: &[u8],
        space: &StateSpace,
        encoding: Encoding,
    ) -> Result<(u64, u64, u64), Defect> {
        let expect = |name: &'static str, found: u64, expected: u64| {
            if found == expected {
                Ok(())
            } else {
                Err(field(
                    name,
                    format!(
                        "{found}, but a {} table of {} tiles on {} in {encoding} has {expected}",
                        space.rule(),
                        space.k(),
                        space.board()
                    ),
                ))
            }
        };
        let entries = u64_at(b, OFF_ENTRIES);
        expect("entries", entries, space.entries())?;
        let units = u64_at(b, OFF_UNITS);
        expect("stored units", units, encoding.units(entries))?;
        let payload_len = u64_at(b, OFF_PAYLOAD_LEN);
        expect("payload length", payload_len, encoding.payload_len(entries))?;
        Ok((entries, units, payload_len))
    }

    /// The largest value, the unreached entries and the histogram (up to the largest value),
    /// which must account for every one of the `entries`.
    fn parse_values(
        b: &[u8],
        space: &StateSpace,
        entries: u64,
    ) -> Result<(u8, u64, Vec<u64>), Defect> {
        let unreached = u64_at(b, OFF_UNREACHED);
        let full = space.k() + 1 == space.board().cells();
        if unreached != 0 && !full {
            return Err(field(
                "unreached",
                format!(
                    "{unreached} entries, but only a pattern of every tile leaves entries unreached"
                ),
            ));
        }
        let max_value = b[OFF_MAX];
        let histogram: Vec<u64> = (0..HISTOGRAM_SLOTS)
            .map(|v| u64_at(b, OFF_HISTOGRAM + 8 * v))
            .collect();
        let last = histogram.iter().rposition(|&c| c != 0);
        if last != Some(max_value as usize) {
            return Err(field(
                "max value",
                format!(
                    "{max_value}, but the histogram's largest value is {}",
                    last.map_or("none".into(), |v| v.to_string())
                ),
            ));
        }
        let total = histogram
            .iter()
            .try_fold(unreached, |acc, &c| acc.checked_add(c));
        if total != Some(entries) {
            return Err(field(
                "histogram",
                format!("counts and unreached entries do not add up to the {entries} entries"),
            ));
        }
        Ok((
            max_value,
            unreached,
            histogram[..=max_value as usize].to_vec(),
        ))
    }

    /// Validates a whole file's bytes: the header ([`Header::parse`]), the file's length and
    /// the payload's checksum.
    pub fn validate_file(bytes: &[u8]) -> Result<Header, Defect> {
        Header::validate_file_with(bytes, crc32fast::hash)
    }

    /// [`Header::validate_file`], the payload's CRC-32 computed by `payload_crc` (which may
    /// read the payload in parts, and let each go once read).
    pub fn validate_file_with(
        bytes: &[u8],
        payload_crc: impl FnOnce(&[u8]) -> u32,
    ) -> Result<Header, Defect> {
        let header = Header::parse(bytes)?;
        let len = bytes.len() as u64;
        let expected = header.file_len();
        if len < expected {
            return Err(Defect::Truncated {
                len,
                expected,
                header: HEADER_LEN as u64,
                payload: header.payload_len,
            });
        }
        if len > expected {
            return Err(Defect::Trailing {
                len,
                expected,
                extra: len - expected,
            });
        }
        let computed = payload_crc(&bytes[HEADER_LEN..]);
        if computed != header.payload_crc32 {
            return Err(Defect::PayloadChecksum {
                stored: header.payload_crc32,
                computed,
            });
        }
        Ok(header)
    }
}

/// The header's code of a goal.
pub fn goal_code(goal: Goal) -> u8 {
    match goal {
        Goal::BlankFirst => 0,
        Goal::BlankLast => 1,
    }
}

/// The header's code of a blank rule.
pub fn rule_code(rule: BlankRule) -> u8 {
    match rule {
        BlankRule::Minimized => 0,
        BlankRule::Aware => 1,
        BlankRule::Ignored => 2,
        BlankRule::ZeroAware => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Header {
        let board: Board = "3x3".parse().unwrap();
        let pattern = Pattern::new(board, vec![1, 2]).unwrap();
        let space = StateSpace::new(board, Goal::BlankLast, pattern, BlankRule::Ignored).unwrap();
        let mut h = Header::plan(&space, "min-nibble:4".parse().unwrap()).unwrap();
        h.histogram = vec![1, 4, 10, 20, 37];
        h.max_value = 4;
        h.payload_crc32 = 0xdead_beef;
        h
    }

    #[test]
    fn round_trip() {
        let h = sample();
        let bytes = h.to_bytes();
        assert_eq!(bytes.len(), HEADER_LEN);
        assert_eq!(Header::parse(&bytes).unwrap(), h);
        assert_eq!(h.payload_len, 9); // 72 entries, 18 groups of 4, two per byte
    }

    #[test]
    fn every_header_bit_flip_is_caught() {
        let bytes = sample().to_bytes();
        for bit in 0..HEADER_LEN * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(Header::parse(&b).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn fields_are_checked_even_with_a_good_checksum() {
        let reseal = |mut b: Vec<u8>| {
            let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
            b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let good = sample().to_bytes();
        let cases: [(usize, u8, &str); 6] = [
            (OFF_WIDTH, 4, "entries"), // 4x3 has more placements
            (OFF_WIDTH, 9, "board"),   // 9x3 is too large
            (OFF_GOAL, 7, "goal"),
            (OFF_ENCODING, 2, "mod3"),   // mod3 takes no parameter
            (OFF_TILES + 1, 1, "twice"), // tile 1 twice
            (OFF_MAX, 3, "max value"),
        ];
        for (off, value, needle) in cases {
            let mut b = good.clone();
            b[off] = value;
            let err = Header::parse(&reseal(b)).unwrap_err().to_string();
            assert!(err.contains(needle), "{off}: {err}");
        }
        let mut b = good.clone();
        b[OFF_MAJOR] = 2;
        let err = Header::parse(&b).unwrap_err().to_string();
        assert!(err.contains("version 2.0 is not supported"), "{err}");
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..5000)) {
            let _ = Header::validate_file(&bytes);
        }

        #[test]
        #[expect(clippy::cast_possible_truncation, reason = "the header is 4096 bytes")]
        fn arbitrary_headers_with_good_magic_and_checksum_never_panic(
            fields in proptest::collection::vec(any::<u8>(), 2136), len in 0usize..200
        ) {
            let mut b = vec![0u8; HEADER_LEN];
            b[..2136].copy_from_slice(&fields);
            b[..8].copy_from_slice(&MAGIC);
            b[OFF_MAJOR..OFF_MAJOR + 2].copy_from_slice(&FORMAT_MAJOR.to_le_bytes());
            b[OFF_HEADER_LEN..OFF_HEADER_LEN + 4].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
            let crc = crc32fast::hash(&b[..OFF_HEADER_CRC]);
            b[OFF_HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
            b.extend(std::iter::repeat_n(0u8, len));
            let _ = Header::validate_file(&b);
        }
    }
}
