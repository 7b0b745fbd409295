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

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Instant;

use rayon::prelude::*;
use tilepdb_common::human_bytes;
use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::{BlankRule, Goal, PuzzleState};
use tilepdb_solver::heuristic::PdbHeuristic;
use tilepdb_solver::search::{Limits, ida_star};

fn open(partition: &str, rule: BlankRule, encoding: Encoding) -> TableSet {
    let started = Instant::now();
    let (set, built) = support::open_set(&support::cache_dir(), partition, rule, encoding);
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
    let instances = support::korf100();
    let started = Instant::now();
    let results: Vec<_> = instances
        .par_iter()
        .map(|instance| {
            let start = PuzzleState::parse(set.board(), instance.state).unwrap();
            ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap()
        })
        .collect();
    let secs = started.elapsed().as_secs_f64();
    let nodes: u64 = results.iter().map(|r| r.nodes).sum();
    let optimal = results
        .iter()
        .zip(&instances)
        .filter(|(r, i)| r.moves.len() == i.optimal)
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
    let instances = support::korf24();
    for number in [38usize, 40, 25] {
        let instance = &instances[number - 1];
        let start = PuzzleState::parse(set.board(), instance.state).unwrap();
        let r = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        println!(
            "  #{number}: length {} (optimal {}), {} nodes (published {}), {:.2} s, {:.2} M nodes/s",
            r.moves.len(),
            instance.optimal,
            r.nodes,
            instance.published_nodes.unwrap_or_default(),
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
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| f == name);
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
