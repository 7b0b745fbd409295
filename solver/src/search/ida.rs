//! IDA*'s depth-first search under a bound, with or without the heuristic's look-ahead, and
//! the move-pruning machine carried per node.

use std::time::Instant;

use tilepdb_common::MAX_CELLS;

use super::parallel::TaskLink;
use super::{Limits, Outcome};
use crate::heuristic::Heuristic;
use crate::move_pruning::FORBIDDEN;

/// The children of a node: the cell the blank moves to and the tile that slides, the
/// move-pruning machine's state after the move, and what [`Heuristic::start_move`] returned
/// for each.
#[derive(Clone, Copy, Default)]
pub(super) struct Children<S> {
    pub(super) count: usize,
    moves: [(u8, u8); 4],
    machine: [u32; 4],
    started: [S; 4],
}

/// What the search keeps for the node it expands at one depth: the value and memo of each of
/// its children, and the children of those (started when they are to be expanded).
#[derive(Clone, Copy)]
pub(super) struct Frame<M, S> {
    pub(super) evaluated: [(u32, M); 4],
    pub(super) grandchildren: [Children<S>; 4],
}

/// The state the search plays moves on.
pub(super) struct Position<'m> {
    /// `moves[cell]`: the neighbours of `cell`, in the order up, left, right, down.
    pub(super) moves: [[u8; 4]; MAX_CELLS],
    pub(super) tiles: [u8; MAX_CELLS],
    pub(super) cells: Vec<u8>,
    /// The move-pruning machine: `machine[4 * state + direction]`, or [`FORBIDDEN`].
    pub(super) machine: &'m [u32],
}

impl Position<'_> {
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

    /// Fills `children` with the children of this state (of memo `memo`, machine state
    /// `state`) but those the machine forbids, their evaluation started for values compared
    /// with `limit` ([`Heuristic::start_move_within`]).
    #[inline(always)]
    pub(super) fn start_children<H: Heuristic>(
        &mut self,
        heuristic: &H,
        memo: &H::Memo,
        state: u32,
        children: &mut Children<H::Started>,
        limit: u32,
    ) {
        let blank = self.cells[0];
        children.count = 0;
        for direction in 0..4 {
            let next = self.moves[blank as usize][direction];
            let child_state = self.machine[4 * state as usize + direction];
            if next == u8::MAX || child_state == FORBIDDEN {
                continue;
            }
            let tile = self.tiles[next as usize];
            self.cells[tile as usize] = blank;
            self.cells[0] = next;
            heuristic.start_move_within(
                &self.cells,
                tile as usize,
                next as usize,
                memo,
                &mut children.started[children.count],
                limit,
            );
            self.cells[tile as usize] = next;
            self.cells[0] = blank;
            children.moves[children.count] = (next, tile);
            children.machine[children.count] = child_state;
            children.count += 1;
        }
    }
}

pub(super) struct Ida<'h, 'm, H: Heuristic> {
    pub(super) heuristic: &'h H,
    pub(super) position: Position<'m>,
    /// `frames[d]`: the node at depth `d` on the path is `evaluated[c]` and
    /// `grandchildren[c]` of `frames[d - 1]`; `frames[0]` holds the start in its slot 0.
    pub(super) frames: Vec<Frame<H::Memo, H::Started>>,
    pub(super) goal_tiles: [u8; MAX_CELLS],
    pub(super) n: usize,
    pub(super) path: Vec<u8>,
    /// Nodes expanded and generated so far, over all iterations.
    pub(super) expanded: u64,
    pub(super) generated: u64,
    pub(super) threshold: u32,
    pub(super) next_threshold: u32,
    pub(super) limits: Limits,
    /// `limits.max_nodes`, or no limit: checked before every node is generated.
    pub(super) node_limit: u64,
    pub(super) started: Instant,
    /// Why the search stopped early: out of nodes or time, or (a subtree of a parallel
    /// search) [`Outcome::Solved`] when a subtree before it in order found a solution.
    pub(super) stopped: Option<Outcome>,
    /// The depth of the node the search starts from (0 but in a parallel search's subtrees).
    pub(super) root_depth: u32,
    /// A parallel search's subtree: the budgets and the cancellation its tasks share.
    pub(super) link: Option<TaskLink<'h>>,
}

impl<'h, 'm, H: Heuristic> Ida<'h, 'm, H> {
    /// A search from `position` (the node of value `h` and memo `memo` at depth
    /// `root_depth`, the move-pruning machine in `state`) under `limits`, timed from
    /// `started`; its bound is set before each iteration.
    pub(super) fn new(
        heuristic: &'h H,
        mut position: Position<'m>,
        (h, memo, state): (u32, H::Memo, u32),
        root_depth: u32,
        goal_tiles: [u8; MAX_CELLS],
        limits: &Limits,
        started: Instant,
    ) -> Self {
        let mut root = Frame {
            evaluated: [(h, memo); 4],
            grandchildren: [Children::default(); 4],
        };
        // The bound is not set yet: every lookup started.
        position.start_children(
            heuristic,
            &memo,
            state,
            &mut root.grandchildren[0],
            u32::MAX,
        );
        let mut frames = Vec::with_capacity(128);
        frames.push(root);
        Ida {
            heuristic,
            n: position.cells.len(),
            position,
            frames,
            goal_tiles,
            path: Vec::new(),
            expanded: 0,
            generated: 0,
            threshold: h,
            next_threshold: u32::MAX,
            limits: limits.clone(),
            node_limit: limits.max_nodes.unwrap_or(u64::MAX),
            started,
            stopped: None,
            root_depth,
            link: None,
        }
    }

