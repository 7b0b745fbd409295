//! The matrix of a bench run: what every entry runs on, and one entry's run (its heuristic
//! built, its searches, the table files it read).

use std::path::{Path, PathBuf};

use tilepdb_common::table::{Pdb, TableSet};
use tilepdb_common::{Board, Goal, PuzzleState};

use super::Entry;
use super::{
    HeuristicSpec, InstanceRecord, Protocol, TableFile, TableHistogram, catalogue, search_all,
};
use crate::error::{Error, Result};
use crate::heuristic::{Heuristic, LinearConflict, Manhattan, Misplaced, PdbHeuristic};

/// What every entry of the matrix runs on: the instances, the random states, the protocol and
/// the threads of the instances.
pub(super) struct Matrix<'a> {
    pub(super) instances: &'a [(String, PuzzleState)],
    pub(super) board: Board,
    pub(super) goal: Goal,
    pub(super) randoms: Vec<PuzzleState>,
    pub(super) protocol: &'a Protocol,
    pub(super) pool: &'a rayon::ThreadPool,
}

/// What an entry's run gives: its records, the mean value over the random states, the CPU
/// seconds, the heuristic in words, and its set's directory with the table files read.
pub(super) type EntryResult = (
    Vec<InstanceRecord>,
    f64,
    f64,
    String,
    Option<(PathBuf, Vec<TableFile>)>,
);

impl Matrix<'_> {
    /// Searches every instance with `h` on the pool.
    fn search<H: Heuristic>(&self, label: &str, h: &H) -> Result<(Vec<InstanceRecord>, f64, f64)> {
        self.pool.install(|| {
            search_all(
                label,
                h,
                self.instances,
                self.goal,
                &self.randoms,
                self.protocol,
            )
        })
    }

    /// Runs `entry`, adding its tables' histograms to `histograms` (once per set).
    pub(super) fn run_entry(
        &self,
        entry: &Entry,
        histograms: &mut Vec<TableHistogram>,
    ) -> Result<EntryResult> {
        let (board, goal) = (self.board, self.goal);
        let label = entry.label.as_str();
        let simple = |(r, m, cpu): (Vec<InstanceRecord>, f64, f64), what: &str| {
            (r, m, cpu, what.to_string(), None)
        };
        Ok(match &entry.spec {
            HeuristicSpec::Misplaced => simple(
                self.search(label, &Misplaced::new(board, goal))?,
                "misplaced tiles",
            ),
            HeuristicSpec::Manhattan => simple(
                self.search(label, &Manhattan::new(board, goal))?,
                "Manhattan distance",
            ),
            HeuristicSpec::LinearConflict => simple(
                self.search(label, &LinearConflict::new(board, goal))?,
                "linear conflict",
            ),
            HeuristicSpec::Catalogue { file, dir } => {
                let (r, m, cpu, what, files) = catalogue::run_entry(
                    label,
                    file,
                    dir,
                    self.instances,
                    board,
                    goal,
                    &self.randoms,
                    self.protocol,
                    self.pool,
                )?;
                (r, m, cpu, what, Some((dir.clone(), files)))
            }
            HeuristicSpec::Tables { dir, reflect } => {
                self.tables_entry(label, dir, *reflect, histograms)?
            }
        })
    }

    /// Runs the entry of the table set `dir` (with its reflection if `reflect`).
    fn tables_entry(
        &self,
        label: &str,
        dir: &Path,
        reflect: bool,
        histograms: &mut Vec<TableHistogram>,
    ) -> Result<EntryResult> {
        let (board, goal) = (self.board, self.goal);
        let set = TableSet::open_with(dir, self.protocol.load)?;
        if set.board() != board || set.goal() != goal {
            return Err(Error::Mismatch {
                tables: format!("{} ({}, {} goal)", dir.display(), set.board(), set.goal()),
                state: format!("the instances ({board}, {goal} goal)"),
            });
        }
        let h = PdbHeuristic::new(&set, reflect)?;
        let (r, m, cpu) = self.search(label, &h)?;
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let file_name = |pdb: &Pdb| {
            pdb.path()
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        };
        if !histograms.iter().any(|t| t.set == name) {
            for pdb in set.tables() {
                histograms.push(TableHistogram {
                    set: name.clone(),
                    table: file_name(pdb),
                    counts: pdb.header().histogram.clone(),
                });
            }
        }
        let files = set
            .tables()
            .iter()
            .map(|pdb| TableFile {
                file: file_name(pdb),
                tiles: pdb.header().tiles.clone(),
                file_bytes: pdb.file_len(),
                checksum: pdb.checksum(),
            })
            .collect::<Vec<_>>();
        let what = format!(
            "tables {name} ({} encoding{})",
            set.encoding().name(),
            if reflect { ", with reflection" } else { "" }
        );
        Ok((r, m, cpu, what, Some((dir.to_path_buf(), files))))
    }
}
