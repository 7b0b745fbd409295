//! Optimal search: IDA* for every board, A* for small ones, and the replay check of a solution.
//!
//! IDA* tries the blank's moves in the order up, left, right, down, prunes the moves a
//! [move-pruning machine](crate::move_pruning) forbids (by default the undo rule alone: never
//! the move that undoes the last one; [`ida_star_pruned`] takes a learned machine) and stops at
//! the first solution. It counts two things, per iteration and
//! in total: nodes **generated** (every child made, the count Korf & Felner (2002) report) and
//! nodes **expanded** (every node whose children are generated: those within the bound but the
//! goal, the count of the ZIB code and of Döbbelin et al.).
//! With a heuristic that looks ahead ([`Heuristic::looks_ahead`]: large tables) it computes the
//! table indices of a node's children when their parent is expanded and has the processor
//! fetch the entries while it works on the siblings; the nodes it counts stay the same.
//! [`ida_star_parallel`] searches one instance across threads: each iteration's subtrees are
//! taken in order from a shared queue by the free threads, with the same moves and, in every
//! iteration but the last, the same counts.
//!
//! ```
//! use tilepdb_common::{Board, Goal, PuzzleState};
//! use tilepdb_solver::heuristic::Manhattan;
//! use tilepdb_solver::search::{Limits, Outcome, ida_star};
//! let board: Board = "3x3".parse().unwrap();
//! let start = PuzzleState::parse(board, "1 2 0 3 4 5 6 7 8").unwrap();
//! let h = Manhattan::new(board, Goal::BlankFirst);
//! let result = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
//! assert_eq!(result.outcome, Outcome::Solved);
//! assert_eq!(result.moves, vec![2, 1]); // tiles slid: 2, then 1
//! ```

mod best_first;
mod ida;
mod parallel;

use std::time::{Duration, Instant};

use serde::Serialize;
use tilepdb_common::{Board, Goal, MAX_CELLS, PuzzleState};

use crate::error::{Error, Result};
use crate::heuristic::Heuristic;
use crate::move_pruning::MovePruning;
use ida::{Ida, Position};

pub use best_first::{ASTAR_MAX_CELLS, WEIGHTED_MAX_CELLS, a_star, weighted_a_star};
pub use parallel::ida_star_parallel;

/// Budgets of one search; a search that runs out reports it instead of a solution.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Most nodes a search generates: it stops, out of budget, before the next one.
    pub max_nodes: Option<u64>,
    /// Longest time to search.
    pub timeout: Option<Duration>,
}

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A solution was found.
    Solved,
    /// The node budget ran out.
    NodeBudget,
    /// The time budget ran out.
    Timeout,
}

/// What a search found and what it cost.
#[derive(Clone, Debug, Serialize)]
pub struct SearchResult {
    /// How the search ended.
    pub outcome: Outcome,
    /// Tiles slid onto the blank, in order (empty unless solved).
    pub moves: Vec<u8>,
    /// Nodes expanded (their children generated) over all iterations.
    pub expanded: u64,
    /// Nodes generated (children made) over all iterations.
    pub generated: u64,
    /// Heuristic value of the start.
    pub initial_h: u32,
    /// IDA* iterations (A*: 1).
    pub iterations: u32,
    /// Wall time of the search (`wall_seconds` in the JSON, as the other programs name it).
    #[serde(rename = "wall_seconds")]
    pub seconds: f64,
    /// Each iteration's bound and counts, in order (A*: one).
    pub per_iteration: Vec<IterationCounts>,
}

/// What one IDA* iteration (one bound on `f`) expanded and generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct IterationCounts {
    /// The iteration's bound on `g + h` (A*: the start's `h`).
    pub bound: u32,
    /// Nodes expanded in the iteration.
    pub expanded: u64,
    /// Nodes generated in the iteration.
    pub generated: u64,
}

impl SearchResult {
    /// The solution length, when solved.
    pub fn length(&self) -> Option<usize> {
        (self.outcome == Outcome::Solved).then_some(self.moves.len())
    }
}

/// The neighbours of each cell in the order up, left, right, down (`u8::MAX`: off the board).
#[expect(
    clippy::cast_possible_truncation,
    reason = "a neighbour of a cell is a cell, below 25, so it fits in a byte"
)]
pub(super) fn move_table(board: Board) -> [[u8; 4]; MAX_CELLS] {
    let mut table = [[u8::MAX; 4]; MAX_CELLS];
    let (w, h) = (board.width(), board.height());
    for (cell, moves) in table.iter_mut().enumerate().take(board.cells()) {
        let (r, c) = (cell / w, cell % w);
        if r > 0 {
            moves[0] = (cell - w) as u8;
        }
        if c > 0 {
            moves[1] = (cell - 1) as u8;
        }
        if c + 1 < w {
            moves[2] = (cell + 1) as u8;
        }
        if r + 1 < h {
            moves[3] = (cell + w) as u8;
        }
    }
    table
}

