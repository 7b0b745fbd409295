//! `tilepdb-coordinator`: builds additive pattern databases for sliding-tile puzzles.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
