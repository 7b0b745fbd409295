//! The command line of `tilepdb-coordinator`: one module per subcommand.

mod address_file;
mod build;
mod build_catalogue;
mod completions;
mod encode;
mod inspect;
mod job;
mod partitions;
mod progress;
mod serve;
mod status;
mod summary;
mod verify;
mod watch;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Builds additive pattern databases (PDBs) for sliding-tile puzzles.
///
/// With no subcommand it builds the default table set: the 15-puzzle 6-6-3 partition, blank
/// minimized, blank-first goal, into ./tables.
#[derive(Parser)]
#[command(name = "tilepdb-coordinator", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start; the largest variant is the one most runs use"
)]
enum Command {
    /// Build the tables of a partition on this machine (in-process workers, one per core).
    Build(build::BuildArgs),
    /// Write a finished lossless set in another encoding (nibble, min-nibble, mod3) without
    /// building it again.
    Encode(encode::EncodeArgs),
    /// List the known partitions with their tiles.
    Partitions(partitions::PartitionsArgs),
    /// Show a table file's or a set's header, sizes and histogram (or, with --plan, those of
    /// tables not built yet).
    Inspect(inspect::InspectArgs),
    /// Check table files: magic, version, sizes, checksums (and with --deep every entry).
    Verify(verify::VerifyArgs),
    /// Serve a distributed build to worker processes over gRPC (checkpointed in --data-dir,
    /// resumable); exits when the tables are written.
    Serve(serve::ServeArgs),
    /// Print the progress of a running `serve`.
    Status(status::StatusArgs),
    /// Run a worker (the same as the `tilepdb-worker` program).
    Worker(tilepdb_worker::cli::WorkerArgs),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(tilepdb_common::cli_docs::CompletionsArgs),
    /// Write the man pages (the program's and one per subcommand) in a directory.
    Man(tilepdb_common::cli_docs::ManArgs),
}

pub fn main() -> ExitCode {
    tilepdb_common::allocator::keep_large_blocks_mapped();
    let cli = Cli::parse();
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        // Above the progress bars while they are shown.
        .with_writer(tilepdb_coordinator::observe::bars::LogWriter)
        .with_ansi(terminal)
        // Module paths help in a log file, not in a person's terminal.
        .with_target(!terminal)
        .init();
    let result = match cli.command {
        None => build::run(build::BuildArgs::defaults()),
        Some(Command::Build(args)) => build::run(args),
        Some(Command::Encode(args)) => encode::run(args),
        Some(Command::Partitions(args)) => partitions::run(args),
        Some(Command::Inspect(args)) => inspect::run(args),
        Some(Command::Verify(args)) => verify::run(args),
        Some(Command::Serve(args)) => serve::run(args),
        Some(Command::Status(args)) => status::run(args),
        Some(Command::Worker(args)) => tilepdb_worker::cli::run(args)
            .map(|_| ())
            .map_err(anyhow::Error::from),
        Some(Command::Completions(args)) => completions::completions(Cli::command(), args),
        Some(Command::Man(args)) => completions::man(Cli::command(), args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
