//! Encoding a finished table's values and writing its file.
//!
//! The bytes depend only on the table: no time, host or path is recorded, so the same table
//! always gives the same file, and its checksum is its identity. Files are written to a
//! temporary name in the same directory, synced, then renamed: a file that exists under its
//! name is complete.
//!
//! ```
//! use tilepdb_common::table::{EncodedTable, Encoding};
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! let board: Board = "2x2".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
//! // Tile 1 on cells 0, 1, 2, 3: its distances from cell 1 are 1, 0, 2, 1.
//! let values = [1, 0, 2, 1];
//! let nibble = EncodedTable::new(&space, Encoding::Nibble, &values).unwrap();
//! assert_eq!(nibble.payload(), &[0x00, 0x00]); // every value is its Manhattan distance
//! assert_eq!(nibble.header.histogram, vec![1, 2, 1]);
//! let mod3 = EncodedTable::new(&space, Encoding::Mod3, &values).unwrap();
//! assert_eq!(mod3.payload(), &[1 + 0 * 3 + 2 * 9 + 1 * 27]);
//! ```

use std::borrow::Cow;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::space::StateSpace;

use super::UNREACHED;
use super::encoding::{Encoding, NIBBLE_MAX, POW3};
use super::error::TableError;
use super::header::{HISTOGRAM_SLOTS, Header};
use super::values::{DepthCode, PackedValues, ValuesRef};
use super::walk::{for_each_entry, for_each_entry_in};

/// A table's header and encoded payload, ready to write.
#[derive(Clone, Debug)]
pub struct EncodedTable<'a> {
    /// The header to write (its payload's length and checksum included).
    pub header: Header,
    payload: Cow<'a, [u8]>,
}

impl<'a> EncodedTable<'a> {
    /// Encodes `values` (one byte per entry, [`UNREACHED`] for entries never reached) as the
    /// table of `space`. Refuses mod3 for minimized tables, a wrong number of values, unreached
    /// entries in a pattern that does not hold every tile and, for the encodings that store the
    /// excess over Manhattan, values below it or of the wrong parity.
    pub fn new(
        space: &StateSpace,
        encoding: Encoding,
        values: &'a [u8],
    ) -> Result<EncodedTable<'a>, TableError> {
        let mut header = Header::plan(space, encoding)?;
        if values.len() as u64 != header.entries {
            return Err(TableError::ValueCount {
                values: values.len() as u64,
                entries: header.entries,
            });
        }
        let mut counts = [0u64; 256];
        for &v in values {
            counts[v as usize] += 1;
        }
        fill_counts(
            space,
            &mut header,
            &counts[..HISTOGRAM_SLOTS],
            counts[UNREACHED as usize],
        )?;
        let payload: Cow<[u8]> = match encoding {
            Encoding::Byte => Cow::Borrowed(values),
            Encoding::Mod3 => Cow::Owned(pack_mod3(values)),
            Encoding::OneBit => Cow::Owned(pack_one_bit(values)),
            Encoding::Nibble | Encoding::MinNibble { .. } => {
                Cow::Owned(pack_nibbles(space, encoding, 0, values)?)
            }
        };
        debug_assert_eq!(payload.len() as u64, header.payload_len);
        header.payload_crc32 = crc32fast::hash(&payload);
        Ok(EncodedTable { header, payload })
    }

    /// Encodes `values` as the table of `space`: a byte per entry as [`EncodedTable::new`]
    /// does, or packed codes ([`PackedValues`]) in the one encoding whose payload they give
    /// (`1-bit` codes are the payload itself; `mod3` codes are packed five per byte).
    pub fn from_values(
        space: &StateSpace,
        encoding: Encoding,
        values: impl Into<ValuesRef<'a>>,
    ) -> Result<EncodedTable<'a>, TableError> {
        match values.into() {
            ValuesRef::Bytes(v) => EncodedTable::new(space, encoding, v),
            ValuesRef::Packed(p) => EncodedTable::packed(space, encoding, p),
        }
    }

    /// The table of packed codes `values`; refuses another encoding than theirs, a wrong
    /// number of entries or codes, and unreached entries in a pattern that does not hold
    /// every tile.
    fn packed(
        space: &StateSpace,
        encoding: Encoding,
        values: &'a PackedValues,
    ) -> Result<EncodedTable<'a>, TableError> {
        if values.code.encoding() != Some(encoding) {
            return Err(TableError::PackedEncoding {
                kept: values.code.name(),
                encoding: encoding.to_string(),
            });
        }
        let mut header = Header::plan(space, encoding)?;
        let counted: u64 = values.histogram.iter().sum::<u64>() + values.unreached;
        if values.entries != header.entries || counted != header.entries {
            return Err(TableError::ValueCount {
                values: values.entries.max(counted),
                entries: header.entries,
            });
        }
        if values.data.len() as u64 != values.code.bytes_for(values.entries) {
            return Err(TableError::ValueCount {
                values: values.data.len() as u64 * (8 / values.code.bits()),
                entries: header.entries,
            });
        }
        fill_counts(space, &mut header, &values.histogram, values.unreached)?;
        let payload: Cow<[u8]> = match values.code {
            DepthCode::OneBit => Cow::Borrowed(&values.data),
            DepthCode::Mod3 => Cow::Owned(pack_mod3_codes(&values.data, values.entries)),
            DepthCode::Byte => unreachable!("a byte code has no packed encoding"),
        };
        debug_assert_eq!(payload.len() as u64, header.payload_len);
        header.payload_crc32 = crc32fast::hash(&payload);
        Ok(EncodedTable { header, payload })
    }

    /// The encoded payload.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// Writes the file atomically (temporary file, sync, rename).
    pub fn write(&self, path: &Path) -> Result<(), TableError> {
        write_atomic(path, &[&self.header.to_bytes(), &self.payload])
    }
}

