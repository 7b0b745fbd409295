//! The integration tests of `solver`, one binary: each module was a test file of its own.
//! One binary links the workspace once instead of once per file. Run one module with
//! `cargo test -p tilepdb-solver --test integration MODULE::`.

#[path = "../../../common/tests/support/cli_docs.rs"]
mod cli_docs;
#[path = "../../../common/tests/support/skip.rs"]
mod skip;
mod support;

mod bench;
mod catalogue;
mod catalogue_cli;
mod catalogue_symmetry;
mod cli;
mod closed_pipe;
mod completions;
mod fetch_cli;
mod fetch_read_only;
mod generate;
mod hostile_flags;
mod json_scheme;
mod korf100_sample;
mod korf24;
mod linear_conflict;
mod move_pruning;
mod new_user;
mod parallel_search;
mod play;
mod small_boards;
mod textbook;
