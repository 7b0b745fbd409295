//! A header written as its 4096 bytes, and the checksum that names the table.

use super::Header;
use super::codes::{goal_code, rule_code};
use super::layout::{
    HEADER_LEN, HISTOGRAM_SLOTS, MAGIC, OFF_ENCODING, OFF_ENTRIES, OFF_GOAL, OFF_HEADER_CRC,
    OFF_HEADER_LEN, OFF_HEIGHT, OFF_HISTOGRAM, OFF_K, OFF_MAJOR, OFF_MAX, OFF_MINOR, OFF_PARAMETER,
    OFF_PAYLOAD_CRC, OFF_PAYLOAD_LEN, OFF_RULE, OFF_TILES, OFF_UNITS, OFF_UNREACHED, OFF_WIDTH,
};

impl Header {
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
}
