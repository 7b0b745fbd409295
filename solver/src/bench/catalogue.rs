//! A bench entry of a catalogue (`catalogue:FILE@DIR`): its tables opened from the sets in
//! `DIR`, its searches, and the files it read.

use std::path::Path;

use tilepdb_common::{Goal, PuzzleState};

use super::{InstanceRecord, Protocol, TableFile, search_all};
use crate::error::{Error, Result};
use crate::heuristic::CatalogueTables;

/// What an entry's run gives: its records, the mean value over the random states, the CPU
/// seconds, the heuristic in words, and the table files read.
pub(super) type EntryRun = (Vec<InstanceRecord>, f64, f64, String, Vec<TableFile>);

/// Runs the catalogue `file` with the tables of `dir` on `instances` (of `board` and `goal`).
#[expect(
    clippy::too_many_arguments,
    reason = "the protocol's parts, as the other entries of `bench::run` take them"
)]
pub(super) fn run_entry(
    label: &str,
    file: &Path,
    dir: &Path,
    instances: &[(String, PuzzleState)],
    board: tilepdb_common::Board,
    goal: Goal,
    randoms: &[PuzzleState],
    protocol: &Protocol,
    pool: &rayon::ThreadPool,
) -> Result<EntryRun> {
    let tables = CatalogueTables::open(file, dir, Some(board), Some(goal), protocol.load)?;
    if tables.board() != board || tables.goal() != goal {
        return Err(Error::Mismatch {
            tables: format!(
                "{} ({}, {} goal)",
                dir.display(),
                tables.board(),
                tables.goal()
            ),
            state: format!("the instances ({board}, {goal} goal)"),
        });
    }
    let h = tables.heuristic()?;
    let (records, random_h, cpu) =
        pool.install(|| search_all(label, &h, instances, goal, randoms, protocol))?;
    let files = tables
        .tables()
        .iter()
        .map(|pdb| TableFile {
            file: pdb.path().display().to_string(),
            tiles: pdb.header().tiles.clone(),
            file_bytes: pdb.file_len(),
            checksum: pdb.checksum(),
        })
        .collect();
    let what = format!(
        "catalogue {} ({} sets, {} patterns served by {} tables, {} lookups)",
        file.display(),
        tables.catalogue().sets().len(),
        tables.served().len(),
        tables.tables().len(),
        h.lookups()
    );
    Ok((records, random_h, cpu, what, files))
}
