//! [`ShardEntries`]: the file entries of one proof shard, read from the table file a part
//! at a time and kept packed in the shard's own order, in memory or in a file
//! ([`EntriesPlace`]), and given back a part at a time in that order.

use std::ops::Range;
use std::path::Path;

use tilepdb_common::file_order::for_each_depth_entry;
use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, StateSpace};

use super::entries_file::EntriesFile;
use crate::error::Result;
use crate::walks::fail;

/// File entries asked for in one read.
pub const ENTRIES_PER_READ: u64 = 1 << 20;
/// Ranges of file entries asked for in one read.
pub const RANGES_PER_READ: u64 = 4096;
/// Bytes of packed entries a prover reads back (and compares) at once.
pub const ENTRIES_PART_BYTES: usize = 4 << 20;

/// Where a proof shard keeps its file entries.
#[derive(Clone, Copy, Debug)]
pub struct EntriesPlace<'a> {
    /// A new file to keep a zero-aware table's entries in (`None`: in memory). A minimized
    /// table's entries, met in no order, stay in memory.
    pub file: Option<&'a Path>,
    /// Bytes of packed entries given back at once ([`ENTRIES_PART_BYTES`] but in tests).
    pub part_bytes: usize,
}

impl<'a> EntriesPlace<'a> {
    /// In memory.
    pub fn memory() -> EntriesPlace<'static> {
        EntriesPlace {
            file: None,
            part_bytes: ENTRIES_PART_BYTES,
        }
    }

    /// In a new file at `path` (a zero-aware table's).
    pub fn file(path: &'a Path) -> EntriesPlace<'a> {
        EntriesPlace {
            file: Some(path),
            part_bytes: ENTRIES_PART_BYTES,
        }
    }
}

/// A part of a shard's packed entries.
#[derive(Clone, Copy)]
pub(super) struct PackedCodes<'a> {
    bits: u32,
    bytes: &'a [u8],
}

impl PackedCodes<'_> {
    /// The code of the part's entry `e` (counted from the part's first).
    #[inline]
    pub(super) fn get(&self, e: u64) -> u8 {
        let bit = e * u64::from(self.bits);
        let byte = self.bytes[(bit / 8) as usize];
        if self.bits == 8 {
            return byte;
        }
        (byte >> (bit % 8)) & ((1u8 << self.bits) - 1)
    }
}

/// Where the packed entries are.
enum Kept {
    Memory(Vec<u8>),
    File(EntriesFile),
}

/// The stored codes of the file entries one proof shard checks, by the shard's own entry
/// number: `block * w + order - first` for a zero-aware table, `set * w + order - first` (a
/// placement) for a minimized one, `first..first + w` the shard's orders. Each code keeps
/// the bits its encoding needs (one for `1-bit`, two for `mod3`, eight for bytes), packed in
/// parts of [`EntriesPlace::part_bytes`].
pub struct ShardEntries {
    bits: u32,
    count: u64,
    part_bytes: usize,
    kept: Kept,
}

