//! Solver benchmark: Korf's 100 15-puzzle instances and Korf & Felner's 24-puzzle instances,
//! every solution checked against the published optimal length (and node counts for the
//! 24-puzzle), with nodes, seconds and nodes per second.
//!
//! ```text
//! cargo bench -p tilepdb-solver --bench solve                  # 15:6-6-3, 15:7-8 and 15:7-8 aware mod3
//! cargo bench -p tilepdb-solver --bench solve -- 6-6-3 7-8     # only the cases named
//! cargo bench -p tilepdb-solver --bench solve -- 24            # 24-puzzle #38, #40, #25 (6-6-6-6)
//! cargo bench -p tilepdb-solver --bench solve -- 7-8 memory     # one way of loading the tables
//! ```
//!
//! Each Korf 100 case runs twice: with the tables memory-mapped (`map`, the default of
//! `tilepdb-solve`) and read into memory backed by huge pages (`memory`, `--load memory`).
//! On a shared machine, `SOLVE_BENCH_RUNS=5` repeats each and reports the fastest run; the
//! figure in brackets, nodes per second of processor time, varies less than wall time.
//! Tables are built once into `target/tilepdb-tables` (or `TILEPDB_CACHE`) and reused.

#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::time::Instant;

use rayon::prelude::*;
use tilepdb_common::human_bytes;
use tilepdb_common::table::{Encoding, Load, TableSet};
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

/// Memory of this process mapped with huge pages (Linux), in bytes: anonymous
/// (`AnonHugePages`, the copies of `Load::Memory`) and file pages (`FilePmdMapped`, maps of
/// files the page cache holds in 2 MiB folios).
fn huge_page_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let kib = |field: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(field))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((kib("AnonHugePages:")? + kib("FilePmdMapped:").unwrap_or(0)) * 1024)
}

/// Processor time of this process's threads so far (Linux), in seconds: on a shared machine
/// nodes per second of it varies less than nodes per second of wall time.
fn cpu_seconds() -> Option<f64> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let text = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e9)
}

/// Runs of each Korf 100 case (`SOLVE_BENCH_RUNS`, default 1); the fastest is reported.
fn runs() -> usize {
    std::env::var("SOLVE_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1)
}

fn korf100(name: &str, partition: &str, rule: BlankRule, encoding: Encoding, loads: &[Load]) {
    println!("{name}: Korf's 100 with {partition} {rule} {encoding} and reflection");
    let dir = open(partition, rule, encoding).dir().to_path_buf();
    let instances = support::korf100();
    for &load in loads {
        let opening = Instant::now();
        let set = TableSet::open_with(&dir, load).unwrap();
        let open_secs = opening.elapsed().as_secs_f64();
        let h = PdbHeuristic::new(&set, true).unwrap();
        let (mut secs, mut cpu) = (f64::MAX, None::<f64>);
        let mut results = Vec::new();
        for _ in 0..runs() {
            let cpu_before = cpu_seconds();
            let started = Instant::now();
            results = instances
                .par_iter()
                .map(|instance| {
                    let start = PuzzleState::parse(set.board(), instance.state).unwrap();
                    ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap()
                })
                .collect();
            secs = secs.min(started.elapsed().as_secs_f64());
            if let Some(run) = cpu_before.zip(cpu_seconds()).map(|(a, b)| b - a) {
                cpu = Some(cpu.map_or(run, |c| c.min(run)));
            }
        }
        let nodes: u64 = results.iter().map(|r| r.generated).sum();
        let optimal = results
            .iter()
            .zip(&instances)
            .filter(|(r, i)| r.moves.len() == i.optimal)
            .count();
        let huge = match huge_page_bytes() {
            Some(bytes) => format!(" ({} in huge pages)", human_bytes(bytes)),
            None => String::new(),
        };
        let cpu = match cpu {
            Some(cpu) => format!(" [{:.2} M nodes per cpu-s]", nodes as f64 / cpu / 1e6),
            None => String::new(),
        };
        println!(
            "  {:<6} {optimal}/100 optimal, {nodes} nodes, {secs:.2} s, {:.2} M nodes/s ({} threads){cpu}, tables {}{huge}, opened in {open_secs:.2} s",
            load.name(),
            nodes as f64 / secs / 1e6,
            rayon::current_num_threads(),
            human_bytes(table_bytes(&set)),
        );
        assert_eq!(optimal, 100, "a length differs from korf100-optimal.txt");
    }
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
            r.generated,
            instance.published_nodes.unwrap_or_default(),
            r.seconds,
            r.generated as f64 / r.seconds / 1e6
        );
    }
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let mut loads: Vec<Load> = filters.iter().filter_map(|f| f.parse().ok()).collect();
    if loads.is_empty() {
        loads = vec![Load::Map, Load::Memory];
    }
    let cases: Vec<&String> = filters
        .iter()
        .filter(|f| f.parse::<Load>().is_err())
        .collect();
    let wanted = |name: &str| cases.is_empty() || cases.iter().any(|f| *f == name);
    if wanted("6-6-3") {
        let (rule, encoding) = (BlankRule::Minimized, Encoding::Byte);
        korf100("6-6-3", "15:6-6-3", rule, encoding, &loads);
    }
    if wanted("7-8") {
        let (rule, encoding) = (BlankRule::Minimized, Encoding::Byte);
        korf100("7-8", "15:7-8", rule, encoding, &loads);
    }
    if wanted("7-8-aware-mod3") {
        let (rule, encoding) = (BlankRule::Aware, Encoding::Mod3);
        korf100("7-8-aware-mod3", "15:7-8", rule, encoding, &loads);
    }
    if !cases.is_empty() && wanted("24") {
        korf24();
    }
}
