//! A header read from bytes and checked: the magic, the version and the header's checksum,
//! then every field against the others (sizes, pattern, histogram).

use crate::board::Board;
use crate::pattern::Pattern;
use crate::space::StateSpace;
use crate::table::encoding::Encoding;
use crate::table::error::Defect;

use super::Header;
use super::codes::{goal_of_code, rule_of_code};
use super::layout::{
    FORMAT_MAJOR, HEADER_LEN, HISTOGRAM_SLOTS, MAGIC, OFF_ENCODING, OFF_ENTRIES, OFF_GOAL,
    OFF_HEADER_CRC, OFF_HEADER_LEN, OFF_HEIGHT, OFF_HISTOGRAM, OFF_K, OFF_MAJOR, OFF_MAX,
    OFF_MINOR, OFF_PARAMETER, OFF_PAYLOAD_CRC, OFF_PAYLOAD_LEN, OFF_RULE, OFF_TILES, OFF_UNITS,
    OFF_UNREACHED, OFF_WIDTH, TILE_SLOTS,
};

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
        // The sizes are the ones `sized` computes: `parse_sizes` has checked each.
        Ok(Header {
            major,
            minor,
            entries,
            units,
            payload_len,
            max_value,
            unreached,
            histogram,
            payload_crc32: u32_at(b, OFF_PAYLOAD_CRC),
            ..Header::sized(&space, encoding)
        })
    }

    /// The table's definition: its board, goal, blank rule and tiles (as a state space),
    /// and its encoding, each a known code that fits the others.
    fn parse_definition(b: &[u8]) -> Result<(StateSpace, Encoding), Defect> {
        let (w, h) = (b[OFF_WIDTH] as usize, b[OFF_HEIGHT] as usize);
        let board = Board::new(w, h).map_err(|e| field("board", e.to_string()))?;
        let goal = goal_of_code(b[OFF_GOAL])
            .ok_or_else(|| field("goal", format!("unknown code {}", b[OFF_GOAL])))?;
        let rule = rule_of_code(b[OFF_RULE])
            .ok_or_else(|| field("blank rule", format!("unknown code {}", b[OFF_RULE])))?;
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
}
