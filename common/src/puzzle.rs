//! Puzzle states: the tile on each cell, row-major, 0 for the blank.
//!
//! ```
//! use tilepdb_common::{Board, Goal, PuzzleState};
//! let board: Board = "3x3".parse().unwrap();
//! // One move from the blank-first goal: tile 1 slid left onto the blank.
//! let state = PuzzleState::parse(board, "1 0 2 3 4 5 6 7 8").unwrap();
//! assert!(state.is_solvable(Goal::BlankFirst));
//! assert_eq!(state.manhattan(Goal::BlankFirst, &[1, 2, 3]), 1);
//! assert_eq!(state.blank(), 1);
//! ```

use std::fmt;

use crate::board::{Board, Goal};
use crate::error::{Error, Result};

/// A full puzzle state: `tiles[cell]` is the tile on `cell`, 0 for the blank.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PuzzleState {
    board: Board,
    tiles: Vec<u8>,
}

impl PuzzleState {
    /// A state from the tile on each cell; checks that it is a permutation of `0..n`.
    pub fn new(board: Board, tiles: Vec<u8>) -> Result<PuzzleState> {
        let n = board.cells();
        if tiles.len() != n {
            return Err(Error::State(format!(
                "{} numbers given, a {board} board has {n} cells",
                tiles.len()
            )));
        }
        let mut seen = 0u32;
        for &t in &tiles {
            if t as usize >= n {
                return Err(Error::State(format!(
                    "tile {t} is out of range 0..{} for a {board} board",
                    n - 1
                )));
            }
            if seen & (1 << t) != 0 {
                return Err(Error::State(format!("tile {t} appears twice")));
            }
            seen |= 1 << t;
        }
        Ok(PuzzleState { board, tiles })
    }

    /// Parses whitespace- or comma-separated tiles, as in `data/korf100.txt`.
    pub fn parse(board: Board, text: &str) -> Result<PuzzleState> {
        let tiles = text
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<u8>()
                    .map_err(|_| Error::State(format!("{s:?} is not a tile number")))
            })
            .collect::<Result<Vec<u8>>>()?;
        PuzzleState::new(board, tiles)
    }

    /// The goal state.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles are below 25, so they fit in a byte"
    )]
    pub fn goal(board: Board, goal: Goal) -> PuzzleState {
        let n = board.cells();
        let tiles = (0..n).map(|c| goal.tile_at(c, n) as u8).collect();
        PuzzleState { board, tiles }
    }

    /// The board of the state.
    pub fn board(&self) -> Board {
        self.board
    }

    /// The tile on each cell.
    pub fn tiles(&self) -> &[u8] {
        &self.tiles
    }

    /// The cell of the blank.
    pub fn blank(&self) -> usize {
        self.cell_of(0)
    }

    /// The cell that holds `tile`.
    pub fn cell_of(&self, tile: u8) -> usize {
        self.tiles
            .iter()
            .position(|&t| t == tile)
            .expect("a permutation holds every tile")
    }

    /// The cell of each tile: `cells[tile]`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "cells are below 25, so they fit in a byte"
    )]
    pub fn cells(&self) -> Vec<u8> {
        let mut cells = vec![0u8; self.tiles.len()];
        for (cell, &tile) in self.tiles.iter().enumerate() {
            cells[tile as usize] = cell as u8;
        }
        cells
    }

    /// Whether `goal` can be reached: the permutation's parity (blank included) equals the
    /// parity of the blank's Manhattan distance to its goal cell, since each move is one
    /// transposition that moves the blank by one.
    pub fn is_solvable(&self, goal: Goal) -> bool {
        let n = self.tiles.len();
        // Permutation mapping each cell to the goal cell of the tile on it.
        let perm: Vec<usize> = self
            .tiles
            .iter()
            .map(|&t| goal.cell_of(t as usize, n))
            .collect();
        let mut visited = vec![false; n];
        let mut transpositions = 0;
        for start in 0..n {
            let mut len = 0;
            let mut c = start;
            while !visited[c] {
                visited[c] = true;
                c = perm[c];
                len += 1;
            }
            if len > 0 {
                transpositions += len - 1;
            }
        }
        let blank_distance = self.board.distance(self.blank(), goal.cell_of(0, n));
        transpositions % 2 == blank_distance as usize % 2
    }

    /// Checks [`is_solvable`](Self::is_solvable) with an error that says why not.
    pub fn check_solvable(&self, goal: Goal) -> Result<()> {
        if self.is_solvable(goal) {
            Ok(())
        } else {
            Err(Error::Unsolvable(format!(
                "{self} has the wrong permutation parity for the {goal} goal on {}",
                self.board
            )))
        }
    }

    /// Sum of the Manhattan distances of `tiles` to their goal cells.
    pub fn manhattan(&self, goal: Goal, tiles: &[u8]) -> u32 {
        let n = self.tiles.len();
        tiles
            .iter()
            .map(|&t| {
                self.board
                    .distance(self.cell_of(t), goal.cell_of(t as usize, n))
            })
            .sum()
    }

    /// The state mirrored about the main diagonal: the tile on cell (r, c) moves to (c, r)
    /// and is renamed to the tile whose goal cell is the mirror of its own (square boards).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles are below 25, so they fit in a byte"
    )]
    pub fn transposed(&self, goal: Goal) -> PuzzleState {
        let n = self.tiles.len();
        let b = self.board;
        let mut tiles = vec![0u8; n];
        for (cell, &tile) in self.tiles.iter().enumerate() {
            let mirrored_goal = b.transpose_cell(goal.cell_of(tile as usize, n));
            tiles[b.transpose_cell(cell)] = goal.tile_at(mirrored_goal, n) as u8;
        }
        PuzzleState { board: b, tiles }
    }
}

