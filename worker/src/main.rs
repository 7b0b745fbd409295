//! `tilepdb-worker`: joins a tilepdb coordinator and expands its tasks until the job is done.

use std::process::ExitCode;

use clap::Parser;
use tilepdb_worker::cli::{WorkerArgs, run_worker};

#[derive(Parser)]
#[command(name = "tilepdb-worker", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    args: WorkerArgs,
}

fn main() -> ExitCode {
    tilepdb_common::pipe::end_quietly_on_closed_pipe();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run_worker(cli.args) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
