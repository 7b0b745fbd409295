//! [`AtomicArray`]: an array of atomic integers, on the heap or in a memory-mapped file, that
//! many threads update at once. The two-bit state array ([`StateCodes`](crate::StateCodes))
//! and the coordinator's depth store are both one; this module holds the `unsafe` they share.
//!
//! ```
//! use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
//! use tilepdb_common::atomic_array::AtomicArray;
//! let bytes = AtomicArray::<AtomicU8>::zeroed(4);
//! bytes.as_slice()[2].fetch_or(7, Relaxed);
//! assert_eq!(bytes.into_vec().ok(), Some(vec![0, 0, 7, 0]));
//! ```

use std::sync::atomic::{AtomicU8, AtomicU64};

/// Bytes in a cache line of the processor (64 on x86-64 and most others).
const CACHE_LINE: usize = 64;

/// An atomic integer laid out as its plain integer [`Atomic::Plain`].
///
/// # Safety
///
/// `Self` and `Self::Plain` have the same size and alignment, and all-zero bytes are the
/// value 0 of both.
pub unsafe trait Atomic: Send + Sync + Sized {
    /// The plain integer of the same layout.
    type Plain: Copy + Default;
}

// SAFETY: AtomicU8 has the size and alignment of u8.
unsafe impl Atomic for AtomicU8 {
    type Plain = u8;
}

// SAFETY: AtomicU64 has the size of u64, and its alignment on every 64-bit target (checked).
unsafe impl Atomic for AtomicU64 {
    type Plain = u64;
}

const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());

/// `len` atomic integers on the heap ([`AtomicArray::zeroed`]) or in a writable shared
/// mapping of a file ([`AtomicArray::from_mmap`]).
pub struct AtomicArray<A: Atomic> {
    /// The elements of `backing`; valid as long as `backing` lives.
    ptr: *const A,
    len: usize,
    backing: Backing<A>,
}

/// Who owns the memory of an [`AtomicArray`].
/// Arrays of at least this many bytes ask for huge pages.
const HUGE_PAGE_ARRAY: usize = 4 << 20;

