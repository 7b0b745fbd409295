//! A worker thread's outbox: the foreign successors of its expansion gathered per owner and
//! pushed as increasing, deduplicated region lists of at most [`MAX_PUSH_STATES`] states.
//!
//! The kernel hands over the foreign successors of one block and one move together; a list
//! keeps them as they come, with a record of their block, and is put in order when it is
//! pushed: its records sorted by block, each block's orders deduplicated (sorted, or
//! gathered in a bitmap when there are many), so that no list of states is sorted whole.

use tilepdb_common::prefetch::prefetch;
use tilepdb_common::shard::{MAX_PUSH_STATES, Shard};
use tilepdb_common::sort::radix_sort_by_key;
use tilepdb_common::wire::region_lists::{RegionListEncoder, RegionListShape};

use crate::error::{Error, Result};

/// Pushes a list's bytes, of its count of states, to its owner: the bytes sent.
pub(super) type PushList<'a> = dyn Fn(u32, &[u8], u64) -> Result<u64> + Sync + 'a;

/// What one thread's expansion sent.
#[derive(Default)]
pub(super) struct Sent {
    /// Successors of another shard, before deduplication.
    pub(super) foreign: u64,
    pub(super) states: u64,
    pub(super) bytes: u64,
}

/// The orders one move gave in one block, kept in an owner's list: `len` orders from
/// `start` of the list's orders.
#[derive(Clone, Copy, Default)]
struct Record {
    block: u64,
    start: u32,
    len: u32,
}

/// One owner's list in the making: the orders handed over and a record per block and move.
#[derive(Default)]
struct OwnerList {
    orders: Vec<u32>,
    records: Vec<Record>,
}

/// The lists and buffers of one thread's outbox, kept by the worker from layer to layer: a
/// buffer of 128 KiB or more is a mapping of its own ([`tilepdb_common::allocator`]), which
/// each layer would otherwise map and fault in again.
#[derive(Default)]
pub struct OutboxBuffers {
    lists: Vec<OwnerList>,
    /// The second buffer of the records' sorts.
    scratch: Vec<Record>,
    /// A bitmap of one owner's orders, all zero between blocks.
    bits: Vec<u64>,
    /// One block's orders, sorted.
    sorted: Vec<u64>,
    /// A list's bytes before compression.
    bytes: Vec<u8>,
}

/// How many records ahead of the one written a list's flush brings in their orders.
const PREFETCH_RECORDS: usize = 16;

/// Most orders of a block sorted as a list; a block with more is gathered in a bitmap.
const SORTED_ORDERS: u32 = 8;

/// One thread's lists in the making, one per owner, kept from range to range (their buffers
/// reused, not allocated again for each range). A list holds orders and a record of each
/// block and move they came from; when it is pushed, its records are sorted by block and
/// each block's orders deduplicated and written in order, so that no list of states is
/// sorted whole.
pub(super) struct Outbox<'a> {
    shard: &'a Shard,
    shape: RegionListShape<'a>,
    /// A list per shard (this one's stays empty).
    lists: Vec<OwnerList>,
    /// The orders and the records a list holds before it is pushed.
    list_orders: usize,
    list_records: usize,
    /// The one other shard, when there are two.
    other: Option<u32>,
    /// Most states of one push ([`MAX_PUSH_STATES`]).
    part_states: u64,
    scratch: Vec<Record>,
    bits: Vec<u64>,
    sorted: Vec<u64>,
    bytes: Vec<u8>,
    /// Pushes a list's bytes of its count of states to its owner: the bytes sent.
    push: &'a PushList<'a>,
    sent: Sent,
    error: Option<Error>,
}

