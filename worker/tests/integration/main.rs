//! The integration tests of `worker`, one binary: each module was a test file of its own.
//! One binary links the workspace once instead of once per file. Run one module with
//! `cargo test -p tilepdb-worker --test integration MODULE::`.

#[path = "../../../common/tests/support/cli_docs.rs"]
mod cli_docs;
#[path = "../../../common/tests/support/skip.rs"]
mod skip;

mod completions;
mod help;
mod worker_process;
