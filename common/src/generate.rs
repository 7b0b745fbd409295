//! Instance generators: random walks from the goal and uniformly random solvable states.
//!
//! Both draw from a [`ChaCha8Rng`] seeded with [`Generator::new`]'s seed, and turn its 64-bit
//! words into choices with their own rejection sampling (not `rand`'s distributions, whose
//! algorithms may change between releases), so a seed gives the same states on every machine
//! and with every later version of this crate.
//!
//! ```
//! use tilepdb_common::{Board, Goal};
//! use tilepdb_common::generate::Generator;
//! let board: Board = "4x4".parse().unwrap();
//! let mut a = Generator::new(board, Goal::BlankFirst, 7);
//! let mut b = Generator::new(board, Goal::BlankFirst, 7);
//! let walk = a.random_walk(30);
//! assert_eq!(walk, b.random_walk(30));
//! assert!(walk.is_solvable(Goal::BlankFirst));
//! assert!(a.random_state().is_solvable(Goal::BlankFirst));
//! ```

use crate::{Board, Goal, PuzzleState};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// The name of the generators' random stream, for the header of generated files.
pub const STREAM: &str = "ChaCha8 (rand_chacha 0.9), seed_from_u64";

/// A seeded source of puzzle states on one board, for one goal.
pub struct Generator {
    board: Board,
    goal: Goal,
    rng: ChaCha8Rng,
}

impl Generator {
    /// A generator whose states depend only on `board`, `goal` and `seed`.
    pub fn new(board: Board, goal: Goal, seed: u64) -> Generator {
        Generator {
            board,
            goal,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A number drawn uniformly from `0..bound` (`bound` > 0), by rejection.
    fn below(&mut self, bound: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % bound + 1) % bound;
        loop {
            let x = self.rng.next_u64();
            if x <= zone {
                return x % bound;
            }
        }
    }

    /// The state after `length` random moves of the blank from the goal, never undoing the
    /// move just made (every cell of a board at least 2x2 has two neighbours, so a move is
    /// always left). Its distance to the goal is at most `length`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the draw is below `count`, a usize"
    )]
    pub fn random_walk(&mut self, length: usize) -> PuzzleState {
        let board = self.board;
        let mut tiles = PuzzleState::goal(board, self.goal).tiles().to_vec();
        let mut blank = tiles.iter().position(|&t| t == 0).expect("a blank");
        let mut previous = usize::MAX;
        for _ in 0..length {
            let mut options = [0usize; 4];
            let mut count = 0;
            let mut neighbours = board.neighbours(blank);
            while neighbours != 0 {
                let cell = neighbours.trailing_zeros() as usize;
                neighbours &= neighbours - 1;
                if cell != previous {
                    options[count] = cell;
                    count += 1;
                }
            }
            let next = options[self.below(count as u64) as usize];
            tiles.swap(blank, next);
            previous = blank;
            blank = next;
        }
        PuzzleState::new(board, tiles).expect("moves keep a permutation")
    }

    /// A state drawn uniformly from those that reach the goal: a uniform permutation
    /// (Fisher–Yates), and if it has the wrong parity, the tiles on the first two cells
    /// without the blank swapped — a one-to-one map from the unsolvable permutations onto the
    /// solvable ones, so every solvable state has the same chance.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a board has at most 25 cells; the draw is below `i + 1`, a usize"
    )]
    pub fn random_state(&mut self) -> PuzzleState {
        let n = self.board.cells();
        let mut tiles: Vec<u8> = (0..n as u8).collect();
        for i in (1..n).rev() {
            let j = self.below(i as u64 + 1) as usize;
            tiles.swap(i, j);
        }
        let mut state = PuzzleState::new(self.board, tiles).expect("a permutation");
        if !state.is_solvable(self.goal) {
            let mut tiles = state.tiles().to_vec();
            let mut cells = (0..n).filter(|&c| tiles[c] != 0);
            let (a, b) = (cells.next().expect("a tile"), cells.next().expect("a tile"));
            tiles.swap(a, b);
            state = PuzzleState::new(self.board, tiles).expect("a permutation");
        }
        state
    }
}

/// The first `count` states of [`Generator::random_state`] for `seed`: the sample every mean
/// over "random states" (the bench's, `inspect`'s) is taken over, so equal seeds give equal
/// samples.
pub fn random_states(board: Board, goal: Goal, seed: u64, count: usize) -> Vec<PuzzleState> {
    let mut generator = Generator::new(board, goal, seed);
    (0..count).map(|_| generator.random_state()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::cast_possible_truncation, reason = "the draw is below 5")]
    fn below_stays_in_range_and_hits_every_value() {
        let mut g = Generator::new("3x3".parse().unwrap(), Goal::BlankFirst, 1);
        let mut seen = [0u32; 5];
        for _ in 0..1000 {
            seen[g.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 0), "{seen:?}");
    }

    #[test]
    fn random_states_on_a_2x2_board_cover_its_twelve_solvable_states() {
        // 4! / 2 = 12 states reach each goal on a 2x2 board.
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            let mut g = Generator::new("2x2".parse().unwrap(), goal, 3);
            let mut seen = std::collections::HashMap::new();
            for _ in 0..1200 {
                let s = g.random_state();
                assert!(s.is_solvable(goal));
                *seen.entry(s.tiles().to_vec()).or_insert(0u32) += 1;
            }
            assert_eq!(seen.len(), 12);
            // Each expected 100 times; far outside 50..150 would mean a biased draw.
            assert!(seen.values().all(|&c| (50..150).contains(&c)), "{seen:?}");
        }
    }

    #[test]
    fn random_states_are_the_generators_first_states() {
        let board: Board = "3x3".parse().unwrap();
        let mut g = Generator::new(board, Goal::BlankLast, 11);
        let first: Vec<PuzzleState> = (0..5).map(|_| g.random_state()).collect();
        assert_eq!(random_states(board, Goal::BlankLast, 11, 5), first);
        assert_ne!(random_states(board, Goal::BlankLast, 12, 5), first);
    }

    #[test]
    fn a_walk_of_length_zero_is_the_goal() {
        let board: Board = "3x4".parse().unwrap();
        let mut g = Generator::new(board, Goal::BlankLast, 9);
        assert_eq!(g.random_walk(0), PuzzleState::goal(board, Goal::BlankLast));
    }
}
