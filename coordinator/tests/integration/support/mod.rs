//! Naive, independently written helpers shared by the integration tests: board geometry, goal
//! cells, the placement rank straight from its formula, and a 0-1 breadth-first search over
//! hash maps. Nothing here calls tilepdb's ranking, region, successor or board code, so the
//! tests that compare these helpers with the engine compare two independent implementations.

#![expect(
    clippy::cast_possible_truncation,
    reason = "the oracle indexes tables by u64 ranks, which index arrays in memory, and moves cells (below 25) between u8, u32 and usize"
)]
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};

/// A board of `width` columns and `height` rows, cells numbered row-major from 0.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    pub width: usize,
    pub height: usize,
}

impl Grid {
    pub fn new(width: usize, height: usize) -> Grid {
        Grid { width, height }
    }

    pub fn cells(&self) -> usize {
        self.width * self.height
    }

    /// The cells orthogonally next to `cell`, from row and column arithmetic.
    pub fn neighbours(&self, cell: usize) -> Vec<usize> {
        let (row, col) = (cell / self.width, cell % self.width);
        let mut out = Vec::with_capacity(4);
        if row > 0 {
            out.push(cell - self.width);
        }
        if row + 1 < self.height {
            out.push(cell + self.width);
        }
        if col > 0 {
            out.push(cell - 1);
        }
        if col + 1 < self.width {
            out.push(cell + 1);
        }
        out
    }

    /// Manhattan distance between two cells.
    pub fn distance(&self, a: usize, b: usize) -> usize {
        let (ra, ca) = (a / self.width, a % self.width);
        let (rb, cb) = (b / self.width, b % self.width);
        ra.abs_diff(rb) + ca.abs_diff(cb)
    }
}

/// Which goal: `true` for blank-first (blank on 0, tile t on t), `false` for blank-last
/// (tile t on t - 1, blank on the last cell).
pub fn goal_cell(blank_first: bool, tile: usize, n: usize) -> usize {
    match (blank_first, tile) {
        (true, t) => t,
        (false, 0) => n - 1,
        (false, t) => t - 1,
    }
}

/// `P(a, b) = a! / (a - b)!`.
pub fn falling(a: u64, b: u64) -> u64 {
    (0..b).map(|i| a - i).product()
}

/// The rank of a placement, straight from DESIGN section 3:
/// `sum_i d_i * P(n-1-i, k-1-i)`, `d_i` = cells below `p_i` not among `p_1 .. p_(i-1)`.
pub fn naive_rank(placement: &[u8], n: usize) -> u64 {
    let k = placement.len() as u64;
    let mut rank = 0;
    for (i, &cell) in placement.iter().enumerate() {
        let earlier = &placement[..i];
        let digit = (0..cell).filter(|c| !earlier.contains(c)).count() as u64;
        rank += digit * falling(n as u64 - 1 - i as u64, k - 1 - i as u64);
    }
    rank
}

/// The index of `blank` among the cells not in `placement`, in increasing order.
pub fn free_index(placement: &[u8], blank: u8) -> u64 {
    (0..blank).filter(|c| !placement.contains(c)).count() as u64
}

/// A state of the blank-aware abstraction: the cells of the pattern tiles and the blank's cell.
pub type BlankState = (Vec<u8>, u8);

/// 0-1 BFS over (placement, blank cell) from `start`: moving the blank onto a free cell costs
/// 0, swapping it with a pattern tile (the tile lands on the blank's cell) costs 1.
pub fn blank_search(grid: Grid, start: BlankState) -> HashMap<BlankState, u8> {
    let mut dist: HashMap<BlankState, u8> = HashMap::new();
    let mut deque: VecDeque<(BlankState, u8)> = VecDeque::new();
    dist.insert(start.clone(), 0);
    deque.push_back((start, 0));
    while let Some((state, d)) = deque.pop_front() {
        if dist[&state] < d {
            continue; // a stale entry: a cheaper path was found after this was queued
        }
        let (placement, blank) = &state;
        for next_blank in grid.neighbours(*blank as usize) {
            let next_blank = next_blank as u8;
            let (next, cost) = match placement.iter().position(|&c| c == next_blank) {
                None => ((placement.clone(), next_blank), 0),
                Some(tile) => {
                    let mut moved = placement.clone();
                    moved[tile] = *blank;
                    ((moved, next_blank), 1)
                }
            };
            let nd = d + cost;
            if dist.get(&next).is_none_or(|&old| nd < old) {
                dist.insert(next.clone(), nd);
                if cost == 0 {
                    deque.push_front((next, nd));
                } else {
                    deque.push_back((next, nd));
                }
            }
        }
    }
    dist
}

/// BFS over placements: a pattern tile steps to any adjacent cell free of pattern tiles.
pub fn placement_search(grid: Grid, start: Vec<u8>) -> HashMap<Vec<u8>, u8> {
    let mut dist: HashMap<Vec<u8>, u8> = HashMap::new();
    let mut queue: VecDeque<Vec<u8>> = VecDeque::new();
    dist.insert(start.clone(), 0);
    queue.push_back(start);
    while let Some(placement) = queue.pop_front() {
        let d = dist[&placement];
        for (tile, &from) in placement.iter().enumerate() {
            for to in grid.neighbours(from as usize) {
                let to = to as u8;
                if placement.contains(&to) {
                    continue;
                }
                let mut moved = placement.clone();
                moved[tile] = to;
                if !dist.contains_key(&moved) {
                    dist.insert(moved.clone(), d + 1);
                    queue.push_back(moved);
                }
            }
        }
    }
    dist
}

/// Every placement of `k` tiles on `n` cells (k-permutations), in no particular order.
pub fn all_placements(n: usize, k: usize) -> Vec<Vec<u8>> {
    fn go(n: usize, k: usize, current: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if current.len() == k {
            out.push(current.clone());
            return;
        }
        for c in 0..n as u8 {
            if !current.contains(&c) {
                current.push(c);
                go(n, k, current, out);
                current.pop();
            }
        }
    }
    let mut out = Vec::new();
    let mut current = Vec::with_capacity(k);
    go(n, k, &mut current, &mut out);
    out
}
