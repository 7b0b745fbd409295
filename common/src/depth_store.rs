//! The depth store: what the search keeps of every entry's depth beside the two-bit codes.
//!
//! A state joins the next layer exactly once (its two-bit code goes from unseen to next by a
//! compare-and-swap that one thread wins), so its depth is
//! recorded once into a zeroed store; the layer's finishing pass records the same code again,
//! which changes nothing.
//!
//! A byte store of one entry per state can also be the search's state itself, with no two-bit
//! codes beside it: 0 is unseen, `depth + 1` the layer of `depth`
//! ([`DepthBytes::for_each_at_depth`], [`StoreLayer`]). The merge rule is then
//! [`DepthBytes::record_first`] alone, and a layer is retired by the next one's depth.

use std::ops::Range;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use crate::atomic_array::AtomicArray;
use crate::layer::CurrentLayer;
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

    /// ORs the codes of the entries `from..from + n` into the entries `to..to + n` of the
    /// store `dst`, packed as this store packs them (zero there).
    #[inline]
    pub fn copy_codes(&self, from: u64, dst: &mut [u8], to: u64, n: u64) {
        let cells = self.cells();
        self.code
            .copy_codes(|i| cells[i].load(Relaxed), from, dst, to, n);
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

    /// Asks the processor to bring in the codes of the `count` entries `each`, all of them
    /// within `entries` ([`AtomicArray::prefetch_within`]; a hint).
    #[inline]
    pub fn prefetch_within(
        &self,
        entries: Range<u64>,
        count: usize,
        each: impl Iterator<Item = u64>,
    ) {
        let bytes = if entries.is_empty() {
            0..0
        } else {
            self.code.position(entries.start).0..self.code.position(entries.end - 1).0 + 1
        };
        self.cells
            .prefetch_within(bytes, count, each.map(|e| self.code.position(e).0));
    }

    /// Calls `f` with every entry of `entries` whose recorded depth is `depth`, in increasing
    /// order: a byte store read eight entries at a time. `depth` is at most 253, as the layer
    /// loop allows.
    ///
    /// ```
    /// use tilepdb_common::depth_store::DepthBytes;
    /// let store = DepthBytes::new(20);
    /// for entry in [3, 9, 10, 19] {
    ///     store.record_first(entry, 4);
    /// }
    /// store.record_first(5, 3);
    /// let mut at_4 = Vec::new();
    /// store.for_each_at_depth(4..20, 4, |e| at_4.push(e));
    /// assert_eq!(at_4, [9, 10, 19]);
    /// assert_eq!(store.count_at_depth(0..20, 3), 1);
    /// ```
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "entries are below the array's length (a usize); the layer loop keeps `depth + 1` within a byte"
    )]
    pub fn for_each_at_depth(&self, entries: Range<u64>, depth: u32, mut f: impl FnMut(u64)) {
        debug_assert_eq!(self.code, DepthCode::Byte, "a byte per entry");
        let recorded = depth as u8 + 1;
        let cells = &self.cells()[entries.start as usize..entries.end as usize];
        let pattern = u64::from_ne_bytes([recorded; 8]);
        let mut chunks = cells.chunks_exact(8);
        let mut base = entries.start;
        for chunk in &mut chunks {
            let mut hits = zero_bytes(word_of(chunk) ^ pattern);
            while hits != 0 {
                f(base + u64::from(hits.trailing_zeros() / 8));
                hits &= hits - 1;
            }
            base += 8;
        }
        for (i, b) in chunks.remainder().iter().enumerate() {
            if b.load(Relaxed) == recorded {
                f(base + i as u64);
            }
        }
    }

    /// Number of entries of `entries` whose recorded depth is `depth` (a byte store; see
    /// [`DepthBytes::for_each_at_depth`]).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "entries are below the array's length (a usize); the layer loop keeps `depth + 1` within a byte"
    )]
    pub fn count_at_depth(&self, entries: Range<u64>, depth: u32) -> u64 {
        debug_assert_eq!(self.code, DepthCode::Byte, "a byte per entry");
        let recorded = depth as u8 + 1;
        let cells = &self.cells()[entries.start as usize..entries.end as usize];
        let pattern = u64::from_ne_bytes([recorded; 8]);
        let mut chunks = cells.chunks_exact(8);
        let mut count = 0;
        for chunk in &mut chunks {
            count += u64::from(zero_bytes(word_of(chunk) ^ pattern).count_ones());
        }
        let rest = chunks.remainder().iter();
        count + rest.filter(|b| b.load(Relaxed) == recorded).count() as u64
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

/// Eight bytes of a store as one little-endian word, each read on its own (relaxed: other
/// threads may be recording depths beside them).
#[inline(always)]
fn word_of(chunk: &[AtomicU8]) -> u64 {
    u64::from_le_bytes(std::array::from_fn(|i| chunk[i].load(Relaxed)))
}

/// The high bit of every byte of `x` that is zero, and no other bit.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    const LOW_SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // A byte's high bit is set in the sum when its low seven bits are not all zero (no carry
    // leaves a byte), and in `x` when its own high bit is.
    !(((x & LOW_SEVEN) + LOW_SEVEN) | x | LOW_SEVEN)
}

/// The layer of `depth` in a byte store that is the search's state (no two-bit codes): the
/// entries whose recorded depth is `depth`.
pub struct StoreLayer<'a> {
    /// The store, one entry per state.
    pub depths: &'a DepthBytes,
    /// The layer's depth.
    pub depth: u32,
}

impl CurrentLayer for StoreLayer<'_> {
    #[inline]
    fn for_each_current(&self, states: Range<u64>, f: impl FnMut(u64)) {
        self.depths.for_each_at_depth(states, self.depth, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The scan eight entries at a time finds exactly the entries a byte-by-byte filter
        /// finds, for every range (unaligned ends included), and counts them.
        #[test]
        fn the_scan_finds_what_a_plain_filter_finds(
            depths in proptest::collection::vec(0u32..6, 0..80),
            start in 0usize..80,
            len in 0usize..80,
            wanted in 0u32..5,
        ) {
            let store = DepthBytes::new(depths.len() as u64);
            for (entry, &d) in depths.iter().enumerate() {
                // 5 stands for an entry not reached.
                if d < 5 {
                    store.record_first(entry as u64, d);
                }
            }
            let start = start.min(depths.len());
            let end = (start + len).min(depths.len());
            let expected: Vec<u64> = (start..end)
                .filter(|&e| depths[e] == wanted)
                .map(|e| e as u64)
                .collect();
            let mut found = Vec::new();
            store.for_each_at_depth(start as u64..end as u64, wanted, |e| found.push(e));
            prop_assert_eq!(&found, &expected);
            prop_assert_eq!(
                store.count_at_depth(start as u64..end as u64, wanted),
                expected.len() as u64
            );
        }
    }

    #[test]
    fn a_zero_byte_is_found_in_every_position_and_only_there() {
        for position in 0..8 {
            for other in 1..=255u8 {
                let mut bytes = [other; 8];
                bytes[position] = 0;
                let hits = zero_bytes(u64::from_le_bytes(bytes));
                assert_eq!(hits, 0x80 << (8 * position), "{bytes:?}");
            }
        }
        assert_eq!(zero_bytes(0), 0x8080_8080_8080_8080);
    }
}
