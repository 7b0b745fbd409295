//! One table file, memory-mapped (or read into memory, [`Load`]) and validated before any
//! lookup.
//!
//! [`Pdb::open`] checks the magic, the version, the header's checksum and fields, the file's
//! length and the payload's checksum, and refuses the file with an error that names it and the
//! reason. Lookups then read the mapped payload in place. [`Pdb::open_with`] and
//! [`Load::Memory`] copy the file into memory backed by huge pages instead, and validate the
//! copy the same way.
//!
//! ```
//! use tilepdb_common::table::{EncodedTable, Encoding, Pdb};
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, PuzzleState, StateSpace};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![2]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
//! // One tile, blank ignored: the value is the tile's Manhattan distance.
//! let values: Vec<u8> = (0..9).map(|c| board.distance(c, 2) as u8).collect();
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("pattern-2.pdb");
//! EncodedTable::new(&space, Encoding::Nibble, &values).unwrap().write(&path).unwrap();
//! let pdb = Pdb::open(&path).unwrap();
//! // Tile 2 on cell 6 (bottom left): 2 rows and 2 columns from cell 2.
//! let state = PuzzleState::parse(board, "0 1 6 3 4 5 2 7 8").unwrap();
//! assert_eq!(pdb.value_of_state(&state).unwrap(), 4);
//! std::fs::write(&path, b"not a table").unwrap();
//! let err = Pdb::open(&path).unwrap_err().to_string();
//! assert!(err.contains("pattern-2.pdb") && err.contains("not a tilepdb table"), "{err}");
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use crate::board::{Board, Goal, MAX_CELLS};
use crate::puzzle::PuzzleState;
use crate::space::{BlankRule, StateSpace, slot_of};

use super::encoding::Encoding;
use super::error::TableError;
use super::header::{HEADER_LEN, Header, OFF_HEADER_CRC};
use super::load::{Bytes, Load, read_anonymous, released_crc};
use super::mod3::{ResidueTable, child_value, one_bit_child_value};
use super::walk::for_each_entry;
use crate::region_index::RegionIndex;

/// Bytes of a page of a map.
const PAGE: usize = 4096;

/// A validated table, memory-mapped or read into memory ([`Load`]).
pub struct Pdb {
    path: PathBuf,
    bytes: Bytes,
    header: Header,
    header_crc32: u32,
    space: StateSpace,
    /// `dist[i][c]`: distance of the pattern's `i`-th tile on cell `c` from its goal cell.
    dist: [[u8; MAX_CELLS]; MAX_CELLS],
    /// The region index of a zero-aware table (its entries' order).
    region: Option<Arc<RegionIndex>>,
}

impl Pdb {
    /// Maps and validates the table file at `path` ([`Load::Map`]).
    ///
    /// The file must not be modified while it is mapped (tables are written once, to a
    /// temporary name, and renamed into place).
    pub fn open(path: impl AsRef<Path>) -> Result<Pdb, TableError> {
        Pdb::open_with(path, Load::Map)
    }

    /// [`Pdb::open`], each part of the mapped payload given back to the page cache once its
    /// checksum is read ([`Pdb::release_resident`]): for a builder that opens the file it has
    /// just written and reads little of it again, whose resident memory must not grow with the
    /// table.
    pub fn open_released(path: impl AsRef<Path>) -> Result<Pdb, TableError> {
        Pdb::open_loaded(path.as_ref(), Load::Map, true)
    }

    /// Maps the table file at `path`, or reads it into memory backed by huge pages, as `load`
    /// says, and validates it.
    pub fn open_with(path: impl AsRef<Path>, load: Load) -> Result<Pdb, TableError> {
        Pdb::open_loaded(path.as_ref(), load, false)
    }

