//! `tilepdb-solve bench`: a matrix of heuristics × an instance file under one protocol, written
//! as JSONL, CSV, a summary, a Markdown report and SVG plots.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use tilepdb_common::table::Load;
use tilepdb_common::{Board, Goal};
use tilepdb_solver::bench::{self, Entry, HeuristicSpec, Protocol};
use tilepdb_solver::search::Limits;

use super::input::StateInput;

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    input: StateInput,
    /// A heuristic to compare (repeatable): [LABEL=]misplaced, manhattan, linear-conflict,
    /// tables:DIR or tables+reflect:DIR (a set written by tilepdb-coordinator build), or
    /// catalogue:FILE@DIR (a catalogue file and the directory of the sets that serve it).
    #[arg(
        long = "entry",
        value_name = "SPEC",
        required_unless_present = "catalogue"
    )]
    entries: Vec<String>,
    /// A catalogue file to compare (repeatable), its tables in --tables: the same as
    /// --entry catalogue:FILE@DIR.
    #[arg(long, value_name = "FILE", requires = "tables")]
    catalogue: Vec<PathBuf>,
    /// The directory of the sets that serve each --catalogue.
    #[arg(long, value_name = "DIR", requires = "catalogue")]
    tables: Option<PathBuf>,
    /// The directory the results, summary, report and plots are written to.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Per instance: give up after generating this many nodes (the same for every entry).
    #[arg(long)]
    max_nodes: Option<u64>,
    /// Per instance: give up after this many seconds (the same for every entry).
    #[arg(long, value_name = "SECONDS", value_parser = tilepdb_common::units::parse_seconds)]
    timeout: Option<Duration>,
    /// Instances searched at once, the same for every entry (0: every core).
    #[arg(long, default_value_t = 1, value_parser = tilepdb_common::units::parse_threads)]
    threads: usize,
    /// Threads searching each instance (0: every core; default 1, the sequential search): every
    /// IDA* iteration's subtrees are shared out among them. Instances at once (--threads) times
    /// this many threads run at a time.
    #[arg(long, default_value_t = 1, value_parser = tilepdb_common::units::parse_threads)]
    search_threads: usize,
    /// Uniformly random solvable states the mean heuristic value is also taken over.
    #[arg(long, default_value_t = 1000, value_parser = tilepdb_common::units::parse_random_states)]
    random_states: usize,
    /// The seed of those states.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The board when no entry has tables: 8, 15, 24 or WxH (default 15).
    #[arg(long)]
    puzzle: Option<String>,
    /// The goal when no entry has tables (default blank-first).
    #[arg(long)]
    goal: Option<Goal>,
    /// A move-pruning machine written by `tilepdb-solve fsm` for the same board, for every
    /// entry's searches (default: only the move undoing the last one is pruned).
    #[arg(long, value_name = "FILE")]
    fsm: Option<PathBuf>,
    /// How to hold every entry's tables: map the files, or read them into memory backed by
    /// huge pages (as solve --load). The copy is made before an entry's searches, outside
    /// their CPU time.
    #[arg(long, value_enum, default_value = "map")]
    load: super::tables::LoadArg,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let entries = entries(&args)?;
    let (board, goal) = board_and_goal(&args, &entries)?;
    let instances = args.input.read(board)?;
    let protocol = protocol(&args, board)?;
    let report = bench::run(&entries, &instances, board, goal, &protocol)?;
    let written = bench::output::write(&report, &args.out)?;
    print_summary(&report);
    tilepdb_common::outln!("wrote {} files to {}", written.len(), args.out.display());
    Ok(())
}

