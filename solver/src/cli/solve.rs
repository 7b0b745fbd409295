//! `tilepdb-solve solve`: optimal solutions, checked by replay.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use rayon::prelude::*;
use serde::Serialize;
use tilepdb_common::table::TableSet;
use tilepdb_common::units::{parse_seconds, parse_threads};
use tilepdb_common::{Board, Goal, PuzzleState};
use tilepdb_solver::heuristic::{
    CatalogueTables, Heuristic, LinearConflict, Manhattan, Misplaced, PdbHeuristic,
};
use tilepdb_solver::move_pruning::MovePruning;
use tilepdb_solver::search::{
    Limits, Outcome, SearchResult, a_star, ida_star, ida_star_parallel, ida_star_pruned,
    weighted_a_star,
};
use tilepdb_solver::textbook::PPlus3S;

use super::input::StateInput;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HeuristicName {
    Misplaced,
    Manhattan,
    LinearConflict,
    /// Nilsson's P + 3S, 3x3 board only: not admissible, solutions may not be optimal.
    #[value(name = "p-plus-3s")]
    PPlus3s,
    /// The additive sum of a table set's values (needs --tables).
    Pdb,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Algorithm {
    /// Iterative-deepening A*: little memory, every board.
    Ida,
    /// A*: keeps every state, boards of at most 12 cells.
    Astar,
    /// Weighted A* (the textbook's "A"), ordered by g + W h with W from --weight: solutions at
    /// most W times optimal with an admissible heuristic; boards of at most 16 cells.
    WeightedAstar,
}

#[derive(Args)]
pub struct SolveArgs {
    #[command(flatten)]
    input: StateInput,
    /// A table set directory (with its manifest.json), as written by tilepdb-coordinator build;
    /// with --catalogue, the directory of the sets that serve the catalogue.
    #[arg(long)]
    tables: Option<PathBuf>,
    #[command(flatten)]
    catalogue: super::catalogue::CatalogueArg,
    /// Also look up the state reflected about the main diagonal and take the larger sum.
    #[arg(long)]
    reflect: bool,
    /// How to hold the tables: map the files (shared through the page cache) or read them into
    /// memory backed by huge pages (fewer TLB misses: faster lookups in large tables, at the
    /// cost of their size in private memory). Both validate every file.
    #[arg(long, value_enum, default_value = "map")]
    load: super::tables::LoadArg,
    /// The heuristic (default: pdb with --tables, else manhattan).
    #[arg(long, value_enum)]
    heuristic: Option<HeuristicName>,
    /// The search algorithm.
    #[arg(long, value_enum, default_value = "ida")]
    algorithm: Algorithm,
    /// The weight W of weighted A*.
    #[arg(long, default_value_t = 2.0)]
    weight: f64,
    /// The board: 8, 15, 24 or WxH (default: the tables' board, else 15). With --tables it
    /// must match the tables.
    #[arg(long)]
    puzzle: Option<String>,
    /// The goal: blank-first or blank-last (default: the tables' goal, else blank-first). With
    /// --tables it must match the tables.
    #[arg(long)]
    goal: Option<Goal>,
    /// Give up on an instance once it has generated this many nodes (checked at every node:
    /// an instance out of budget reports exactly this many).
    #[arg(long, value_name = "N")]
    max_nodes: Option<u64>,
    /// Give up on an instance after this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    timeout: Option<Duration>,
    /// A move-pruning machine written by `tilepdb-solve fsm` for the same board: IDA* skips the
    /// moves it forbids (default: only the move undoing the last one).
    #[arg(long, value_name = "FILE")]
    fsm: Option<PathBuf>,
    /// Instances solved at once (default: every core).
    #[arg(long, default_value_t = 0, hide_default_value = true, value_parser = parse_threads)]
    threads: usize,
    /// Threads searching each instance (IDA* only): every iteration's subtrees are shared out
    /// among them, with the same moves and counts as the sequential search but in the last
    /// iteration (0: every core; default 1, the sequential search). Instances at once times
    /// this many threads run at a time: give --threads 1 to search one instance at a time.
    #[arg(long, default_value_t = 1, value_parser = parse_threads)]
    search_threads: usize,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct InstanceReport {
    instance: String,
    #[serde(flatten)]
    result: SearchResult,
    length: Option<usize>,
    /// Whether the length is proven optimal (false for weighted A* and inadmissible heuristics).
    optimal: bool,
}

#[derive(Serialize)]
struct Summary {
    instances: usize,
    solved: usize,
    /// Nodes expanded (their children generated) over every instance.
    total_expanded: u64,
    /// Nodes generated over every instance.
    total_generated: u64,
    total_seconds: f64,
    expanded_per_second: f64,
    generated_per_second: f64,
    /// Why the lengths are not proven optimal (weighted A*, an inadmissible heuristic).
    optimality: Option<String>,
    /// The move-pruning machine IDA* ran with (`--fsm`), if any.
    move_pruning: Option<MachineReport>,
    results: Vec<InstanceReport>,
}

/// The machine of `--fsm`, as the JSON reports it.
#[derive(Serialize)]
struct MachineReport {
    file: String,
    depth: u8,
    states: u32,
}

/// How to search: the algorithm, its weight, the move-pruning machine, whether the lengths
/// are optimal, and the budgets.
struct Search<'a> {
    algorithm: Algorithm,
    weight: f64,
    pruning: Option<&'a MovePruning>,
    optimal: bool,
    limits: Limits,
    /// Threads searching each instance (IDA* only; 1: the sequential search).
    threads_per_instance: usize,
}

fn solve_all<H: Heuristic>(
    states: &[(String, PuzzleState)],
    goal: Goal,
    h: &H,
    search: &Search,
) -> anyhow::Result<Vec<InstanceReport>> {
    let Search {
        algorithm,
        weight,
        pruning,
        optimal,
        ref limits,
        threads_per_instance,
    } = *search;
    states
        .par_iter()
        .map(|(label, state)| {
            let result = match (algorithm, pruning) {
                (Algorithm::Ida, machine) if threads_per_instance != 1 => {
                    let undo = MovePruning::undo_only(state.board());
                    let machine = machine.unwrap_or(&undo);
                    ida_star_parallel(state, goal, h, limits, machine, threads_per_instance)
                }
                (Algorithm::Ida, Some(machine)) => ida_star_pruned(state, goal, h, limits, machine),
                (Algorithm::Ida, None) => ida_star(state, goal, h, limits),
                (Algorithm::Astar, _) => a_star(state, goal, h, limits),
                (Algorithm::WeightedAstar, _) => weighted_a_star(state, goal, h, weight, limits),
            }
            .with_context(|| label.clone())?;
            Ok(InstanceReport {
                instance: label.clone(),
                length: result.length(),
                optimal: optimal && result.length().is_some(),
                result,
            })
        })
        .collect()
}

pub fn run(args: SolveArgs) -> anyhow::Result<()> {
    let asked_board: Option<Board> = args.puzzle.as_deref().map(str::parse).transpose()?;
    let catalogue = args.catalogue.open(
        args.tables.as_deref(),
        asked_board,
        args.goal,
        args.load.into(),
    )?;
    let set = args
        .tables
        .as_deref()
        .filter(|_| catalogue.is_none())
        .map(|dir| super::tables::open_set(dir, args.load.into()))
        .transpose()?;
    let (board, goal) = board_and_goal(&args, asked_board, set.as_ref(), catalogue.as_ref())?;
    let heuristic = choose_heuristic(&args, set.as_ref(), catalogue.is_some())?;
    let states = args.input.read(board)?;
    let no_claim = optimality_note(&args, heuristic)?;
    let machine = args
        .fsm
        .as_deref()
        .map(|path| super::fsm::open_machine(path, board, args.algorithm == Algorithm::Ida))
        .transpose()?;
    let search = Search {
        algorithm: args.algorithm,
        weight: args.weight,
        pruning: machine.as_ref(),
        optimal: no_claim.is_none(),
        limits: Limits {
            max_nodes: args.max_nodes,
            timeout: args.timeout,
        },
        threads_per_instance: args.search_threads,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()?;
    let started = std::time::Instant::now();
    let results = pool.install(|| {
        let heuristics = Heuristics {
            name: heuristic,
            board,
            goal,
            set: set.as_ref(),
            catalogue: catalogue.as_ref(),
            reflect: args.reflect,
        };
        solve_with(&heuristics, &states, &search)
    })?;
    let total_seconds = started.elapsed().as_secs_f64();
    let move_pruning = machine
        .as_ref()
        .zip(args.fsm.as_ref())
        .map(|(m, path)| MachineReport {
            file: path.display().to_string(),
            depth: m.depth(),
            states: m.states(),
        });
    let summary = summarise(results, total_seconds, no_claim, move_pruning);
    if args.json {
        tilepdb_common::json::print("solve", &summary)?;
    } else {
        print_text(&summary);
    }
    Ok(())
}

/// The board and goal: the tables' (checked against `--puzzle` and `--goal`), else those
/// asked for, else the 15-puzzle's blank-first goal.
fn board_and_goal(
    args: &SolveArgs,
    asked_board: Option<Board>,
    set: Option<&TableSet>,
    catalogue: Option<&CatalogueTables>,
) -> anyhow::Result<(Board, Goal)> {
    if let Some(c) = catalogue {
        return Ok((c.board(), c.goal()));
    }
    let Some(set) = set else {
        return Ok((
            asked_board.unwrap_or("15".parse()?),
            args.goal.unwrap_or_default(),
        ));
    };
    if let Some(b) = asked_board.filter(|&b| b != set.board()) {
        bail!(
            "the table set {} is for the {} board, not {b}",
            set.dir().display(),
            set.board()
        );
    }
    if let Some(g) = args.goal.filter(|&g| g != set.goal()) {
        bail!(
            "the table set {} is for the {} goal, not {g}",
            set.dir().display(),
            set.goal()
        );
    }
    Ok((set.board(), set.goal()))
}

/// The heuristic asked for (default: pdb with tables, else Manhattan), checked against the
/// other flags.
fn choose_heuristic(
    args: &SolveArgs,
    set: Option<&TableSet>,
    catalogue: bool,
) -> anyhow::Result<HeuristicName> {
    let heuristic = args.heuristic.unwrap_or(if set.is_some() || catalogue {
        HeuristicName::Pdb
    } else {
        HeuristicName::Manhattan
    });
    if args.reflect && heuristic != HeuristicName::Pdb {
        bail!("--reflect applies to the pdb heuristic");
    }
    if args.reflect && catalogue {
        bail!(
            "--reflect does not apply to --catalogue: a catalogue lists its reflections as sets of their own"
        );
    }
    if catalogue && heuristic != HeuristicName::Pdb {
        bail!("--catalogue is a pdb heuristic: leave --heuristic out, or use --heuristic pdb");
    }
    if let Some(set) = set.filter(|_| heuristic != HeuristicName::Pdb) {
        bail!(
            "the {} heuristic does not use the table set {} given with --tables: leave --tables \
             out, or use --heuristic pdb",
            heuristic_name(heuristic),
            set.dir().display()
        );
    }
    Ok(heuristic)
}

/// Why the lengths are not proven optimal, if they are not (checking the flags of the
/// algorithm: `--weight` and `--search-threads`).
fn optimality_note(args: &SolveArgs, heuristic: HeuristicName) -> anyhow::Result<Option<String>> {
    if args.algorithm != Algorithm::WeightedAstar && args.weight != 2.0 {
        bail!("--weight applies to --algorithm weighted-astar");
    }
    if args.algorithm != Algorithm::Ida && args.search_threads != 1 {
        bail!("--search-threads applies to --algorithm ida");
    }
    Ok(match (args.algorithm, heuristic) {
        (Algorithm::WeightedAstar, _) => Some(format!(
            "weighted A* (W = {}) makes no optimality claim: lengths are at most W times optimal with an admissible heuristic",
            args.weight
        )),
        (_, HeuristicName::PPlus3s) => {
            Some("P+3S is not admissible: the solutions found may not be optimal".to_string())
        }
        _ => None,
    })
}

/// The heuristic chosen and what it is built from.
struct Heuristics<'a> {
    name: HeuristicName,
    board: Board,
    goal: Goal,
    set: Option<&'a TableSet>,
    catalogue: Option<&'a CatalogueTables>,
    reflect: bool,
}

/// Builds the heuristic and solves every state with it.
fn solve_with(
    heuristics: &Heuristics,
    states: &[(String, PuzzleState)],
    search: &Search,
) -> anyhow::Result<Vec<InstanceReport>> {
    let Heuristics {
        board,
        goal,
        reflect,
        ..
    } = *heuristics;
    match heuristics.name {
        HeuristicName::Misplaced => solve_all(states, goal, &Misplaced::new(board, goal), search),
        HeuristicName::Manhattan => solve_all(states, goal, &Manhattan::new(board, goal), search),
        HeuristicName::LinearConflict => {
            solve_all(states, goal, &LinearConflict::new(board, goal), search)
        }
        HeuristicName::Pdb if heuristics.catalogue.is_some() => {
            let h = heuristics.catalogue.context("the catalogue")?.heuristic()?;
            solve_all(states, goal, &h, search)
        }
        HeuristicName::Pdb => {
            let set = heuristics
                .set
                .context("the pdb heuristic needs --tables DIR")?;
            let h = PdbHeuristic::new(set, reflect)?;
            solve_all(states, goal, &h, search)
        }
        HeuristicName::PPlus3s => {
            let h = PPlus3S::new(board, goal)?;
            solve_all(states, goal, &h, search)
        }
    }
}

/// The totals over `results`, with the note on optimality and the machine.
fn summarise(
    results: Vec<InstanceReport>,
    total_seconds: f64,
    optimality: Option<String>,
    move_pruning: Option<MachineReport>,
) -> Summary {
    let total_expanded: u64 = results.iter().map(|r| r.result.expanded).sum();
    let total_generated: u64 = results.iter().map(|r| r.result.generated).sum();
    Summary {
        instances: results.len(),
        solved: results.iter().filter(|r| r.length.is_some()).count(),
        total_expanded,
        total_generated,
        total_seconds,
        expanded_per_second: total_expanded as f64 / total_seconds.max(1e-9),
        generated_per_second: total_generated as f64 / total_seconds.max(1e-9),
        optimality,
        move_pruning,
        results,
    }
}

/// The summary for people: a line per instance and per iteration, then the totals.
fn print_text(summary: &Summary) {
    for r in &summary.results {
        let moves = r
            .result
            .moves
            .iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        match r.length {
            Some(len) => tilepdb_common::outln!(
                "{}: length {len}, {} expanded, {} generated, {:.3} s, moves {moves}",
                r.instance,
                r.result.expanded,
                r.result.generated,
                r.result.seconds
            ),
            None => tilepdb_common::outln!(
                "{}: {} after {} expanded, {} generated, {:.3} s (no solution within the budget)",
                r.instance,
                outcome_words(r.result.outcome),
                r.result.expanded,
                r.result.generated,
                r.result.seconds
            ),
        }
        for i in &r.result.per_iteration {
            tilepdb_common::outln!(
                "  bound {}: {} expanded, {} generated",
                i.bound,
                i.expanded,
                i.generated
            );
        }
    }
    if let Some(note) = &summary.optimality {
        tilepdb_common::outln!("note: {note}");
    }
    tilepdb_common::outln!(
        "total: {} of {} solved, {} expanded, {} generated, {:.3} s, {:.2} M expanded/s, {:.2} M generated/s",
        summary.solved,
        summary.instances,
        summary.total_expanded,
        summary.total_generated,
        summary.total_seconds,
        summary.expanded_per_second / 1e6,
        summary.generated_per_second / 1e6
    );
}

/// An outcome in words for people (the JSON has `solved`, `node-budget`, `timeout`).
fn outcome_words(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Solved => "solved",
        Outcome::NodeBudget => "out of nodes (--max-nodes)",
        Outcome::Timeout => "out of time (--timeout)",
    }
}

/// The heuristic's name as `--heuristic` takes it.
fn heuristic_name(h: HeuristicName) -> String {
    clap::ValueEnum::to_possible_value(&h)
        .map_or_else(|| "chosen".into(), |v| v.get_name().to_string())
}