impl<'a> Outbox<'a> {
    /// Empty lists for the other shards of `shard`'s layout, their states of the layer of
    /// `shape`, in `buffers`: each pushed through `push` when it holds about `list_states`
    /// states (the room of as many states of eight bytes, made in each list).
    pub(super) fn new(
        shard: &'a Shard,
        shape: RegionListShape<'a>,
        list_states: usize,
        push: &'a PushList<'a>,
        buffers: OutboxBuffers,
    ) -> Self {
        let layout = shard.layout();
        let shards = layout.shards() as usize;
        let own = shard.number() as usize;
        // Eight bytes a state: three quarters for orders (four bytes each), a quarter for
        // records (sixteen bytes each); the records' sort buffer is the size of one list's
        // records, within the thread's share of the budget (a list more than it pushes to).
        let (list_orders, list_records) = (list_states * 3 / 2, (list_states / 8).max(1));
        let OutboxBuffers {
            mut lists,
            mut scratch,
            mut bits,
            sorted,
            bytes,
        } = buffers;
        lists.resize_with(shards, OwnerList::default);
        for (p, list) in lists.iter_mut().enumerate() {
            let (orders, records) = if p == own {
                (0, 0)
            } else {
                (list_orders, list_records)
            };
            // A list with more room than this table's lists take (a larger table's) is made
            // again at this size: the budget holds.
            resize_room(&mut list.orders, orders);
            resize_room(&mut list.records, records);
        }
        if scratch.capacity() > list_records {
            scratch = Vec::new();
        }
        // The bitmap holds any owner's orders: the shards' widths differ by at most one.
        let width = layout.orders_of(0).end - layout.orders_of(0).start + 1;
        bits.clear();
        bits.resize(usize::try_from(width.div_ceil(64)).unwrap_or(0), 0);
        let other = (shards == 2).then(|| 1 - shard.number());
        Outbox {
            shard,
            shape,
            lists,
            list_orders,
            list_records,
            other,
            part_states: MAX_PUSH_STATES,
            scratch,
            bits,
            sorted,
            bytes,
            push,
            sent: Sent::default(),
            error: None,
        }
    }

    /// The outbox's buffers, for the next layer's.
    pub(super) fn into_buffers(self) -> OutboxBuffers {
        OutboxBuffers {
            lists: self.lists,
            scratch: self.scratch,
            bits: self.bits,
            sorted: self.sorted,
            bytes: self.bytes,
        }
    }

