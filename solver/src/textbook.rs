//! The textbook's inadmissible 8-puzzle heuristic: Nilsson's P + 3S.
//!
//! Nilsson (*Problem-Solving Methods in Artificial Intelligence*, 1971; *Principles of
//! Artificial Intelligence*, 1980, §2.4) scores an 8-puzzle state as `H = P + 3S`: `P` is
//! the Manhattan distance of the tiles, and `S` the sequence score, taken by walking the eight
//! border cells clockwise: each tile on a border cell scores 2 if the cell clockwise after it
//! does not hold the tile that follows it clockwise in the goal, 0 if it does, and a tile on
//! the centre cell scores 1. Nilsson's goal has the blank in the centre and the tiles
//! 1..8 clockwise around it; for tilepdb's goals (blank on a corner, a tile in the centre) the
//! same rule is read off the goal: the tile that "follows" a tile is what the goal has on the
//! border cell clockwise after that tile's goal cell (possibly the blank), a tile whose goal is
//! the centre has no follower on the border (it scores 2 there), and the centre scores 1 when
//! it holds a tile other than the goal's centre tile. The goal scores 0.
//!
//! **P + 3S is not admissible** (it overestimates: one move from the goal it can give 7), so a
//! search with it finds solutions that may not be optimal. It also breaks the
//! [`Heuristic`] trait's promise of an admissible estimate; the solver says so in its output.
//!
//! ```
//! use tilepdb_common::{Board, Goal, PuzzleState};
//! use tilepdb_solver::heuristic::Heuristic;
//! use tilepdb_solver::textbook::PPlus3S;
//! let board: Board = "3x3".parse().unwrap();
//! // Nilsson's goal and a state of the textbook's example (Heyes-Jones's A* tutorial): 17.
//! let goal = PuzzleState::parse(board, "1 2 3 8 0 4 7 6 5").unwrap();
//! let h = PPlus3S::for_goal_state(&goal).unwrap();
//! let state = PuzzleState::parse(board, "0 1 3 8 2 4 7 6 5").unwrap();
//! assert_eq!(h.evaluate(&state.cells()).unwrap().0, 17);
//! ```

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless,
    reason = "tiles and cells (below 25) move between u8 and usize"
)]

use tilepdb_common::{Board, Goal, PuzzleState};

use crate::error::{Error, Result};
use crate::heuristic::Heuristic;

/// The border cells of a 3x3 board in clockwise order from the top-left corner.
const CLOCKWISE: [usize; 8] = [0, 1, 2, 5, 8, 7, 6, 3];
/// The centre cell of a 3x3 board.
const CENTRE: usize = 4;

/// Nilsson's `P + 3S` on the 3x3 board (not admissible: see the module documentation).
pub struct PPlus3S {
    board: Board,
    /// `goal_cell[tile]`.
    goal_cell: [usize; 9],
    /// `follower[tile]`: the tile (or blank, 0) that follows `tile` clockwise in the goal;
    /// `None` for the tile whose goal is the centre (and for the blank).
    follower: [Option<u8>; 9],
    /// What the goal holds on the centre cell.
    centre: u8,
}

impl PPlus3S {
    /// P + 3S towards one of tilepdb's goals; the board must be 3x3.
    pub fn new(board: Board, goal: Goal) -> Result<PPlus3S> {
        PPlus3S::for_goal_state(&PuzzleState::goal(board, goal))
    }

    /// P + 3S towards any arrangement of the 3x3 board, such as Nilsson's own goal
    /// `1 2 3 / 8 _ 4 / 7 6 5`.
    pub fn for_goal_state(goal: &PuzzleState) -> Result<PPlus3S> {
        let board = goal.board();
        if board.width() != 3 || board.height() != 3 {
            return Err(Error::Unsupported(format!(
                "P+3S (Nilsson's sequence score) is defined for the 3x3 board, not {board}"
            )));
        }
        let tiles = goal.tiles();
        let mut goal_cell = [0usize; 9];
        for (cell, &tile) in tiles.iter().enumerate() {
            goal_cell[tile as usize] = cell;
        }
        let mut follower = [None; 9];
        for (i, &cell) in CLOCKWISE.iter().enumerate() {
            let tile = tiles[cell];
            if tile != 0 {
                follower[tile as usize] = Some(tiles[CLOCKWISE[(i + 1) % 8]]);
            }
        }
        Ok(PPlus3S {
            board,
            goal_cell,
            follower,
            centre: tiles[CENTRE],
        })
    }

    /// The sequence score `S` of a state given as the cell of each tile.
    pub fn sequence_score(&self, cells: &[u8]) -> u32 {
        let mut on = [0u8; 9];
        for (tile, &cell) in cells.iter().enumerate() {
            on[cell as usize] = tile as u8;
        }
        let mut score = 0;
        let centre = on[CENTRE];
        if centre != 0 && centre != self.centre {
            score += 1;
        }
        for (i, &cell) in CLOCKWISE.iter().enumerate() {
            let tile = on[cell];
            if tile == 0 {
                continue;
            }
            let next = on[CLOCKWISE[(i + 1) % 8]];
            if self.follower[tile as usize] != Some(next) {
                score += 2;
            }
        }
        score
    }

    /// `P`: the Manhattan distance of the tiles.
    pub fn manhattan(&self, cells: &[u8]) -> u32 {
        (1..cells.len())
            .map(|t| self.board.distance(cells[t] as usize, self.goal_cell[t]))
            .sum()
    }

    fn value(&self, cells: &[u8]) -> u32 {
        self.manhattan(cells) + 3 * self.sequence_score(cells)
    }
}

