//! What the solver's tests and benchmarks share: the reference instances of `data/` and table
//! sets built once into a cache directory.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::{BlankRule, Goal, Partition};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;

/// `$TILEPDB_CACHE`, else `target/tilepdb-tables`: where heavy tests and benchmarks keep the
/// sets they build.
pub fn cache_dir() -> PathBuf {
    std::env::var("TILEPDB_CACHE").map_or_else(
        |_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tilepdb-tables"),
        PathBuf::from,
    )
}

/// The set of a known partition (blank-first goal), built into `cache` unless it is there;
/// also returns how many tables were built.
pub fn open_set(
    cache: &Path,
    partition: &str,
    rule: BlankRule,
    encoding: Encoding,
) -> (TableSet, usize) {
    let partition = Partition::named(partition).unwrap();
    open_or_build(
        cache,
        &partition,
        Goal::BlankFirst,
        rule,
        encoding,
        &BuildOptions::default(),
    )
    .unwrap()
}

/// One instance of a reference file: its state and the published figures.
pub struct Instance {
    pub number: usize,
    pub state: &'static str,
    pub optimal: usize,
    /// Nodes the literature reports (Korf & Felner 2002 for the 24-puzzle).
    pub published_nodes: Option<u64>,
}

fn numbers(text: &str) -> Vec<u64> {
    text.split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

/// Korf's 100 15-puzzle instances with their optimal lengths.
pub fn korf100() -> Vec<Instance> {
    let optimal = numbers(include_str!("../../../../data/korf100-optimal.txt"));
    include_str!("../../../../data/korf100.txt")
        .lines()
        .zip(optimal)
        .enumerate()
        .map(|(i, (state, optimal))| Instance {
            number: i + 1,
            state,
            optimal: usize::try_from(optimal).expect("an optimal length is below 100"),
            published_nodes: None,
        })
        .collect()
}

/// Korf & Felner's 50 24-puzzle instances with their optimal lengths and published node counts.
pub fn korf24() -> Vec<Instance> {
    let optimal = numbers(include_str!("../../../../data/korf24-50-optimal.txt"));
    let nodes = numbers(include_str!("../../../../data/korf24-50-kf2002-nodes.txt"));
    include_str!("../../../../data/korf24-50.txt")
        .lines()
        .zip(optimal.into_iter().zip(nodes))
        .enumerate()
        .map(|(i, (state, (optimal, nodes)))| Instance {
            number: i + 1,
            state,
            optimal: usize::try_from(optimal).expect("an optimal length is below 100"),
            published_nodes: Some(nodes),
        })
        .collect()
}

/// Runs the solver program (`tilepdb-solve`) with `args` to its end.
pub fn solve_program(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"))
        .args(args)
        .output()
        .unwrap()
}

/// Asserts that `out` is a refusal, not a panic, whose message holds `needle`.
pub fn assert_refused(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected a failure, got {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(needle), "expected {needle:?} in {stderr}");
}
