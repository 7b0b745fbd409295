//! Counting the nodes of a brute-force search under a machine: the tree of move strings from a
//! start cell, to a depth, without a heuristic.

use super::{FORBIDDEN, MovePruning};
use crate::error::{Error, Result};

/// The number of nodes at each depth `0..=depth` of the brute-force tree from a state whose
/// blank is on `start_cell`, each node a string of moves legal on the machine's board that the
/// machine does not cut (the tiles do not matter: only the blank's cell and the machine's
/// state do). Computed depth by depth over (cell, machine state) pairs, so the depth costs
/// little; counts are `f64` (exact below 2^53). The ratio of successive counts tends to the
/// asymptotic branching factor.
///
/// ```
/// use tilepdb_common::Board;
/// use tilepdb_solver::move_pruning::{MovePruning, nodes_by_depth};
/// let board: Board = "3x3".parse().unwrap();
/// let counts = nodes_by_depth(&MovePruning::undo_only(board), 4, 2).unwrap();
/// // From the centre: 4 edge cells, then from each 2 (3 neighbours, one the way back).
/// assert_eq!(counts, vec![1.0, 4.0, 8.0]);
/// ```
pub fn nodes_by_depth(machine: &MovePruning, start_cell: usize, depth: usize) -> Result<Vec<f64>> {
    let board = machine.board();
    let cells = board.cells();
    if start_cell >= cells {
        return Err(Error::Unsupported(format!(
            "the {board} board has cells 0 to {}, not {start_cell}",
            cells - 1
        )));
    }
    let states = machine.states() as usize;
    let neighbours: Vec<[Option<usize>; 4]> = (0..cells)
        .map(|cell| {
            let (r, c) = board.row_col(cell);
            let (w, h) = (board.width(), board.height());
            [
                (r > 0).then(|| cell - w),
                (c > 0).then(|| cell - 1),
                (c + 1 < w).then(|| cell + 1),
                (r + 1 < h).then(|| cell + w),
            ]
        })
        .collect();
    let table = machine.transitions();
    let mut now = vec![0f64; cells * states];
    now[start_cell * states] = 1.0;
    let mut counts = vec![1.0];
    for _ in 0..depth {
        let mut next = vec![0f64; cells * states];
        for (cell, moves) in neighbours.iter().enumerate() {
            for state in 0..states {
                let n = now[cell * states + state];
                if n == 0.0 {
                    continue;
                }
                for (d, to) in moves.iter().enumerate() {
                    let t = table[4 * state + d];
                    if let Some(to) = to.filter(|_| t != FORBIDDEN) {
                        next[to * states + t as usize] += n;
                    }
                }
            }
        }
        counts.push(next.iter().sum());
        now = next;
    }
    Ok(counts)
}