/// Records in `header` the table's counts: `histogram[v]` reached entries of value `v` (zeros
/// at its end are dropped) and `unreached` entries. Refuses unreached entries in a pattern that
/// does not hold every tile, a table with no entry reached, and values beyond the histogram's
/// slots.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the largest value is a position in the histogram, below its 255 slots, so it fits in a byte"
)]
pub(super) fn fill_counts(
    space: &StateSpace,
    header: &mut Header,
    histogram: &[u64],
    unreached: u64,
) -> Result<(), TableError> {
    if unreached != 0 && space.k() + 1 != space.board().cells() {
        return Err(TableError::Value {
            value: UNREACHED,
            reason: format!(
                "{unreached} entries are unreached, which only a pattern of every tile allows"
            ),
        });
    }
    let max = histogram
        .iter()
        .rposition(|&c| c != 0)
        .filter(|&m| m < HISTOGRAM_SLOTS)
        .ok_or_else(|| TableError::Value {
            value: UNREACHED,
            reason: "no entry is reached, or a value is beyond the histogram".into(),
        })?;
    header.unreached = unreached;
    header.max_value = max as u8;
    header.histogram = histogram[..=max].to_vec();
    Ok(())
}

/// `h mod 3`, five base-3 digits per byte (entry `5i + j` is digit `j` of byte `i`, least
/// significant first); unreached entries store 0.
pub(super) fn pack_mod3(values: &[u8]) -> Vec<u8> {
    values
        .chunks(5)
        .map(|chunk| {
            chunk
                .iter()
                .zip(POW3)
                .map(|(&v, p)| if v == UNREACHED { 0 } else { v % 3 * p })
                .sum()
        })
        .collect()
}

/// The `mod3` payload of `entries` codes `d mod 3 + 1` (0: unreached, stored as digit 0),
/// four per byte of `codes`.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the payload is built in memory, so its length fits in usize"
)]
pub(super) fn pack_mod3_codes(codes: &[u8], entries: u64) -> Vec<u8> {
    const CHUNK: usize = 1 << 16;
    let mut out = vec![0u8; entries.div_ceil(5) as usize];
    let fill = |(i, out): (usize, &mut [u8])| {
        let first = (i * CHUNK * 5) as u64;
        for (j, byte) in out.iter_mut().enumerate() {
            let base = first + 5 * j as u64;
            let mut b = 0u8;
            for (d, p) in POW3.iter().enumerate() {
                let e = base + d as u64;
                if e < entries {
                    b += DepthCode::Mod3.get(codes, e).saturating_sub(1) * p;
                }
            }
            *byte = b;
        }
    };
    out.chunks_mut(CHUNK).enumerate().for_each(fill);
    out
}

