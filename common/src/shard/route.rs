//! The shard as the region kernel sees it: its current layer on global state numbers
//! ([`OwnLayer`]), and where each successor goes ([`Route`]): merged when the shard owns it,
//! else handed over with the others of its block and move.

use std::ops::Range;

use super::Shard;
use crate::layer::{CurrentLayer, StateCodes};
use crate::region_expand::{ReachedBlock, RegionSink};
use crate::space::BlankRule;

/// A shard's current layer, seen by the kernel on global state numbers.
pub(super) struct OwnLayer<'a> {
    pub(super) shard: &'a Shard,
    pub(super) code: u8,
}

impl CurrentLayer for OwnLayer<'_> {
    fn for_each_current(&self, states: Range<u64>, mut f: impl FnMut(u64)) {
        // The kernel asks for one block at a time.
        let orders = self.shard.index.orders();
        let own = &self.shard.own;
        let block = states.start / orders;
        debug_assert_eq!(states.end, (block + 1) * orders);
        if !self.shard.live.is_raised(self.code, block) {
            return;
        }
        let width = own.end - own.start;
        let local = block * width;
        let base = block * orders + own.start;
        self.shard
            .codes
            .for_each_with_code(local..local + width, self.code, |s| f(base + s - local));
    }
}

/// Keeps a successor's order for another shard: out of the merge's loop, so that the loop
/// keeps its values in registers (most successors are the shard's own).
#[cold]
#[inline(never)]
#[expect(
    clippy::cast_possible_truncation,
    reason = "an order is below k!, which `Shard::new` keeps within 32 bits"
)]
fn keep_foreign(foreign: &mut Vec<u32>, order: u64) {
    foreign.push(order as u32);
}

/// Routes each successor: merged when the shard owns it, else kept in `foreign` and handed
/// to `send` with the others of its block and move.
pub(super) struct Route<'a, F> {
    pub(super) shard: &'a Shard,
    pub(super) depth: u32,
    pub(super) foreign: Vec<u32>,
    pub(super) send: &'a mut F,
}

impl<F: FnMut(u64, &[u32])> RegionSink for Route<'_, F> {
    #[inline]
    fn reached(&mut self, state: u64, placement: u64) {
        let f = self.shard.index.orders();
        let into = ReachedBlock {
            block: state / f,
            set: placement / f,
            orders: f,
        };
        self.reached_orders(into, std::iter::once(state % f));
    }

    #[inline]
    fn reached_orders(&mut self, into: ReachedBlock, orders: impl Iterator<Item = u64>) {
        let shard = self.shard;
        let own = &shard.own;
        let width = own.end - own.start;
        // Local numbers are `block * width + order - own.start`.
        let state_local = into.block * width;
        let entry_local = if shard.space.rule() == BlankRule::Minimized {
            into.set * width
        } else {
            state_local
        };
        let code = StateCodes::code_of_depth(self.depth);
        let (first, end, depth) = (own.start, own.end, self.depth);
        let (codes, depths) = (&shard.codes, &shard.depths);
        let mut gained = false;
        for o in orders {
            if (first..end).contains(&o) {
                let at = o - first;
                if codes.try_mark(state_local + at, code) {
                    depths.record_first(entry_local + at, depth);
                    gained = true;
                }
            } else {
                keep_foreign(&mut self.foreign, o);
            }
        }
        if gained {
            shard.live.raise(code, into.block);
        }
        if !self.foreign.is_empty() {
            (self.send)(into.block, &self.foreign);
            self.foreign.clear();
        }
    }

    #[inline]
    fn prefetch_orders(
        &mut self,
        into: ReachedBlock,
        count: usize,
        orders: impl Iterator<Item = u64>,
    ) {
        let own = &self.shard.own;
        let width = own.end - own.start;
        let first = into.block * width;
        self.shard.codes.prefetch_within(
            first..first + width,
            count,
            orders
                .filter(|o| own.contains(o))
                .map(|o| first + o - own.start),
        );
    }
}
