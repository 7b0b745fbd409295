//! The manifest of a table set: `manifest.json` in the set's directory.
//!
//! A table set is the tables of one partition, built with one board, goal, blank rule and
//! encoding. The manifest lists them with what identifies each file, so that a set is checked
//! and handled as one thing. It is written deterministically (fixed key order, no time or
//! host), atomically, and after the tables it lists.
//!
//! ```
//! use tilepdb_common::table::Manifest;
//! use tilepdb_common::table::manifest::reflection_applies;
//! use tilepdb_common::{Board, Goal};
//! let square: Board = "3x3".parse().unwrap();
//! assert!(reflection_applies(square, Goal::BlankFirst)); // blank on cell 0
//! assert!(reflection_applies(square, Goal::BlankLast)); // blank on cell 8, also diagonal
//! assert!(!reflection_applies("3x2".parse().unwrap(), Goal::BlankFirst));
//! let text = r#"{"format": "tilepdb-table-set", "version": 1, "partition": "8:4-4",
//!   "board": "3x3", "goal": "blank-first", "blank_rule": "minimized", "encoding": "byte",
//!   "reflection": true, "tables": []}"#;
//! let m: Manifest = serde_json::from_str(text).unwrap();
//! assert_eq!(m.board, square);
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::board::{Board, Goal};
use crate::pattern::{Partition, Pattern};
use crate::space::BlankRule;

use super::Load;
use super::encoding::Encoding;
use super::error::TableError;
use super::pdb::Pdb;
use super::write::write_atomic;

/// The name of a set's manifest in its directory.
pub const MANIFEST_NAME: &str = "manifest.json";
/// The `format` field of every manifest.
pub const MANIFEST_FORMAT: &str = "tilepdb-table-set";
/// The manifest version this code writes and reads.
pub const MANIFEST_VERSION: u32 = 1;

/// Whether the reflection about the main diagonal gives a second admissible lookup: the
/// board is square and the goal's blank is on the diagonal.
pub fn reflection_applies(board: Board, goal: Goal) -> bool {
    let blank = goal.cell_of(0, board.cells());
    board.is_square() && blank.is_multiple_of(board.width() + 1)
}

/// A table set's manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always `tilepdb-table-set`.
    pub format: String,
    /// Version of the manifest's layout (1).
    pub version: u32,
    /// The partition's name, e.g. `15:7-8`.
    pub partition: String,
    /// The board.
    pub board: Board,
    /// The goal.
    pub goal: Goal,
    /// The blank rule of every table.
    pub blank_rule: BlankRule,
    /// The encoding of every table.
    pub encoding: Encoding,
    /// Whether lookups may also take the reflected state ([`reflection_applies`]).
    pub reflection: bool,
    /// The tables, in the partition's order.
    pub tables: Vec<ManifestEntry>,
}

/// One table file of a set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// File name in the set's directory.
    pub file: String,
    /// The pattern's tiles, in order.
    pub tiles: Vec<u8>,
    /// Entries of the table.
    pub entries: u64,
    /// Bytes of the file.
    pub size: u64,
    /// The file's identity: `crc32:` and its header's CRC-32 (which covers the payload's).
    pub checksum: String,
    /// CRC-32 of the payload, 8 hex digits.
    pub payload_crc32: String,
}

/// Most bytes of a manifest read from disk (one takes a few hundred bytes per table).
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

