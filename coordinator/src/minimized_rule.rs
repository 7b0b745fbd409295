//! The check of a `minimized` table on its own ([`check_minimized_rule`]), walking the
//! placements by (set of cells, order of the tiles on them) as the region index does: a
//! pattern tile's move changes the set the same way for every order, so the child set and the
//! order each order goes to are worked out once per (set, move), and the children of all
//! orders are read from one contiguous block of the values put in that order.

#![allow(
    clippy::cast_possible_truncation,
    reason = "placements are u64 indices into arrays that memory holds"
)]

use rayon::prelude::*;
use tilepdb_common::region_index::{OrderMoves, RegionIndex, rank_set};
use tilepdb_common::{BlankRule, StateSpace};
use tilepdb_worker::region_expand::positions;

use crate::bellman::bellman_rule;
use crate::check::{check_unreached_count, fail, set_chunks, set_manhattan};
use crate::error::Result;
use crate::merge::UNREACHED;

/// Checks a `minimized` table on its own. With `d(p, r)` the distance of placement `p` with
/// the blank in its region `r`, an entry is `h(p) = min_r d(p, r)`, so:
///
/// * the goal placement has 0, every other reached placement more;
/// * `h(p) >= 1 + min h(p')` over the placements `p'` one pattern-tile move away (the move
///   that starts a shortest path from `p`'s best region reaches some `p'`);
/// * where the free cells of `p` and of every such `p'` are one region each, `d = h` for all
///   of them and the Bellman rule `h(p) = 1 + min h(p')` holds exactly.
///
/// Unreached entries (a pattern of every tile: the other parity) must have only unreached
/// neighbours. A value raised at a placement whose blank has several regions can pass.
///
/// Every reached entry is also checked to be at least its Manhattan distance, with an even
/// difference, and the unreached entries to be those of the other parity of a pattern of every
/// tile ([`crate::check::check_lower_bound`]'s facts, in the same walk).
pub fn check_minimized_rule(space: &StateSpace, values: &[u8]) -> Result<()> {
    if space.rule() != BlankRule::Minimized {
        return Err(fail(space, "not a minimized table".into()));
    }
    if values.len() as u64 != space.entries() {
        return Err(fail(
            space,
            format!("{} values for {} entries", values.len(), space.entries()),
        ));
    }
    check_unreached_count(space, values)?;
    let index = space.region_index()?;
    let moves = OrderMoves::new(index.k());
    let by_set = in_set_order(space, &index, values);
    let board = space.board();
    let all = board.all_cells();
    let f = index.orders() as usize;
    let goal = index.placement_index(space.goal_cells()) as usize;
    let one_region =
        |free: u32| free == 0 || board.region(free.trailing_zeros() as usize, free) == free;
    let sets = index.sets();
    let chunks = set_chunks(sets);
    chunks.par_iter().try_for_each(|sets| {
        let mut least = vec![UNREACHED; f];
        let mut any_unreached = vec![false; f];
        let mut distances = Vec::with_capacity(f);
        for c in sets.clone() {
            let set = index.set_mask(c);
            let free = all & !set;
            set_manhattan(space, set, &mut distances);
            least.fill(UNREACHED);
            any_unreached.fill(false);
            let mut exact = one_region(free);
            let mut movers = set;
            while movers != 0 {
                let from = movers.trailing_zeros() as usize;
                movers &= movers - 1;
                let mut targets = board.neighbours(from) & free;
                while targets != 0 {
                    let to = targets.trailing_zeros() as usize;
                    targets &= targets - 1;
                    let child_set = set ^ (1 << from) ^ (1 << to);
                    exact &= one_region(free ^ (1 << from) ^ (1 << to));
                    let base = rank_set(child_set) as usize * f;
                    let children = &by_set[base..base + f];
                    let (pa, pb) = positions(set, child_set, from, to);
                    let row = moves.row(pa, pb);
                    for (o, (l, u)) in least.iter_mut().zip(any_unreached.iter_mut()).enumerate() {
                        let moved = match row {
                            Some(row) => usize::from(row[o]),
                            None => moves.moved(pa, pb, o as u64) as usize,
                        };
                        let v = children[moved];
                        *l = (*l).min(v);
                        *u |= v == UNREACHED;
                    }
                }
            }
            let first = c as usize * f;
            for o in 0..f {
                let (h, least, any_unreached) = (by_set[first + o], least[o], any_unreached[o]);
                let why = |why: String| {
                    let cells = index.placement_cells(c, o as u64);
                    fail(space, format!("placement {:?}: {why}", &cells[..index.k()]))
                };
                let m = distances[o];
                if h != UNREACHED && (u32::from(h) < m || !(u32::from(h) - m).is_multiple_of(2)) {
                    return Err(why(format!("it has {h} against Manhattan distance {m}")));
                }
                if first + o == goal {
                    if h != 0 {
                        return Err(why(format!("the goal has {h}, not 0")));
                    }
                    continue;
                }
                if h == UNREACHED || any_unreached || exact {
                    bellman_rule(h, least, any_unreached, false).map_err(why)?;
                } else if h == 0 || least == UNREACHED || u32::from(h) < u32::from(least) + 1 {
                    return Err(why(format!(
                        "it has {h}, less than one more than the least of its neighbours ({least})"
                    )));
                }
            }
        }
        Ok(())
    })
}

/// The values of a minimized table (in placement-rank order) by (set, order): entry
/// `c * k! + order` is the value of the placement of order `order` on set `c`.
fn in_set_order(space: &StateSpace, index: &RegionIndex, values: &[u8]) -> Vec<u8> {
    let f = index.orders() as usize;
    let k = index.k();
    let ranker = space.ranker();
    let mut by_set = vec![0u8; values.len()];
    by_set
        .par_chunks_mut(f * 64)
        .enumerate()
        .for_each(|(chunk, out)| {
            for (i, v) in out.iter_mut().enumerate() {
                let placement = chunk * f * 64 + i;
                let cells = index.placement_cells((placement / f) as u64, (placement % f) as u64);
                *v = values[ranker.rank(&cells[..k]) as usize];
            }
        });
    by_set
}