    /// Takes the orders `orders` of `block` that other shards own, from one move.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a list holds fewer than 2^32 orders"
    )]
    pub(super) fn add(&mut self, block: u64, orders: &[u32]) {
        self.sent.foreign += orders.len() as u64;
        let mut rest = orders;
        while let Some(&first) = rest.first() {
            let (to, run) = if let Some(other) = self.other {
                (other, rest.len())
            } else {
                let to = self.shard.owner_of_order(first);
                let run = rest
                    .iter()
                    .position(|&o| self.shard.owner_of_order(o) != to)
                    .unwrap_or(rest.len());
                (to, run)
            };
            let (theirs, others) = rest.split_at(run);
            let list = &self.lists[to as usize];
            if !list.records.is_empty()
                && (list.orders.len() + theirs.len() > self.list_orders
                    || list.records.len() >= self.list_records)
            {
                self.flush(to);
            }
            let list = &mut self.lists[to as usize];
            list.records.push(Record {
                block,
                start: list.orders.len() as u32,
                len: run as u32,
            });
            list.orders.extend_from_slice(theirs);
            rest = others;
        }
    }

    #[expect(
        clippy::cast_possible_truncation,
        reason = "an order's place among its owner's orders, and a bitmap's word, fit in usize"
    )]
    /// Pushes the list of `to`, its blocks in order, each block's orders deduplicated and
    /// increasing, in parts of at most `part_states` states; keeps the first failure.
    fn flush(&mut self, to: u32) {
        let Outbox {
            shard,
            shape,
            lists,
            part_states,
            scratch,
            bits,
            sorted,
            bytes,
            push,
            sent,
            error,
            ..
        } = self;
        let list = &mut lists[to as usize];
        if list.records.is_empty() {
            return;
        }
        radix_sort_by_key(&mut list.records, scratch, |r| r.block);
        let first = shard.layout().orders_of(to).start;
        let all = 0..shard.index_states();
        let mut encoder = RegionListEncoder::with_buffer(shape, all.clone(), std::mem::take(bytes));
        let mut records = list.records.as_slice();
        while let Some(head) = records.first() {
            let block = head.block;
            let run = records
                .iter()
                .position(|r| r.block != block)
                .unwrap_or(records.len());
            // The orders of records further on, read at random places of the list, are
            // brought in while these are written.
            for ahead in records.iter().skip(PREFETCH_RECORDS).take(run) {
                prefetch(&list.orders[ahead.start as usize]);
            }
            let (these, rest) = records.split_at(run);
            records = rest;
            let orders = these
                .iter()
                .flat_map(|r| &list.orders[r.start as usize..(r.start + r.len) as usize]);
            let count: u32 = these.iter().map(|r| r.len).sum();
            if encoder.count() + u64::from(count) > *part_states {
                push_part(encoder, to, *push, sent, error, bytes);
                encoder = RegionListEncoder::with_buffer(shape, all.clone(), std::mem::take(bytes));
            }
            if count <= SORTED_ORDERS {
                sorted.clear();
                sorted.extend(orders.map(|&o| u64::from(o)));
                sorted.sort_unstable();
                sorted.dedup();
                encoder.push_block(block, sorted);
            } else {
                let (mut low, mut high) = (usize::MAX, 0);
                for &o in orders {
                    let at = (u64::from(o) - first) as usize;
                    bits[at / 64] |= 1 << (at % 64);
                    (low, high) = (low.min(at / 64), high.max(at / 64));
                }
                encoder.push_block_bits(block, first + 64 * low as u64, &bits[low..=high]);
                bits[low..=high].fill(0);
            }
        }
        push_part(encoder, to, *push, sent, error, bytes);
        list.orders.clear();
        list.records.clear();
    }

    /// Pushes what the range left in the lists: what the range sent, or its first failure.
    pub(super) fn finish_range(&mut self) -> Result<Sent> {
        for to in 0..self.lists.len() {
            self.flush(u32::try_from(to).expect("a shard number"));
        }
        let sent = std::mem::take(&mut self.sent);
        self.error.take().map_or(Ok(sent), Err)
    }
}

/// Makes `buffer` empty with room for `room` items, made again when it has more.
fn resize_room<T>(buffer: &mut Vec<T>, room: usize) {
    buffer.clear();
    if buffer.capacity() > room {
        *buffer = Vec::with_capacity(room);
    } else {
        buffer.reserve_exact(room);
    }
}

