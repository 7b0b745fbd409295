//! The incremental linear conflict gives the values of the textbook's definition, computed
//! naively from scratch (the earlier implementation, kept here as the reference): on uniformly
//! random states of several boards and both goals, from scratch and along random walks of
//! moves evaluated incrementally from the parent's memo.

#![allow(
    clippy::cast_possible_truncation,
    reason = "tiles and cells of at most 25 cells"
)]

use tilepdb_common::{Board, Goal};
use tilepdb_solver::generate::Generator;
use tilepdb_solver::heuristic::{Heuristic, LinearConflict};

/// Manhattan distance plus twice, per row and column, the tiles whose goal lies in the line
/// minus the longest run of them in goal order (Hansson, Mayer & Yung), from scratch.
fn naive(board: Board, goal: Goal, cells: &[u8]) -> u32 {
    let (w, h, n) = (board.width(), board.height(), board.cells());
    let goal_cell = |t: usize| goal.cell_of(t, n);
    let mut tiles_on = vec![0usize; n];
    let mut manhattan = 0;
    for (t, &c) in cells.iter().enumerate() {
        tiles_on[c as usize] = t;
        if t != 0 {
            manhattan += board.distance(c as usize, goal_cell(t));
        }
    }
    let longest = |keys: &[usize]| {
        let mut best = vec![1usize; keys.len()];
        for i in 0..keys.len() {
            for j in 0..i {
                if keys[j] < keys[i] {
                    best[i] = best[i].max(best[j] + 1);
                }
            }
        }
        best.into_iter().max().unwrap_or(0)
    };
    let mut extra = 0;
    for row in 0..h {
        let keys: Vec<usize> = (0..w)
            .map(|col| tiles_on[row * w + col])
            .filter(|&t| t != 0 && goal_cell(t) / w == row)
            .map(|t| goal_cell(t) % w)
            .collect();
        extra += keys.len() - longest(&keys);
    }
    for col in 0..w {
        let keys: Vec<usize> = (0..h)
            .map(|row| tiles_on[row * w + col])
            .filter(|&t| t != 0 && goal_cell(t) % w == col)
            .map(|t| goal_cell(t) / w)
            .collect();
        extra += keys.len() - longest(&keys);
    }
    manhattan + 2 * extra as u32
}

#[test]
fn incremental_linear_conflict_equals_the_naive_one() {
    // xorshift64: the moves of the walks.
    let mut seed = 0x2323_2323_2323_2323u64;
    let mut random = move |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below as u64) as usize
    };
    let mut checked = 0;
    // 7x2 and 2x7: lines of 7 cells, too long to table (counted directly).
    for board in ["3x3", "4x4", "5x5", "3x4", "4x3", "2x5", "7x2", "2x7"] {
        let board: Board = board.parse().unwrap();
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            let h = LinearConflict::new(board, goal);
            let mut generator = Generator::new(board, goal, 5);
            for _ in 0..40 {
                let mut cells = generator.random_state().cells();
                let (mut value, mut memo) = h.evaluate(&cells).unwrap();
                assert_eq!(
                    value,
                    naive(board, goal, &cells),
                    "{board} {goal} {cells:?}"
                );
                // A walk of moves, each child evaluated from its parent's memo.
                for _ in 0..200 {
                    let blank = cells[0] as usize;
                    let next = board.neighbours(blank);
                    let choices: Vec<usize> = (0..board.cells())
                        .filter(|&c| next & (1 << c) != 0)
                        .collect();
                    let to_cell = choices[random(choices.len())];
                    let tile = cells.iter().position(|&c| c as usize == to_cell).unwrap();
                    cells[tile] = blank as u8;
                    cells[0] = to_cell as u8;
                    (value, memo) = h.after_move(&cells, tile, to_cell, &memo);
                    assert_eq!(
                        value,
                        naive(board, goal, &cells),
                        "{board} {goal} after tile {tile} moved: {cells:?}"
                    );
                    assert_eq!(value, h.evaluate(&cells).unwrap().0);
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 8 * 2 * 40 * 200);
}
