//! Optimal search: IDA* for every board, A* for small ones, and the replay check of a solution.
//!
//! IDA* tries the blank's moves in the order up, left, right, down, prunes only the move that
//! undoes the last one and stops at the first solution. It counts two things, per iteration and
//! in total: nodes **generated** (every child made, the count Korf & Felner (2002) report) and
//! nodes **expanded** (every node whose children are generated: those within the bound but the
//! goal, the count of the ZIB code and of Döbbelin et al.).
//! With a heuristic that looks ahead ([`Heuristic::looks_ahead`]: large tables) it computes the
//! table indices of a node's children when their parent is expanded and has the processor
//! fetch the entries while it works on the siblings; the nodes it counts stay the same.
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

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;
use tilepdb_common::{Board, Goal, MAX_CELLS, PuzzleState};

use crate::error::{Error, Result};
use crate::heuristic::Heuristic;

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
fn move_table(board: Board) -> [[u8; 4]; MAX_CELLS] {
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

fn check_start(start: &PuzzleState, goal: Goal) -> Result<()> {
    start.check_solvable(goal)?;
    Ok(())
}

/// The children of a node: the cell the blank moves to and the tile that slides, and what
/// [`Heuristic::start_move`] returned for each.
#[derive(Clone, Copy, Default)]
struct Children<S> {
    count: usize,
    moves: [(u8, u8); 4],
    started: [S; 4],
}

/// What the search keeps for the node it expands at one depth: the value and memo of each of
/// its children, and the children of those (started when they are to be expanded).
#[derive(Clone, Copy)]
struct Frame<M, S> {
    evaluated: [(u32, M); 4],
    grandchildren: [Children<S>; 4],
}

/// The state the search plays moves on.
struct Position {
    /// `moves[cell]`: the neighbours of `cell`, in the order up, left, right, down.
    moves: [[u8; 4]; MAX_CELLS],
    tiles: [u8; MAX_CELLS],
    cells: Vec<u8>,
}

impl Position {
    /// Slides `tile` from `next` onto the blank's cell `blank`.
    #[inline(always)]
    fn play(&mut self, blank: u8, next: u8, tile: u8) {
        self.tiles[blank as usize] = tile;
        self.tiles[next as usize] = 0;
        self.cells[tile as usize] = blank;
        self.cells[0] = next;
    }

    /// Slides `tile` back from `blank` to `next`.
    #[inline(always)]
    fn unplay(&mut self, blank: u8, next: u8, tile: u8) {
        self.tiles[next as usize] = tile;
        self.tiles[blank as usize] = 0;
        self.cells[tile as usize] = next;
        self.cells[0] = blank;
    }

    /// Fills `children` with the children of this state (of memo `memo`) but the one whose
    /// blank goes back to `previous_blank`, their evaluation started.
    #[inline(always)]
    fn start_children<H: Heuristic>(
        &mut self,
        heuristic: &H,
        memo: &H::Memo,
        previous_blank: u8,
        children: &mut Children<H::Started>,
    ) {
        let blank = self.cells[0];
        children.count = 0;
        for direction in 0..4 {
            let next = self.moves[blank as usize][direction];
            if next == u8::MAX || next == previous_blank {
                continue;
            }
            let tile = self.tiles[next as usize];
            self.cells[tile as usize] = blank;
            self.cells[0] = next;
            heuristic.start_move(
                &self.cells,
                tile as usize,
                next as usize,
                memo,
                &mut children.started[children.count],
            );
            self.cells[tile as usize] = next;
            self.cells[0] = blank;
            children.moves[children.count] = (next, tile);
            children.count += 1;
        }
    }
}

struct Ida<'h, H: Heuristic> {
    heuristic: &'h H,
    position: Position,
    /// `frames[d]`: the node at depth `d` on the path is `evaluated[c]` and
    /// `grandchildren[c]` of `frames[d - 1]`; `frames[0]` holds the start in its slot 0.
    frames: Vec<Frame<H::Memo, H::Started>>,
    goal_tiles: [u8; MAX_CELLS],
    n: usize,
    path: Vec<u8>,
    /// Nodes expanded and generated so far, over all iterations.
    expanded: u64,
    generated: u64,
    threshold: u32,
    next_threshold: u32,
    limits: Limits,
    /// `limits.max_nodes`, or no limit: checked before every node is generated.
    node_limit: u64,
    started: Instant,
    stopped: Option<Outcome>,
}

