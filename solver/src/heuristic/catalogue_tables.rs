//! The tables a catalogue reads, found in a directory of table sets.
//!
//! The directory is a table set itself (a `manifest.json` in it) or holds sets in its
//! subdirectories, as `tilepdb-coordinator build` writes them (a catalogue's build writes one
//! set per distinct table). Each pattern of the catalogue is served by a table of the same
//! blank rule whose tile set is the pattern's, or a symmetric image of it that serves it
//! ([`tilepdb_common::symmetry::Symmetry::serves`]): the identity is tried first, then the
//! other symmetries in their order. When several sets hold the table, the one whose directory
//! sorts first is read.
//!
//! ```no_run
//! use tilepdb_common::table::Load;
//! use tilepdb_solver::heuristic::{CatalogueTables, Heuristic};
//! let tables = CatalogueTables::open(
//!     "data/small-t.cat".as_ref(), "tables".as_ref(), None, None, Load::Map).unwrap();
//! let h = tables.heuristic().unwrap();
//! let goal = tilepdb_common::PuzzleState::goal(tables.board(), tables.goal());
//! assert_eq!(h.evaluate(&goal.cells()).unwrap().0, 0);
//! ```

use std::path::{Path, PathBuf};

use tilepdb_common::catalogue::Catalogue;
use tilepdb_common::symmetry::Symmetry;
use tilepdb_common::table::{Load, Manifest, Pdb};
use tilepdb_common::{BlankRule, Board, Goal};

use super::catalogue::{CatalogueHeuristic, CatalogueSlot};
use crate::error::{Error, Result};

/// A table that may serve a catalogue's patterns: its tiles and blank rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The table's tiles, in its order.
    pub tiles: Vec<u8>,
    /// Its blank rule.
    pub rule: BlankRule,
}

/// A pattern of a catalogue and the candidate that serves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    /// The pattern's set.
    pub set: usize,
    /// The catalogue's line that names the pattern.
    pub line: usize,
    /// The candidate (index in the list given to [`resolve`]).
    pub candidate: usize,
    /// The symmetry from the candidate's pattern onto the catalogue's.
    pub symmetry: Symmetry,
}

/// The candidate that serves each pattern of `catalogue` (goal `goal`), in the catalogue's
/// order; `place` names where the candidates are, for the error when a pattern has none.
pub fn resolve(
    catalogue: &Catalogue,
    goal: Goal,
    candidates: &[Candidate],
    place: &str,
) -> Result<Vec<Served>> {
    let board = catalogue.board();
    let masks: Vec<u32> = candidates
        .iter()
        .map(|c| c.tiles.iter().fold(0u32, |m, &t| m | 1 << t))
        .collect();
    let mut served = Vec::new();
    for (set, table) in catalogue.tables() {
        let mut tried = Vec::new();
        let found = Symmetry::all(board).into_iter().find_map(|sigma| {
            // The table that `sigma` maps onto the pattern: the pattern through the inverse.
            let source = sigma.inverse().image(board, goal, table.pattern.tiles())?;
            if !sigma.serves(board, goal, &source, table.rule) {
                return None;
            }
            let mask = source.iter().fold(0u32, |m, &t| m | 1 << t);
            tried.push(source);
            let at = (0..candidates.len())
                .find(|&i| masks[i] == mask && candidates[i].rule == table.rule)?;
            Some((at, sigma))
        });
        let Some((candidate, symmetry)) = found else {
            let tried = tried
                .iter()
                .map(|t| tile_list(t))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(Error::Catalogue(format!(
                "{}, line {}: no table serves the pattern {}: {place} holds no {} table of the \
                 {board} board and {goal} goal with the tiles {tried} (the pattern's own and its \
                 symmetric images that serve it)",
                catalogue.origin(),
                table.line,
                table.text(),
                table.rule,
            )));
        };
        served.push(Served {
            set,
            line: table.line,
            candidate,
            symmetry,
        });
    }
    Ok(served)
}

