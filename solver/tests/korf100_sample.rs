//! Korf's 15-puzzle instances (data/korf100.txt) against their published optimal lengths, with
//! the 6-6-3 set and reflection: ten of them in the default run, all hundred with the 7-8 set
//! in a heavy test.
//!
//! ```text
//! cargo test --release -p tilepdb-solver --test korf100_sample -- --ignored   # the 7-8 set, all 100
//! ```

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Goal, Partition, PuzzleState};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_solver::heuristic::PdbHeuristic;
use tilepdb_solver::search::{Limits, ida_star};

fn instances() -> Vec<(String, usize)> {
    let states = include_str!("../../data/korf100.txt");
    let lengths = include_str!("../../data/korf100-optimal.txt");
    states
        .lines()
        .zip(lengths.split_whitespace())
        .map(|(s, l)| (s.to_string(), l.parse().unwrap()))
        .collect()
}

fn solve(partition: &str, cache: &std::path::Path, which: &[usize]) {
    let partition = Partition::named(partition).unwrap();
    let (set, _) = open_or_build(
        cache,
        &partition,
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
    let h = PdbHeuristic::new(&set, true).unwrap();
    let all = instances();
    for &i in which {
        let (state, optimal) = &all[i];
        let start = PuzzleState::parse(set.board(), state).unwrap();
        let r = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        assert_eq!(r.moves.len(), *optimal, "Korf #{}", i + 1);
    }
}

#[test]
fn ten_korf_instances_with_6_6_3() {
    let cache = tempfile::tempdir().unwrap();
    // #1-#10 take well under a second together with 6-6-3 and reflection.
    solve("15:6-6-3", cache.path(), &(0..10).collect::<Vec<_>>());
}

#[test]
#[ignore = "builds the 15-puzzle 7-8 set (minutes); run with --ignored"]
fn all_korf_instances_with_7_8() {
    let cache = std::env::var("TILEPDB_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tilepdb-tables")
        });
    solve("15:7-8", &cache, &(0..100).collect::<Vec<_>>());
}
