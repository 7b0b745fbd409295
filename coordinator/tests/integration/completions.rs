//! `tilepdb-coordinator completions SHELL` prints a completion script that the shell parses and that knows
//! the program's words; `tilepdb-coordinator man DIR` writes man pages.

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-coordinator");

#[test]
fn the_bash_completion_parses_and_knows_the_words() {
    crate::cli_docs::check_completions(
        PROGRAM,
        "tilepdb-coordinator",
        &[
            "build",
            "inspect",
            "verify",
            "serve",
            "status",
            "completions",
            "man",
        ],
    );
}

#[test]
fn man_pages_are_written() {
    crate::cli_docs::check_man_pages(
        PROGRAM,
        "tilepdb-coordinator",
        "tilepdb-coordinator-build.1",
    );
}
