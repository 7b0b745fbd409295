//! How a table's bytes are held once opened ([`Load`]): a read-only map of the file, a copy in
//! anonymous memory backed by huge pages, or memory for files too short to map; and the
//! payload's checksum read with each part given back as it goes.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use memmap2::{Mmap, MmapOptions};

use super::error::TableError;
use super::header::HEADER_LEN;

/// How [`Pdb::open_with`](super::Pdb::open_with) holds a table's bytes. Either way the whole
/// file is validated (header, sizes, CRC-32 of the payload) before any lookup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Load {
    /// A read-only map of the file: nothing is copied, the pages are the page cache's and
    /// shared with every process that maps the file, and the kernel may drop them under
    /// memory pressure (and read them again). Random lookups in a table much larger than what
    /// the TLB covers (the 495 MiB of the 15-puzzle's 8-tile table) are several times faster
    /// when the kernel maps it with 2 MiB pages, which it can only where the page cache holds
    /// the file in 2 MiB folios: Linux 6.x does for files it reads from disk (the map asks for
    /// them), not always for a file just written or read while memory was fragmented (see the
    /// `FilePmdMapped` line of `/proc/PID/smaps_rollup`).
    #[default]
    Map,
    /// A private copy of the file in anonymous memory that the kernel is asked to back with
    /// 2 MiB transparent huge pages (Linux `madvise(MADV_HUGEPAGE)`; elsewhere, or where the
    /// kernel declines, ordinary pages): fast lookups in large tables whatever the state of
    /// the page cache, at the cost of the table's size in memory for each process (on top of
    /// the page cache's copy, which the kernel may drop) and of copying the whole file at
    /// open (`AnonHugePages` in `/proc/PID/smaps_rollup`).
    Memory,
}

impl Load {
    /// The name: `map` or `memory`.
    pub fn name(self) -> &'static str {
        match self {
            Load::Map => "map",
            Load::Memory => "memory",
        }
    }
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Load {
    type Err = String;
    fn from_str(s: &str) -> Result<Load, String> {
        match s {
            "map" => Ok(Load::Map),
            "memory" => Ok(Load::Memory),
            _ => Err(format!("unknown table load {s:?}: map or memory")),
        }
    }
}

/// Huge page size of x86-64 and of most arm64 kernels: anonymous copies are rounded up to it,
/// which lets the kernel align them on it.
pub(super) const HUGE_PAGE: usize = 2 << 20;

/// The bytes of a table: a read-only map of the file, a copy in anonymous memory (its first
/// `len` bytes), or memory for files too short to map.
pub(super) enum Bytes {
    /// The map and its record for the SIGBUS handler (dropped first: the record goes before
    /// the map).
    Map {
        _record: super::mapped::MappedTable,
        map: Mmap,
    },
    Anonymous {
        map: Mmap,
        len: usize,
    },
    Heap(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map { map, .. } => map,
            Bytes::Anonymous { map, len } => &map[..*len],
            Bytes::Heap(v) => v,
        }
    }
}

/// The CRC-32 of `payload`, the part of `map` after the header, read a part at a time; each
/// part's pages are given back to the page cache once read (Linux `madvise(MADV_DONTNEED)`).
pub(super) fn released_crc(map: &Mmap, payload: &[u8]) -> u32 {
    /// A multiple of every page size, so that each part after the header starts on a page.
    const PART: usize = 64 << 20;
    let mut crc = crc32fast::Hasher::new();
    for (i, part) in payload.chunks(PART).enumerate() {
        crc.update(part);
        #[cfg(target_os = "linux")]
        // SAFETY: the map is a read-only, shared map of a file that is never modified in
        // place: pages dropped are read again from the file, with the same bytes, and no
        // reference into the map can observe a change. The range is inside the map, and
        // starts on a page: the header's 4096 bytes plus whole parts.
        let _ = unsafe {
            map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                HEADER_LEN + i * PART,
                part.len(),
            )
        };
    }
    crc.finalize()
}

/// Reads the `len` bytes of `file` into anonymous memory, asking for huge pages.
pub(super) fn read_anonymous(file: &mut File, len: u64, path: &Path) -> Result<Bytes, TableError> {
    let io = |e| TableError::io(path, e);
    let len = usize::try_from(len).map_err(|_| {
        io(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            "the file is larger than the address space",
        ))
    })?;
    let mut map = MmapOptions::new()
        .len(len.next_multiple_of(HUGE_PAGE))
        .map_anon()
        .map_err(io)?;
    // A hint, before the pages are touched: kernels without transparent huge pages refuse it,
    // and the copy then simply lives in ordinary pages.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    file.read_exact(&mut map[..len]).map_err(io)?;
    Ok(Bytes::Anonymous {
        map: map.make_read_only().map_err(io)?,
        len,
    })
}