/// Pushes the list `encoder` wrote (nothing when it is empty, or after a failure, which it
/// keeps in `error`) to `to` through `push`, counting it in `sent`; its buffer is kept in
/// `bytes`.
fn push_part(
    encoder: RegionListEncoder<'_>,
    to: u32,
    push: &PushList<'_>,
    sent: &mut Sent,
    error: &mut Option<Error>,
    bytes: &mut Vec<u8>,
) {
    let count = encoder.count();
    let list = match encoder.finish() {
        Ok(list) => list,
        Err(e) => {
            error.get_or_insert(e.into());
            return;
        }
    };
    if count > 0 && error.is_none() {
        match push(to, &list, count) {
            Ok(wire) => {
                sent.states += count;
                sent.bytes += wire;
            }
            Err(e) => *error = Some(e),
        }
    }
    *bytes = list;
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tilepdb_common::wire::region_lists::decode_region_states;

    use super::*;
    use crate::shard::searched::searched_shard;

    /// Shard `shard` of `shards` of the 4x4 puzzle's tiles {1, 2, 3, 4}, zero-aware, its layers
    /// `0..depth` searched.
    fn shard_at(shard: u32, shards: u32, depth: u32) -> Shard {
        searched_shard("4x4", &[1, 2, 3, 4], shard, shards, depth)
    }

    /// The lists an outbox pushes, decoded: each increasing and within its part's size, and
    /// together each owner's successors of the layer, deduplicated, as [`Shard::expand_states`]
    /// hands them over; whatever the lists' and parts' sizes.
    #[test]
    fn an_outbox_pushes_every_foreign_successor_in_increasing_lists() {
        for (shards, depth) in [(2, 9), (3, 10), (5, 11)] {
            let shard = shard_at(1, shards, depth);
            let sets = shard.index().sets();
            let mut expected = vec![Vec::new(); shards as usize];
            let mut foreign = 0;
            shard.expand_states(0..sets, depth, &mut |to, s| {
                expected[to as usize].push(s);
                foreign += 1;
            });
            for list in &mut expected {
                list.sort_unstable();
                list.dedup();
            }
            let states: usize = expected.iter().map(Vec::len).sum();
            assert!(states > 500, "{states} states");
            let shape = super::super::list_shape(&shard, depth + 1);
            let all = 0..shard.index_states();
            for (list_states, part_states) in [(1000, 10_000), (256, 40), (100_000, 1)] {
                let pushed: Mutex<Vec<Vec<u64>>> = Mutex::new(vec![Vec::new(); shards as usize]);
                let push = |to: u32, bytes: &[u8], count: u64| -> Result<u64> {
                    assert!(count <= part_states.max(24), "{count} states in one part");
                    let states = decode_region_states(bytes, count, &shape, all.clone()).unwrap();
                    assert!(states.windows(2).all(|w| w[0] < w[1]));
                    pushed.lock().unwrap()[to as usize].extend(states);
                    Ok(bytes.len() as u64)
                };
                let buffers = OutboxBuffers::default();
                let mut outbox = Outbox::new(&shard, shape, list_states, &push, buffers);
                outbox.part_states = part_states;
                shard.expand(0..sets, depth, &mut |block, orders| {
                    outbox.add(block, orders);
                });
                let sent = outbox.finish_range().unwrap();
                assert_eq!(sent.foreign, foreign);
                let mut pushed = pushed.into_inner().unwrap();
                for list in &mut pushed {
                    list.sort_unstable();
                    list.dedup();
                }
                assert_eq!(pushed, expected, "{shards} shards, lists of {list_states}");
            }
        }
    }

    #[test]
    fn an_outbox_keeps_its_lists_for_the_next_layer() {
        let shard = shard_at(0, 3, 10);
        let shape = super::super::list_shape(&shard, 11);
        let push = |_: u32, _: &[u8], count: u64| -> Result<u64> { Ok(count) };
        let mut first = Outbox::new(&shard, shape, 1000, &push, OutboxBuffers::default());
        let sets = shard.index().sets();
        shard.expand(0..sets, 10, &mut |block, orders| first.add(block, orders));
        assert!(first.finish_range().unwrap().states > 100);
        let buffers = first.into_buffers();
        let kept: Vec<*const u32> = buffers.lists.iter().map(|l| l.orders.as_ptr()).collect();
        let second = Outbox::new(&shard, shape, 1000, &push, buffers);
        let held: Vec<*const u32> = second.lists.iter().map(|l| l.orders.as_ptr()).collect();
        assert_eq!(held, kept, "the same buffers");
        assert!(second.lists[1..].iter().all(|l| l.orders.is_empty()
            && l.orders.capacity() == 1500
            && l.records.capacity() == 125));
        // A smaller table's lists are made again at its size; this shard's own list has none.
        let third = Outbox::new(&shard, shape, 256, &push, second.into_buffers());
        assert!(third.lists[1..].iter().all(|l| l.orders.capacity() == 384));
        assert_eq!(third.lists[0].orders.capacity(), 0);
    }
}
