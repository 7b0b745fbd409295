//! IDA* on one instance across threads: each iteration expands the start breadth-first to a
//! frontier of subtree roots, then searches the subtrees on a thread pool, each with the
//! sequential depth-first search of [`super::ida`]. The threads take the subtrees from a shared
//! queue in the frontier's order, each the next one left when it is free (a thread that
//! finishes early takes over the work that is left, which balances the load as stealing
//! would), so that the iteration that finds the goal searches little past it.
//!
//! The frontier keeps the subtrees in the order the sequential search visits them, and the
//! breadth-first part expands, generates and prunes exactly as the depth-first one does (the
//! same move order, move-pruning machine and bound test `g + 1 + h <= bound`). So an iteration
//! that does not find the goal counts the same nodes as the sequential search's, and the next
//! bound, the least `f` over the bound in every part, is the same. In the iteration that finds
//! the goal, the solution kept is the one of the first subtree in that order that has one: a
//! subtree that finds one cancels only the subtrees after it, so the moves are the sequential
//! search's whatever the number of threads, and only that iteration's counts depend on the
//! threads (they are reported as measured).
//!
//! The node budget and the timeout are shared: each subtree adds its nodes to a common count
//! and reads the budgets every 2^16 nodes it generates, and a subtree starts with the budget
//! left when it starts. On one thread the subtrees run in order and the budget is exact; on
//! several, a search out of budget may overshoot by up to 2^16 nodes per thread.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use tilepdb_common::{Goal, MAX_CELLS, PuzzleState};

use super::ida::{Ida, Position};
use super::{IterationCounts, Limits, Outcome, SearchResult, check_start, move_table, replay};
use crate::error::{Error, Result};
use crate::heuristic::Heuristic;
use crate::move_pruning::{FORBIDDEN, MovePruning};

/// Subtree roots an iteration aims for per thread: enough for the work to balance.
const ROOTS_PER_THREAD: usize = 64;

/// The deepest level the breadth-first part expands to, however few roots it found.
const MAX_FRONTIER_DEPTH: u32 = 24;

/// What the subtrees of a parallel search share: the nodes generated so far (over every
/// iteration), why the search stopped, and the first subtree (in order) that found a solution.
pub(super) struct Shared {
    generated: AtomicU64,
    /// 0, or the [`Outcome`] that stopped the search ([`stop_code`]).
    stop: AtomicU8,
    solved_at: AtomicUsize,
}

/// `outcome` as [`Shared::stop`] keeps it.
fn stop_code(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Solved => 1,
        Outcome::NodeBudget => 2,
        Outcome::Timeout => 3,
    }
}

impl Shared {
    fn stopped(&self) -> Option<Outcome> {
        match self.stop.load(Ordering::Relaxed) {
            2 => Some(Outcome::NodeBudget),
            3 => Some(Outcome::Timeout),
            _ => None,
        }
    }

