//! `tilepdb-worker completions SHELL` prints a completion script that the shell parses and that knows
//! the program's words; `tilepdb-worker man DIR` writes man pages.

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-worker");

#[test]
fn the_bash_completion_parses_and_knows_the_words() {
    crate::cli_docs::check_completions(
        PROGRAM,
        "tilepdb-worker",
        &["--coordinator", "--threads", "--token-file"],
    );
}

#[test]
fn man_pages_are_written() {
    crate::cli_docs::check_man_pages(PROGRAM, "tilepdb-worker", "tilepdb-worker-completions.1");
}

#[test]
fn bash_completes_options_and_subcommands() {
    let name = "tilepdb-worker";
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "--coord"], "--coordinator");
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "compl"], "completions");
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "completions", "ba"], "bash");
}
