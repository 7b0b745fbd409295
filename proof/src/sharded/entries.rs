//! [`ShardEntries`]: the file entries of one proof shard, read from the table file a part
//! at a time and kept packed in the shard's own order.

use std::ops::Range;

use tilepdb_common::file_order::for_each_depth_entry;
use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, StateSpace};

use crate::error::Result;
use crate::walks::fail;

/// File entries asked for in one read.
pub const ENTRIES_PER_READ: u64 = 1 << 20;
/// Ranges of file entries asked for in one read.
pub const RANGES_PER_READ: u64 = 4096;

/// The stored codes of the file entries one proof shard checks, by the shard's own entry
/// number: `block * w + order - first` for a zero-aware table, `set * w + order - first` (a
/// placement) for a minimized one, `first..first + w` the shard's orders. Each code keeps
/// the bits its encoding needs (one for `1-bit`, two for `mod3`, eight for bytes).
pub struct ShardEntries {
    bits: u32,
    count: u64,
    packed: Vec<u8>,
}

impl ShardEntries {
    /// The entries of shard `shard` of `layout` of the table of `space` (in `encoding`) on
    /// `index`, read with `read`: given ranges of file entries, it returns the code each
    /// entry stores ([`Encoding::stored`]), one byte per entry, the ranges' entries one
    /// after the other. A zero-aware file is in the index's order, so the shard's entries of
    /// a block are one range; a minimized file is in placement-rank order, read in parts of
    /// [`ENTRIES_PER_READ`] of which the shard keeps the placements it owns. At most
    /// [`ENTRIES_PER_READ`] entries in at most [`RANGES_PER_READ`] ranges are asked for at
    /// once. An error if `read` returns the
    /// wrong count, or a code the encoding cannot store.
    pub fn read(
        space: &StateSpace,
        index: &RegionIndex,
        layout: ShardLayout,
        shard: u32,
        encoding: Encoding,
        mut read: impl FnMut(&[Range<u64>]) -> Result<Vec<u8>>,
    ) -> Result<ShardEntries> {
        let bits = code_bits(space, encoding)?;
        let f = index.orders();
        let own = layout.orders_of(shard);
        let width = own.end - own.start;
        let minimized = space.rule() == BlankRule::Minimized;
        let count = if minimized {
            index.sets() * width
        } else {
            index.region_count() * width
        };
        let mut entries = ShardEntries {
            bits,
            count,
            packed: vec![0u8; packed_len(count, bits)?],
        };
        let limit = code_limit(encoding);
        let mut checked_read = |ranges: &[Range<u64>]| -> Result<Vec<u8>> {
            let want: u64 = ranges.iter().map(|r| r.end - r.start).sum();
            let codes = read(ranges)?;
            if codes.len() as u64 != want {
                return Err(fail(
                    space,
                    format!(
                        "a read of {want} file entries returned {} codes",
                        codes.len()
                    ),
                ));
            }
            if let Some(&bad) = codes.iter().find(|&&c| c > limit) {
                return Err(fail(
                    space,
                    format!("a read returned the code {bad}, which {encoding} cannot store"),
                ));
            }
            Ok(codes)
        };
        if minimized {
            let total = space.entries();
            let mut start = 0;
            while start < total {
                let part = start..(start + ENTRIES_PER_READ).min(total);
                let codes = checked_read(std::slice::from_ref(&part))?;
                let mut at = 0usize;
                for_each_depth_entry(space, index, part.clone(), |e| {
                    let order = e % f;
                    if own.contains(&order) {
                        entries.put((e / f) * width + order - own.start, codes[at]);
                    }
                    at += 1;
                });
                start = part.end;
            }
        } else {
            // One range per block; blocks gathered until a read is full.
            let per_read = (ENTRIES_PER_READ / width.max(1)).clamp(1, RANGES_PER_READ);
            let blocks = index.region_count();
            let mut block = 0;
            while block < blocks {
                let last = (block + per_read).min(blocks);
                let ranges: Vec<Range<u64>> = (block..last)
                    .map(|b| b * f + own.start..b * f + own.end)
                    .collect();
                let codes = checked_read(&ranges)?;
                for (i, &code) in codes.iter().enumerate() {
                    entries.put(block * width + i as u64, code);
                }
                block = last;
            }
        }
        Ok(entries)
    }

    /// The entries of the shard from the whole `payload` of the table, in memory (a
    /// single-machine check, and the tests).
    pub fn from_payload(
        space: &StateSpace,
        index: &RegionIndex,
        layout: ShardLayout,
        shard: u32,
        encoding: Encoding,
        payload: &[u8],
    ) -> Result<ShardEntries> {
        if encoding.payload_len(space.entries()) != payload.len() as u64 {
            return Err(fail(
                space,
                format!(
                    "a payload of {} bytes for {} entries in {encoding}",
                    payload.len(),
                    space.entries()
                ),
            ));
        }
        ShardEntries::read(space, index, layout, shard, encoding, |ranges| {
            Ok(ranges
                .iter()
                .flat_map(|r| r.clone().map(|e| encoding.stored(payload, e)))
                .collect())
        })
    }

    /// The number of entries.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Bytes of memory the entries hold.
    pub fn bytes(&self) -> u64 {
        self.packed.len() as u64
    }

    /// The code stored for the shard's entry `e`.
    #[inline]
    pub fn get(&self, e: u64) -> u8 {
        let bit = e * u64::from(self.bits);
        let byte = self.packed[(bit / 8) as usize];
        if self.bits == 8 {
            return byte;
        }
        (byte >> (bit % 8)) & ((1u8 << self.bits) - 1)
    }

    fn put(&mut self, e: u64, code: u8) {
        let bit = e * u64::from(self.bits);
        let byte = &mut self.packed[(bit / 8) as usize];
        if self.bits == 8 {
            *byte = code;
        } else {
            *byte |= code << (bit % 8);
        }
    }
}

/// The bits a stored code of `encoding` needs; an error for the encodings whose proof does
/// not run on the shards.
pub(super) fn code_bits(space: &StateSpace, encoding: Encoding) -> Result<u32> {
    match (space.rule(), encoding) {
        (BlankRule::ZeroAware, Encoding::OneBit) => Ok(1),
        (BlankRule::ZeroAware, Encoding::Mod3) => Ok(2),
        (BlankRule::ZeroAware | BlankRule::Minimized, Encoding::Byte) => Ok(8),
        (rule, encoding) => Err(fail(
            space,
            format!("a {rule} table in {encoding} is not proven on the shards"),
        )),
    }
}

/// The largest code `encoding` stores.
fn code_limit(encoding: Encoding) -> u8 {
    match encoding {
        Encoding::OneBit => 1,
        Encoding::Mod3 => 2,
        _ => u8::MAX,
    }
}

fn packed_len(count: u64, bits: u32) -> Result<usize> {
    usize::try_from((count * u64::from(bits)).div_ceil(8)).map_err(|_| {
        crate::Error::Domain(tilepdb_common::Error::Shard(
            "a shard's entries do not fit in memory".into(),
        ))
    })
}
