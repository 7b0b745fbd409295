//! Duplicate-string move pruning (Taylor & Korf, 1993): a finite-state machine over the
//! blank's moves that IDA* runs beside the search, skipping every move that would end a
//! string of moves known to reach a state some smaller string reaches too.
//!
//! # The machine
//!
//! A *string* is a sequence of blank moves, each up, left, right or down (in that order, the
//! order IDA* tries them: strings are compared by length, then lexicographically in that
//! order). [`learn`] enumerates strings breadth-first to a chosen depth and marks a string
//! *forbidden* when every start it can be played from is reached as well by a smaller string
//! (see below); a forbidden string is *minimal* when none of its proper substrings is
//! forbidden, and only the minimal ones are kept (a longer string holding one is cut at it).
//! An Aho–Corasick automaton over the minimal forbidden strings is then turned into a table
//! `state × move → state`, in which a move that would complete a forbidden string leads to
//! [`FORBIDDEN`]. Its states are the proper prefixes of the forbidden strings, state 0 (the
//! empty prefix) being the start. The machine of depth 2 forbids exactly the four strings made
//! of a move and its inverse: it is the usual "never undo the last move" rule
//! ([`MovePruning::undo_only`]), which every deeper machine contains.
//!
//! # Which strings are duplicates (and why the test is exact on the board)
//!
//! A string played with the blank on cell `b` is legal when the blank stays on the board. Its
//! effect does not depend on `b` beyond that: on an unbounded grid, with the blank at the
//! origin, the string moves the blank to a displacement and permutes the tiles it passes, and
//! on the board (when legal from `b`) it does the same, translated by `b`. So two strings
//! legal from `b` lead from any state with the blank on `b` to the same state exactly when
//! they have the same effect on the unbounded grid: the *effect* is the list of grid cells
//! whose content changed, each with the cell its new content came from (the blank included),
//! relative to the blank's start. Legality is a bounding-box test: the string is legal from
//! `b` when the box of the cells its blank visits, placed at `b`, fits on the board; the set
//! of such `b` is the string's *legal set*.
//!
//! The breadth-first search visits strings in (length, lexicographic) order and keeps, for
//! every effect met so far, the union of the legal sets of the strings that had it (the
//! *covered* cells). A string is forbidden when its legal set is non-empty and inside the
//! covered cells of its effect: from every cell it can be played from, a smaller string,
//! legal from that same cell, reaches the same state. This is decided per start cell, so it
//! is exact on the board the machine is learned for, and a machine is tied to its board: a
//! string may be a duplicate on a 3x3 board (because its smaller twin is illegal nowhere it
//! is legal) and not on a 2x4 one. Strings illegal from every cell are never played and
//! neither forbidden nor extended.
//!
//! The search extends only the strings kept at the previous length, and only to strings whose
//! suffix (the string without its first move) was kept too: every proper substring of such a
//! string lies in the prefix or the suffix, so none is forbidden, and a forbidden string found
//! so is minimal. This misses no state: the smallest string reaching a state from a cell holds
//! no forbidden substring (replacing it by its smaller twin, legal at the same cell, would give
//! a smaller string to the same state), so it is enumerated, and it comes before every other
//! string to that state: the covered cells are exact.
//!
//! # Soundness: optimal solutions survive
//!
//! Take the optimal solutions of a start state and among them the smallest `P` in
//! lexicographic order. Suppose the machine cuts `P`: then `P = A s C` with `s` forbidden.
//! `s` is legal from the cell the blank is on after `A` (since `P` is legal), so a string `t`
//! smaller than `s` and legal from there reaches the same state, and `A t C` is a solution.
//! If `t` is shorter, `P` was not optimal; if it is as long and lexicographically smaller, `P`
//! was not the smallest. So the machine never cuts `P`, and IDA* (whose bound never exceeds the
//! optimal length while `P` is unexplored, with an admissible heuristic) finds an optimal
//! solution: maybe not `P`, never a longer one. The machine starts in state 0 at the start
//! state, as `P` starts there; it replaces the undo rule, whose four strings it forbids (each
//! has the empty string as its smaller twin). Nothing else in the search prunes moves.
//!
//! ```
//! use tilepdb_common::Board;
//! use tilepdb_solver::move_pruning::{Direction, FORBIDDEN, learn};
//! let board: Board = "3x3".parse().unwrap();
//! let learned = learn(board, 4).unwrap();
//! let m = &learned.machine;
//! // After up, down is forbidden (it undoes the move); left is not.
//! let s = m.next(0, Direction::Up);
//! assert_eq!(m.next(s, Direction::Down), FORBIDDEN);
//! assert_ne!(m.next(s, Direction::Left), FORBIDDEN);
//! ```

