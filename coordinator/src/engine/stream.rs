//! A finished search's table file written from its depth store, part by part in file order
//! ([`TableFileWriter`]): no copy of the values in the file's order is ever whole in memory,
//! only the part being written (a few MiB). The file is byte for byte the one written from the
//! whole values ([`crate::output::write_table_file`]).
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_common::table::{Encoding, Pdb};
//! use tilepdb_coordinator::build::{BuildOptions, build_table, build_table_store};
//! use tilepdb_coordinator::output::write_table_file;
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let dir = tempfile::tempdir().unwrap();
//! let (whole, streamed) = (dir.path().join("whole"), dir.path().join("streamed"));
//! std::fs::create_dir_all(&whole).unwrap();
//! std::fs::create_dir_all(&streamed).unwrap();
//! // The values put in file order, then written whole …
//! let table = build_table(&space, &BuildOptions::default(), &()).unwrap();
//! let a = write_table_file(&whole, &space, Encoding::Byte, &table.values).unwrap();
//! // … and the same search's store streamed to its file.
//! let mut searched = build_table_store(&space, &BuildOptions::default(), &()).unwrap();
//! let b = searched.write_file(&streamed, &space, Encoding::Byte).unwrap();
//! assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
//! assert_eq!(searched.histogram, table.histogram);
//! ```

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use tilepdb_common::StateSpace;
use tilepdb_common::depth_store::DepthBytes;
use tilepdb_common::file_order::for_each_depth_entry;
use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::table::file_writer::TableFileWriter;
use tilepdb_common::table::{DepthCode, Encoding, Header};

use super::arrays::TableArrays;
use crate::error::Result;

/// About how many entries each part of the file holds when its store packs them (rounded up
/// to a multiple of [`TableFileWriter::part_multiple`]): at most 1 MiB of a packed store's
/// code; a byte store's parts are an eighth of that many entries ([`part_entries`]).
pub const PART_ENTRIES: u64 = 1 << 22;

/// About how many entries each part of a file streamed from a store keeping `code` holds:
/// [`PART_ENTRIES`], or an eighth of it for a byte store (512 KiB a part).
pub fn part_entries(code: DepthCode) -> u64 {
    if code == DepthCode::Byte {
        PART_ENTRIES / 8
    } else {
        PART_ENTRIES
    }
}

/// Entries each thread puts in file order at once inside a part (a multiple of 8, so that
/// every piece of a packed part starts on a whole byte).
const PIECE_ENTRIES: u64 = 1 << 16;

/// The depth store of a finished search, kept until its file is written from it: the two-bit
/// array is let go (unless a request handler still holds the arrays).
pub struct SearchedStore {
    arrays: Arc<TableArrays>,
    index: Arc<RegionIndex>,
    pool: Arc<rayon::ThreadPool>,
}

impl fmt::Debug for SearchedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchedStore")
            .field("code", &self.arrays.depths.code())
            .field("entries", &self.arrays.depths.len())
            .finish_non_exhaustive()
    }
}

impl SearchedStore {
    /// The store of the finished search's `arrays` on `index`, whose file's parts are put in
    /// order on `pool`; their two-bit array is freed here if no one else holds them.
    pub fn new(
        arrays: Arc<TableArrays>,
        index: Arc<RegionIndex>,
        pool: Arc<rayon::ThreadPool>,
    ) -> SearchedStore {
        let arrays = match Arc::try_unwrap(arrays) {
            Ok(TableArrays {
                codes,
                depths,
                store_is_state,
            }) => {
                drop(codes);
                Arc::new(TableArrays {
                    codes: tilepdb_common::StateCodes::new(0),
                    depths,
                    store_is_state,
                })
            }
            Err(shared) => shared,
        };
        SearchedStore {
            arrays,
            index,
            pool,
        }
    }

    /// The depth store.
    pub fn depths(&self) -> &DepthBytes {
        &self.arrays.depths
    }

    /// Bytes of memory the store holds.
    pub fn memory_bytes(&self) -> u64 {
        self.arrays.bytes()
    }

    /// The values of the file entries `first..first + entries`, in the store's code, put
    /// into `out` ([`fill_file_order`], on the current rayon pool).
    pub fn fill(&self, space: &StateSpace, first: u64, entries: u64, out: &mut [u8]) {
        fill_file_order(space, &self.index, self.depths(), first, entries, out);
    }

    /// The values of the whole table in file order (the store's code).
    pub fn values(&self, space: &StateSpace) -> Vec<u8> {
        self.pool
            .install(|| file_order(space, &self.index, self.depths()))
    }