    /// Opens the file as `load` says; `release`: a map's pages are let go as they are
    /// validated.
    fn open_loaded(path: &Path, load: Load, release: bool) -> Result<Pdb, TableError> {
        let path = path.to_path_buf();
        // A regular file only: a FIFO would block, a device be read for ever.
        let mut file = crate::files::open_regular(&path).map_err(|e| TableError::io(&path, e))?;
        let len = file.metadata().map_err(|e| TableError::io(&path, e))?.len();
        let bytes = if len < HEADER_LEN as u64 {
            let mut v = Vec::with_capacity(HEADER_LEN);
            file.read_to_end(&mut v)
                .map_err(|e| TableError::io(&path, e))?;
            Bytes::Heap(v)
        } else {
            match load {
                Load::Map => {
                    // SAFETY: the map is read-only; table files are never modified in place.
                    let map = unsafe { Mmap::map(&file) }.map_err(|e| TableError::io(&path, e))?;
                    // A hint: pages the validation below reads from disk come in 2 MiB folios
                    // that the kernel can map as huge pages (Linux with large folios in the
                    // page cache; what is already cached keeps its folios).
                    #[cfg(target_os = "linux")]
                    let _ = map.advise(memmap2::Advice::HugePage);
                    // The file shrinking under the map ends the process with a message that
                    // names it, not a bare SIGBUS.
                    let record = super::mapped::MappedTable::record(map.as_ptr(), map.len(), &path);
                    Bytes::Map {
                        _record: record,
                        map,
                    }
                }
                Load::Memory => read_anonymous(&mut file, len, &path)?,
            }
        };
        Pdb::from_bytes(path, bytes, release)
    }

