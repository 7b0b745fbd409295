//! Executing one task off the wire: expand the current-layer states of a rank range (with
//! every thread of a pool) and collect the distinct states they reach, in order.
//!
//! Successors inside the task's own states (all moves of a task of whole blocks but those of
//! the pattern's first tile) are collected in a bitmap of the own states, which removes
//! duplicates at one bit per own state; the others in per-thread lists, sorted and deduplicated
//! at the end. So a worker's memory is bounded by its task, not by the successors generated.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::wire::states::own_states;
use tilepdb_common::{StateList, StateSpace};

use crate::expand::{ExpandStats, expand_range};

/// What a task reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskOutput {
    /// The distinct states reached, increasing.
    pub reached: Vec<u64>,
    /// What the expansion did.
    pub stats: ExpandStats,
}

/// Expands the states of `input` (the layer's states of `ranks`), cutting the range into
/// pieces for the threads of the current rayon pool.
pub fn run_task(space: &StateSpace, ranks: Range<u64>, input: &StateList) -> TaskOutput {
    let own = own_states(&ranks, space.slots());
    let own_len = own.end - own.start;
    let bits: Vec<AtomicU64> = (0..own_len.div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    let threads = rayon::current_num_threads() as u64;
    let piece = (ranks.end - ranks.start).div_ceil(threads * 8).max(64);
    let pieces: Vec<Range<u64>> = (ranks.start..ranks.end)
        .step_by(usize::try_from(piece).unwrap_or(usize::MAX))
        .map(|s| s..(s + piece).min(ranks.end))
        .collect();
    let (stats, mut outside) = pieces
        .into_par_iter()
        .map(|piece| {
            let mut outside = Vec::new();
            let mut sink = |s: u64| {
                if own.contains(&s) {
                    let i = s - own.start;
                    let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
                    if bits[w].load(Relaxed) & bit == 0 {
                        bits[w].fetch_or(bit, Relaxed);
                    }
                } else {
                    outside.push(s);
                }
            };
            let stats = expand_range(space, piece, input, &mut sink);
            outside.sort_unstable();
            outside.dedup();
            (stats, outside)
        })
        .reduce(
            || (ExpandStats::default(), Vec::new()),
            |(mut a, mut x), (b, mut y)| {
                a += b;
                if x.len() < y.len() {
                    std::mem::swap(&mut x, &mut y);
                }
                x.append(&mut y);
                (a, x)
            },
        );
    outside.par_sort_unstable();
    outside.dedup();
    // Below the own states, the own states, above them: one increasing list.
    let split = outside.partition_point(|&s| s < own.start);
    let own_count: usize = bits
        .iter()
        .map(|w| w.load(Relaxed).count_ones() as usize)
        .sum();
    let mut reached = Vec::with_capacity(outside.len() + own_count);
    reached.extend_from_slice(&outside[..split]);
    for (i, w) in bits.iter().enumerate() {
        let mut w = w.load(Relaxed);
        while w != 0 {
            reached.push(own.start + i as u64 * 64 + u64::from(w.trailing_zeros()));
            w &= w - 1;
        }
    }
    reached.extend_from_slice(&outside[split..]);
    TaskOutput { reached, stats }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::layer::CodeLayer;
    use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateCodes};

    /// A task reports exactly the distinct successors of its states, in order.
    #[test]
    fn reports_the_distinct_successors() {
        let board: Board = "3x3".parse().unwrap();
        let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
        let space =
            StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
        let codes = StateCodes::new(space.states());
        for s in (0..space.states()).step_by(7) {
            codes.try_mark(s, StateCodes::code_of_depth(1));
        }
        for ranks in [8..40, 0..space.placements(), 100..101] {
            let mut input = vec![];
            codes.for_each_with_code(
                own_states(&ranks, space.slots()),
                StateCodes::code_of_depth(1),
                |s| input.push(s),
            );
            let out = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap()
                .install(|| run_task(&space, ranks.clone(), &StateList(input.clone())));
            let mut want = vec![];
            let layer = CodeLayer {
                codes: &codes,
                depth: 1,
            };
            let stats = expand_range(&space, ranks, &layer, &mut |s: u64| want.push(s));
            want.sort_unstable();
            want.dedup();
            assert_eq!(out.reached, want);
            assert_eq!(out.stats, stats);
        }
    }
}
