//! `tilepdb-solve`: optimal solutions of sliding-tile puzzles with tilepdb's tables.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
