//! Solver benchmark: Korf's 100 15-puzzle instances and Korf & Felner's 24-puzzle instances,
//! every solution checked against the published optimal length (and node counts for the
//! 24-puzzle), with nodes, seconds and nodes per second.
//!
//! ```text
//! cargo bench -p tilepdb-solver --bench solve                  # 15:6-6-3, 15:7-8 and 15:7-8 aware mod3
//! cargo bench -p tilepdb-solver --bench solve -- 6-6-3 7-8     # only the cases named
//! cargo bench -p tilepdb-solver --bench solve -- 24            # 24-puzzle #38, #40, #25 (6-6-6-6)
//! ```
//!
//! Tables are built once into `target/tilepdb-tables` (or `TILEPDB_CACHE`) and reused.

use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::{BlankRule, Goal, Partition, PuzzleState};
use tilepdb_coordinator::build::{BuildOptions, human_bytes};
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_solver::heuristic::PdbHeuristic;
use tilepdb_solver::search::{Limits, ida_star};

fn cache() -> PathBuf {
    std::env::var("TILEPDB_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/tilepdb-tables")
        })
}

fn open(partition: &str, rule: BlankRule, encoding: Encoding) -> TableSet {
    let partition = Partition::named(partition).unwrap();
    let started = Instant::now();
    let (set, built) = open_or_build(
        &cache(),
        &partition,
        Goal::BlankFirst,
        rule,
        encoding,
        &BuildOptions::default(),
    )
    .unwrap();
    if built > 0 {
        println!(
            "  (built {built} table(s) in {:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    set
}

fn table_bytes(set: &TableSet) -> u64 {
    set.tables().iter().map(|t| t.payload().len() as u64).sum()
}

fn korf100(name: &str, partition: &str, rule: BlankRule, encoding: Encoding) {
    println!("{name}: Korf's 100 with {partition} {rule} {encoding} and reflection");
    let set = open(partition, rule, encoding);
    let h = PdbHeuristic::new(&set, true).unwrap();
    let states: Vec<&str> = include_str!("../../data/korf100.txt").lines().collect();
    let lengths: Vec<usize> = include_str!("../../data/korf100-optimal.txt")
        .split_whitespace()
        .map(|l| l.parse().unwrap())
        .collect();
    let started = Instant::now();
    let results: Vec<_> = states
        .par_iter()
        .map(|s| {
            let start = PuzzleState::parse(set.board(), s).unwrap();
            ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap()
        })
        .collect();
    let secs = started.elapsed().as_secs_f64();
    let nodes: u64 = results.iter().map(|r| r.nodes).sum();
    let optimal = results
        .iter()
        .zip(&lengths)
        .filter(|(r, l)| r.moves.len() == **l)
        .count();
    println!(
        "  {optimal}/100 optimal, {nodes} nodes, {secs:.2} s, {:.2} M nodes/s ({} threads), tables {}",
        nodes as f64 / secs / 1e6,
        rayon::current_num_threads(),
        human_bytes(table_bytes(&set))
    );
    assert_eq!(optimal, 100, "a length differs from korf100-optimal.txt");
}

fn korf24() {
    println!("24: Korf & Felner's 24-puzzle instances with 24:6-6-6-6 minimized and reflection");
    let set = open("24:6-6-6-6", BlankRule::Minimized, Encoding::Byte);
    let h = PdbHeuristic::new(&set, true).unwrap();
    let states: Vec<&str> = include_str!("../../data/korf24-50.txt").lines().collect();
    let lengths: Vec<usize> = include_str!("../../data/korf24-50-optimal.txt")
        .split_whitespace()
        .map(|l| l.parse().unwrap())
        .collect();
    let published: Vec<u64> = include_str!("../../data/korf24-50-kf2002-nodes.txt")
        .split_whitespace()
        .map(|l| l.parse().unwrap())
        .collect();
    for number in [38usize, 40, 25] {
        let start = PuzzleState::parse(set.board(), states[number - 1]).unwrap();
        let r = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        println!(
            "  #{number}: length {} (optimal {}), {} nodes (published {}), {:.2} s, {:.2} M nodes/s",
            r.moves.len(),
            lengths[number - 1],
            r.nodes,
            published[number - 1],
            r.seconds,
            r.nodes as f64 / r.seconds / 1e6
        );
    }
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted =
        |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()));
    if wanted("6-6-3") {
        korf100("6-6-3", "15:6-6-3", BlankRule::Minimized, Encoding::Byte);
    }
    if wanted("7-8") {
        korf100("7-8", "15:7-8", BlankRule::Minimized, Encoding::Byte);
    }
    if wanted("7-8-aware-mod3") {
        korf100("7-8-aware-mod3", "15:7-8", BlankRule::Aware, Encoding::Mod3);
    }
    if !filters.is_empty() && wanted("24") {
        korf24();
    }
}