    /// Validates a table held in memory (`path` names it in errors).
    pub fn from_vec(path: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Pdb, TableError> {
        Pdb::from_bytes(path.into(), Bytes::Heap(bytes), false)
    }

    /// Validates `bytes`; `release`: a map's pages are let go as their checksum is read.
    fn from_bytes(path: PathBuf, bytes: Bytes, release: bool) -> Result<Pdb, TableError> {
        let header = match &bytes {
            Bytes::Map { map, .. } if release => {
                Header::validate_file_with(&bytes, |payload| released_crc(map, payload))
            }
            _ => Header::validate_file(&bytes),
        }
        .map_err(|d| TableError::invalid(&path, d))?;
        let header_crc32 = u32::from_le_bytes(
            bytes[OFF_HEADER_CRC..HEADER_LEN]
                .try_into()
                .expect("four bytes"),
        );
        let space = header.space()?;
        let mut dist = [[0u8; MAX_CELLS]; MAX_CELLS];
        let board = space.board();
        for (i, &g) in space.goal_cells().iter().enumerate() {
            for (c, d) in dist[i].iter_mut().enumerate().take(board.cells()) {
                *d = u8::try_from(board.distance(c, usize::from(g)))
                    .expect("a distance on a board of at most 25 cells fits a byte");
            }
        }
        let region = match space.rule() {
            BlankRule::ZeroAware => Some(space.region_index()?),
            _ => None,
        };
        Ok(Pdb {
            path,
            bytes,
            header,
            header_crc32,
            space,
            dist,
            region,
        })
    }

    /// Gives the pages of a mapped file back to the page cache: they stop counting in this
    /// process's resident memory until they are read again (Linux `madvise(MADV_DONTNEED)`;
    /// a no-op for copies and elsewhere). A set's build holds each table it wrote mapped for
    /// its manifest: without this, every table's validated pages would stay resident.
    pub fn release_resident(&self) {
        #[cfg(target_os = "linux")]
        if let Bytes::Map { map, .. } = &self.bytes {
            // SAFETY: the map is a read-only, shared map of a file that is never modified in
            // place: pages dropped are read again from the file, with the same bytes, and no
            // reference into the map can observe a change.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    /// Gives the pages of the payload bytes `range` back to the page cache, as
    /// [`Pdb::release_resident`] does for the whole file: the whole pages inside the range
    /// (and the last, partial page of the file when the range ends the payload). For a reader
    /// that goes through the payload once in order, so that it never holds it whole.
    pub fn release_payload(&self, range: std::ops::Range<usize>) {
        self.release_map(|len| {
            let payload = len - HEADER_LEN;
            let end = range.end.min(payload);
            let start = (HEADER_LEN + range.start).next_multiple_of(PAGE);
            let end = if end == payload {
                len
            } else {
                (HEADER_LEN + end) / PAGE * PAGE
            };
            start..end
        });
    }

    /// Gives back every page that holds a byte of the payload bytes `range`, the pages it
    /// shares with its neighbours included (they are read again from the page cache if
    /// needed): for a reader of scattered ranges, such as the entries a proof shard asks
    /// for, whose ranges rarely cover a whole page.
    pub fn release_payload_pages(&self, range: std::ops::Range<usize>) {
        self.release_map(|len| {
            let start = (HEADER_LEN + range.start) / PAGE * PAGE;
            start..(HEADER_LEN + range.end).next_multiple_of(PAGE).min(len)
        });
    }

    /// Gives the map's bytes `bounds(map length)` (a range that starts on a page) back to the
    /// page cache; nothing for a copy, or on other systems than Linux.
    fn release_map(&self, bounds: impl FnOnce(usize) -> std::ops::Range<usize>) {
        #[cfg(target_os = "linux")]
        if let Bytes::Map { map, .. } = &self.bytes {
            let range = bounds(map.len());
            if range.start < range.end {
                // SAFETY: as for `release_resident`: a read-only, shared map of a file never
                // modified in place, so dropped pages are read again with the same bytes; the
                // range is inside the map and starts on a page.
                let _ = unsafe {
                    map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        range.start,
                        range.end - range.start,
                    )
                };
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = bounds;
    }

    /// The file this table was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the table's bytes are held: [`Load::Memory`] for a copy in anonymous memory, else
    /// [`Load::Map`] (also for the small files read onto the heap).
    pub fn load(&self) -> Load {
        match self.bytes {
            Bytes::Anonymous { .. } => Load::Memory,
            _ => Load::Map,
        }
    }

    /// The table's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Board, goal, pattern and blank rule of the table.
    pub fn space(&self) -> &StateSpace {
        &self.space
    }

    /// How the payload stores the values.
    pub fn encoding(&self) -> Encoding {
        self.header.encoding
    }

    /// Entries of the table.
    pub fn entries(&self) -> u64 {
        self.header.entries
    }

    /// The encoded payload, in place in the map (or the copy).
    pub fn payload(&self) -> &[u8] {
        &self.bytes[HEADER_LEN..]
    }

    /// Bytes of the file.
    pub fn file_len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The CRC-32 of the header as stored in the file (it covers the payload's CRC-32, so it
    /// identifies the whole file).
    pub fn header_crc32(&self) -> u32 {
        self.header_crc32
    }

    /// The table's identity: `crc32:` and the header's CRC-32 in hex.
    pub fn checksum(&self) -> String {
        format!("crc32:{:08x}", self.header_crc32)
    }

    /// Refuses a table of another board, goal, blank rule, pattern or encoding than expected
    /// (the reason names every difference).
    pub fn check_matches(
        &self,
        board: Board,
        goal: Goal,
        rule: BlankRule,
        tiles: &[u8],
        encoding: Option<Encoding>,
    ) -> Result<(), TableError> {
        let h = &self.header;
        let mut diffs = Vec::new();
        if h.board != board {
            diffs.push(format!("board {} instead of {board}", h.board));
        }
        if h.goal != goal {
            diffs.push(format!("goal {} instead of {goal}", h.goal));
        }
        if h.rule != rule {
            diffs.push(format!("blank rule {} instead of {rule}", h.rule));
        }
        if h.tiles != tiles {
            diffs.push(format!("tiles {:?} instead of {tiles:?}", h.tiles));
        }
        if let Some(e) = encoding.filter(|&e| e != h.encoding) {
            diffs.push(format!("encoding {} instead of {e}", h.encoding));
        }
        if diffs.is_empty() {
            Ok(())
        } else {
            Err(TableError::Mismatch {
                path: self.path.clone(),
                reason: format!("this table has {}", diffs.join(", ")),
            })
        }
    }

    fn check_index(&self, index: u64) -> Result<(), TableError> {
        if index >= self.header.entries {
            return Err(TableError::OutOfRange {
                path: self.path.clone(),
                index,
                entries: self.header.entries,
            });
        }
        Ok(())
    }

    /// The raw stored value of entry `index`: byte, nibble (of its group) or base-3 digit.
    pub fn stored(&self, index: u64) -> Result<u8, TableError> {
        self.check_index(index)?;
        Ok(self.encoding().stored(self.payload(), index))
    }

    /// The region index of a zero-aware table (`None` for other rules).
    pub fn region_index(&self) -> Option<&RegionIndex> {
        self.region.as_deref()
    }

    /// The value of entry `index`: exact for byte, mod3 and 1-bit (by a descent, slow),
    /// a lower bound for a saturated nibble and for min-nibble. [`super::UNREACHED`] marks
    /// entries never reached (patterns of every tile only; not in nibble encodings).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "an index checked below the entries, which the payload in memory holds"
    )]
    pub fn value(&self, index: u64) -> Result<u8, TableError> {
        self.check_index(index)?;
        match self.encoding() {
            Encoding::Byte => Ok(self.payload()[index as usize]),
            Encoding::Mod3 | Encoding::OneBit => self.root_value(index),
            e => {
                let cells = if let Some(region) = &self.region {
                    region.decode(index).0
                } else {
                    let rank = index / (self.header.entries / self.space.placements());
                    let mut cells = [0u8; MAX_CELLS];
                    self.space.ranker().unrank(rank, &mut cells);
                    cells
                };
                let m = self.space.manhattan(&cells);
                Ok(e.decode(e.stored(self.payload(), index), m))
            }
        }
    }

    /// The value of entry `index` whose placement has Manhattan distance `m`: the fast path of
    /// byte, nibble and min-nibble tables.
    ///
    /// # Panics
    /// On a mod3 table (use [`Pdb::child_value`] or [`Pdb::root_value`]) and, for an index
    /// beyond the table, possibly (or a wrong value).
    #[inline]
    pub fn value_with_manhattan(&self, index: u64, m: u32) -> u8 {
        let e = self.encoding();
        assert!(!e.needs_parent(), "a {e} table needs a parent's value");
        e.decode(e.stored(self.payload(), index), m)
    }

    /// `h mod 3` of entry `index` of a mod3 table.
    #[inline]
    pub fn residue(&self, index: u64) -> u8 {
        Encoding::Mod3.stored(self.payload(), index)
    }

    /// The value of entry `index` of a mod3 table, a child (one move away) of a state of value
    /// `parent_value`.
    #[inline]
    pub fn child_value(&self, parent_value: u8, index: u64) -> u8 {
        child_value(parent_value, self.residue(index))
    }

    /// The value of entry `index` (Manhattan distance `m`) of a 1-bit table, a child (one move
    /// away) of a state of value `parent_value`.
    #[inline]
    pub fn one_bit_child_value(&self, parent_value: u8, index: u64, m: u32) -> u8 {
        one_bit_child_value(
            parent_value,
            Encoding::OneBit.stored(self.payload(), index),
            m,
        )
    }

    /// The exact value of entry `index` of a mod3 or 1-bit table, by descent to the goal.
    pub fn root_value(&self, index: u64) -> Result<u8, TableError> {
        self.check_index(index)?;
        self.mod3()?
            .root_value(index)
            .map_err(|reason| TableError::Lookup {
                path: self.path.clone(),
                reason,
            })
    }

    fn mod3(&self) -> Result<ResidueTable<'_>, TableError> {
        if !self.encoding().needs_parent() {
            return Err(TableError::Lookup {
                path: self.path.clone(),
                reason: format!(
                    "the table is encoded in {}, not mod3 or 1-bit",
                    self.encoding()
                ),
            });
        }
        Ok(ResidueTable::new(
            &self.space,
            self.payload(),
            self.header.max_value,
            self.encoding(),
            self.region.as_deref(),
        ))
    }

    /// Entry index and Manhattan distance of a full state given as the cell of each tile
    /// (`cell_of_tile[t]`, the blank's at 0).
    #[inline]
    pub fn index_of(&self, cell_of_tile: &[u8]) -> (u64, u32) {
        let k = self.space.k();
        let mut cells = [0u8; MAX_CELLS];
        let mut occupied = 0u32;
        let mut m = 0u32;
        for (i, &t) in self.header.tiles.iter().enumerate() {
            let c = cell_of_tile[t as usize];
            cells[i] = c;
            occupied |= 1 << c;
            m += u32::from(self.dist[i][c as usize]);
        }
        if let Some(region) = &self.region {
            return (region.state_index(&cells[..k], cell_of_tile[0] as usize), m);
        }
        let rank = self.space.ranker().rank(&cells[..k]);
        let index = match self.header.rule {
            BlankRule::Aware => {
                let free = self.space.board().all_cells() & !occupied;
                rank * self.space.slots() + slot_of(free, cell_of_tile[0] as usize)
            }
            _ => rank,
        };
        (index, m)
    }

    /// The table's value of a full puzzle state of its board (by descent for mod3).
    pub fn value_of_state(&self, state: &PuzzleState) -> Result<u8, TableError> {
        if state.board() != self.header.board {
            return Err(TableError::Mismatch {
                path: self.path.clone(),
                reason: format!(
                    "a state of the {} board was looked up in a table of the {} board",
                    state.board(),
                    self.header.board
                ),
            });
        }
        let mut cell_of_tile = [0u8; MAX_CELLS];
        for (c, &t) in state.tiles().iter().enumerate() {
            cell_of_tile[usize::from(t)] =
                u8::try_from(c).expect("a cell of a board of at most 25");
        }
        let (index, m) = self.index_of(&cell_of_tile);
        match self.encoding() {
            Encoding::Mod3 | Encoding::OneBit => self.root_value(index),
            _ => Ok(self.value_with_manhattan(index, m)),
        }
    }

    /// Every entry's value, decoded (exact for byte and mod3, lower bounds where lossy).
    pub fn decode_all(&self) -> Result<Vec<u8>, TableError> {
        let e = self.encoding();
        match e {
            Encoding::Byte => Ok(self.payload().to_vec()),
            Encoding::Mod3 | Encoding::OneBit => {
                self.mod3()?
                    .decode_all()
                    .map_err(|reason| TableError::Lookup {
                        path: self.path.clone(),
                        reason,
                    })
            }
            _ => {
                let payload = self.payload();
                let mut out = Vec::with_capacity(usize::try_from(self.header.entries).unwrap_or(0));
                for_each_entry(&self.space, |entry, _, m| {
                    out.push(e.decode(e.stored(payload, entry), m));
                });
                Ok(out)
            }
        }
    }
}

impl std::fmt::Debug for Pdb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pdb")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Pattern;
    use crate::table::EncodedTable;

    fn write_table(dir: &Path) -> (PathBuf, Vec<u8>) {
        let board: Board = "3x3".parse().unwrap();
        let pattern = Pattern::new(board, vec![1, 2]).unwrap();
        let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
        let values: Vec<u8> = crate::table::walk::manhattan_by_rank(&space);
        let path = dir.join("pattern-1-2.pdb");
        EncodedTable::new(&space, Encoding::Byte, &values)
            .unwrap()
            .write(&path)
            .unwrap();
        (path, values)
    }

    #[test]
    fn both_loads_give_the_same_table() {
        let dir = tempfile::tempdir().unwrap();
        let (path, values) = write_table(dir.path());
        let mapped = Pdb::open_with(&path, Load::Map).unwrap();
        let copied = Pdb::open_with(&path, Load::Memory).unwrap();
        assert_eq!((mapped.load(), copied.load()), (Load::Map, Load::Memory));
        assert_eq!(copied.payload(), mapped.payload());
        assert_eq!(copied.payload(), &values[..]);
        assert_eq!(copied.file_len(), std::fs::metadata(&path).unwrap().len());
        assert_eq!(copied.checksum(), mapped.checksum());
        // Its pages let go as they are validated, read again when asked for.
        let released = Pdb::open_released(&path).unwrap();
        assert_eq!(released.header(), mapped.header());
        assert_eq!(released.payload(), &values[..]);
        for load in [Load::Map, Load::Memory] {
            assert_eq!(load.to_string().parse::<Load>().unwrap(), load);
        }
        assert!("mmap".parse::<Load>().is_err());
    }

    #[test]
    fn a_copy_is_validated_like_a_map() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_table(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let mapped = Pdb::open_with(&path, Load::Map).unwrap_err().to_string();
        let copied = Pdb::open_with(&path, Load::Memory).unwrap_err().to_string();
        let released = Pdb::open_released(&path).unwrap_err().to_string();
        assert_eq!(copied, mapped);
        assert_eq!(released, mapped);
        assert!(copied.contains("pattern-1-2.pdb"), "{copied}");
        bytes.truncate(last);
        std::fs::write(&path, &bytes).unwrap();
        let mapped = Pdb::open_with(&path, Load::Map).unwrap_err().to_string();
        let copied = Pdb::open_with(&path, Load::Memory).unwrap_err().to_string();
        assert_eq!(copied, mapped);
    }
}