fn tile_list(tiles: &[u8]) -> String {
    let mut sorted = tiles.to_vec();
    sorted.sort_unstable();
    sorted
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A table set found in a directory: where it is and its manifest.
#[derive(Clone, Debug)]
pub struct FoundSet {
    /// The set's directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

/// The table sets of `dir`: itself if it holds a manifest, else each subdirectory that does,
/// in the order of their names. A subdirectory whose manifest cannot be read is left out with
/// a warning (a set being written, say).
pub fn find_sets(dir: &Path) -> Result<Vec<FoundSet>> {
    if Manifest::path_in(dir).is_file() {
        return Ok(vec![FoundSet {
            dir: dir.to_path_buf(),
            manifest: Manifest::read(dir)?,
        }]);
    }
    let mut subdirs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() && Manifest::path_in(&path).is_file() {
            subdirs.push(path);
        }
    }
    subdirs.sort();
    let mut sets = Vec::new();
    for sub in subdirs {
        match Manifest::read(&sub) {
            Ok(manifest) => sets.push(FoundSet { dir: sub, manifest }),
            Err(e) => tracing::warn!("left out {}: {e}", sub.display()),
        }
    }
    Ok(sets)
}

/// The board and goal of the sets in `dir` (`sets`), as asked (`board`, `goal`) or, when not
/// asked, the one every set has.
fn board_and_goal(
    sets: &[FoundSet],
    board: Option<Board>,
    goal: Option<Goal>,
    dir: &Path,
) -> Result<(Board, Goal)> {
    let mut kinds: Vec<(Board, Goal)> = sets
        .iter()
        .map(|s| (s.manifest.board, s.manifest.goal))
        .filter(|(b, g)| board.is_none_or(|x| x == *b) && goal.is_none_or(|x| x == *g))
        .collect();
    kinds.dedup();
    kinds.sort_by_key(|(b, g)| (b.to_string(), g.name()));
    kinds.dedup();
    let held = || {
        let mut all: Vec<String> = sets
            .iter()
            .map(|s| format!("{} {}", s.manifest.board, s.manifest.goal))
            .collect();
        all.sort();
        all.dedup();
        if all.is_empty() {
            "no table set".to_string()
        } else {
            format!("sets of {}", all.join(", "))
        }
    };
    match kinds.as_slice() {
        [one] => Ok(*one),
        [] => Err(Error::Catalogue(format!(
            "{} holds no table set of the {} board with the {} goal (it holds {})",
            dir.display(),
            board.map_or_else(|| "asked".to_string(), |b| b.to_string()),
            goal.map_or("asked", Goal::name),
            held()
        ))),
        _ => Err(Error::Catalogue(format!(
            "{} holds {}: say which board and goal the catalogue is for",
            dir.display(),
            held()
        ))),
    }
}

/// A catalogue with the tables that serve it, opened.
pub struct CatalogueTables {
    catalogue: Catalogue,
    goal: Goal,
    tables: Vec<Pdb>,
    /// Each pattern's table (index in `tables`) and symmetry, in the catalogue's order.
    served: Vec<Served>,
}

impl CatalogueTables {
    /// Reads the catalogue `catalogue` and opens the tables that serve it from the sets in
    /// `dir` ([`find_sets`]) of `board` and `goal` (when given; else those of the sets), each
    /// table checked against its set's manifest and held as `load` says.
    pub fn open(
        catalogue: &Path,
        dir: &Path,
        board: Option<Board>,
        goal: Option<Goal>,
        load: Load,
    ) -> Result<CatalogueTables> {
        let sets = find_sets(dir)?;
        let (board, goal) = board_and_goal(&sets, board, goal, dir)?;
        let catalogue = Catalogue::read(catalogue, board)?;
        let mut candidates = Vec::new();
        let mut entries = Vec::new();
        for (s, set) in sets.iter().enumerate() {
            let m = &set.manifest;
            if m.board != board || m.goal != goal {
                continue;
            }
            for (e, entry) in m.tables.iter().enumerate() {
                candidates.push(Candidate {
                    tiles: entry.tiles.clone(),
                    rule: m.blank_rule,
                });
                entries.push((s, e));
            }
        }
        let mut served = resolve(&catalogue, goal, &candidates, &dir.display().to_string())?;
        // Open each table used once; `candidate` becomes the index in `tables`.
        let mut opened: Vec<usize> = Vec::new();
        let mut tables = Vec::new();
        for s in &mut served {
            let at = if let Some(at) = opened.iter().position(|&c| c == s.candidate) {
                at
            } else {
                let (set, entry) = entries[s.candidate];
                let found = &sets[set];
                let entry = &found.manifest.tables[entry];
                tables.push(found.manifest.open_table_with(&found.dir, entry, load)?);
                opened.push(s.candidate);
                tables.len() - 1
            };
            s.candidate = at;
        }
        Ok(CatalogueTables {
            catalogue,
            goal,
            tables,
            served,
        })
    }

    /// The catalogue.
    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// The board.
    pub fn board(&self) -> Board {
        self.catalogue.board()
    }

    /// The goal.
    pub fn goal(&self) -> Goal {
        self.goal
    }

    /// The distinct tables read, in the order the catalogue first needs them.
    pub fn tables(&self) -> &[Pdb] {
        &self.tables
    }

    /// Each pattern of the catalogue, in its order, with the table (index in
    /// [`CatalogueTables::tables`]) and symmetry that serve it.
    pub fn served(&self) -> &[Served] {
        &self.served
    }

    /// The heuristic: the maximum over the catalogue's sets of their sums.
    pub fn heuristic(&self) -> Result<CatalogueHeuristic<'_>> {
        let slots: Vec<CatalogueSlot<'_>> = self
            .served
            .iter()
            .map(|s| CatalogueSlot {
                set: s.set,
                pdb: &self.tables[s.candidate],
                symmetry: s.symmetry,
            })
            .collect();
        CatalogueHeuristic::new(self.board(), self.goal, &slots)
    }
}