mod count;
mod file;
mod learn;

use tilepdb_common::Board;

use crate::error::{Error, Result};

pub use count::nodes_by_depth;
pub use file::{FILE_MAGIC, FORMAT_MAJOR, HEADER_LEN};
pub use learn::{Learned, LengthCounts, MAX_DEPTH, MIN_DEPTH, learn};

/// The transition to this state means the move is forbidden.
pub const FORBIDDEN: u32 = u32::MAX;

/// A move of the blank, in the order IDA* tries them (and strings are compared).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// The blank moves up a row.
    Up = 0,
    /// The blank moves left a column.
    Left = 1,
    /// The blank moves right a column.
    Right = 2,
    /// The blank moves down a row.
    Down = 3,
}

impl Direction {
    /// The four moves in order.
    pub const ALL: [Direction; 4] = [
        Direction::Up,
        Direction::Left,
        Direction::Right,
        Direction::Down,
    ];

    /// The move undoing this one.
    pub fn inverse(self) -> Direction {
        Direction::ALL[3 - self as usize]
    }

    /// The blank's displacement (column, row).
    pub fn offset(self) -> (i32, i32) {
        match self {
            Direction::Up => (0, -1),
            Direction::Left => (-1, 0),
            Direction::Right => (1, 0),
            Direction::Down => (0, 1),
        }
    }

    /// `U`, `L`, `R` or `D`.
    pub fn letter(self) -> char {
        ['U', 'L', 'R', 'D'][self as usize]
    }
}

/// A move-pruning machine for one board: `state × move → state` or [`FORBIDDEN`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovePruning {
    board: Board,
    depth: u8,
    forbidden_strings: u32,
    /// `transitions[4 * state + move]`.
    transitions: Vec<u32>,
}

impl MovePruning {
    /// The machine of the undo rule alone: after a move, its inverse is forbidden (the
    /// machine of depth 2, built without a search).
    pub fn undo_only(board: Board) -> MovePruning {
        let strings: Vec<Vec<Direction>> = Direction::ALL
            .iter()
            .map(|&d| vec![d, d.inverse()])
            .collect();
        MovePruning::from_forbidden(board, 2, &strings)
    }

