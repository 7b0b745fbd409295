//! Exact oracles: a pattern holding every tile of a small board is the exact distance, so its
//! minimized table's histogram equals the board's complete-BFS distribution
//! (`data/stp-bfs-distributions.txt`, from `shared/data`).

use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};

/// The distribution of `board` (start at the corner) from the data file.
fn distribution(board: &str) -> Vec<u64> {
    let text = include_str!("../../../data/stp-bfs-distributions.txt");
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{board} start=corner ")))
        .unwrap_or_else(|| panic!("no distribution for {board}"));
    line.split("= ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

fn full_pattern_histogram(board: &str, goal: Goal, threads: usize) -> (Vec<u64>, u64, u64) {
    let b: Board = board.parse().unwrap();
    let tiles = (1..u8::try_from(b.cells()).expect("a board has at most 25 cells")).collect();
    let space = StateSpace::new(
        b,
        goal,
        Pattern::new(b, tiles).unwrap(),
        BlankRule::Minimized,
    )
    .unwrap();
    let options = BuildOptions {
        threads,
        ..BuildOptions::default()
    };
    let table = build_table(&space, &options, &()).unwrap();
    (table.histogram, table.unreached, space.placements())
}

#[test]
fn complete_bfs_distributions_of_small_boards() {
    for board in ["2x2", "3x2", "4x2", "3x3"] {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            let (histogram, unreached, placements) = full_pattern_histogram(board, goal, 2);
            assert_eq!(histogram, distribution(board), "{board} {goal}");
            assert_eq!(
                unreached,
                placements / 2,
                "{board}: the other parity is unreachable"
            );
        }
    }
}

#[test]
fn complete_bfs_distribution_of_2x4() {
    // 2x4 (2 wide, 4 high) is the transpose of 4x2: the same distribution.
    let (histogram, _, _) = full_pattern_histogram("2x4", Goal::BlankFirst, 1);
    assert_eq!(histogram, distribution("4x2"));
}
