//! Saying that a test was skipped where `cargo test` shows it: the harness captures what
//! `println!` and `eprintln!` print (and shows it only for a failing test), so a test that
//! returns early for want of a tool would read as a plain "ok". [`skipped`] writes to the
//! process's standard error itself, past the capture, so the line appears in cargo's output
//! with or without `--nocapture`. Each test crate includes this file with `#[path]`.

use std::io::Write;

/// Prints `skipped: TEST: REASON` on the real standard error (not captured by the harness).
pub fn skipped(test: &str, reason: &str) {
    let _ = writeln!(std::io::stderr().lock(), "skipped: {test}: {reason}");
}