    /// Records that the search stopped for `outcome`, unless it stopped for another reason
    /// first.
    fn stop(&self, outcome: Outcome) {
        let _ =
            self.stop
                .compare_exchange(0, stop_code(outcome), Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// One subtree's tie to the others: [`Ida`] asks it every 2^16 nodes whether to go on.
pub(super) struct TaskLink<'s> {
    shared: &'s Shared,
    /// The subtree's place in the frontier.
    task: usize,
    /// The subtree's nodes already added to the shared count.
    flushed: u64,
}

impl TaskLink<'_> {
    /// Adds the nodes generated since the last call to the shared count, then says why the
    /// subtree is to stop, if it is: out of nodes or time (for every subtree), or
    /// [`Outcome::Solved`] when a subtree before it found a solution.
    pub(super) fn check(
        &mut self,
        generated: u64,
        limits: &Limits,
        started: Instant,
    ) -> Option<Outcome> {
        let total = self.flush(generated);
        if let Some(outcome) = self.shared.stopped() {
            return Some(outcome);
        }
        if self.shared.solved_at.load(Ordering::Relaxed) < self.task {
            return Some(Outcome::Solved);
        }
        let outcome = if limits.max_nodes.is_some_and(|m| total >= m) {
            Outcome::NodeBudget
        } else if limits.timeout.is_some_and(|t| started.elapsed() >= t) {
            Outcome::Timeout
        } else {
            return None;
        };
        self.shared.stop(outcome);
        Some(outcome)
    }

    /// Adds the nodes generated since the last flush to the shared count; returns the count.
    fn flush(&mut self, generated: u64) -> u64 {
        let delta = generated - self.flushed;
        self.flushed = generated;
        self.shared.generated.fetch_add(delta, Ordering::Relaxed) + delta
    }
}

/// A node of the breadth-first part: a subtree's root once the frontier is complete.
#[derive(Clone)]
struct Node<M> {
    tiles: [u8; MAX_CELLS],
    cells: Vec<u8>,
    h: u32,
    memo: M,
    /// The move-pruning machine's state.
    state: u32,
    /// The node's depth.
    g: u32,
    /// The tiles slid from the start to here.
    path: Vec<u8>,
}

/// What an iteration's part (the frontier, a subtree) counted and found.
#[derive(Default)]
struct Part {
    expanded: u64,
    generated: u64,
    /// The least `f` over the bound met.
    next_bound: u32,
    /// The full solution, when the part found one.
    solution: Option<Vec<u8>>,
    /// Why the part stopped early (`Solved`: cancelled by an earlier subtree's solution).
    stopped: Option<Outcome>,
}

/// What every iteration searches with.
struct Context<'a, H: Heuristic> {
    heuristic: &'a H,
    moves: [[u8; 4]; MAX_CELLS],
    goal_tiles: [u8; MAX_CELLS],
    machine: &'a [u32],
    limits: &'a Limits,
    started: Instant,
    shared: Shared,
    /// Subtree roots to aim for.
    roots: usize,
}

/// IDA* from `start` to `goal` with each iteration's subtrees searched on `threads` threads
/// (0: one per core), skipping the moves `pruning` forbids; `pruning` must be for `start`'s
/// board.
///
/// The moves found are those of [`ida_star_pruned`](super::ida_star_pruned), and so are the
/// counts of every iteration but the last (the module's documentation says why).
///
/// ```
/// use tilepdb_common::{Board, Goal, PuzzleState};
/// use tilepdb_solver::heuristic::Manhattan;
/// use tilepdb_solver::move_pruning::MovePruning;
/// use tilepdb_solver::search::{Limits, ida_star, ida_star_parallel};
/// let board: Board = "3x3".parse().unwrap();
/// let start = PuzzleState::parse(board, "8 7 6 5 4 3 2 1 0").unwrap();
/// let h = Manhattan::new(board, Goal::BlankFirst);
/// let undo = MovePruning::undo_only(board);
/// let limits = Limits::default();
/// let parallel = ida_star_parallel(&start, Goal::BlankFirst, &h, &limits, &undo, 2).unwrap();
/// let sequential = ida_star(&start, Goal::BlankFirst, &h, &limits).unwrap();
/// assert_eq!(parallel.moves, sequential.moves);
/// let last = sequential.per_iteration.len() - 1;
/// assert_eq!(parallel.per_iteration[..last], sequential.per_iteration[..last]);
/// ```
pub fn ida_star_parallel<H: Heuristic>(
    start: &PuzzleState,
    goal: Goal,
    heuristic: &H,
    limits: &Limits,
    pruning: &MovePruning,
    threads: usize,
) -> Result<SearchResult> {
    check_start(start, goal)?;
    let board = start.board();
    pruning.check_board(board)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Unsupported(format!("starting the search's threads: {e}")))?;
    let n = board.cells();
    let cells = start.cells();
    let (h, memo) = heuristic.evaluate(&cells)?;
    let mut root = Node {
        tiles: [0u8; MAX_CELLS],
        cells,
        h,
        memo,
        state: 0,
        g: 0,
        path: Vec::new(),
    };
    root.tiles[..n].copy_from_slice(start.tiles());
    let mut goal_tiles = [0u8; MAX_CELLS];
    goal_tiles[..n].copy_from_slice(PuzzleState::goal(board, goal).tiles());
    let context = Context {
        heuristic,
        moves: move_table(board),
        goal_tiles,
        machine: pruning.transitions(),
        limits,
        started: Instant::now(),
        shared: Shared {
            generated: AtomicU64::new(0),
            stop: AtomicU8::new(0),
            solved_at: AtomicUsize::new(usize::MAX),
        },
        roots: ROOTS_PER_THREAD * pool.current_num_threads(),
    };
    let mut per_iteration = Vec::new();
    let mut bound = root.h;
    let (solution, stopped) = loop {
        let part = context.iteration(&root, bound, &pool);
        per_iteration.push(IterationCounts {
            bound,
            expanded: part.expanded,
            generated: part.generated,
        });
        if part.solution.is_some() || part.stopped.is_some() {
            break (part.solution, part.stopped);
        }
        if part.next_bound == u32::MAX {
            break (None, None);
        }
        bound = part.next_bound;
    };
    let result = SearchResult {
        outcome: match (&solution, stopped) {
            (Some(_), _) => Outcome::Solved,
            (None, stopped) => stopped.unwrap_or(Outcome::NodeBudget),
        },
        moves: solution.unwrap_or_default(),
        expanded: per_iteration.iter().map(|i| i.expanded).sum(),
        generated: per_iteration.iter().map(|i| i.generated).sum(),
        initial_h: root.h,
        iterations: u32::try_from(per_iteration.len()).unwrap_or(u32::MAX),
        per_iteration,
        seconds: context.started.elapsed().as_secs_f64(),
    };
    if result.outcome == Outcome::Solved {
        replay(start, goal, &result.moves)?;
    }
    Ok(result)
}

