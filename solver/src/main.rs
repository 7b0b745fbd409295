//! `tilepdb-solve`: optimal solutions of sliding-tile puzzles with tilepdb's tables.

mod cli;

fn main() -> std::process::ExitCode {
    tilepdb_common::pipe::end_quietly_on_closed_pipe();
    cli::main()
}
