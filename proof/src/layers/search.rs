//! The layer proofs' breadth-first search ([`search`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::region_index::{OrderMoves, RegionIndex};
use tilepdb_common::{BlankRule, StateCodes, StateSpace};

use crate::error::{Error, Result};
use crate::walks::{BlockMove, for_each_block_move};
use crate::walks::{fail, set_chunks};
use tilepdb_common::table::UNREACHED;

/// A state the search meets: its index among the zero-aware states, and its placement as the
/// rank of its set of cells and the rank of the order of the tiles on them.
#[derive(Clone, Copy)]
pub(super) struct Met {
    pub(super) state: u64,
    pub(super) set: u64,
    pub(super) order: u64,
}

/// The breadth-first search over the zero-aware states of `space` from the goal (over the
/// placements alone when `space` ignores the blank): calls `visit` once for every state it
/// meets, with its distance, layer by layer; the states per distance and the codes it ends
/// with (0 for the states never met). Stops at `visit`'s first error.
#[expect(
    clippy::cast_possible_truncation,
    reason = "blocks, states and orders index arrays held in memory, so they fit in usize"
)]
pub(super) fn search(
    space: &StateSpace,
    index: &RegionIndex,
    visit: impl Fn(Met, u32) -> Result<()> + Sync,
) -> Result<(Vec<u64>, StateCodes)> {
    let moves = OrderMoves::new(index.k());
    let board = space.board();
    let f = index.orders();
    let ignored = space.rule() == BlankRule::Ignored;
    // A block is the k! orders of one (set, region), or of one set when the blank is ignored
    // (its "region" is then every free cell).
    let first_block = |c: u64| if ignored { c } else { index.first_block(c) };
    let (goal_set, _, goal_order) = index.set_and_order(space.goal_cells());
    let goal = if ignored {
        goal_set * f + goal_order
    } else {
        index.state_index(space.goal_cells(), space.goal().cell_of(0, board.cells()))
    };
    let blocks = if ignored {
        index.sets()
    } else {
        index.region_count()
    };
    let codes = StateCodes::new(blocks * f);
    codes.try_mark(goal, StateCodes::code_of_depth(0));
    visit(
        Met {
            state: goal,
            set: goal_set,
            order: goal_order,
        },
        0,
    )?;
    let flags = || {
        (0..blocks)
            .map(|_| AtomicBool::new(false))
            .collect::<Vec<_>>()
    };
    let mut active = flags();
    active[(goal / f) as usize].store(true, Relaxed);
    let chunks = set_chunks(index.sets());
    let mut histogram = vec![1u64];
    for depth in 0u32.. {
        if depth >= u32::from(UNREACHED) - 1 {
            return Err(fail(space, format!("the layers go on past depth {depth}")));
        }
        let next = flags();
        let added = AtomicU64::new(0);
        let (here, there) = (
            StateCodes::code_of_depth(depth),
            StateCodes::code_of_depth(depth + 1),
        );
        chunks.par_iter().try_for_each(|sets| {
            let mut current: Vec<u64> = Vec::with_capacity(f as usize);
            let mut layer_added = 0u64;
            for c in sets.clone() {
                let first = first_block(c);
                let all_free = [board.all_cells() & !index.set_mask(c)];
                let regions = if ignored {
                    &all_free[..]
                } else {
                    index.regions_of(c)
                };
                for (r, &region) in regions.iter().enumerate() {
                    let block = first + r as u64;
                    if !active[block as usize].load(Relaxed) {
                        continue;
                    }
                    current.clear();
                    codes.for_each_with_code(block * f..(block + 1) * f, here, |s| {
                        current.push(s - block * f);
                    });
                    if current.is_empty() {
                        continue;
                    }
                    for_each_block_move(space, index, c, region, |m| {
                        let BlockMove {
                            block: child_block,
                            set: child_set,
                            pa,
                            pb,
                        } = m;
                        let row = moves.row(pa, pb);
                        let mut gained = false;
                        for &o in &current {
                            let moved = match row {
                                Some(row) => u64::from(row[o as usize]),
                                None => moves.moved(pa, pb, o),
                            };
                            let child = child_block * f + moved;
                            if codes.get(child) != 0 || !codes.try_mark(child, there) {
                                continue;
                            }
                            layer_added += 1;
                            gained = true;
                            let met = Met {
                                state: child,
                                set: child_set,
                                order: moved,
                            };
                            visit(met, depth + 1)?;
                        }
                        if gained {
                            next[child_block as usize].store(true, Relaxed);
                        }
                        Ok(())
                    })?;
                }
            }
            added.fetch_add(layer_added, Relaxed);
            Ok::<(), Error>(())
        })?;
        // The layer is expanded: its states are done.
        chunks.par_iter().for_each(|sets| {
            for block in first_block(sets.start)..first_block(sets.end) {
                if active[block as usize].load(Relaxed) {
                    codes.retire(block * f..(block + 1) * f, here);
                }
            }
        });
        let added = added.load(Relaxed);
        if added == 0 {
            break;
        }
        histogram.push(added);
        active = next;
    }
    Ok((histogram, codes))
}
