//! `tilepdb-solve completions SHELL` prints a completion script that the shell parses and that knows
//! the program's words; `tilepdb-solve man DIR` writes man pages.

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-solve");

#[test]
fn the_bash_completion_parses_and_knows_the_words() {
    crate::cli_docs::check_completions(
        PROGRAM,
        "tilepdb-solve",
        &["solve", "eval", "fetch", "gen", "bench", "play"],
    );
}

#[test]
fn man_pages_are_written() {
    crate::cli_docs::check_man_pages(PROGRAM, "tilepdb-solve", "tilepdb-solve-solve.1");
}

#[test]
fn bash_completes_subcommands_and_their_options() {
    let name = "tilepdb-solve";
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "so"], "solve");
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "solve", "--heu"], "--heuristic");
    crate::cli_docs::check_completes(
        PROGRAM,
        name,
        &[name, "solve", "--heuristic", "linear"],
        "linear-conflict",
    );
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "bench", "--max-n"], "--max-nodes");
}
