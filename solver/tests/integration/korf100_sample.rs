//! Korf's 15-puzzle instances (data/korf100.txt) against their published optimal lengths, with
//! reflection: ten of them with the 6-6-3 set in the default run, all hundred with the 7-8 set
//! in a heavy test.
//!
//! ```text
//! cargo test --release -p tilepdb-solver --test integration korf100_sample:: -- --ignored   # the 7-8 set, all 100
//! ```

use std::path::Path;

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Goal, PuzzleState};
use tilepdb_solver::heuristic::{Heuristic, PdbHeuristic};
use tilepdb_solver::search::{Limits, ida_star};

fn solve(partition: &str, rule: BlankRule, encoding: Encoding, cache: &Path, count: usize) {
    let (set, _) = crate::support::open_set(cache, partition, rule, encoding);
    let h = PdbHeuristic::new(&set, true).unwrap();
    // The other way of searching than the one the set's size picks: the same nodes.
    let other_way = PdbHeuristic::new(&set, true)
        .unwrap()
        .with_look_ahead(!h.looks_ahead());
    for instance in crate::support::korf100().iter().take(count) {
        let start = PuzzleState::parse(set.board(), instance.state).unwrap();
        let r = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        assert_eq!(r.moves.len(), instance.optimal, "Korf #{}", instance.number);
        if instance.number <= 10 {
            let o = ida_star(&start, Goal::BlankFirst, &other_way, &Limits::default()).unwrap();
            assert_eq!(
                (o.moves, o.generated),
                (r.moves, r.generated),
                "Korf #{}",
                instance.number
            );
        }
    }
}

#[test]
fn ten_korf_instances_with_6_6_3() {
    // #1-#10 take well under a second together with 6-6-3 and reflection.
    let cache = tempfile::tempdir().unwrap();
    solve(
        "15:6-6-3",
        BlankRule::Minimized,
        Encoding::Byte,
        cache.path(),
        10,
    );
}

#[test]
fn ten_korf_instances_with_zero_aware_6_6_3_in_1_bit() {
    // The zero-aware tables are looked up only after a move of one of their tiles, and their
    // 1-bit values followed from the parent's: still the published optimal lengths, and the
    // same nodes with and without the look-ahead.
    let cache = tempfile::tempdir().unwrap();
    solve(
        "15:6-6-3",
        BlankRule::ZeroAware,
        Encoding::OneBit,
        cache.path(),
        10,
    );
}

#[test]
#[ignore = "builds the 15-puzzle 7-8 set (minutes); run with --ignored"]
fn all_korf_instances_with_7_8() {
    solve(
        "15:7-8",
        BlankRule::Minimized,
        Encoding::Byte,
        &crate::support::cache_dir(),
        100,
    );
}