impl Heuristic for PPlus3S {
    type Memo = ();
    type Started = ();

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, ())> {
        if cells.len() != 9 {
            return Err(Error::Mismatch {
                tables: "P+3S on 3x3".into(),
                state: format!("{} cells", cells.len()),
            });
        }
        Ok((self.value(cells), ()))
    }

    fn finish_move(&self, cells: &[u8], _: usize, _: usize, (): &(), (): &(), (): &mut ()) -> u32 {
        self.value(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(goal: Goal, state: &str) -> (u32, u32) {
        let board: Board = "3x3".parse().unwrap();
        let h = PPlus3S::new(board, goal).unwrap();
        let cells = PuzzleState::parse(board, state).unwrap().cells();
        (h.manhattan(&cells), h.sequence_score(&cells))
    }

    #[test]
    fn the_goals_score_zero() {
        assert_eq!(value(Goal::BlankFirst, "0 1 2 3 4 5 6 7 8"), (0, 0));
        assert_eq!(value(Goal::BlankLast, "1 2 3 4 5 6 7 8 0"), (0, 0));
    }

    #[test]
    fn worked_states_blank_first() {
        // Goal 0 1 2 / 3 4 5 / 6 7 8; clockwise border cells 0 1 2 5 8 7 6 3, so the
        // followers are 1->2, 2->5, 5->8, 8->7, 7->6, 6->3, 3->blank; tile 4 (centre) has none.
        //
        // 1 0 2 / 3 4 5 / 6 7 8 (tile 1 slid left): P = 1. Border walk: cell 0 holds 1, next
        // cell 1 holds the blank, not 2: +2; cell 2 holds 2, next 5: ok; 5->8, 8->7, 7->6,
        // 6->3 ok; cell 3 holds 3, next cell 0 holds 1, not the blank: +2. Centre 4: ok.
        // S = 4, P + 3S = 13.
        assert_eq!(value(Goal::BlankFirst, "1 0 2 3 4 5 6 7 8"), (1, 4));
        // 3 1 2 / 0 4 5 / 6 7 8 (tile 3 slid up): P = 1. Cell 0 holds 3, next cell 1 holds 1,
        // 3's follower is the blank: +2; 1 -> 2 ok; 2->5, 5->8, 8->7, 7->6 ok; cell 6 holds 6,
        // next cell 3 holds the blank, not 3: +2. S = 4.
        assert_eq!(value(Goal::BlankFirst, "3 1 2 0 4 5 6 7 8"), (1, 4));
        // 4 1 2 / 3 0 5 / 6 7 8: tile 4 on a corner has no follower: +2 (P = 2); 1->2, 2->5,
        // 5->8, 8->7, 7->6, 6->3 ok; 3 -> cell 0 holds 4, not the blank: +2; the blank in the
        // centre scores nothing. S = 4.
        assert_eq!(value(Goal::BlankFirst, "4 1 2 3 0 5 6 7 8"), (2, 4));
        // 0 1 2 / 3 5 4 / 6 7 8: 5 in the centre: +1; P = 2; border: 1->2 ok; 2 -> cell 5
        // holds 4, not 5: +2; cell 5 holds 4 (no follower): +2; 8->7, 7->6, 6->3, 3->blank ok.
        // S = 5.
        assert_eq!(value(Goal::BlankFirst, "0 1 2 3 5 4 6 7 8"), (2, 5));
    }

    #[test]
    fn worked_states_blank_last() {
        // Goal 1 2 3 / 4 5 6 / 7 8 0: followers 1->2, 2->3, 3->6, 6->blank, 8->7, 7->4, 4->1.
        // 1 2 3 / 4 5 6 / 7 0 8 (tile 8 slid right): P = 1; 1->2, 2->3, 3->6 ok; cell 5 holds 6,
        // next cell 8 holds 8, not the blank: +2; cell 8 holds 8, next cell 7 holds the blank,
        // not 7: +2; cell 6 holds 7, next cell 3 holds 4: ok; 4 -> 1 ok. S = 4.
        assert_eq!(value(Goal::BlankLast, "1 2 3 4 5 6 7 0 8"), (1, 4));
        // 8 7 6 / 5 4 3 / 2 1 0: tiles 1..8 on cells 7, 6, 5, 4, 3, 2, 1, 0, their goals
        // 0..7: distances 3, 3, 1, 1, 1, 1, 3, 3, P = 16. Border walk: 8 -> 7 (its follower):
        // ok; 7 -> 6, follower 4: +2; 6 -> 3, follower the blank: +2; 3 -> the blank,
        // follower 6: +2; 1 -> 2 ok; 2 -> 5, follower 3: +2; 5 (goal: the centre) on a border
        // cell: +2. The centre holds 4, the goal's centre is 5: +1. S = 11.
        assert_eq!(value(Goal::BlankLast, "8 7 6 5 4 3 2 1 0"), (16, 11));
    }

    #[test]
    fn it_overestimates_next_to_the_goal() {
        // One move from the goal, P + 3S = 13 > 1: not admissible.
        let board: Board = "3x3".parse().unwrap();
        let h = PPlus3S::new(board, Goal::BlankFirst).unwrap();
        let state = PuzzleState::parse(board, "1 0 2 3 4 5 6 7 8").unwrap();
        assert_eq!(h.evaluate(&state.cells()).unwrap().0, 13);
    }

    #[test]
    fn other_boards_are_refused() {
        let board: Board = "4x4".parse().unwrap();
        let err = PPlus3S::new(board, Goal::BlankFirst).err().unwrap();
        assert!(err.to_string().contains("3x3"), "{err}");
    }
}