impl<H: Heuristic> Ida<'_, H> {
    fn is_goal(&self) -> bool {
        self.position.tiles[..self.n] == self.goal_tiles[..self.n]
    }

    /// Depth-first search below the node with value `h` and memo `memo` at depth `g`, each
    /// child evaluated just before it is visited; true when solved.
    fn search(&mut self, g: u32, h: u32, memo: &H::Memo, previous_blank: u8) -> bool {
        if h == 0 && self.is_goal() {
            return true;
        }
        self.expanded += 1;
        let blank = self.position.cells[0];
        for direction in 0..4 {
            let next = self.position.moves[blank as usize][direction];
            if next == u8::MAX || next == previous_blank {
                continue;
            }
            if self.generated >= self.node_limit {
                self.stopped = Some(Outcome::NodeBudget);
                return false;
            }
            let tile = self.position.tiles[next as usize];
            self.position.play(blank, next, tile);
            self.generated += 1;
            let (child_h, child_memo) =
                self.heuristic
                    .after_move(&self.position.cells, tile as usize, next as usize, memo);
            let f = g + 1 + child_h;
            if f <= self.threshold {
                self.path.push(tile);
                if self.search(g + 1, child_h, &child_memo, blank) {
                    return true;
                }
                self.path.pop();
            } else if f < self.next_threshold {
                self.next_threshold = f;
            }
            self.position.unplay(blank, next, tile);
            if self.generated.trailing_zeros() >= 16 && self.out_of_budget() {
                return false;
            }
            if self.stopped.is_some() {
                return false;
            }
        }
        false
    }

    /// [`Ida::search`] for heuristics that look ahead: below the node `slot` of
    /// `frames[depth]`; true when solved.
    ///
    /// The table entries a node's children need are fetched from memory while the search works
    /// on their siblings: a node finishes its children's evaluations (started by its parent),
    /// starts the children of those it will expand, then visits them in order. Nodes are
    /// counted in that order, as they would be without the look-ahead.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a depth is at most the search's bound, below 2^32"
    )]
    fn search_ahead(&mut self, depth: usize, slot: usize) -> bool {
        if self.frames[depth].evaluated[slot].0 == 0 && self.is_goal() {
            return true;
        }
        self.expanded += 1;
        if self.frames.len() == depth + 1 {
            self.frames.push(self.frames[0]);
        }
        let g = depth as u32;
        let blank = self.position.cells[0];
        let (done, ahead) = self.frames.split_at_mut(depth + 1);
        let (_, memo) = &done[depth].evaluated[slot];
        let children = &done[depth].grandchildren[slot];
        let Frame {
            evaluated,
            grandchildren,
        } = &mut ahead[0];
        let count = children.count;
        for c in 0..count {
            let (next, tile) = children.moves[c];
            self.position.play(blank, next, tile);
            let (child_h, child_memo) = &mut evaluated[c];
            *child_h = self.heuristic.finish_move(
                &self.position.cells,
                tile as usize,
                next as usize,
                &children.started[c],
                memo,
                child_memo,
            );
            if g + 1 + *child_h <= self.threshold {
                self.position.start_children(
                    self.heuristic,
                    child_memo,
                    blank,
                    &mut grandchildren[c],
                );
            }
            self.position.unplay(blank, next, tile);
        }
        for c in 0..count {
            let (next, tile) = self.frames[depth].grandchildren[slot].moves[c];
            let child_h = self.frames[depth + 1].evaluated[c].0;
            if self.generated >= self.node_limit {
                self.stopped = Some(Outcome::NodeBudget);
                return false;
            }
            self.position.play(blank, next, tile);
            self.generated += 1;
            let f = g + 1 + child_h;
            if f <= self.threshold {
                self.path.push(tile);
                if self.search_ahead(depth + 1, c) {
                    return true;
                }
                self.path.pop();
            } else if f < self.next_threshold {
                self.next_threshold = f;
            }
            self.position.unplay(blank, next, tile);
            if self.generated.trailing_zeros() >= 16 && self.out_of_budget() {
                return false;
            }
            if self.stopped.is_some() {
                return false;
            }
        }
        false
    }

    fn out_of_budget(&mut self) -> bool {
        if self.limits.max_nodes.is_some_and(|m| self.generated >= m) {
            self.stopped = Some(Outcome::NodeBudget);
        } else if self
            .limits
            .timeout
            .is_some_and(|t| self.started.elapsed() >= t)
        {
            self.stopped = Some(Outcome::Timeout);
        }
        self.stopped.is_some()
    }
}

/// IDA* from `start` to `goal` (looking ahead if the heuristic does).
pub fn ida_star<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    limits: &Limits,
) -> Result<SearchResult> {
    check_start(start, goal)?;
    let board = start.board();
    let n = board.cells();
    let mut tiles = [0u8; MAX_CELLS];
    tiles[..n].copy_from_slice(start.tiles());
    let mut goal_tiles = [0u8; MAX_CELLS];
    goal_tiles[..n].copy_from_slice(PuzzleState::goal(board, goal).tiles());
    let cells = start.cells();
    let (h0, memo) = heuristic.evaluate(&cells)?;
    let mut position = Position {
        moves: move_table(board),
        tiles,
        cells,
    };
    let mut root = Frame {
        evaluated: [(h0, memo); 4],
        grandchildren: [Children::default(); 4],
    };
    position.start_children(heuristic, &memo, u8::MAX, &mut root.grandchildren[0]);
    let mut frames = Vec::with_capacity(128);
    frames.push(root);
    let mut ida = Ida {
        heuristic,
        position,
        frames,
        goal_tiles,
        n,
        path: Vec::new(),
        expanded: 0,
        generated: 0,
        threshold: h0,
        next_threshold: u32::MAX,
        limits: limits.clone(),
        node_limit: limits.max_nodes.unwrap_or(u64::MAX),
        started: Instant::now(),
        stopped: None,
    };
    let mut per_iteration = Vec::new();
    let solved = loop {
        ida.next_threshold = u32::MAX;
        let (expanded, generated) = (ida.expanded, ida.generated);
        let found = if heuristic.looks_ahead() {
            ida.search_ahead(0, 0)
        } else {
            ida.search(0, h0, &memo, u8::MAX)
        };
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
