//! A build's output does not depend on how it is run (DESIGN section 5): the same table bytes,
//! layer count, histogram and expansion counts with 1, 2 and 4 worker threads and with tasks
//! of 1, 7 and 1000 ranks or the default size, for each blank rule and both goals.

use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, BuiltTable, build_table};
use tilepdb_coordinator::engine::StateIndex;

const THREADS: [usize; 3] = [1, 2, 4];
const TASK_RANKS: [Option<u64>; 4] = [Some(1), Some(7), Some(1000), None];

fn space(board: &str, goal: Goal, tiles: &[u8], rule: BlankRule) -> StateSpace {
    let board: Board = board.parse().unwrap();
    StateSpace::new(
        board,
        goal,
        Pattern::new(board, tiles.to_vec()).unwrap(),
        rule,
    )
    .unwrap()
}

fn build(space: &StateSpace, threads: usize, task_ranks: Option<u64>) -> BuiltTable {
    let options = BuildOptions {
        threads,
        task_ranks,
        memory_limit: None,
        ..BuildOptions::default()
    };
    build_table(space, &options, &()).unwrap()
}

/// Builds `space` with every thread count and task size and compares each run with the first.
fn assert_deterministic(space: &StateSpace) {
    let what = format!(
        "{} {} {} {}",
        space.board(),
        space.goal(),
        space.rule(),
        space.pattern()
    );
    // The task sizes must really cut the layer differently, or the test proves nothing.
    let index = StateIndex::region(space).unwrap();
    let cuts: Vec<usize> = TASK_RANKS
        .iter()
        // The default size for one thread: 16 tasks.
        .map(|&t| index.cut_units(space, t, 16).len())
        .collect();
    // The fixed sizes must cut the layer into more tasks the smaller they are.
    assert!(cuts[0] > cuts[1] && cuts[1] > cuts[2], "{what}: {cuts:?}");

    let reference = build(space, 1, None);
    assert!(reference.histogram.len() > 3, "{what}: a trivial table");
    for threads in THREADS {
        for task_ranks in TASK_RANKS {
            let run = format!("{what} with {threads} threads, tasks of {task_ranks:?} ranks");
            let table = build(space, threads, task_ranks);
            let values = table.values.bytes().expect("a byte per entry");
            let expected = reference.values.bytes().expect("a byte per entry");
            if let Some(i) = (0..expected.len()).find(|&i| values[i] != expected[i]) {
                panic!(
                    "{run}: entry {i} is {} instead of {}",
                    values[i], expected[i]
                );
            }
            assert_eq!(values.len(), expected.len(), "{run}");
            assert_eq!(table.layers, reference.layers, "{run}");
            assert_eq!(table.histogram, reference.histogram, "{run}");
            assert_eq!(table.unreached, reference.unreached, "{run}");
            assert_eq!(table.expanded, reference.expanded, "{run}");
            assert_eq!(table.generated, reference.generated, "{run}");
        }
    }
}

#[test]
fn minimized_4x4_five_tiles() {
    assert_deterministic(&space(
        "4x4",
        Goal::BlankFirst,
        &[1, 2, 3, 4, 5],
        BlankRule::Minimized,
    ));
}

#[test]
fn aware_3x4() {
    for goal in [Goal::BlankFirst, Goal::BlankLast] {
        assert_deterministic(&space("3x4", goal, &[1, 2, 3, 4, 5], BlankRule::Aware));
    }
}

#[test]
fn ignored_4x4() {
    assert_deterministic(&space(
        "4x4",
        Goal::BlankLast,
        &[9, 1, 14, 6, 3],
        BlankRule::Ignored,
    ));
}

#[test]
fn minimized_every_tile_of_3x3() {
    // Half the placements are unreached (parity): they stay unreached in every run.
    assert_deterministic(&space(
        "3x3",
        Goal::BlankLast,
        &[1, 2, 3, 4, 5, 6, 7, 8],
        BlankRule::Minimized,
    ));
}
