//! Heuristics computed from each tile's cell alone: misplaced tiles and the Manhattan distance.

use tilepdb_common::{Board, Goal, MAX_CELLS};

use super::Heuristic;
use crate::error::Result;

/// `distance[tile][cell]`: Manhattan distance of `tile` on `cell` to its goal cell.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a distance on a board of at most 25 cells is below 50, so it fits in a byte"
)]
fn distance_table(board: Board, goal: Goal) -> Vec<[u8; MAX_CELLS]> {
    let n = board.cells();
    (0..n)
        .map(|tile| {
            let mut row = [0u8; MAX_CELLS];
            for (cell, d) in row.iter_mut().enumerate().take(n) {
                *d = board.distance(cell, goal.cell_of(tile, n)) as u8;
            }
            row
        })
        .collect()
}

/// Number of tiles (not the blank) off their goal cell.
pub struct Misplaced {
    goal_cells: Vec<u8>,
}

impl Misplaced {
    /// The heuristic for `board` and `goal`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles, cells and table numbers are below 25, so they fit in a byte"
    )]
    pub fn new(board: Board, goal: Goal) -> Misplaced {
        let n = board.cells();
        Misplaced {
            goal_cells: (0..n).map(|t| goal.cell_of(t, n) as u8).collect(),
        }
    }
}

impl Heuristic for Misplaced {
    type Memo = u32;
    type Started = ();

    #[expect(
        clippy::cast_possible_truncation,
        reason = "a count of at most 25 tiles fits in u32"
    )]
    fn evaluate(&self, cells: &[u8]) -> Result<(u32, u32)> {
        let h = (1..cells.len())
            .filter(|&t| cells[t] != self.goal_cells[t])
            .count() as u32;
        Ok((h, h))
    }

    #[inline]
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        (): &(),
        parent: &u32,
        memo: &mut u32,
    ) -> u32 {
        let goal = self.goal_cells[tile] as usize;
        *memo = parent + u32::from(from == goal) - u32::from(cells[tile] as usize == goal);
        *memo
    }
}

/// Sum of the Manhattan distances of the tiles to their goal cells.
pub struct Manhattan {
    distance: Vec<[u8; MAX_CELLS]>,
}

impl Manhattan {
    /// The heuristic for `board` and `goal`.
    pub fn new(board: Board, goal: Goal) -> Manhattan {
        Manhattan {
            distance: distance_table(board, goal),
        }
    }
}

impl Heuristic for Manhattan {
    type Memo = u32;
    type Started = ();

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, u32)> {
        let h = (1..cells.len())
            .map(|t| u32::from(self.distance[t][cells[t] as usize]))
            .sum();
        Ok((h, h))
    }

    #[inline]
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        (): &(),
        parent: &u32,
        memo: &mut u32,
    ) -> u32 {
        let d = &self.distance[tile];
        *memo = parent + u32::from(d[cells[tile] as usize]) - u32::from(d[from]);
        *memo
    }
}