/// Bit 1 of `h`, eight entries per byte (entry `8i + j` is bit `j` of byte `i`); unreached
/// entries store 0.
pub(super) fn pack_one_bit(values: &[u8]) -> Vec<u8> {
    values
        .chunks(8)
        .map(|chunk| {
            chunk.iter().enumerate().fold(0u8, |b, (j, &v)| {
                b | (u8::from(v != UNREACHED && v & 2 != 0) << j)
            })
        })
        .collect()
}

/// Nibbles of `(h - m) / 2` (saturated at 15), per entry or the least of each group; entry or
/// group `i` is the low half of byte `i / 2` when `i` is even, the high half when odd.
/// Unreached entries count as 15 (they are never asked for: the other permutation parity).
/// `values` are the entries from `first` on, which starts a byte of the payload (a multiple of
/// two groups); the payload of those entries.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the payload and the values are held in memory, so their positions fit in usize"
)]
pub(super) fn pack_nibbles(
    space: &StateSpace,
    encoding: Encoding,
    first: u64,
    values: &[u8],
) -> Result<Vec<u8>, TableError> {
    let group_log2 = u32::from(encoding.parameter());
    debug_assert!(first.is_multiple_of(2 << group_log2));
    let end = first + values.len() as u64;
    let mut out = vec![0u8; encoding.payload_len(values.len() as u64) as usize];
    let mut least = NIBBLE_MAX;
    let mut bad = None;
    let first_unit = first >> group_log2;
    let mut visit = |entry: u64, cells: &[u8], m: u32| {
        let v = values[(entry - first) as usize];
        let nib = if v == UNREACHED {
            NIBBLE_MAX
        } else {
            if u32::from(v) < m || !(u32::from(v) - m).is_multiple_of(2) {
                bad.get_or_insert((entry, v, cells.to_vec(), m));
            }
            Encoding::excess(v, m)
        };
        least = least.min(nib);
        let unit = entry >> group_log2;
        let last_of_unit = (entry + 1) >> group_log2 != unit || entry + 1 == end;
        if last_of_unit {
            out[((unit - first_unit) >> 1) as usize] |= least << ((unit & 1) * 4);
            least = NIBBLE_MAX;
        }
    };
    if first == 0 && end == space.entries() {
        for_each_entry(space, &mut visit);
    } else {
        for_each_entry_in(space, first..end, &mut visit);
    }
    if let Some((entry, v, cells, m)) = bad {
        return Err(TableError::Value {
            value: v,
            reason: format!(
                "entry {entry} (placement {cells:?}) is below its Manhattan distance {m} or of the other parity"
            ),
        });
    }
    Ok(out)
}

/// Writes `parts` one after the other to `path` through a temporary file in the same
/// directory, synced and renamed into place.
pub fn write_atomic(path: &Path, parts: &[&[u8]]) -> Result<(), TableError> {
    let tmp = temp_path(path)?;
    let result = (|| -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        for part in parts {
            f.write_all(part)?;
        }
        f.sync_all()?;
        drop(f);
        publish(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        TableError::io(path, e)
    })
}

/// A temporary name for `path`'s file in its directory (which is created): hidden, and unique
/// in this process.
pub(super) fn temp_path(path: &Path) -> Result<std::path::PathBuf, TableError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| TableError::io(dir, e))?;
    }
    let name = path
        .file_name()
        .ok_or_else(|| TableError::io(path, std::io::Error::other("not a file name")))?;
    Ok(path.with_file_name(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )))
}

/// Renames the synced file `tmp` to `path`, and makes the rename durable.
pub(super) fn publish(tmp: &Path, path: &Path) -> std::io::Result<()> {
    fs::rename(tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Not every platform can open a directory.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}
