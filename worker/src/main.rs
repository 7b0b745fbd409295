//! `tilepdb-worker`: joins a tilepdb coordinator and expands its tasks until the job is done.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use tilepdb_common::cli_docs::{CompletionsArgs, ManArgs, print_completions, write_man_pages};
use tilepdb_worker::cli::{WorkerArgs, run};

#[derive(Parser)]
#[command(name = "tilepdb-worker", version, about, long_about = None)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct Cli {
    #[command(flatten)]
    args: Option<WorkerArgs>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Write the man page in a directory.
    Man(ManArgs),
}

fn main() -> ExitCode {
    tilepdb_common::allocator::keep_large_blocks_mapped();
    let cli = Cli::parse();
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(terminal)
        .with_target(!terminal)
        .init();
    let result = match (cli.command, cli.args) {
        (Some(Command::Completions(args)), _) => {
            print_completions(Cli::command(), args.shell);
            Ok(())
        }
        (Some(Command::Man(args)), _) => write_man_pages(Cli::command(), &args.dir)
            .map(|written| {
                eprintln!(
                    "wrote {} man page(s) in {}",
                    written.len(),
                    args.dir.display()
                );
            })
            .map_err(|e| format!("cannot write the man pages in {}: {e}", args.dir.display())),
        (None, Some(args)) => run(args).map(|_| ()).map_err(|e| e.to_string()),
        (None, None) => {
            Err("no coordinator: give --coordinator URL (or set TILEPDB_COORDINATOR)".into())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