impl fmt::Display for PuzzleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.tiles.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[expect(
        clippy::cast_possible_truncation,
        reason = "the remainder is below the blank's 4 neighbours"
    )]
    fn random_walk(board: Board, goal: Goal, steps: usize, seed: u64) -> PuzzleState {
        let mut s = PuzzleState::goal(board, goal);
        let mut x = seed | 1;
        for _ in 0..steps {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let blank = s.blank();
            let nb = board.neighbours(blank);
            let pick =
                crate::rank::select_bit(nb, (x % u64::from(nb.count_ones())) as u32) as usize;
            s.tiles.swap(blank, pick);
        }
        s
    }

    #[test]
    fn korf_instances_are_solvable() {
        let board: Board = "15".parse().unwrap();
        let text = include_str!("../../data/korf100.txt");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let s = PuzzleState::parse(board, line).unwrap();
            assert!(s.is_solvable(Goal::BlankFirst), "{line}");
        }
    }

    #[test]
    fn bad_states() {
        let board: Board = "8".parse().unwrap();
        assert!(
            PuzzleState::parse(board, "0 1 2 3 4 5 6 7")
                .unwrap_err()
                .to_string()
                .contains("8 numbers")
        );
        assert!(
            PuzzleState::parse(board, "0 1 2 3 4 5 6 7 9")
                .unwrap_err()
                .to_string()
                .contains("out of range")
        );
        assert!(
            PuzzleState::parse(board, "0 1 2 3 4 5 6 7 7")
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(PuzzleState::parse(board, "0 1 2 3 4 5 6 8 x").is_err());
        let swapped = PuzzleState::parse(board, "0 2 1 3 4 5 6 7 8").unwrap();
        assert!(!swapped.is_solvable(Goal::BlankFirst));
        assert!(swapped.check_solvable(Goal::BlankFirst).is_err());
    }

    /// Every permutation of `0..n`, in no particular order.
    fn permutations(n: usize) -> Vec<Vec<u8>> {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "a test board has fewer than 25 cells"
        )]
        fn extend(n: usize, prefix: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
            if prefix.len() == n {
                out.push(prefix.clone());
                return;
            }
            for t in 0..n as u8 {
                if !prefix.contains(&t) {
                    prefix.push(t);
                    extend(n, prefix, out);
                    prefix.pop();
                }
            }
        }
        let mut out = vec![];
        extend(n, &mut vec![], &mut out);
        out
    }

    #[test]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles are below 25, so they fit in a byte"
    )]
    fn solvable_exactly_when_a_bfs_from_the_goal_reaches_the_state() {
        for (w, h) in [(2, 2), (3, 2), (2, 3), (4, 2), (2, 4)] {
            let board = Board::new(w, h).unwrap();
            let n = w * h;
            for goal in [Goal::BlankFirst, Goal::BlankLast] {
                // Plain BFS over full states, neighbours from rows and columns.
                let start: Vec<u8> = (0..n).map(|c| goal.tile_at(c, n) as u8).collect();
                let mut reached = std::collections::HashSet::from([start.clone()]);
                let mut queue = std::collections::VecDeque::from([start]);
                while let Some(tiles) = queue.pop_front() {
                    let blank = tiles.iter().position(|&t| t == 0).unwrap();
                    let (row, col) = (blank / w, blank % w);
                    let mut next = vec![];
                    if row > 0 {
                        next.push(blank - w);
                    }
                    if row + 1 < h {
                        next.push(blank + w);
                    }
                    if col > 0 {
                        next.push(blank - 1);
                    }
                    if col + 1 < w {
                        next.push(blank + 1);
                    }
                    for cell in next {
                        let mut moved = tiles.clone();
                        moved.swap(blank, cell);
                        if reached.insert(moved.clone()) {
                            queue.push_back(moved);
                        }
                    }
                }
                let all = permutations(n);
                assert_eq!(reached.len() * 2, all.len(), "{board}: half are reachable");
                for tiles in all {
                    let state = PuzzleState::new(board, tiles.clone()).unwrap();
                    assert_eq!(
                        state.is_solvable(goal),
                        reached.contains(&tiles),
                        "{board} {goal} {tiles:?}"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn solvability_is_preserved_by_moves_and_broken_by_a_swap(
            w in 2usize..=5, h in 2usize..=5, steps in 0usize..200, seed in any::<u64>(), last in any::<bool>()
        ) {
            let board = Board::new(w, h).unwrap();
            let goal = if last { Goal::BlankLast } else { Goal::BlankFirst };
            let s = random_walk(board, goal, steps, seed);
            prop_assert!(s.is_solvable(goal));
            // Swapping two tiles (not the blank) flips solvability.
            let mut t = s.tiles().to_vec();
            let (a, b) = {
                let nz: Vec<usize> = (0..t.len()).filter(|&c| t[c] != 0).collect();
                (nz[0], nz[1])
            };
            t.swap(a, b);
            prop_assert!(!PuzzleState::new(board, t).unwrap().is_solvable(goal));
            if w == h && goal.cell_of(0, w * h) % (w + 1) == 0 {
                prop_assert!(s.transposed(goal).is_solvable(goal));
                prop_assert_eq!(s.transposed(goal).transposed(goal), s);
            }
        }
    }
}