/// The entries of `--entry`, then one per `--catalogue` with its tables in `--tables`.
fn entries(args: &BenchArgs) -> anyhow::Result<Vec<Entry>> {
    let mut entries = args
        .entries
        .iter()
        .map(|e| e.parse::<Entry>().with_context(|| format!("--entry {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for file in &args.catalogue {
        let dir = args
            .tables
            .as_deref()
            .context("--catalogue needs --tables DIR")?;
        let spec = format!("catalogue:{}@{}", file.display(), dir.display());
        entries.push(
            spec.parse::<Entry>()
                .with_context(|| format!("--catalogue {}", file.display()))?,
        );
    }
    Ok(entries)
}

/// The board and goal of the first entry's table set (refusing a `--puzzle` or `--goal`
/// that differs), else those asked for (default: the 15-puzzle, blank first).
fn board_and_goal(args: &BenchArgs, entries: &[Entry]) -> anyhow::Result<(Board, Goal)> {
    let asked_board: Option<Board> = args.puzzle.as_deref().map(str::parse).transpose()?;
    let first_set = entries.iter().find_map(|e| match &e.spec {
        HeuristicSpec::Tables { dir, .. } => Some(dir.clone()),
        // The first set in the directory of the catalogue's tables.
        HeuristicSpec::Catalogue { dir, .. } => tilepdb_solver::heuristic::find_sets(dir)
            .ok()
            .and_then(|sets| sets.first().map(|s| s.dir.clone())),
        _ => None,
    });
    let Some(dir) = first_set else {
        return Ok((
            asked_board.unwrap_or("15".parse()?),
            args.goal.unwrap_or_default(),
        ));
    };
    let set = super::tables::open_set(&dir, Load::Map)?;
    if let Some(b) = asked_board.filter(|&b| b != set.board()) {
        bail!(
            "the table set {} is for the {} board, not {b}",
            dir.display(),
            set.board()
        );
    }
    if let Some(g) = args.goal.filter(|&g| g != set.goal()) {
        bail!(
            "the table set {} is for the {} goal, not {g}",
            dir.display(),
            set.goal()
        );
    }
    Ok((set.board(), set.goal()))
}

/// The protocol every entry is run under: limits, threads, random states and the
/// move-pruning machine of `--fsm`.
fn protocol(args: &BenchArgs, board: Board) -> anyhow::Result<Protocol> {
    Ok(Protocol {
        limits: Limits {
            max_nodes: args.max_nodes,
            timeout: args.timeout,
        },
        threads: args.threads,
        search_threads: args.search_threads,
        random_states: args.random_states,
        seed: args.seed,
        move_pruning: args
            .fsm
            .as_deref()
            .map(|path| super::fsm::open_machine(path, board, true))
            .transpose()?,
        load: args.load.into(),
    })
}

/// The summary table on standard output, then the fronts, the machine, the date and the
/// program.
fn print_summary(report: &bench::BenchReport) {
    // The first column as wide as the longest label: labels are never cut.
    let w = report
        .summaries
        .iter()
        .map(|s| s.entry.chars().count())
        .max()
        .unwrap_or(0)
        .max("entry".len());
    tilepdb_common::outln!(
        "{:<w$}  {:>10} {:>8} {:>14} {:>14} {:>14} {:>10} {:>10} {:>11} {:>11} {:>8} {:>8}",
        "entry",
        "tables MiB",
        "solved",
        "mean expanded",
        "mean generated",
        "median gen.",
        "total s",
        "CPU s",
        "M exp/CPU s",
        "M gen/CPU s",
        "mean h",
        "rand h"
    );
    for s in &report.summaries {
        tilepdb_common::outln!(
            "{:<w$}  {:>10.1} {:>8} {:>14.0} {:>14.0} {:>14.0} {:>10.2} {:>10.2} {:>11.3} {:>11.3} {:>8.2} {:>8.2}",
            s.entry,
            s.table_bytes as f64 / (1024.0 * 1024.0),
            format!("{}/{}", s.solved, s.instances),
            s.mean_expanded,
            s.mean_generated,
            s.median_generated,
            s.total_seconds,
            s.cpu_seconds,
            s.expanded_per_cpu_second / 1e6,
            s.generated_per_cpu_second / 1e6,
            s.mean_initial_h,
            s.mean_random_h
        );
    }
    tilepdb_common::outln!("memory/nodes front: {}", report.memory_front.join(", "));
    tilepdb_common::outln!("time/solved front: {}", report.time_front.join(", "));
    tilepdb_common::outln!("{}; {}", report.machine, report.date);
    tilepdb_common::outln!("{}", report.provenance.program_line());
}
