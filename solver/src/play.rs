//! The puzzle as a game: a position the player slides tiles on, and hints from an optimal
//! search (the terminal front end is `tilepdb-solve play`).
//!
//! ```
//! use tilepdb_common::{Board, Goal, PuzzleState};
//! use tilepdb_solver::heuristic::Manhattan;
//! use tilepdb_solver::play::{Game, Slide};
//! let board: Board = "3x3".parse().unwrap();
//! let start = PuzzleState::parse(board, "1 2 0 3 4 5 6 7 8").unwrap();
//! let mut game = Game::new(start, Goal::BlankFirst).unwrap();
//! let hint = game.hint(&Manhattan::new(board, Goal::BlankFirst)).unwrap().unwrap();
//! assert_eq!((hint.tile, hint.slide, hint.distance), (2, Slide::Right, 2));
//! assert!(game.slide(Slide::Right));
//! assert!(game.slide(Slide::Right));
//! assert!(game.is_solved());
//! ```

use tilepdb_common::{Goal, PuzzleState};

use crate::error::Result;
use crate::heuristic::Heuristic;
use crate::search::{Limits, Outcome, ida_star};

/// The direction a tile slides (onto the blank).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slide {
    /// Upwards.
    Up,
    /// Downwards.
    Down,
    /// To the left.
    Left,
    /// To the right.
    Right,
}

impl Slide {
    /// The direction's name, in lower case.
    pub fn name(self) -> &'static str {
        match self {
            Slide::Up => "up",
            Slide::Down => "down",
            Slide::Left => "left",
            Slide::Right => "right",
        }
    }
}

/// What the optimal search advises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hint {
    /// The tile to slide and the way it goes.
    pub tile: u8,
    /// The way it slides.
    pub slide: Slide,
    /// Moves left to the goal, optimally.
    pub distance: usize,
}

/// A position being played.
pub struct Game {
    state: PuzzleState,
    goal: Goal,
    moves: usize,
}

impl Game {
    /// A game from `start` (which must reach `goal`).
    pub fn new(start: PuzzleState, goal: Goal) -> Result<Game> {
        start.check_solvable(goal)?;
        Ok(Game {
            state: start,
            goal,
            moves: 0,
        })
    }

    /// The position.
    pub fn state(&self) -> &PuzzleState {
        &self.state
    }

    /// The goal.
    pub fn goal(&self) -> Goal {
        self.goal
    }

    /// Moves the player made.
    pub fn moves(&self) -> usize {
        self.moves
    }

    /// Whether the position is the goal.
    pub fn is_solved(&self) -> bool {
        self.state == PuzzleState::goal(self.state.board(), self.goal)
    }

    /// The cell of the tile that would slide in `slide`'s direction onto the blank.
    fn source(&self, slide: Slide) -> Option<usize> {
        let board = self.state.board();
        let (r, c) = board.row_col(self.state.blank());
        let (w, h) = (board.width(), board.height());
        let (r, c) = match slide {
            // The tile below the blank slides up.
            Slide::Up if r + 1 < h => (r + 1, c),
            Slide::Down if r > 0 => (r - 1, c),
            Slide::Left if c + 1 < w => (r, c + 1),
            Slide::Right if c > 0 => (r, c - 1),
            _ => return None,
        };
        Some(board.cell(r, c))
    }

    /// Slides the tile next to the blank in direction `slide`; false (nothing changes) when no
    /// tile can go that way.
    pub fn slide(&mut self, slide: Slide) -> bool {
        let Some(from) = self.source(slide) else {
            return false;
        };
        let mut tiles = self.state.tiles().to_vec();
        tiles.swap(from, self.state.blank());
        self.state =
            PuzzleState::new(self.state.board(), tiles).expect("a move keeps a permutation");
        self.moves += 1;
        true
    }

    /// The first move of an optimal solution and the optimal distance, by IDA* with `h`
    /// (admissible heuristics only give optimal hints); `None` when already solved or when the
    /// search ran out of `limits`.
    pub fn hint_within<H: Heuristic>(&self, h: &H, limits: &Limits) -> Result<Option<Hint>> {
        if self.is_solved() {
            return Ok(None);
        }
        let result = ida_star(&self.state, self.goal, h, limits)?;
        if result.outcome != Outcome::Solved {
            return Ok(None);
        }
        let tile = result.moves[0];
        let slide = [Slide::Up, Slide::Down, Slide::Left, Slide::Right]
            .into_iter()
            .find(|&s| {
                self.source(s)
                    .is_some_and(|c| self.state.tiles()[c] == tile)
            })
            .expect("the first move slides a neighbour of the blank");
        Ok(Some(Hint {
            tile,
            slide,
            distance: result.moves.len(),
        }))
    }

    /// [`Game::hint_within`] without budgets.
    pub fn hint<H: Heuristic>(&self, h: &H) -> Result<Option<Hint>> {
        self.hint_within(h, &Limits::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::Board;

    #[test]
    fn slides_at_the_edges_do_nothing() {
        let board: Board = "3x3".parse().unwrap();
        let mut game =
            Game::new(PuzzleState::goal(board, Goal::BlankFirst), Goal::BlankFirst).unwrap();
        assert!(game.is_solved());
        // The blank is in the top-left corner: nothing above it to slide down, nothing left of it.
        assert!(!game.slide(Slide::Down));
        assert!(!game.slide(Slide::Right));
        assert_eq!(game.moves(), 0);
        assert!(game.slide(Slide::Left));
        assert_eq!(game.state().tiles(), &[1, 0, 2, 3, 4, 5, 6, 7, 8]);
        assert!(game.slide(Slide::Up));
        assert_eq!(game.state().tiles(), &[1, 4, 2, 3, 0, 5, 6, 7, 8]);
        assert_eq!(game.moves(), 2);
        assert!(!game.is_solved());
    }

    #[test]
    fn unsolvable_starts_are_refused() {
        let board: Board = "3x3".parse().unwrap();
        let s = PuzzleState::parse(board, "0 2 1 3 4 5 6 7 8").unwrap();
        assert!(Game::new(s, Goal::BlankFirst).is_err());
    }
}