impl<H: Heuristic> Context<'_, H> {
    /// One iteration under `bound`: the frontier, then its subtrees on `pool`.
    fn iteration(&self, root: &Node<H::Memo>, bound: u32, pool: &rayon::ThreadPool) -> Part {
        self.shared.solved_at.store(usize::MAX, Ordering::Relaxed);
        let (frontier, mut part) = self.frontier(root, bound);
        self.shared
            .generated
            .fetch_add(part.generated, Ordering::Relaxed);
        if part.stopped.is_some() {
            return part;
        }
        let subtrees = self.subtrees(frontier, bound, pool);
        for subtree in subtrees {
            part.expanded += subtree.expanded;
            part.generated += subtree.generated;
            part.next_bound = part.next_bound.min(subtree.next_bound);
            if part.solution.is_some() || part.stopped.is_some() {
                // Past the first solution or stop, in order: the subtrees' counts only.
                continue;
            }
            match subtree.stopped {
                Some(Outcome::Solved) | None => part.solution = subtree.solution,
                Some(stop) => part.stopped = Some(stop),
            }
        }
        if part.solution.is_none() && part.stopped.is_none() {
            part.stopped = self.shared.stopped();
        }
        part
    }

    /// Searches the subtrees of `frontier` under `bound` on every thread of `pool`; returns
    /// their parts in the frontier's order. The threads take the subtrees in that order, each
    /// the next one left when it is free: in the iteration that finds the goal, the work past
    /// the solution's subtree is the subtrees already started when it was found.
    fn subtrees(
        &self,
        frontier: Vec<Node<H::Memo>>,
        bound: u32,
        pool: &rayon::ThreadPool,
    ) -> Vec<Part> {
        let count = frontier.len();
        let queue = Mutex::new(frontier.into_iter().enumerate());
        let next = || queue.lock().map_or(None, |mut q| q.next());
        let mut done: Vec<(usize, Part)> = pool
            .broadcast(|_| {
                let mut mine = Vec::new();
                while let Some((task, node)) = next() {
                    mine.push((task, self.subtree(task, &node, bound)));
                }
                mine
            })
            .into_iter()
            .flatten()
            .collect();
        debug_assert_eq!(done.len(), count);
        done.sort_unstable_by_key(|&(task, _)| task);
        done.into_iter().map(|(_, part)| part).collect()
    }

    fn is_goal(&self, node: &Node<H::Memo>) -> bool {
        let n = node.cells.len();
        node.h == 0 && node.tiles[..n] == self.goal_tiles[..n]
    }

    /// Expands `root` breadth-first under `bound`, level by level, until a level holds enough
    /// subtree roots (or a goal, or none) or is [`MAX_FRONTIER_DEPTH`] deep; the level is
    /// returned with what the expansions counted.
    fn frontier(&self, root: &Node<H::Memo>, bound: u32) -> (Vec<Node<H::Memo>>, Part) {
        let mut part = Part {
            next_bound: u32::MAX,
            ..Part::default()
        };
        let base = self.shared.generated.load(Ordering::Relaxed);
        let node_limit = self.limits.max_nodes.unwrap_or(u64::MAX);
        let mut level = vec![root.clone()];
        let mut depth = 0;
        while level.len() < self.roots
            && depth < MAX_FRONTIER_DEPTH
            && !level.is_empty()
            && !level.iter().any(|node| self.is_goal(node))
        {
            if self
                .limits
                .timeout
                .is_some_and(|t| self.started.elapsed() >= t)
            {
                part.stopped = Some(Outcome::Timeout);
                return (level, part);
            }
            let mut next = Vec::with_capacity(4 * level.len());
            for node in &level {
                part.expanded += 1;
                let blank = node.cells[0];
                for direction in 0..4 {
                    let to = self.moves[blank as usize][direction];
                    let state = self.machine[4 * node.state as usize + direction];
                    if to == u8::MAX || state == FORBIDDEN {
                        continue;
                    }
                    if base + part.generated >= node_limit {
                        part.stopped = Some(Outcome::NodeBudget);
                        return (next, part);
                    }
                    part.generated += 1;
                    let child = self.child(node, blank, to, state);
                    let f = depth + 1 + child.h;
                    if f <= bound {
                        next.push(child);
                    } else {
                        part.next_bound = part.next_bound.min(f);
                    }
                }
            }
            level = next;
            depth += 1;
        }
        (level, part)
    }

    /// The child of `node` whose blank moved from `blank` to `to` (the machine then in
    /// `state`), evaluated.
    fn child(&self, node: &Node<H::Memo>, blank: u8, to: u8, state: u32) -> Node<H::Memo> {
        let tile = node.tiles[to as usize];
        let mut child = node.clone();
        child.tiles[blank as usize] = tile;
        child.tiles[to as usize] = 0;
        child.cells[tile as usize] = blank;
        child.cells[0] = to;
        let (h, memo) =
            self.heuristic
                .after_move(&child.cells, tile as usize, to as usize, &node.memo);
        child.h = h;
        child.memo = memo;
        child.state = state;
        child.g += 1;
        child.path.push(tile);
        child
    }

    /// Searches the subtree of `node`, the frontier's `task`-th, under `bound`.
    fn subtree(&self, task: usize, node: &Node<H::Memo>, bound: u32) -> Part {
        let mut part = Part {
            next_bound: u32::MAX,
            ..Part::default()
        };
        if let Some(stop) = self.shared.stopped() {
            part.stopped = Some(stop);
            return part;
        }
        if self.shared.solved_at.load(Ordering::Relaxed) < task {
            part.stopped = Some(Outcome::Solved);
            return part;
        }
        let position = Position {
            moves: self.moves,
            tiles: node.tiles,
            cells: node.cells.clone(),
            machine: self.machine,
        };
        let mut ida = Ida::new(
            self.heuristic,
            position,
            (node.h, node.memo, node.state),
            node.g,
            self.goal_tiles,
            self.limits,
            self.started,
        );
        ida.threshold = bound;
        ida.path.clone_from(&node.path);
        let left = self.shared.generated.load(Ordering::Relaxed);
        ida.node_limit = self
            .limits
            .max_nodes
            .map_or(u64::MAX, |m| m.saturating_sub(left));
        ida.link = Some(TaskLink {
            shared: &self.shared,
            task,
            flushed: 0,
        });
        let found = ida.search_root(node.h, &node.memo, node.state);
        if let Some(mut link) = ida.link.take() {
            link.flush(ida.generated);
        }
        if found {
            self.shared.solved_at.fetch_min(task, Ordering::Relaxed);
            part.solution = Some(std::mem::take(&mut ida.path));
        } else if let Some(stop) = ida.stopped.filter(|&s| s != Outcome::Solved) {
            self.shared.stop(stop);
        }
        part.expanded = ida.expanded;
        part.generated = ida.generated;
        part.next_bound = ida.next_threshold;
        part.stopped = ida.stopped;
        part
    }
}
