//! The depth store: what the search keeps of every entry's depth beside the two-bit codes.
//!
//! A state joins the next layer exactly once (its two-bit code goes from unseen to next by a
//! compare-and-swap that one thread wins), so its depth is
//! recorded once into a zeroed store; the layer's finishing pass records the same code again,
//! which changes nothing.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use crate::atomic_array::AtomicArray;
use crate::table::DepthCode;

/// The depth store: what the search keeps of every entry's depth ([`DepthCode`]): `depth + 1`
/// in a byte (0 means not reached yet), or, for a table that will be written as `1-bit` or
/// `mod3`, only the code that encoding stores (one or two bits per entry).
///
/// A byte store lives on the heap ([`DepthBytes::new`]) or in a memory-mapped file
/// ([`DepthBytes::from_mmap`], the distributed coordinator's checkpointed copy); a packed one
/// ([`DepthBytes::packed`]) on the heap: an [`AtomicArray`] of bytes. Each entry's code is written once (a state joins the
/// next layer once), so packed codes are `ORed` into their zeroed byte and need no
/// compare-and-swap.
///
/// ```
/// use tilepdb_common::table::DepthCode;
/// use tilepdb_common::depth_store::DepthBytes;
/// let store = DepthBytes::packed(20, DepthCode::OneBit);
/// assert_eq!(store.memory_bytes(), 3);
/// store.record_first(5, 2);
/// store.record_first(6, 1);
/// assert_eq!((store.get(5), store.get(6)), (1, 0)); // bit 1 of 2 and of 1
/// ```
pub struct DepthBytes {
    /// The store's bytes.
    cells: AtomicArray<AtomicU8>,
    /// Entries.
    len: usize,
    code: DepthCode,
}

impl DepthBytes {
    /// `entries` bytes, all "not reached"; zeroed pages cost nothing until touched.
    pub fn new(entries: u64) -> DepthBytes {
        DepthBytes::packed(entries, DepthCode::Byte)
    }

    /// A store of `entries` entries keeping `code` of each depth, all "not reached" (zeroed
    /// pages cost nothing until touched).
    pub fn packed(entries: u64, code: DepthCode) -> DepthBytes {
        let len = usize::try_from(entries).expect("a table held in memory has a usize of entries");
        DepthBytes {
            cells: AtomicArray::zeroed(
                code.bytes_for(entries)
                    .try_into()
                    .expect("at most a byte per entry"),
            ),
            len,
            code,
        }
    }

    /// The bytes of `entries` entries in a writable shared mapping of a file of at least
    /// `entries` bytes (a new file of zeros: nothing reached). `None` if it is too small.
    pub fn from_mmap(map: memmap2::MmapMut, entries: u64) -> Option<DepthBytes> {
        let len = usize::try_from(entries).ok()?;
        Some(DepthBytes {
            cells: AtomicArray::from_mmap(map, len)?,
            len,
            code: DepthCode::Byte,
        })
    }

    #[inline(always)]
    fn cells(&self) -> &[AtomicU8] {
        self.cells.as_slice()
    }

    /// What the store keeps of each depth.
    pub fn code(&self) -> DepthCode {
        self.code
    }

    /// Bytes of memory the store holds.
    pub fn memory_bytes(&self) -> u64 {
        self.cells.len() as u64
    }

    /// Writes a file-backed array's changes to its file and waits; nothing on the heap.
    pub fn flush(&self) -> std::io::Result<()> {
        self.cells.flush()
    }

    /// The code stored for `entry` (for a byte store: `depth + 1`, 0 if not reached).
    #[inline]
    pub fn get(&self, entry: u64) -> u8 {
        let (byte, shift) = self.code.position(entry);
        (self.cells()[byte].load(Relaxed) >> shift) & self.code.mask()
    }

    /// Stores `stored` as the code of `entry`.
    #[inline]
    pub fn set(&self, entry: u64, stored: u8) {
        let (byte, shift) = self.code.position(entry);
        let cell = &self.cells()[byte];
        if self.code == DepthCode::Byte {
            cell.store(stored, Relaxed);
        } else {
            let mask = self.code.mask() << shift;
            let _ = cell.fetch_update(Relaxed, Relaxed, |b| {
                Some(b & !mask | (stored << shift) & mask)
            });
        }
    }

    /// Records `depth` for `entry` unless it was reached before: within a layer every writer
    /// stores the same value, so the race is benign and the result deterministic. A packed
    /// store ORs the code in: each of its entries is recorded at one depth only (a state, never
    /// a minimized placement, which keeps a byte).
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "`entry` is below the array's length (a usize); the layer loop refuses depths above 253, so `depth + 1` fits in a byte"
    )]
    pub fn record_first(&self, entry: u64, depth: u32) {
        match self.code {
            DepthCode::Byte => {
                let b = &self.cells()[entry as usize];
                if b.load(Relaxed) == 0 {
                    b.store(depth as u8 + 1, Relaxed);
                }
            }
            code => {
                let bits = code.code(depth);
                if bits != 0 {
                    let (byte, shift) = code.position(entry);
                    let cell = &self.cells()[byte];
                    if cell.load(Relaxed) & (code.mask() << shift) == 0 {
                        cell.fetch_or(bits << shift, Relaxed);
                    }
                }
            }
        }
    }

    /// Asks the processor to bring the byte of `entry` into the cache (a hint).
    #[inline]
    pub fn prefetch(&self, entry: u64) {
        self.cells.prefetch(self.code.position(entry).0);
    }

    /// Entries of the store.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// Whether the array has no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A copy of the table's values (see [`DepthBytes::into_values`]).
    pub fn values(&self) -> Vec<u8> {
        values_of(self.cells(), self.code)
    }

    /// A byte store's values: the depth of each entry, [`UNREACHED`](crate::table::UNREACHED) where none was recorded;
    /// a packed store's codes as they are.
    pub fn into_values(self) -> Vec<u8> {
        match self.cells.into_vec() {
            Ok(mut values) => {
                if self.code == DepthCode::Byte {
                    for v in &mut values {
                        *v = v.wrapping_sub(1);
                    }
                }
                values
            }
            Err(mapped) => values_of(mapped.as_slice(), self.code),
        }
    }
}

/// The values of a store's bytes `cells` that keep `code` (see [`DepthBytes::into_values`]).
fn values_of(cells: &[AtomicU8], code: DepthCode) -> Vec<u8> {
    let raw = cells.iter().map(|b| b.load(Relaxed));
    match code {
        DepthCode::Byte => raw.map(|b| b.wrapping_sub(1)).collect(),
        _ => raw.collect(),
    }
}
