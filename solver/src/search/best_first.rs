//! Best-first search: A* and weighted A*, for boards whose states fit a `u64`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ops::ControlFlow;
use std::time::Instant;

use tilepdb_common::{Goal, MAX_CELLS, PuzzleState};

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

/// Per state: best g, parent key, the tile moved to reach it (memos apart).
type Seen = HashMap<u64, (u32, u64, u8)>;

/// Best-first search ordered by `WEIGHT_SCALE g + weight h` (ties: the smaller `g`), reopening
/// a state reached again by a shorter path; `start` is checked and fits a `u64`.
fn best_first<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    weight: u64,
    limits: &Limits,
) -> Result<SearchResult> {
    let board = start.board();
    let started = Instant::now();
    let goal_key = pack(PuzzleState::goal(board, goal).tiles());
    let start_key = pack(start.tiles());
    let (h0, memo0) = heuristic.evaluate(&start.cells())?;
    let mut search = BestFirst {
        heuristic,
        weight,
        limits,
        started,
        cell_count: board.cells(),
        moves: move_table(board),
        seen: HashMap::new(),
        memos: HashMap::new(),
        open: BinaryHeap::new(),
        nodes: 0,
        expanded: 0,
    };
    search.seen.insert(start_key, (0, u64::MAX, 0));
    search.memos.insert(start_key, memo0);
    search
        .open
        .push(Reverse((weight * u64::from(h0), 0u32, start_key)));
    let outcome = search.run(goal_key);
    let mut path = Vec::new();
    if outcome == Outcome::Solved {
        path = path_to(&search.seen, start_key, goal_key);
        replay(start, goal, &path)?;
    }
    let (expanded, nodes) = (search.expanded, search.nodes);
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

/// One best-first search under way: the states seen and their memos, the open list, and the
/// nodes generated and expanded so far.
struct BestFirst<'a, H: Heuristic> {
    heuristic: &'a H,
    weight: u64,
    limits: &'a Limits,
    started: Instant,
    cell_count: usize,
    moves: [[u8; 4]; MAX_CELLS],
    seen: Seen,
    memos: HashMap<u64, H::Memo>,
    /// `(f, g, key)`, the least first.
    open: BinaryHeap<Reverse<(u64, u32, u64)>>,
    nodes: u64,
    expanded: u64,
}

impl<H: Heuristic> BestFirst<'_, H> {
    /// Expands the open list's best state until it is the goal or a limit is reached; an
    /// empty open list reports the node budget.
    fn run(&mut self, goal_key: u64) -> Outcome {
        while let Some(Reverse((_, g, key))) = self.open.pop() {
            if self.seen[&key].0 < g {
                continue;
            }
            if key == goal_key {
                return Outcome::Solved;
            }
            if let Some(outcome) = self.limit_reached() {
                return outcome;
            }
            if let ControlFlow::Break(outcome) = self.expand(key, g) {
                return outcome;
            }
        }
        Outcome::NodeBudget
    }

    /// The limit that stops the search before its next expansion, if one is reached.
    fn limit_reached(&self) -> Option<Outcome> {
        if self.node_budget_spent() {
            return Some(Outcome::NodeBudget);
        }
        if self
            .limits
            .timeout
            .is_some_and(|t| self.started.elapsed() >= t)
        {
            return Some(Outcome::Timeout);
        }
        None
    }

    fn node_budget_spent(&self) -> bool {
        self.limits.max_nodes.is_some_and(|m| self.nodes >= m)
    }

    /// Generates the children of the state `key`, reached at depth `g`, and opens each not
    /// already reached at most as deep; breaks with [`Outcome::NodeBudget`] when the budget
    /// runs out on the way.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles and cells are below 25, so they fit in a byte"
    )]
    fn expand(&mut self, key: u64, g: u32) -> ControlFlow<Outcome> {
        let (tiles, cells) = unpack(key, self.cell_count);
        let memo = self.memos[&key];
        let blank = cells[0] as usize;
        self.expanded += 1;
        for &next in &self.moves[blank] {
            if next == u8::MAX {
                continue;
            }
            let tile = tiles[next as usize];
            let mut child_cells = cells.clone();
            child_cells[tile as usize] = blank as u8;
            child_cells[0] = next;
            let child_key = key & !(15u64 << (4 * next)) & !(15u64 << (4 * blank))
                | u64::from(tile) << (4 * blank);
            if self.node_budget_spent() {
                return ControlFlow::Break(Outcome::NodeBudget);
            }
            self.nodes += 1;
            if self
                .seen
                .get(&child_key)
                .is_some_and(|&(cg, _, _)| cg <= g + 1)
            {
                continue;
            }
            let (h, child_memo) =
                self.heuristic
                    .after_move(&child_cells, tile as usize, next as usize, &memo);
            self.seen.insert(child_key, (g + 1, key, tile));
            self.memos.insert(child_key, child_memo);
            let f = WEIGHT_SCALE * u64::from(g + 1) + self.weight * u64::from(h);
            self.open.push(Reverse((f, g + 1, child_key)));
        }
        ControlFlow::Continue(())
    }
}

/// The tiles (the tile on each cell) and the cells (the cell of each tile) of a packed state
/// of `n` cells.
#[expect(
    clippy::cast_possible_truncation,
    reason = "tiles and cells are below 25, so they fit in a byte"
)]
fn unpack(key: u64, n: usize) -> (Vec<u8>, Vec<u8>) {
    let tiles: Vec<u8> = (0..n).map(|i| ((key >> (4 * i)) & 15) as u8).collect();
    let mut cells = vec![0u8; n];
    for (c, &t) in tiles.iter().enumerate() {
        cells[t as usize] = c as u8;
    }
    (tiles, cells)
}

/// The tiles moved from `start_key` to `goal_key`, followed back through the parents.
fn path_to(seen: &Seen, start_key: u64, goal_key: u64) -> Vec<u8> {
    let mut path = Vec::new();
    let mut key = goal_key;
    while key != start_key {
        let (_, parent, tile) = seen[&key];
        path.push(tile);
        key = parent;
    }
    path.reverse();
    path
}