impl Manifest {
    /// An empty manifest of a set.
    pub fn new(
        partition: impl Into<String>,
        board: Board,
        goal: Goal,
        blank_rule: BlankRule,
        encoding: Encoding,
    ) -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT.into(),
            version: MANIFEST_VERSION,
            partition: partition.into(),
            board,
            goal,
            blank_rule,
            encoding,
            reflection: reflection_applies(board, goal),
            tables: Vec::new(),
        }
    }

    /// Lists a table, under its file name.
    pub fn push(&mut self, pdb: &Pdb) {
        let file = pdb
            .path()
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.tables.push(ManifestEntry {
            file,
            tiles: pdb.header().tiles.clone(),
            entries: pdb.entries(),
            size: pdb.file_len(),
            checksum: pdb.checksum(),
            payload_crc32: format!("{:08x}", pdb.header().payload_crc32),
        });
    }

    /// The manifest's path in `dir`.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join(MANIFEST_NAME)
    }

    /// Reads and checks the manifest of the set in `dir`.
    pub fn read(dir: &Path) -> Result<Manifest, TableError> {
        let path = Manifest::path_in(dir);
        let text = crate::files::read_text(&path, MAX_MANIFEST_BYTES)
            .map_err(|e| TableError::io(&path, e))?;
        Manifest::parse(&text, &path)
    }

    /// Parses and checks a manifest's text; errors name `origin` (where the text is from).
    pub fn parse(text: &str, origin: &Path) -> Result<Manifest, TableError> {
        let bad = |reason: String| TableError::Manifest {
            path: origin.to_path_buf(),
            reason,
        };
        let m: Manifest =
            serde_json::from_str(text).map_err(|e| bad(format!("not a valid manifest: {e}")))?;
        if m.format != MANIFEST_FORMAT {
            return Err(bad(format!(
                "format {:?}, expected {MANIFEST_FORMAT:?}",
                m.format
            )));
        }
        if m.version != MANIFEST_VERSION {
            return Err(bad(format!(
                "manifest version {} is not supported (this reader reads {MANIFEST_VERSION})",
                m.version
            )));
        }
        if m.reflection != reflection_applies(m.board, m.goal) {
            return Err(bad(format!(
                "reflection is {} but the reflection {} on the {} board with the {} goal",
                m.reflection,
                if m.reflection {
                    "does not apply"
                } else {
                    "applies"
                },
                m.board,
                m.goal
            )));
        }
        if m.tables.is_empty() {
            return Err(bad("the set lists no table".into()));
        }
        for t in &m.tables {
            let plain = Path::new(&t.file)
                .file_name()
                .is_some_and(|f| f == t.file.as_str());
            if !plain || t.file.starts_with('.') {
                return Err(bad(format!(
                    "{:?} is not a plain file name in the set's directory",
                    t.file
                )));
            }
        }
        m.partition().map_err(|e| bad(e.to_string()))?;
        m.encoding
            .check_rule(m.blank_rule)
            .map_err(|e| bad(e.to_string()))?;
        Ok(m)
    }

    /// The partition the manifest lists (checks that the patterns are valid and disjoint).
    pub fn partition(&self) -> Result<Partition, crate::error::Error> {
        let patterns = self
            .tables
            .iter()
            .map(|t| Pattern::new(self.board, t.tiles.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Partition::new(self.partition.clone(), self.board, patterns)
    }

    /// Writes `manifest.json` in `dir` (pretty JSON, fields in a fixed order), atomically.
    pub fn write(&self, dir: &Path) -> Result<(), TableError> {
        let mut text = serde_json::to_string_pretty(self).expect("a manifest serializes");
        text.push('\n');
        write_atomic(&Manifest::path_in(dir), &[text.as_bytes()])
    }

    /// Opens the table of `entry` in `dir` and checks it against the entry and the set: size,
    /// checksums, tiles, entries, board, goal, blank rule and encoding.
    pub fn open_table(&self, dir: &Path, entry: &ManifestEntry) -> Result<Pdb, TableError> {
        self.open_table_with(dir, entry, Load::Map)
    }

    /// [`Manifest::open_table`], holding the table as `load` says.
    pub fn open_table_with(
        &self,
        dir: &Path,
        entry: &ManifestEntry,
        load: Load,
    ) -> Result<Pdb, TableError> {
        let path = dir.join(&entry.file);
        let size = std::fs::metadata(&path)
            .map_err(|e| TableError::io(&path, e))?
            .len();
        if size != entry.size {
            return Err(TableError::Mismatch {
                path,
                reason: format!(
                    "the file has {size} bytes, the manifest lists {}",
                    entry.size
                ),
            });
        }
        let pdb = Pdb::open_with(&path, load)?;
        pdb.check_matches(
            self.board,
            self.goal,
            self.blank_rule,
            &entry.tiles,
            Some(self.encoding),
        )?;
        let payload_crc = format!("{:08x}", pdb.header().payload_crc32);
        if pdb.checksum() != entry.checksum || payload_crc != entry.payload_crc32 {
            return Err(TableError::Mismatch {
                path,
                reason: format!(
                    "checksum {} (payload {payload_crc}) differs from the manifest's {} (payload {}): \
                     the file is another table than the one the set was made with",
                    pdb.checksum(),
                    entry.checksum,
                    entry.payload_crc32
                ),
            });
        }
        if pdb.entries() != entry.entries {
            return Err(TableError::Mismatch {
                path,
                reason: format!(
                    "{} entries, the manifest lists {}",
                    pdb.entries(),
                    entry.entries
                ),
            });
        }
        Ok(pdb)
    }
}
