//! Best-first search: A* and weighted A*, for boards whose states fit a `u64`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use tilepdb_common::{Goal, PuzzleState};

use super::{IterationCounts, Limits, Outcome, SearchResult, check_start, move_table, replay};
use crate::error::{Error, Result};
use crate::heuristic::Heuristic;

/// Most cells for A* (states are packed four bits a cell into a `u64`).
pub const ASTAR_MAX_CELLS: usize = 12;

fn pack(tiles: &[u8]) -> u64 {
    tiles
        .iter()
        .enumerate()
        .fold(0, |key, (i, &t)| key | u64::from(t) << (4 * i))
}

/// A* from `start` to `goal`, for boards of at most [`ASTAR_MAX_CELLS`] cells.
pub fn a_star<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    limits: &Limits,
) -> Result<SearchResult> {
    check_start(start, goal)?;
    let board = start.board();
    if board.cells() > ASTAR_MAX_CELLS {
        return Err(Error::Unsupported(format!(
            "A* keeps every state in memory and is for boards of at most {ASTAR_MAX_CELLS} cells (3x4); use IDA* for {board}"
        )));
    }
    best_first(start, goal, heuristic, WEIGHT_SCALE, limits)
}

/// Most cells for weighted A* (states packed four bits a cell into a `u64`: the 4x4 board).
pub const WEIGHTED_MAX_CELLS: usize = 16;

/// Weights are applied in thousandths: `f = 1000 g + round(1000 W) h`.
const WEIGHT_SCALE: u64 = 1000;

/// Weighted A* — the textbook's algorithm "A" — from `start` to `goal`: A* ordered by
/// `g + weight × h`, for boards of at most [`WEIGHTED_MAX_CELLS`] cells (bound its memory with
/// [`Limits::max_nodes`]).
///
/// **No optimality claim**: with an admissible heuristic the solution is at most `weight`
/// times the optimal length (states reached again by a shorter path are reopened); with an
/// inadmissible one such as P + 3S there is no bound at all. `weight` is taken to the
/// thousandth and must be at least 1 (1 is plain A*).
///
/// ```
/// use tilepdb_common::{Board, Goal, PuzzleState};
/// use tilepdb_solver::heuristic::Manhattan;
/// use tilepdb_solver::search::{Limits, ida_star, weighted_a_star};
/// let board: Board = "3x3".parse().unwrap();
/// let start = PuzzleState::parse(board, "8 7 6 5 4 3 2 1 0").unwrap();
/// let h = Manhattan::new(board, Goal::BlankFirst);
/// let optimal = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
/// let r = weighted_a_star(&start, Goal::BlankFirst, &h, 2.0, &Limits::default()).unwrap();
/// assert!(r.moves.len() <= 2 * optimal.moves.len());
/// ```
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "the weight is checked in [1, 1000], so the scaled weight is a positive integer below 10^6"
)]
pub fn weighted_a_star<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    weight: f64,
    limits: &Limits,
) -> Result<SearchResult> {
    check_start(start, goal)?;
    let board = start.board();
    if board.cells() > WEIGHTED_MAX_CELLS {
        return Err(Error::Unsupported(format!(
            "weighted A* keeps every state it reaches and is for boards of at most {WEIGHTED_MAX_CELLS} cells (4x4), not {board}"
        )));
    }
    if !(weight.is_finite() && (1.0..=1000.0).contains(&weight)) {
        return Err(Error::Unsupported(format!(
            "the weight of weighted A* must be a number from 1 to 1000, not {weight}"
        )));
    }
    let scaled = (weight * WEIGHT_SCALE as f64).round() as u64;
    best_first(start, goal, heuristic, scaled, limits)
}

/// Best-first search ordered by `WEIGHT_SCALE g + weight h` (ties: the smaller `g`), reopening
/// a state reached again by a shorter path; `start` is checked and fits a `u64`.
#[expect(
    clippy::cast_possible_truncation,
    reason = "tiles and cells are below 25, so they fit in a byte"
)]
fn best_first<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    weight: u64,
    limits: &Limits,
) -> Result<SearchResult> {
    let board = start.board();
    let n = board.cells();
    let started = Instant::now();
    let moves = move_table(board);
    let goal_key = pack(PuzzleState::goal(board, goal).tiles());
    let (h0, memo0) = heuristic.evaluate(&start.cells())?;
    // Per state: best g, parent key, the tile moved to reach it (memos apart).
    let mut seen: HashMap<u64, (u32, u64, u8)> = HashMap::new();
    let mut open = BinaryHeap::new();
    let start_key = pack(start.tiles());
    seen.insert(start_key, (0, u64::MAX, 0));
    let mut memos: HashMap<u64, H::Memo> = HashMap::new();
    memos.insert(start_key, memo0);
    open.push(Reverse((weight * u64::from(h0), 0u32, start_key)));
    let mut nodes = 0u64;
    let mut expanded = 0u64;
    let mut outcome = None;
    'search: while let Some(Reverse((_, g, key))) = open.pop() {
        if seen[&key].0 < g {
            continue;
        }
        if key == goal_key {
            outcome = Some(Outcome::Solved);
            break;
        }
        if limits.max_nodes.is_some_and(|m| nodes >= m) {
            outcome = Some(Outcome::NodeBudget);
            break;
        }
        if limits.timeout.is_some_and(|t| started.elapsed() >= t) {
            outcome = Some(Outcome::Timeout);
            break;
        }
        let tiles: Vec<u8> = (0..n).map(|i| ((key >> (4 * i)) & 15) as u8).collect();
        let mut cells = vec![0u8; n];
        for (c, &t) in tiles.iter().enumerate() {
            cells[t as usize] = c as u8;
        }
        let memo = memos[&key];
        let blank = cells[0] as usize;
        expanded += 1;
        for &next in &moves[blank] {
            if next == u8::MAX {
                continue;
            }
            let tile = tiles[next as usize];
            let mut child_cells = cells.clone();
            child_cells[tile as usize] = blank as u8;
            child_cells[0] = next;
            let child_key = key & !(15u64 << (4 * next)) & !(15u64 << (4 * blank))
                | u64::from(tile) << (4 * blank);
            if limits.max_nodes.is_some_and(|m| nodes >= m) {
                outcome = Some(Outcome::NodeBudget);
                break 'search;
            }
            nodes += 1;
            if seen.get(&child_key).is_some_and(|&(cg, _, _)| cg <= g + 1) {
                continue;
            }
            let (h, child_memo) =
                heuristic.after_move(&child_cells, tile as usize, next as usize, &memo);
            seen.insert(child_key, (g + 1, key, tile));
            memos.insert(child_key, child_memo);
            let f = WEIGHT_SCALE * u64::from(g + 1) + weight * u64::from(h);
            open.push(Reverse((f, g + 1, child_key)));
        }
    }
    let outcome = outcome.unwrap_or(Outcome::NodeBudget);
    let mut path = Vec::new();
    if outcome == Outcome::Solved {
        let mut key = goal_key;
        while key != start_key {
            let (_, parent, tile) = seen[&key];
            path.push(tile);
            key = parent;
        }
        path.reverse();
        replay(start, goal, &path)?;
    }
    Ok(SearchResult {
        outcome,
        moves: path,
        expanded,
        generated: nodes,
        initial_h: h0,
        iterations: 1,
        per_iteration: vec![IterationCounts {
            bound: h0,
            expanded,
            generated: nodes,
        }],
        seconds: started.elapsed().as_secs_f64(),
    })
}
