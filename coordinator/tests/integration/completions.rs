//! `tilepdb-coordinator completions SHELL` prints a completion script that the shell parses and that knows
//! the program's words, and that completes in bash (sourced, its function called as at a TAB)
//! subcommands and the options after a subcommand; `tilepdb-coordinator man DIR` writes man pages.

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

#[test]
fn bash_completes_subcommands_and_their_options() {
    let name = "tilepdb-coordinator";
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "bu"], "build");
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "build", "--par"], "--partition");
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "encode", "--enc"], "--encoding");
    crate::cli_docs::check_completes(PROGRAM, name, &[name, "status", "--wa"], "--watch");
    crate::cli_docs::check_completes(
        PROGRAM,
        name,
        &[name, "serve", "--download-t"],
        "--download-token-file",
    );
}
