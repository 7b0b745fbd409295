//! Korf & Felner (2002) node counts on the 24-puzzle: IDA* with the 6-6-6-6 set and reflection,
//! blank moves tried up, left, right, down, only the undo of the last move pruned, every child
//! generated counted over all iterations, stopping at the first solution. Heavy: it builds the
//! four 6-tile tables (about 600 MB, minutes each) into the cache, then solves #38, #40 and #25.
//!
//! ```text
//! cargo test --release -p tilepdb-solver --test integration korf24:: -- --ignored
//! TILEPDB_CACHE=/path/to/tables cargo test --release -p tilepdb-solver --test integration korf24:: -- --ignored
//! ```

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Goal, PuzzleState};
use tilepdb_solver::heuristic::PdbHeuristic;
use tilepdb_solver::search::{Limits, ida_star};

#[test]
#[ignore = "builds the 24-puzzle 6-6-6-6 set (about 10 minutes on 2 cores); run with --ignored"]
fn korf_felner_node_counts() {
    let (set, _) = crate::support::open_set(
        &crate::support::cache_dir(),
        "24:6-6-6-6",
        BlankRule::Minimized,
        Encoding::Byte,
    );
    let h = PdbHeuristic::new(&set, true).unwrap();
    let instances = crate::support::korf24();
    for (number, nodes) in [
        (38usize, 38_173_507u64),
        (40, 65_099_578),
        (25, 292_174_444),
    ] {
        let instance = &instances[number - 1];
        assert_eq!(instance.published_nodes, Some(nodes));
        let start = PuzzleState::parse(set.board(), instance.state).unwrap();
        let r = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        assert_eq!(r.moves.len(), instance.optimal, "#{number} length");
        assert_eq!(r.generated, nodes, "#{number} nodes");
    }
}
