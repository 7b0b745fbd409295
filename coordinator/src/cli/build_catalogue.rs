//! `tilepdb-coordinator build --catalogue FILE`: every distinct table a catalogue needs, each
//! built once (symmetric images share one table) as a set of its own under `--out`.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use tilepdb_common::catalogue::Catalogue;
use tilepdb_common::{Board, Partition, Pattern};
use tilepdb_coordinator::engine::SetSpec;

use super::build::{BuildArgs, BuildSummary, build_local, print_local};

/// What `build --catalogue --json` prints.
#[derive(Serialize)]
struct CatalogueSummary {
    catalogue: String,
    /// Patterns the catalogue names.
    patterns: usize,
    /// The sets built (or found), one per distinct table.
    sets: Vec<BuildSummary>,
}

pub fn run(args: &BuildArgs, path: &Path) -> anyhow::Result<()> {
    let board: Board = args.job.puzzle.as_deref().unwrap_or("24").parse()?;
    let goal = args.job.goal();
    let catalogue = Catalogue::read(path, board)?;
    let distinct = catalogue.distinct_tables(goal);
    let patterns = catalogue.tables().count();
    tracing::info!(
        catalogue = %path.display(),
        patterns,
        tables = distinct.len(),
        "building the distinct tables of the catalogue"
    );
    let mut sets = Vec::new();
    for table in &distinct {
        let text = table
            .tiles
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let pattern = Pattern::new(board, table.tiles.clone())?;
        let partition = Partition::new(format!("{board}:{text}"), board, vec![pattern])?;
        let spec = SetSpec::new(partition, goal, table.rule, args.job.encoding)
            .with_context(|| format!("the {} table of tiles {text}", table.rule))?;
        let summary = build_local(args, &spec)?;
        if !args.json {
            print_local(&summary, false)?;
        }
        sets.push(summary);
    }
    if args.json {
        tilepdb_common::json::print(
            "build",
            CatalogueSummary {
                catalogue: path.display().to_string(),
                patterns,
                sets,
            },
        )?;
    } else {
        tilepdb_common::outln!(
            "{} pattern(s) of {} served by {} table(s) in {}",
            patterns,
            path.display(),
            distinct.len(),
            args.out.display()
        );
    }
    Ok(())
}
