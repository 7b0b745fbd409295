//! A table set: the tables of one partition, opened through its manifest and looked up by full
//! puzzle state.
//!
//! The heuristic of a state is the sum of its tables' values (the patterns are disjoint, so the
//! sum is admissible). When the board is square and the goal's blank lies on the main
//! diagonal, the state mirrored about that diagonal (tiles renamed so that the goal maps to
//! itself) is exactly as far from the goal, so the same tables give a second admissible
//! estimate and the larger of the two is used ([`TableSet::value_reflected`]).
//!
//! ```no_run
//! use tilepdb_common::table::TableSet;
//! use tilepdb_common::PuzzleState;
//! let set = TableSet::open("tables/4x4-7-8-minimized-blank-first".as_ref()).unwrap();
//! let state = PuzzleState::parse(set.board(), "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3").unwrap();
//! println!("h = {}", set.value_reflected(&state).unwrap());
//! ```

use std::path::{Path, PathBuf};

use crate::board::{Board, Goal, MAX_CELLS};
use crate::puzzle::PuzzleState;

use super::Load;
use super::encoding::Encoding;
use super::error::TableError;
use super::manifest::Manifest;
use super::pdb::Pdb;

/// The validated tables of one partition, memory-mapped or read into memory ([`Load`]).
#[derive(Debug)]
pub struct TableSet {
    dir: PathBuf,
    manifest: Manifest,
    tables: Vec<Pdb>,
}

impl TableSet {
    /// Opens the set in `dir` through its `manifest.json`: every listed file is validated
    /// ([`Pdb::open`]) and checked against the manifest (size, checksums, tiles, board, goal,
    /// blank rule, encoding); the patterns must be disjoint.
    pub fn open(dir: &Path) -> Result<TableSet, TableError> {
        TableSet::open_with(dir, Load::Map)
    }

    /// [`TableSet::open`], holding every table as `load` says: [`Load::Memory`] reads them
    /// into memory backed by huge pages, for faster lookups in large tables at the cost of
    /// their size in private memory.
    pub fn open_with(dir: &Path, load: Load) -> Result<TableSet, TableError> {
        let manifest = Manifest::read(dir)?;
        let tables = manifest
            .tables
            .iter()
            .map(|entry| manifest.open_table_with(dir, entry, load))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TableSet {
            dir: dir.to_path_buf(),
            manifest,
            tables,
        })
    }

    /// The set's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The set's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The tables, in the manifest's order.
    pub fn tables(&self) -> &[Pdb] {
        &self.tables
    }

    /// The board.
    pub fn board(&self) -> Board {
        self.manifest.board
    }

    /// The goal.
    pub fn goal(&self) -> Goal {
        self.manifest.goal
    }

    /// The encoding of every table.
    pub fn encoding(&self) -> Encoding {
        self.manifest.encoding
    }

    /// Whether [`TableSet::value_reflected`] also looks up the reflected state.
    pub fn reflection(&self) -> bool {
        self.manifest.reflection
    }

    fn check_board(&self, state: &PuzzleState) -> Result<(), TableError> {
        if state.board() != self.board() {
            return Err(TableError::Mismatch {
                path: self.dir.clone(),
                reason: format!(
                    "a state of the {} board was looked up in a set of the {} board",
                    state.board(),
                    self.board()
                ),
            });
        }
        Ok(())
    }

    /// The sum of the set's values of `state` (mod3 and 1-bit tables by descent: exact but slow; a
    /// search follows them from the parent's value instead).
    pub fn value(&self, state: &PuzzleState) -> Result<u32, TableError> {
        self.check_board(state)?;
        let mut cell_of_tile = [0u8; MAX_CELLS];
        for (c, &t) in state.tiles().iter().enumerate() {
            cell_of_tile[usize::from(t)] = u8::try_from(c).expect("a board has at most 25 cells");
        }
        let mut sum = 0u32;
        for pdb in &self.tables {
            let (index, m) = pdb.index_of(&cell_of_tile);
            sum += u32::from(match pdb.encoding() {
                Encoding::Mod3 | Encoding::OneBit => pdb.root_value(index)?,
                _ => pdb.value_with_manhattan(index, m),
            });
        }
        Ok(sum)
    }

    /// The larger of [`TableSet::value`] of `state` and of its reflection about the main
    /// diagonal, when the reflection applies; else the value of `state`.
    pub fn value_reflected(&self, state: &PuzzleState) -> Result<u32, TableError> {
        let direct = self.value(state)?;
        if !self.reflection() {
            return Ok(direct);
        }
        Ok(direct.max(self.value(&state.transposed(self.goal()))?))
    }
}
