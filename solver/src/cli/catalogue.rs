//! `--catalogue FILE` of `solve` and `eval`: the heuristic of a catalogue whose tables are in
//! the directory of `--tables`, and `eval`'s report of it.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tilepdb_common::table::Load;
use tilepdb_common::{Board, Goal};
use tilepdb_solver::heuristic::CatalogueTables;

use super::input::StateInput;

/// The catalogue option.
#[derive(Args, Clone, Default)]
pub struct CatalogueArg {
    /// A catalogue file (the ZIB code's .cat format, e.g. data/small-t.cat): the heuristic is
    /// the maximum over its additive sets of their sums. --tables is then the directory of the
    /// table sets that serve it (as `tilepdb-coordinator build --catalogue FILE --out DIR`
    /// writes them); a table serves its own tile set and each symmetric image that keeps the
    /// goal.
    #[arg(long, value_name = "FILE", requires = "tables")]
    pub catalogue: Option<PathBuf>,
}

impl CatalogueArg {
    /// The catalogue's tables, when `--catalogue` is given: from `tables` (`--tables`), of
    /// `board` and `goal` when asked.
    pub fn open(
        &self,
        tables: Option<&Path>,
        board: Option<Board>,
        goal: Option<Goal>,
        load: Load,
    ) -> anyhow::Result<Option<CatalogueTables>> {
        let Some(file) = &self.catalogue else {
            return Ok(None);
        };
        let dir = tables.context("--catalogue needs --tables DIR, the directory of its tables")?;
        CatalogueTables::open(file, dir, board, goal, load)
            .with_context(|| {
                format!(
                    "the catalogue {} with the tables in {} (build them with `tilepdb-coordinator \
                     build --catalogue {} --out {}`)",
                    file.display(),
                    dir.display(),
                    file.display(),
                    dir.display()
                )
            })
            .map(Some)
    }
}

#[derive(Serialize)]
struct SetValues {
    values: Vec<u8>,
    sum: u32,
}

#[derive(Serialize)]
struct Evaluation {
    instance: String,
    sets: Vec<SetValues>,
    heuristic: u32,
}

#[derive(Serialize)]
struct Served {
    set: usize,
    line: usize,
    pattern: String,
    file: PathBuf,
    symmetry: String,
}

/// `eval --catalogue`: each set's values and sum, and their maximum, for each state.
pub fn eval(tables: &CatalogueTables, input: &StateInput, json: bool) -> anyhow::Result<()> {
    let h = tables.heuristic()?;
    let states = input.read(tables.board())?;
    let mut out = Vec::new();
    for (label, state) in states {
        state
            .check_solvable(tables.goal())
            .with_context(|| label.clone())?;
        let sets: Vec<SetValues> = h
            .set_values(&state.cells())?
            .into_iter()
            .map(|(values, sum)| SetValues { values, sum })
            .collect();
        out.push(Evaluation {
            instance: label,
            heuristic: sets.iter().map(|s| s.sum).max().unwrap_or(0),
            sets,
        });
    }
    if json {
        #[derive(Serialize)]
        struct Evaluations<'a> {
            catalogue: &'a str,
            /// Each pattern with the file and symmetry that serve it, in the catalogue's order
            /// (the order of each set's `values`).
            patterns: Vec<Served>,
            results: &'a [Evaluation],
        }
        let patterns = tables
            .served()
            .iter()
            .map(|s| Served {
                set: s.set,
                line: s.line,
                pattern: tables
                    .catalogue()
                    .tables()
                    .find(|(_, t)| t.line == s.line)
                    .map(|(_, t)| t.text())
                    .unwrap_or_default(),
                file: tables.tables()[s.candidate].path().to_path_buf(),
                symmetry: s.symmetry.to_string(),
            })
            .collect();
        tilepdb_common::json::print(
            "eval",
            Evaluations {
                catalogue: tables.catalogue().origin(),
                patterns,
                results: &out,
            },
        )?;
        return Ok(());
    }
    for e in &out {
        let sums = e
            .sets
            .iter()
            .map(|s| s.sum.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        tilepdb_common::outln!("{}: sets {sums}; h = {}", e.instance, e.heuristic);
    }
    Ok(())
}
