//! What a new user meets first: help without `[default: 0]` beside "every core", a missing
//! table set refused with the commands that make one, and `play` without a terminal refused
//! with that reason (not a bare system error).

use std::process::{Command, Stdio};

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-solve");

#[test]
fn help_does_not_show_a_zero_for_every_core() {
    let out = Command::new(PROGRAM)
        .args(["solve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(help.contains("every core"), "{help}");
    assert!(!help.contains("[default: 0]"), "{help}");
}

#[test]
fn a_missing_table_set_says_how_to_build_or_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("4x4-6-6-3-minimized-blank-first");
    let out = Command::new(PROGRAM)
        .args(["solve", "--tables"])
        .arg(&missing)
        .args(["--state", "1 0 2 3 4 5 6 7 8 9 10 11 12 13 14 15"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "tilepdb-coordinator build --partition 15:6-6-3 --blank minimized --goal blank-first --out {}",
            dir.path().display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("tilepdb-solve fetch --from URL --set 4x4-6-6-3-minimized-blank-first"),
        "{stderr}"
    );
    // A directory that holds no set: the same hint.
    let empty = dir.path().join("mine");
    std::fs::create_dir(&empty).unwrap();
    let out = Command::new(PROGRAM)
        .args(["eval", "--tables"])
        .arg(&empty)
        .args(["--state", "1 0 2 3 4 5 6 7 8 9 10 11 12 13 14 15"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("has no table set"), "{stderr}");
    assert!(
        stderr.contains("tilepdb-coordinator build --partition NAME"),
        "{stderr}"
    );
}

#[test]
fn play_without_a_terminal_says_it_needs_one() {
    let out = Command::new(PROGRAM)
        .args(["play", "--puzzle", "8"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("play needs a terminal"), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");
}