    /// Writes the table file of `space` in `encoding` to `path`, part by part in file order
    /// (each part put in order on the store's pool); `packed`: for a packed store, the reached entries
    /// by value and the unreached ones (a byte store's are counted as they are written). The
    /// file's header.
    pub fn write(
        &self,
        path: &Path,
        space: &StateSpace,
        encoding: Encoding,
        packed: Option<(&[u64], u64)>,
    ) -> Result<Header> {
        let code = self.depths().code();
        let mut writer = TableFileWriter::create(path, space, encoding, code)?;
        let multiple = TableFileWriter::part_multiple(encoding);
        let part = part_entries(code).div_ceil(multiple) * multiple;
        let total = space.entries();
        let mut buffer = vec![0u8; byte_len(code.bytes_for(part.min(total)))];
        let mut start = 0;
        while start < total {
            let entries = part.min(total - start);
            let out = &mut buffer[..byte_len(code.bytes_for(entries))];
            self.pool.install(|| self.fill(space, start, entries, out));
            writer.append(space, out, entries)?;
            start += entries;
        }
        Ok(writer.finish(space, packed.filter(|_| code != DepthCode::Byte))?)
    }
}

/// The values of every entry of the table of `space` in file order, from the depth store
/// `depths` of its search on `index`, in the store's code ([`fill_file_order`]).
pub fn file_order(space: &StateSpace, index: &RegionIndex, depths: &DepthBytes) -> Vec<u8> {
    let mut values = vec![0u8; byte_len(depths.code().bytes_for(space.entries()))];
    fill_file_order(space, index, depths, 0, space.entries(), &mut values);
    values
}

/// The values of the file entries `first..first + entries` of the table of `space`, from the
/// depth store `depths` of its search on `index`, put into `out` in the store's code (a byte
/// per entry, [`tilepdb_common::table::UNREACHED`] where none was recorded; or the packed
/// codes; `first` a multiple of 8 for a packed store): the one map from a search's depth
/// store to the file's order ([`for_each_depth_entry`]), for a whole table and for each part
/// of a streamed file. Runs in pieces of 2^16 entries on the current rayon pool.
pub fn fill_file_order(
    space: &StateSpace,
    index: &RegionIndex,
    depths: &DepthBytes,
    first: u64,
    entries: u64,
    out: &mut [u8],
) {
    let code = depths.code();
    out.par_chunks_mut(byte_len(code.bytes_for(PIECE_ENTRIES)))
        .enumerate()
        .for_each(|(piece, out)| {
            let start = first + piece as u64 * PIECE_ENTRIES;
            let n = PIECE_ENTRIES.min(first + entries - start);
            fill_piece(space, index, depths, start..start + n, out);
        });
}

/// Depth entries gathered at once: each is asked into the cache as it is named, and read
/// once the batch is full, so that the reads of a batch wait on memory together.
const GATHER_BATCH: usize = 64;

/// [`fill_file_order`] of the entries `range`, on this thread.
fn fill_piece(
    space: &StateSpace,
    index: &RegionIndex,
    depths: &DepthBytes,
    range: std::ops::Range<u64>,
    out: &mut [u8],
) {
    if depths.code() != DepthCode::Byte {
        // Packed codes are ORed in.
        out.fill(0);
    }
    let mut at = 0u64;
    let mut batch = [0u64; GATHER_BATCH];
    let mut len = 0;
    for_each_depth_entry(space, index, range, |e| {
        depths.prefetch(e);
        batch[len] = e;
        len += 1;
        if len == GATHER_BATCH {
            put_values(depths, &batch, out, &mut at);
            len = 0;
        }
    });
    put_values(depths, &batch[..len], out, &mut at);
}

/// Puts the values of the depth entries `entries` into `out` from its entry `at` on (a byte
/// per entry for a byte store, else the packed codes put in by OR); `at` moves past them.
fn put_values(depths: &DepthBytes, entries: &[u64], out: &mut [u8], at: &mut u64) {
    let code = depths.code();
    for &e in entries {
        let stored = depths.get(e);
        if code == DepthCode::Byte {
            out[usize::try_from(*at).expect("a part held in memory")] = stored.wrapping_sub(1);
        } else {
            code.put(out, *at, stored);
        }
        *at += 1;
    }
}

/// `bytes` as a length in memory.
fn byte_len(bytes: u64) -> usize {
    usize::try_from(bytes).expect("a table held in memory has a usize of bytes")
}
