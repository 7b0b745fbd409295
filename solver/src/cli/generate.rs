//! `tilepdb-solve gen`: instance files of random walks from the goal or uniformly random
//! solvable states, reproducible from a seed.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use tilepdb_common::{Board, Goal};
use tilepdb_solver::generate::{Generator, STREAM};

#[derive(Args)]
pub struct GenArgs {
    /// The board: 8, 15, 24 or WxH.
    #[arg(long, default_value = "15")]
    puzzle: String,
    /// The goal the states are drawn for: blank-first or blank-last.
    #[arg(long, default_value = "blank-first")]
    goal: Goal,
    /// Random walks of this many moves of the blank from the goal, never undoing the last move
    /// (each state is at most this many moves from the goal).
    #[arg(
        long,
        value_name = "MOVES",
        conflicts_with = "uniform",
        value_parser = tilepdb_common::units::parse_walk
    )]
    walk: Option<usize>,
    /// States drawn uniformly from those that reach the goal.
    #[arg(long)]
    uniform: bool,
    /// How many states.
    #[arg(long, default_value_t = 100, value_parser = parse_instance_count)]
    count: usize,
    /// The seed of the random stream: the same seed, board, goal and kind give the same file.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write to this file instead of standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

pub fn run(args: GenArgs) -> anyhow::Result<()> {
    let board: Board = args.puzzle.parse()?;
    let kind = match (args.walk, args.uniform) {
        (Some(moves), false) => format!("random walks of {moves} moves without immediate undo"),
        (None, true) => "uniformly random solvable states".to_string(),
        _ => bail!("choose the kind of states: --walk MOVES or --uniform"),
    };
    let mut generator = Generator::new(board, args.goal, args.seed);
    let mut text = format!(
        "# {} {kind} on {board} for the {} goal, seed {} ({STREAM})\n",
        args.count, args.goal, args.seed
    );
    for _ in 0..args.count {
        let state = match args.walk {
            Some(moves) => generator.random_walk(moves),
            None => generator.random_state(),
        };
        text.push_str(&state.to_string());
        text.push('\n');
    }
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        None => tilepdb_common::out!("{text}"),
    }
    Ok(())
}

/// `--count`: at most [`tilepdb_common::units::MAX_COUNT`] states.
fn parse_instance_count(text: &str) -> Result<usize, String> {
    tilepdb_common::units::parse_count(text, tilepdb_common::units::MAX_COUNT, "states")
}
