//! The command line of `tilepdb-solve`: one module per subcommand.

mod bench;
mod catalogue;
mod eval;
#[cfg(feature = "fetch")]
mod fetch;
#[cfg(feature = "fetch")]
mod fetch_catalogue;
mod fsm;
mod generate;
mod input;
mod play;
mod solve;
mod tables;

use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};
use tilepdb_common::cli_docs::{CompletionsArgs, ManArgs, print_completions, write_man_pages};

/// Solves sliding-tile puzzles optimally with additive pattern databases built by
/// tilepdb-coordinator (or with Manhattan distance, linear conflict or misplaced tiles).
#[derive(Parser)]
#[command(name = "tilepdb-solve", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve states optimally: one per line of a file (or standard input), or given with --state.
    Solve(solve::SolveArgs),
    /// Print each table's value, the sum and the reflected sum for states.
    Eval(eval::EvalArgs),
    /// Download a table set from a coordinator into the local cache (resumable, checked);
    /// prints the set's directory, for --tables.
    #[cfg(feature = "fetch")]
    Fetch(fetch::FetchArgs),
    /// Write instance files: random walks from the goal or uniformly random solvable states,
    /// reproducible from a seed.
    Gen(generate::GenArgs),
    /// Compare heuristics on an instance file under one protocol: per-instance results (JSONL,
    /// CSV), a summary with the Pareto fronts, a Markdown report and SVG plots.
    Bench(bench::BenchArgs),
    /// Learn a move-pruning machine (Taylor & Korf's duplicate strings) for a board and write
    /// it, for solve --fsm and bench --fsm.
    Fsm(fsm::FsmArgs),
    /// Play the puzzle in the terminal: arrow keys slide tiles, h asks for the optimal next
    /// move and the distance left, q quits.
    Play(play::PlayArgs),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Write the man pages (the program's and one per subcommand) in a directory.
    Man(ManArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match cli.command {
        Command::Solve(args) => solve::run(args),
        Command::Eval(args) => eval::run(args),
        #[cfg(feature = "fetch")]
        Command::Fetch(args) => fetch::run(args),
        Command::Gen(args) => generate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Fsm(args) => fsm::run(args),
        Command::Play(args) => play::run(args),
        Command::Completions(args) => {
            print_completions(Cli::command(), args.shell);
            Ok(())
        }
        Command::Man(args) => write_man_pages(Cli::command(), &args.dir)
            .with_context(|| format!("cannot write the man pages in {}", args.dir.display()))
            .map(|written| {
                eprintln!(
                    "wrote {} man page(s) in {}",
                    written.len(),
                    args.dir.display()
                );
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