impl ShardEntries {
    /// The entries of shard `shard` of `layout` of the table of `space` (in `encoding`) on
    /// `index`, kept at `place`, read with `read`: given ranges of file entries, it returns
    /// the code each entry stores ([`Encoding::stored`]), one byte per entry, the ranges'
    /// entries one after the other. A zero-aware file is in the index's order, so the
    /// shard's entries of a block are one range, and they come in the shard's order (each
    /// part written to the file once full); a minimized file is in placement-rank order, read
    /// in parts of [`ENTRIES_PER_READ`] of which the shard keeps the placements it owns, in
    /// memory. At most [`ENTRIES_PER_READ`] entries in at most [`RANGES_PER_READ`] ranges are
    /// asked for at once. An error if `read` returns the wrong count, or a code the encoding
    /// cannot store, or the file cannot be written.
    pub fn read(
        space: &StateSpace,
        index: &RegionIndex,
        layout: ShardLayout,
        shard: u32,
        encoding: Encoding,
        place: EntriesPlace<'_>,
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
        let packed = packed_len(count, bits)?;
        let part_bytes = place.part_bytes.max(1);
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
            let mut packed = vec![0u8; packed];
            let total = space.entries();
            let mut start = 0;
            while start < total {
                let part = start..(start + ENTRIES_PER_READ).min(total);
                let codes = checked_read(std::slice::from_ref(&part))?;
                let mut at = 0usize;
                for_each_depth_entry(space, index, part.clone(), |e| {
                    let order = e % f;
                    if own.contains(&order) {
                        put(
                            &mut packed,
                            bits,
                            (e / f) * width + order - own.start,
                            codes[at],
                        );
                    }
                    at += 1;
                });
                start = part.end;
            }
            return Ok(ShardEntries {
                bits,
                count,
                part_bytes,
                kept: Kept::Memory(packed),
            });
        }
        let mut packer = Packer::new(bits, part_bytes, packed, place.file)?;
        // One range per block; blocks gathered until a read is full.
        let per_read = (ENTRIES_PER_READ / width.max(1)).clamp(1, RANGES_PER_READ);
        let blocks = index.region_count();
        let mut block = 0;
        while block < blocks {
            let last = (block + per_read).min(blocks);
            let ranges: Vec<Range<u64>> = (block..last)
                .map(|b| b * f + own.start..b * f + own.end)
                .collect();
            for code in checked_read(&ranges)? {
                packer.push(code)?;
            }
            block = last;
        }
        Ok(ShardEntries {
            bits,
            count,
            part_bytes,
            kept: packer.finish()?,
        })
    }

    /// The entries of the shard from the whole `payload` of the table, kept at `place` (a
    /// single-machine check, and the tests).
    pub fn from_payload(
        space: &StateSpace,
        index: &RegionIndex,
        layout: ShardLayout,
        shard: u32,
        encoding: Encoding,
        place: EntriesPlace<'_>,
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
        ShardEntries::read(space, index, layout, shard, encoding, place, |ranges| {
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

    /// Bytes of memory the entries hold: all of them packed in memory, or one part read back
    /// from their file.
    pub fn bytes(&self) -> u64 {
        match &self.kept {
            Kept::Memory(packed) => packed.len() as u64,
            Kept::File(file) => file.memory_bytes(),
        }
    }

    /// Bytes the entries' file takes on disk (0 in memory).
    pub fn disk_bytes(&self) -> u64 {
        match &self.kept {
            Kept::Memory(_) => 0,
            Kept::File(file) => file.len(),
        }
    }

    /// The code stored for the shard's entry `e`, when the entries are in memory (a
    /// minimized table's always are); `None` when they are in a file.
    #[inline]
    pub(super) fn get(&self, e: u64) -> Option<u8> {
        match &self.kept {
            Kept::Memory(packed) => Some(
                PackedCodes {
                    bits: self.bits,
                    bytes: packed,
                }
                .get(e),
            ),
            Kept::File(_) => None,
        }
    }

    /// Calls `visit` with the entries of each part in order (their range of the shard's
    /// entries and their codes) for which `wanted` says yes, until it returns something;
    /// that. A part of a file is read back only when wanted, into one buffer, its CRC-32
    /// checked; an error if it cannot be read or was changed on disk.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a part's number and bytes: its entries are held in memory, or its bytes in a file of at most usize parts"
    )]
    pub(super) fn first_in_parts<T>(
        &mut self,
        mut wanted: impl FnMut(Range<u64>) -> bool,
        mut visit: impl FnMut(Range<u64>, PackedCodes<'_>) -> Option<T>,
    ) -> Result<Option<T>> {
        let per_part = self.part_bytes as u64 * 8 / u64::from(self.bits);
        let parts = self.count.div_ceil(per_part);
        for part in 0..parts {
            let entries = part * per_part..((part + 1) * per_part).min(self.count);
            if !wanted(entries.clone()) {
                continue;
            }
            let bytes: &[u8] = match &mut self.kept {
                Kept::Memory(packed) => {
                    let start = part as usize * self.part_bytes;
                    &packed[start..(start + self.part_bytes).min(packed.len())]
                }
                Kept::File(file) => file.read_part(part as usize)?,
            };
            let codes = PackedCodes {
                bits: self.bits,
                bytes,
            };
            if let Some(found) = visit(entries, codes) {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

/// Codes packed one after the other into parts, each part kept once full: appended to memory,
/// or to a file.
struct Packer {
    bits: u32,
    part_bytes: usize,
    /// The part being filled.
    part: Vec<u8>,
    /// Codes in it.
    codes: u64,
    kept: Kept,
}

impl Packer {
    fn new(bits: u32, part_bytes: usize, packed: usize, file: Option<&Path>) -> Result<Packer> {
        let kept = match file {
            Some(path) => Kept::File(EntriesFile::create(path, part_bytes, packed)?),
            None => Kept::Memory(Vec::with_capacity(packed)),
        };
        Ok(Packer {
            bits,
            part_bytes,
            part: vec![0u8; part_bytes.min(packed)],
            codes: 0,
            kept,
        })
    }

    #[inline]
    fn push(&mut self, code: u8) -> Result<()> {
        put(&mut self.part, self.bits, self.codes, code);
        self.codes += 1;
        if self.codes * u64::from(self.bits) == self.part_bytes as u64 * 8 {
            self.keep_part()?;
        }
        Ok(())
    }

    #[expect(
        clippy::cast_possible_truncation,
        reason = "the bytes of a part held in memory"
    )]
    fn keep_part(&mut self) -> Result<()> {
        let bytes = (self.codes * u64::from(self.bits)).div_ceil(8) as usize;
        match &mut self.kept {
            Kept::Memory(packed) => packed.extend_from_slice(&self.part[..bytes]),
            Kept::File(file) => file.append(&self.part[..bytes])?,
        }
        self.part.fill(0);
        self.codes = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<Kept> {
        if self.codes > 0 {
            self.keep_part()?;
        }
        Ok(self.kept)
    }
}

/// Puts `code` as entry `e` of `packed` (whose bits there are zero).
#[inline]
fn put(packed: &mut [u8], bits: u32, e: u64, code: u8) {
    let bit = e * u64::from(bits);
    let byte = &mut packed[(bit / 8) as usize];
    if bits == 8 {
        *byte = code;
    } else {
        *byte |= code << (bit % 8);
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