    /// The Aho–Corasick machine of `strings` (none a substring of another, none empty).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "trie nodes are counted in u32: fewer than 2^32 for any depth the learning reaches"
    )]
    pub(crate) fn from_forbidden(
        board: Board,
        depth: u8,
        strings: &[Vec<Direction>],
    ) -> MovePruning {
        const NONE: u32 = u32::MAX;
        let mut children: Vec<[u32; 4]> = vec![[NONE; 4]];
        let mut terminal = vec![false];
        for s in strings {
            let mut node = 0usize;
            for &d in s {
                let c = children[node][d as usize];
                node = if c == NONE {
                    children.push([NONE; 4]);
                    terminal.push(false);
                    let new = children.len() - 1;
                    children[node][d as usize] = new as u32;
                    new
                } else {
                    c as usize
                };
            }
            terminal[node] = true;
        }
        let n = children.len();
        let mut fail = vec![0u32; n];
        let mut delta = vec![[0u32; 4]; n];
        let mut dead = vec![false; n];
        let mut order = Vec::with_capacity(n);
        let mut queue = std::collections::VecDeque::new();
        for d in 0..4 {
            let c = children[0][d];
            if c != NONE {
                queue.push_back(c as usize);
                delta[0][d] = c;
            }
        }
        order.push(0usize);
        while let Some(u) = queue.pop_front() {
            order.push(u);
            dead[u] = terminal[u] || dead[fail[u] as usize];
            for d in 0..4 {
                let c = children[u][d];
                let via_fail = delta[fail[u] as usize][d];
                if c == NONE {
                    delta[u][d] = via_fail;
                } else {
                    fail[c as usize] = if u == 0 { 0 } else { via_fail };
                    delta[u][d] = c;
                    queue.push_back(c as usize);
                }
            }
        }
        let mut id = vec![FORBIDDEN; n];
        let mut live = 0u32;
        for &u in &order {
            if !dead[u] {
                id[u] = live;
                live += 1;
            }
        }
        let mut transitions = Vec::with_capacity(4 * live as usize);
        for &u in order.iter().filter(|&&u| !dead[u]) {
            for d in 0..4 {
                transitions.push(id[delta[u][d] as usize]);
            }
        }
        MovePruning {
            board,
            depth,
            forbidden_strings: strings.len() as u32,
            transitions,
        }
    }

    /// The board the machine was learned for.
    pub fn board(&self) -> Board {
        self.board
    }

    /// The length of the longest strings the learning looked at.
    pub fn depth(&self) -> u8 {
        self.depth
    }

    /// The number of minimal forbidden strings.
    pub fn forbidden_strings(&self) -> u32 {
        self.forbidden_strings
    }

    /// The number of states (state 0 is the start).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "states are numbered in u32 by construction and by the file check"
    )]
    pub fn states(&self) -> u32 {
        (self.transitions.len() / 4) as u32
    }

    /// The state after `direction` from `state`, or [`FORBIDDEN`].
    ///
    /// # Panics
    ///
    /// If `state` is not below [`MovePruning::states`].
    #[inline]
    pub fn next(&self, state: u32, direction: Direction) -> u32 {
        self.transitions[4 * state as usize + direction as usize]
    }

    /// The table `4 × state + move → state` (moves numbered as [`Direction`]): what the search
    /// reads at every child.
    #[inline]
    pub fn transitions(&self) -> &[u32] {
        &self.transitions
    }

    /// Checks that the machine is for `board`, the search's.
    pub fn check_board(&self, board: Board) -> Result<()> {
        if self.board == board {
            Ok(())
        } else {
            Err(Error::MachineBoard {
                machine: self.board.to_string(),
                search: board.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_undo_machine_forbids_inverses_only() {
        let board: Board = "4x4".parse().unwrap();
        let m = MovePruning::undo_only(board);
        assert_eq!(m.states(), 5);
        for a in Direction::ALL {
            let s = m.next(0, a);
            assert_ne!(s, FORBIDDEN);
            for b in Direction::ALL {
                assert_eq!(m.next(s, b) == FORBIDDEN, b == a.inverse());
            }
        }
    }

    #[test]
    fn depth_two_learning_is_the_undo_rule() {
        for board in ["3x3", "2x4", "5x5"] {
            let board: Board = board.parse().unwrap();
            let learned = learn(board, 2).unwrap();
            assert_eq!(learned.machine.forbidden_strings(), 4);
            assert_eq!(learned.machine, {
                let mut undo = MovePruning::undo_only(board);
                undo.depth = 2;
                undo
            });
        }
    }

    #[test]
    fn a_machine_of_another_board_is_refused_naming_both() {
        let m = MovePruning::undo_only("3x3".parse().unwrap());
        let e = m
            .check_board("4x4".parse().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("3x3") && e.contains("4x4"), "{e}");
    }
}