/// Asks the kernel to back the whole pages of the `bytes` bytes at `start`, not touched yet,
/// with transparent huge pages when it can (Linux `madvise(MADV_HUGEPAGE)`; a hint: refused
/// by kernels without them, and ignored for arrays under [`HUGE_PAGE_ARRAY`] bytes). The
/// search's arrays are read and written at random, one state here and one there, and with
/// ordinary pages most of those accesses also miss the address translation cache.
fn advise_huge_pages(start: *const u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_PAGE_ARRAY {
        const PAGE: usize = 4096;
        let first = (start as usize).next_multiple_of(PAGE);
        let end = (start as usize + bytes) / PAGE * PAGE;
        if end > first {
            // SAFETY: the range lies inside one live allocation; the advice changes how its
            // pages are backed, never their contents (zeros until written).
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

enum Backing<A> {
    Heap(Box<[A]>),
    Mapped(memmap2::MmapMut),
}

// SAFETY: the elements are atomics (`A: Sync`), only ever reached through `&A`; moving the
// owner (a box or a mapping) does not move the memory `ptr` points to.
unsafe impl<A: Atomic> Send for AtomicArray<A> {}
// SAFETY: as for `Send`.
unsafe impl<A: Atomic> Sync for AtomicArray<A> {}

impl<A: Atomic> AtomicArray<A> {
    /// `len` zeros on the heap. The memory comes zeroed from the allocator, so pages never
    /// touched cost nothing.
    pub fn zeroed(len: usize) -> AtomicArray<A> {
        let plain = vec![A::Plain::default(); len].into_boxed_slice();
        advise_huge_pages(plain.as_ptr().cast(), std::mem::size_of_val(&*plain));
        // SAFETY: `A` has the layout of `A::Plain` (the trait's contract) and the box is
        // uniquely owned.
        let atoms = unsafe { Box::from_raw(Box::into_raw(plain) as *mut [A]) };
        AtomicArray {
            ptr: atoms.as_ptr(),
            len,
            backing: Backing::Heap(atoms),
        }
    }

    /// The first `len` elements of a writable shared mapping (of a file of zeros: all 0);
    /// changes reach the file, [`AtomicArray::flush`] waits for them. `None` if the mapping
    /// is too small or not aligned for `A`.
    pub fn from_mmap(mut map: memmap2::MmapMut, len: usize) -> Option<AtomicArray<A>> {
        if map.len() / std::mem::size_of::<A>() < len
            || !(map.as_ptr() as usize).is_multiple_of(std::mem::align_of::<A>())
        {
            return None;
        }
        Some(AtomicArray {
            ptr: map.as_mut_ptr().cast::<A>(),
            len,
            backing: Backing::Mapped(map),
        })
    }

    /// The elements.
    #[inline(always)]
    pub fn as_slice(&self) -> &[A] {
        // SAFETY: `ptr` points to `len` elements owned by `self.backing`, aligned for `A`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes a mapped array's changes to its file and waits; nothing for one on the heap.
    pub fn flush(&self) -> std::io::Result<()> {
        match &self.backing {
            Backing::Heap(_) => Ok(()),
            Backing::Mapped(map) => map.flush(),
        }
    }

    /// Asks the processor to bring element `i` into the cache (a hint; nothing on other
    /// targets than x86-64).
    #[inline]
    pub fn prefetch(&self, i: usize) {
        crate::prefetch::prefetch(&self.as_slice()[i]);
    }

    /// Asks the processor to bring in the `count` elements `elements`, all of them within
    /// `range` (a hint): each cache line of `range` once when there are at least as many
    /// elements as lines, else each element's line.
    #[inline]
    pub fn prefetch_within(
        &self,
        range: std::ops::Range<usize>,
        count: usize,
        elements: impl Iterator<Item = usize>,
    ) {
        if count < Self::lines_of(range.clone()) {
            elements.for_each(|i| self.prefetch(i));
            return;
        }
        let step = (CACHE_LINE / std::mem::size_of::<A>()).max(1);
        let mut i = range.start;
        while i < range.end {
            self.prefetch(i);
            i += step;
        }
        // The range's last line, if the steps passed over it.
        if !range.is_empty() {
            self.prefetch(range.end - 1);
        }
    }

    /// How many cache lines the elements `range` span, at most.
    fn lines_of(range: std::ops::Range<usize>) -> usize {
        if range.is_empty() {
            return 0;
        }
        let size = std::mem::size_of::<A>();
        (range.end - 1) * size / CACHE_LINE - range.start * size / CACHE_LINE + 1
    }

    /// The plain values of an array on the heap, without a copy; a mapped array back.
    pub fn into_vec(self) -> Result<Vec<A::Plain>, AtomicArray<A>> {
        match self.backing {
            Backing::Heap(atoms) => {
                // SAFETY: `A` has the layout of `A::Plain` and the box is uniquely owned.
                let plain = unsafe { Box::from_raw(Box::into_raw(atoms) as *mut [A::Plain]) };
                Ok(plain.into_vec())
            }
            Backing::Mapped(map) => Err(AtomicArray {
                ptr: self.ptr,
                len: self.len,
                backing: Backing::Mapped(map),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    use super::*;

    #[test]
    fn a_mapped_array_reaches_its_file_and_refuses_a_short_mapping() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("words");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(24).unwrap();
        // SAFETY: the file is this test's own and keeps its size while mapped.
        let map = || unsafe { memmap2::MmapMut::map_mut(&file) }.unwrap();
        assert!(AtomicArray::<AtomicU64>::from_mmap(map(), 4).is_none());
        let words = AtomicArray::<AtomicU64>::from_mmap(map(), 3).unwrap();
        assert_eq!(words.len(), 3);
        words.as_slice()[1].store(0x0102, Relaxed);
        words.flush().unwrap();
        let words = words.into_vec().unwrap_err();
        assert_eq!(words.as_slice()[1].load(Relaxed), 0x0102);
        drop(words);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(u64::from_ne_bytes(bytes[8..16].try_into().unwrap()), 0x0102);
        let heap = AtomicArray::<AtomicU64>::zeroed(3);
        heap.as_slice()[2].store(5, Relaxed);
        heap.prefetch(2);
        heap.prefetch_within(0..3, 1, std::iter::once(2));
        heap.prefetch_within(0..3, 3, 0..3);
        assert_eq!(heap.into_vec().ok(), Some(vec![0, 0, 5]));
    }

    #[test]
    fn a_range_spans_the_cache_lines_its_elements_touch() {
        assert_eq!(AtomicArray::<AtomicU64>::lines_of(0..0), 0);
        assert_eq!(AtomicArray::<AtomicU64>::lines_of(0..8), 1);
        assert_eq!(AtomicArray::<AtomicU64>::lines_of(4..12), 2);
        assert_eq!(AtomicArray::<AtomicU8>::lines_of(0..720), 12);
    }
}
