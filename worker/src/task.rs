//! Executing one task off the wire: expand the layer's states of a rank range (with every
//! thread of a pool) and collect what they reach, ready for the wire.
//!
//! The input is a [`CodesWindow`]: the coordinator's two-bit codes of the words covering the
//! task's states. Successors that land in the window and are seen already (any code but
//! unseen) are dropped on the spot; the unseen ones among the task's own states go into a
//! bitmap, the others into a sorted list.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use tilepdb_common::{CodesWindow, StateSpace};

use crate::expand::{ExpandStats, expand_range};

/// What a task reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskOutput {
    /// The task's own states (its ranks times the slots).
    pub own: Range<u64>,
    /// One bit per own state: the unseen ones it reached.
    pub own_words: Vec<u64>,
    /// States reached outside the own states (and not seen in the window), increasing.
    pub outside: Vec<u64>,
    pub stats: ExpandStats,
}

impl TaskOutput {
    /// Reached states, own and outside.
    pub fn reached(&self) -> u64 {
        self.own_words
            .iter()
            .map(|w| w.count_ones() as u64)
            .sum::<u64>()
            + self.outside.len() as u64
    }
}

/// Expands the states of `window` coded for `depth` whose ranks lie in `ranks`, cutting the
/// range into pieces for the threads of the current rayon pool.
pub fn run_task(
    space: &StateSpace,
    ranks: Range<u64>,
    depth: u32,
    window: &CodesWindow,
) -> TaskOutput {
    let slots = space.slots();
    let own = ranks.start * slots..ranks.end * slots;
    let own_len = own.end - own.start;
    let bits: Vec<AtomicU64> = (0..own_len.div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    let layer = window.layer(depth);
    let threads = rayon::current_num_threads() as u64;
    let piece = (ranks.end - ranks.start).div_ceil(threads * 8).max(64);
    let pieces: Vec<Range<u64>> = (ranks.start..ranks.end)
        .step_by(piece as usize)
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
                    if bits[w].load(Relaxed) & bit == 0 && window.get(s) == Some(0) {
                        bits[w].fetch_or(bit, Relaxed);
                    }
                } else if window.get(s).is_none_or(|c| c == 0) {
                    outside.push(s);
                }
            };
            let stats = expand_range(space, piece, &layer, &mut sink);
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
    TaskOutput {
        own,
        own_words: bits.into_iter().map(AtomicU64::into_inner).collect(),
        outside,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilepdb_common::wire::states::input_words;
    use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateCodes};

    /// The states a task reports are exactly the unseen successors of its states.
    #[test]
    fn reports_the_unseen_successors() {
        let board: Board = "3x3".parse().unwrap();
        let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
        let space =
            StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
        let codes = StateCodes::new(space.states());
        // A layer at depth 1 of a few states, some seen states around.
        let layer: Vec<u64> = (0..space.states()).step_by(7).take(60).collect();
        for &s in &layer {
            codes.try_mark(s, StateCodes::code_of_depth(1));
        }
        for s in (3..space.states()).step_by(5) {
            codes.try_mark(s, tilepdb_common::layer::DONE);
        }
        let ranks = 8..40;
        let words = input_words(&ranks, space.slots());
        let window = CodesWindow::new(words.start, codes.copy_words(words));
        let out = run_task(&space, ranks.clone(), 1, &window);
        let mut want = vec![];
        let mut all = |s: u64| {
            if codes.get(s) == 0 {
                want.push(s)
            }
        };
        expand_range(
            &space,
            ranks,
            &tilepdb_common::layer::CodeLayer {
                codes: &codes,
                depth: 1,
            },
            &mut all,
        );
        want.sort_unstable();
        want.dedup();
        let mut got = out.outside.clone();
        for (i, w) in out.own_words.iter().enumerate() {
            for b in 0..64 {
                if w >> b & 1 == 1 {
                    got.push(out.own.start + i as u64 * 64 + b);
                }
            }
        }
        got.sort_unstable();
        assert_eq!(got, want);
        assert!(!want.is_empty());
    }
}