    /// One iteration below the root (of value `h`, memo `memo`, machine state `state`), with
    /// the look-ahead if the heuristic has it; true when solved.
    pub(super) fn search_root(&mut self, h: u32, memo: &H::Memo, state: u32) -> bool {
        if self.heuristic.looks_ahead() {
            self.search_ahead(0, 0)
        } else {
            self.search(self.root_depth, h, memo, state)
        }
    }

    fn is_goal(&self) -> bool {
        self.position.tiles[..self.n] == self.goal_tiles[..self.n]
    }

    /// Depth-first search below the node with value `h` and memo `memo` at depth `g`, each
    /// child evaluated just before it is visited (only as far as it takes to know that it is
    /// pruned, [`Ida::child_limit`]), the machine in `state`; true when solved.
    pub(super) fn search(&mut self, g: u32, h: u32, memo: &H::Memo, state: u32) -> bool {
        if h == 0 && self.is_goal() {
            return true;
        }
        self.expanded += 1;
        let blank = self.position.cells[0];
        for direction in 0..4 {
            let next = self.position.moves[blank as usize][direction];
            let child_state = self.position.machine[4 * state as usize + direction];
            if next == u8::MAX || child_state == FORBIDDEN {
                continue;
            }
            if self.generated >= self.node_limit {
                self.stopped = Some(Outcome::NodeBudget);
                return false;
            }
            let tile = self.position.tiles[next as usize];
            self.position.play(blank, next, tile);
            self.generated += 1;
            let mut started = H::Started::default();
            let cells = &self.position.cells;
            self.heuristic
                .start_move(cells, tile as usize, next as usize, memo, &mut started);
            let mut child_memo = *memo;
            let child_h = self.heuristic.finish_move_within(
                cells,
                tile as usize,
                next as usize,
                &started,
                memo,
                &mut child_memo,
                self.child_limit(g),
            );
            let f = g + 1 + child_h;
            if f <= self.threshold {
                self.path.push(tile);
                if self.search(g + 1, child_h, &child_memo, child_state) {
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
    /// counted in that order, as they would be without the look-ahead. A child's evaluation
    /// stops once it is known to be pruned ([`Ida::child_limit`]); its parent starts only what
    /// is likeliest to prune it ([`Heuristic::start_move_within`]), and the children that
    /// this does not settle are finished in a second pass over them
    /// ([`Heuristic::probe_move`], [`Heuristic::resume_move`]), the rest of their entries
    /// fetched meanwhile.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a depth is at most the search's bound, below 2^32"
    )]
    pub(super) fn search_ahead(&mut self, depth: usize, slot: usize) -> bool {
        if self.frames[depth].evaluated[slot].0 == 0 && self.is_goal() {
            return true;
        }
        self.expanded += 1;
        if self.frames.len() == depth + 1 {
            self.frames.push(self.frames[0]);
        }
        let g = self.root_depth + depth as u32;
        let limit = self.child_limit(g);
        let grandchild_limit = self.child_limit(g + 1);
        let blank = self.position.cells[0];
        let (done, ahead) = self.frames.split_at_mut(depth + 1);
        let Frame {
            evaluated: done_evaluated,
            grandchildren: done_grandchildren,
        } = &mut done[depth];
        let (_, memo) = &done_evaluated[slot];
        let children = &mut done_grandchildren[slot];
        let Frame {
            evaluated,
            grandchildren,
        } = &mut ahead[0];
        let count = children.count;
        // Children that the first pass leaves unsettled (bit `c` for child `c`).
        let mut unsettled = 0u32;
        for pass in 0..2 {
            for c in 0..count {
                if pass == 1 && unsettled & (1 << c) == 0 {
                    continue;
                }
                let (next, tile) = children.moves[c];
                self.position.play(blank, next, tile);
                let (child_h, child_memo) = &mut evaluated[c];
                let cells = &self.position.cells;
                let value = if pass == 0 {
                    self.heuristic.probe_move(
                        cells,
                        tile as usize,
                        next as usize,
                        &mut children.started[c],
                        memo,
                        child_memo,
                        limit,
                    )
                } else {
                    Some(self.heuristic.resume_move(
                        cells,
                        tile as usize,
                        next as usize,
                        &children.started[c],
                        memo,
                        child_memo,
                        limit,
                    ))
                };
                if let Some(h) = value {
                    *child_h = h;
                    if g + 1 + h <= self.threshold {
                        self.position.start_children(
                            self.heuristic,
                            child_memo,
                            children.machine[c],
                            &mut grandchildren[c],
                            grandchild_limit,
                        );
                    }
                } else {
                    unsettled |= 1 << c;
                }
                self.position.unplay(blank, next, tile);
            }
            if unsettled == 0 {
                break;
            }
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

    /// The limit for the value of a child of a node at depth `g`
    /// ([`Heuristic::finish_move_within`]): a child of larger value is pruned (`g + 1 + h`
    /// above the bound) and leaves the next bound as it is (`g + 1 + h` at least
    /// `next_threshold`, which only decreases), so its exact value is not needed.
    #[inline(always)]
    fn child_limit(&self, g: u32) -> u32 {
        self.threshold
            .max(self.next_threshold.saturating_sub(1))
            .saturating_sub(g + 1)
    }

    fn out_of_budget(&mut self) -> bool {
        if let Some(link) = &mut self.link {
            self.stopped = link.check(self.generated, &self.limits, self.started);
            return self.stopped.is_some();
        }
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
