//! Where each field of the header stands: the magic, the versions, the header's length, the
//! sizes of the tile and histogram areas, and every field's byte offset.

/// The first eight bytes of every table file.
pub const MAGIC: [u8; 8] = *b"TILEPDB\x1a";
/// The format major version this code writes and reads; a reader refuses other majors.
pub const FORMAT_MAJOR: u16 = 1;
/// The format minor version this code writes; readers accept any minor of their major.
pub const FORMAT_MINOR: u16 = 0;
/// Bytes of the header, and offset of the payload.
pub const HEADER_LEN: usize = 4096;

/// Values 0..=254 have a histogram slot (255 is [`crate::table::UNREACHED`]).
pub const HISTOGRAM_SLOTS: usize = 255;
/// Room for the tiles of the largest pattern.
pub const TILE_SLOTS: usize = 32;

pub(super) const OFF_MAJOR: usize = 8;
pub(super) const OFF_MINOR: usize = 10;
pub(super) const OFF_HEADER_LEN: usize = 12;
pub(super) const OFF_WIDTH: usize = 16;
pub(super) const OFF_HEIGHT: usize = 17;
pub(super) const OFF_GOAL: usize = 18;
pub(super) const OFF_RULE: usize = 19;
pub(super) const OFF_ENCODING: usize = 20;
pub(super) const OFF_PARAMETER: usize = 21;
pub(super) const OFF_K: usize = 22;
pub(super) const OFF_MAX: usize = 23;
pub(super) const OFF_TILES: usize = 24;
pub(super) const OFF_ENTRIES: usize = 56;
pub(super) const OFF_UNITS: usize = 64;
pub(super) const OFF_PAYLOAD_LEN: usize = 72;
pub(super) const OFF_UNREACHED: usize = 80;
pub(super) const OFF_PAYLOAD_CRC: usize = 88;
pub(super) const OFF_HISTOGRAM: usize = 96;
/// Offset of the header's own CRC-32, which covers every byte before it.
pub const OFF_HEADER_CRC: usize = HEADER_LEN - 4;