pub(super) fn check_start(start: &PuzzleState, goal: Goal) -> Result<()> {
    start.check_solvable(goal)?;
    Ok(())
}

/// IDA* from `start` to `goal` (looking ahead if the heuristic does), pruning only the move
/// that undoes the last one.
pub fn ida_star<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    limits: &Limits,
) -> Result<SearchResult> {
    let undo = MovePruning::undo_only(start.board());
    ida_star_pruned(start, goal, heuristic, limits, &undo)
}

/// IDA* from `start` to `goal` (looking ahead if the heuristic does), skipping the moves
/// `pruning` forbids; `pruning` must be for `start`'s board.
///
/// ```
/// use tilepdb_common::{Board, Goal, PuzzleState};
/// use tilepdb_solver::heuristic::Manhattan;
/// use tilepdb_solver::move_pruning::learn;
/// use tilepdb_solver::search::{Limits, ida_star, ida_star_pruned};
/// let board: Board = "3x3".parse().unwrap();
/// let start = PuzzleState::parse(board, "8 7 6 5 4 3 2 1 0").unwrap();
/// let h = Manhattan::new(board, Goal::BlankFirst);
/// let machine = learn(board, 10).unwrap().machine;
/// let pruned = ida_star_pruned(&start, Goal::BlankFirst, &h, &Limits::default(), &machine).unwrap();
/// let plain = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
/// assert_eq!(pruned.moves.len(), plain.moves.len());
/// assert!(pruned.generated < plain.generated);
/// ```
pub fn ida_star_pruned<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    limits: &Limits,
    pruning: &MovePruning,
) -> Result<SearchResult> {
    check_start(start, goal)?;
    let board = start.board();
    pruning.check_board(board)?;
    let n = board.cells();
    let mut tiles = [0u8; MAX_CELLS];
    tiles[..n].copy_from_slice(start.tiles());
    let mut goal_tiles = [0u8; MAX_CELLS];
    goal_tiles[..n].copy_from_slice(PuzzleState::goal(board, goal).tiles());
    let cells = start.cells();
    let (h0, memo) = heuristic.evaluate(&cells)?;
    let position = Position {
        moves: move_table(board),
        tiles,
        cells,
        machine: pruning.transitions(),
    };
    let mut ida = Ida::new(
        heuristic,
        position,
        (h0, memo, 0),
        0,
        goal_tiles,
        limits,
        Instant::now(),
    );
    let mut per_iteration = Vec::new();
    let solved = loop {
        ida.next_threshold = u32::MAX;
        let (expanded, generated) = (ida.expanded, ida.generated);
        let found = ida.search_root(h0, &memo, 0);
        per_iteration.push(IterationCounts {
            bound: ida.threshold,
            expanded: ida.expanded - expanded,
            generated: ida.generated - generated,
        });
        if found {
            break true;
        }
        if ida.stopped.is_some() || ida.next_threshold == u32::MAX {
            break false;
        }
        ida.threshold = ida.next_threshold;
    };
    let outcome = if solved {
        Outcome::Solved
    } else {
        ida.stopped.unwrap_or(Outcome::NodeBudget)
    };
    let result = SearchResult {
        outcome,
        moves: if solved { ida.path } else { Vec::new() },
        expanded: ida.expanded,
        generated: ida.generated,
        initial_h: h0,
        iterations: u32::try_from(per_iteration.len()).unwrap_or(u32::MAX),
        per_iteration,
        seconds: ida.started.elapsed().as_secs_f64(),
    };
    if solved {
        replay(start, goal, &result.moves)?;
    }
    Ok(result)
}

/// Plays `moves` (tiles slid onto the blank) from `start` and checks that each is legal and
/// that they end on the goal.
pub fn replay(start: &PuzzleState, goal: Goal, moves: &[u8]) -> Result<()> {
    let board = start.board();
    let mut tiles = start.tiles().to_vec();
    for (i, &tile) in moves.iter().enumerate() {
        let blank = tiles.iter().position(|&t| t == 0).expect("a blank");
        let cell = tiles
            .iter()
            .position(|&t| t == tile)
            .ok_or_else(|| Error::BadSolution(format!("move {}: no tile {tile}", i + 1)))?;
        if board.distance(blank, cell) != 1 {
            return Err(Error::BadSolution(format!(
                "move {}: tile {tile} is not next to the blank",
                i + 1
            )));
        }
        tiles.swap(blank, cell);
    }
    if tiles != PuzzleState::goal(board, goal).tiles() {
        return Err(Error::BadSolution(
            "the moves do not end on the goal".into(),
        ));
    }
    Ok(())
}
