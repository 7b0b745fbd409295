//! `tilepdb-solve fsm`: learns a move-pruning machine and writes its file, for --fsm.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use tilepdb_common::Board;
use tilepdb_solver::move_pruning::{LengthCounts, MovePruning, learn, nodes_by_depth};

#[derive(Args)]
pub struct FsmArgs {
    /// The board: 8, 15, 24 or WxH (the machine is for this board only).
    #[arg(long, default_value = "15")]
    puzzle: String,
    /// The length of the longest move strings examined (2 to 31; 2 is the undo rule alone).
    /// Each move more costs about twice the time and memory.
    #[arg(long)]
    depth: u8,
    /// The file the machine is written to.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Also count the nodes of a brute-force search from the centre cell to this depth, with
    /// the undo rule alone and with the machine, and print the branching factors (the ratio of
    /// the counts at this depth and two less, square-rooted; 0: skip, else at least 2).
    #[arg(long, value_name = "DEPTH", default_value_t = 30)]
    count_depth: usize,
    /// Print JSON for scripts.
    #[arg(long)]
    json: bool,
}

/// Brute-force counts at the last three depths and the branching factor: the ratio of the
/// last two counts over two moves, `sqrt(n(d) / n(d - 2))` (successive ratios alternate with the
/// parity of the blank's cell).
#[derive(Serialize)]
struct BruteForce {
    depth: usize,
    undo_nodes: [f64; 3],
    undo_branching: f64,
    machine_nodes: [f64; 3],
    machine_branching: f64,
}

#[derive(Serialize)]
struct FsmReport {
    board: String,
    depth: u8,
    file: String,
    states: u32,
    forbidden_strings: u32,
    per_length: Vec<LengthCounts>,
    wall_seconds: f64,
    branching: Option<BruteForce>,
}

/// Nodes at `depth - 2`, `depth - 1` and `depth` from the centre cell, and the branching
/// factor over the last two moves.
fn last_three(machine: &MovePruning, depth: usize) -> anyhow::Result<([f64; 3], f64)> {
    let board = machine.board();
    let centre = board.cell(board.height() / 2, board.width() / 2);
    let counts = nodes_by_depth(machine, centre, depth)?;
    let last = [counts[depth - 2], counts[depth - 1], counts[depth]];
    Ok((last, (last[2] / last[0]).sqrt()))
}

pub fn run(args: FsmArgs) -> anyhow::Result<()> {
    let board: Board = args.puzzle.parse().context("--puzzle")?;
    let started = Instant::now();
    let learned = learn(board, args.depth).context("--depth")?;
    let wall_seconds = started.elapsed().as_secs_f64();
    let machine = &learned.machine;
    machine.write(&args.out)?;
    let branching = if args.count_depth >= 2 {
        let (undo_nodes, undo_branching) =
            last_three(&MovePruning::undo_only(board), args.count_depth)?;
        let (machine_nodes, machine_branching) = last_three(machine, args.count_depth)?;
        Some(BruteForce {
            depth: args.count_depth,
            undo_nodes,
            undo_branching,
            machine_nodes,
            machine_branching,
        })
    } else {
        None
    };
    let report = FsmReport {
        board: board.to_string(),
        depth: args.depth,
        file: args.out.display().to_string(),
        states: machine.states(),
        forbidden_strings: machine.forbidden_strings(),
        per_length: learned.per_length,
        wall_seconds,
        branching,
    };
    if args.json {
        tilepdb_common::json::print("fsm", &report)?;
        return Ok(());
    }
    tilepdb_common::outln!(
        "{} machine to depth {}: {} states, {} minimal forbidden strings, learned in {:.2} s",
        report.board,
        report.depth,
        report.states,
        report.forbidden_strings,
        report.wall_seconds
    );
    tilepdb_common::outln!("  length  kept strings  forbidden");
    for l in &report.per_length {
        tilepdb_common::outln!("  {:>6}  {:>12}  {:>9}", l.length, l.kept, l.forbidden);
    }
    if let Some(b) = &report.branching {
        tilepdb_common::outln!(
            "brute force from the centre, nodes at depths {} to {}: undo rule {:.0} {:.0} {:.0} \
             (branching {:.4}), machine {:.0} {:.0} {:.0} (branching {:.4})",
            b.depth - 2,
            b.depth,
            b.undo_nodes[0],
            b.undo_nodes[1],
            b.undo_nodes[2],
            b.undo_branching,
            b.machine_nodes[0],
            b.machine_nodes[1],
            b.machine_nodes[2],
            b.machine_branching
        );
    }
    tilepdb_common::outln!("wrote {}", report.file);
    Ok(())
}

/// The machine file of `--fsm` at `path`, checked, for a search on `board` (`ida`: whether the
/// search is IDA*, the only one that takes a machine).
pub fn open_machine(
    path: &std::path::Path,
    board: Board,
    ida: bool,
) -> anyhow::Result<MovePruning> {
    if !ida {
        anyhow::bail!("--fsm applies to --algorithm ida");
    }
    let machine = MovePruning::read(path).context("--fsm")?;
    machine
        .check_board(board)
        .with_context(|| format!("--fsm {}", path.display()))?;
    Ok(machine)
}
