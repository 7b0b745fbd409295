//! Korf & Felner (2002) node counts on the 24-puzzle: IDA* with the 6-6-6-6 set and reflection,
//! blank moves tried up, left, right, down, only the undo of the last move pruned, every child
//! generated counted over all iterations, stopping at the first solution. Heavy: it builds the
//! four 6-tile tables (about 600 MB, minutes each) into the cache, then solves #38, #40 and #25.
//!
//! ```text
//! cargo test --release -p tilepdb-solver --test korf24 -- --ignored
//! TILEPDB_CACHE=/path/to/tables cargo test --release -p tilepdb-solver --test korf24 -- --ignored
//! ```

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Goal, Partition, PuzzleState};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_solver::heuristic::PdbHeuristic;
use tilepdb_solver::search::{Limits, ida_star};

#[test]
#[ignore = "builds the 24-puzzle 6-6-6-6 set (about 10 minutes on 2 cores); run with --ignored"]
fn korf_felner_node_counts() {
    let cache = std::env::var("TILEPDB_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tilepdb-tables")
        });
    let partition = Partition::named("24:6-6-6-6").unwrap();
    let (set, _) = open_or_build(
        &cache,
        &partition,
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
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
    for (number, nodes) in [
        (38usize, 38_173_507u64),
        (40, 65_099_578),
        (25, 292_174_444),
    ] {
        assert_eq!(published[number - 1], nodes);
        let start = PuzzleState::parse(set.board(), states[number - 1]).unwrap();
        let r = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        assert_eq!(r.moves.len(), lengths[number - 1], "#{number} length");
        assert_eq!(r.nodes, nodes, "#{number} nodes");
    }
}
