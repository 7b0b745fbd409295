//! How a task's input and result are laid out on the wire when the table is searched on the
//! region index ([`RegionIndex`]): increasing lists of region-index states as block records.
//!
//! A state of the region index is `block * k! + order`, where a block is a (tile set, region
//! of the blank) pair (a tile set when the blank is ignored) and the order ranks the tiles on
//! the set's cells. A list is a sequence of records, one per block holding states of the list,
//! in increasing block order, each of LEB128 varints:
//!
//! * the block, as the gap after the block before (`block - previous - 1`; for the first
//!   record, `block - first block of the allowed range`);
//! * `2 * (m - 1) + b`: the record's `m >= 1` states, and `b` = 1 for a bitmap;
//! * the orders: a bitmap of `k!` bits (`ceil(k! / 8)` bytes, order `o` at bit `o % 8` of byte
//!   `o / 8`) when that is shorter, else `m` gaps (`order - previous - 1`, the first one the
//!   order itself).
//!
//! What both ends know: every state of a layer at depth `d` has its tile set's parity (the
//! number of tiles on odd cells of the checkerboard changes with every move), so a record of a
//! block of the other parity is refused. The chunks carrying a list are compressed (zstd), which
//! takes most of what the varints leave.
//!
//! Decoding is total: any bytes either give exactly the declared number of increasing states
//! of the layer's parity in the allowed range, or an error, after work bounded by the declared
//! count (a bitmap record must hold at least one state per 64 bits of its bitmap), never by the
//! bytes. Encoding is streaming: the encoder holds one block's orders.
//!
//! ```
//! use tilepdb_common::region_index::RegionIndex;
//! use tilepdb_common::wire::region_lists::{RegionListShape, decode_region_states, encode_region_states};
//! use tilepdb_common::Board;
//! let board: Board = "3x3".parse().unwrap();
//! let index = RegionIndex::new(board, 2).unwrap();
//! // The goal of tiles 1 and 2 (cells 1 and 2, blank on 0): a state of the layer of depth 0.
//! let goal = index.state_index(&[1, 2], 0);
//! let shape = RegionListShape::new(&index, false, &[1, 2], 0);
//! let all = 0..index.states();
//! let bytes = encode_region_states(&shape, all.clone(), &[goal]).unwrap();
//! assert_eq!(decode_region_states(&bytes, 1, &shape, all.clone()).unwrap(), [goal]);
//! assert!(decode_region_states(&bytes[..bytes.len() - 1], 1, &shape, all.clone()).is_err());
//! // The goal is not a state of the layer of depth 1 (its parity is wrong).
//! let odd = RegionListShape::new(&index, false, &[1, 2], 1);
//! assert!(encode_region_states(&odd, all, &[goal]).is_err());
//! ```

use std::ops::Range;

use crate::error::{Error, Result};
use crate::region_index::RegionIndex;

/// What both ends know of a list besides its bytes: the index, whether the blank is ignored,
/// and the parity of the layer its states belong to.
#[derive(Clone, Copy, Debug)]
pub struct RegionListShape<'a> {
    index: &'a RegionIndex,
    ignored: bool,
    orders: u64,
    states: u64,
    /// Cells whose row and column add up to an odd number.
    odd: u32,
    /// How many tiles of a placement of the layer stand on odd cells, modulo 2.
    parity: u32,
}

impl<'a> RegionListShape<'a> {
    /// The shape of lists of states of `index` (of placements when `ignored`) at `depth`, for
    /// the pattern whose goal cells are `goal_cells`.
    pub fn new(
        index: &'a RegionIndex,
        ignored: bool,
        goal_cells: &[u8],
        depth: u32,
    ) -> RegionListShape<'a> {
        let board = index.board();
        let odd = (0..board.cells())
            .filter(|&c| {
                let (r, col) = board.row_col(c);
                (r + col) % 2 == 1
            })
            .fold(0u32, |m, c| m | 1 << c);
        let goal = goal_cells.iter().fold(0u32, |m, &c| m | 1 << c);
        RegionListShape {
            index,
            ignored,
            orders: index.orders(),
            states: if ignored {
                index.placements()
            } else {
                index.states()
            },
            odd,
            parity: ((goal & odd).count_ones() + depth) % 2,
        }
    }

    /// States of the index (the end of any allowed range).
    pub fn states(&self) -> u64 {
        self.states
    }

    /// An upper bound on the bytes of any list of `count` states (a record of three varints of
    /// at most 10 bytes per state; a bitmap record holds at least one state per 8 of its
    /// bytes).
    pub fn max_bytes(&self, count: u64) -> u64 {
        count.saturating_mul(30)
    }

    /// Bytes of a record's bitmap.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the bitmap of a block's k! orders is built in memory, so its byte count fits in usize"
    )]
    fn bitmap_bytes(&self) -> usize {
        self.orders.div_ceil(8) as usize
    }

    /// The blocks of `block`'s tile set, and whether their states are of the layer's parity.
    fn set_blocks_parity(&self, block: u64) -> (Range<u64>, bool) {
        if self.ignored {
            return (block..block + 1, self.block_has_parity(block));
        }
        let set_rank = self.index.block_and_set(block * self.orders).1;
        let blocks = self.index.first_block(set_rank)..self.index.first_block(set_rank + 1);
        let parity = (self.index.set_mask(set_rank) & self.odd).count_ones() % 2 == self.parity;
        (blocks, parity)
    }

    /// Whether the states of `block` are of the layer's parity.
    fn block_has_parity(&self, block: u64) -> bool {
        let set_rank = if self.ignored {
            block
        } else {
            self.index.block_and_set(block * self.orders).1
        };
        (self.index.set_mask(set_rank) & self.odd).count_ones() % 2 == self.parity
    }
}

fn bad<T>(why: String) -> Result<T> {
    Err(Error::Wire(format!("region state list: {why}")))
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "the byte keeps the low 7 bits on purpose, then the rest is shifted down"
)]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Writes an increasing list of states as it comes, holding one block's orders.
pub struct RegionListEncoder<'a> {
    shape: RegionListShape<'a>,
    allowed: Range<u64>,
    out: Vec<u8>,
    /// The last block written, and the block being collected (with its first state) and its
    /// orders.
    written: Option<u64>,
    block: Option<u64>,
    block_start: u64,
    orders: Vec<u64>,
    /// The blocks of the tile set last checked, and whether they are of the layer's parity.
    checked_blocks: Range<u64>,
    checked_parity: bool,
    last: Option<u64>,
    count: u64,
    error: Option<Error>,
}

impl<'a> RegionListEncoder<'a> {
    /// An encoder of states of `shape` in `allowed`.
    pub fn new(shape: &RegionListShape<'a>, allowed: Range<u64>) -> RegionListEncoder<'a> {
        RegionListEncoder {
            shape: *shape,
            allowed,
            out: Vec::new(),
            written: None,
            block: None,
            block_start: 0,
            orders: Vec::new(),
            checked_blocks: 0..0,
            checked_parity: false,
            last: None,
            count: 0,
            error: None,
        }
    }

    /// Appends `state`, which must lie above the one before, in the allowed range and in the
    /// index, and be of the layer's parity; otherwise the encoder keeps the error for
    /// [`finish`](Self::finish) and ignores what follows.
    #[inline]
    pub fn push(&mut self, state: u64) {
        if self.error.is_some() {
            return;
        }
        if self.last.is_some_and(|l| state <= l)
            || !self.allowed.contains(&state)
            || state >= self.shape.states
        {
            self.refuse(state, "is not above the one before in the allowed range");
            return;
        }
        // The state lies above the one before, so at or above the collected block's first
        // state: it is of that block when it is less than `k!` above it (no division).
        let in_block =
            self.block.is_some() && state.wrapping_sub(self.block_start) < self.shape.orders;
        if !in_block && !self.enter_block(state / self.shape.orders, state) {
            return;
        }
        self.orders.push(state - self.block_start);
        self.last = Some(state);
        self.count += 1;
    }

    /// Appends the states `block * k! + o` of the orders `orders` of `block` (increasing,
    /// below `k!`), as [`push`](Self::push) of each would, with the checks made once for the
    /// block: the first state must lie above the one before and the last in the allowed range
    /// and in the index, the orders must increase, the block must be of the layer's parity.
    pub fn push_block(&mut self, block: u64, orders: &[u64]) {
        let (Some(&first), Some(&last)) = (orders.first(), orders.last()) else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        if block >= self.shape.states / self.shape.orders {
            self.refuse(self.shape.states, "is past the index's blocks");
            return;
        }
        let base = block * self.shape.orders;
        if last >= self.shape.orders || !orders.windows(2).all(|w| w[0] < w[1]) {
            self.refuse(base, "starts orders that do not increase below k!");
            return;
        }
        let (first, last) = (base + first, base + last);
        if self.last.is_some_and(|l| first <= l)
            || !self.allowed.contains(&first)
            || !self.allowed.contains(&last)
            || last >= self.shape.states
        {
            self.refuse(first, "is not above the one before in the allowed range");
            return;
        }
        if self.block != Some(block) && !self.enter_block(block, first) {
            return;
        }
        self.orders.extend_from_slice(orders);
        self.last = Some(last);
        self.count += orders.len() as u64;
    }

    /// Writes the block collected and starts collecting `block`, whose first state pushed is
    /// `state`; refuses `state` and returns false when the block is not of the layer's parity.
    #[inline(always)]
    fn enter_block(&mut self, block: u64, state: u64) -> bool {
        self.flush();
        if !self.checked_blocks.contains(&block) {
            (self.checked_blocks, self.checked_parity) = self.shape.set_blocks_parity(block);
        }
        if !self.checked_parity {
            self.refuse(state, "is not of the layer's parity");
            return false;
        }
        self.block = Some(block);
        self.block_start = block * self.shape.orders;
        true
    }

    #[cold]
    #[inline(never)]
    fn refuse(&mut self, state: u64, why: &str) {
        self.error = Some(Error::Wire(format!(
            "region state list: state {state} (after {:?}) {why} ({:?}, parity {})",
            self.last, self.allowed, self.shape.parity
        )));
    }

    /// Writes the record of the block collected.
    fn flush(&mut self) {
        let Some(block) = self.block.take() else {
            return;
        };
        let gap = match self.written {
            Some(w) => block - w - 1,
            None => block - self.allowed.start / self.shape.orders,
        };
        self.written = Some(block);
        let m = self.orders.len() as u64;
        // Every gap takes at least a byte: a record of more states than the bitmap's bytes is
        // a bitmap without counting.
        let bitmap = self.orders.len() > self.shape.bitmap_bytes() || {
            let mut list_bytes = 0;
            let mut previous: Option<u64> = None;
            for &o in &self.orders {
                list_bytes += varint_len(previous.map_or(o, |p| o - p - 1));
                previous = Some(o);
            }
            self.shape.bitmap_bytes() < list_bytes
        };
        put_varint(&mut self.out, gap);
        put_varint(&mut self.out, 2 * (m - 1) + u64::from(bitmap));
        if bitmap {
            let start = self.out.len();
            self.out.resize(start + self.shape.bitmap_bytes(), 0);
            for &o in &self.orders {
                self.out[start + (o / 8) as usize] |= 1 << (o % 8);
            }
        } else {
            let mut previous: Option<u64> = None;
            for &o in &self.orders {
                put_varint(&mut self.out, previous.map_or(o, |p| o - p - 1));
                previous = Some(o);
            }
        }
        self.orders.clear();
    }

    /// States pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The list's bytes (none for an empty list), or the first state that could not be pushed.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.flush();
        Ok(self.out)
    }
}

/// The bytes of an increasing list of states of `shape` in `allowed`.
pub fn encode_region_states(
    shape: &RegionListShape<'_>,
    allowed: Range<u64>,
    states: &[u64],
) -> Result<Vec<u8>> {
    let mut encoder = RegionListEncoder::new(shape, allowed);
    for &s in states {
        encoder.push(s);
    }
    encoder.finish()
}

/// Decodes exactly `count` states of `shape` in `allowed` from exactly `bytes`.
pub fn decode_region_states(
    bytes: &[u8],
    count: u64,
    shape: &RegionListShape<'_>,
    allowed: Range<u64>,
) -> Result<Vec<u64>> {
    let room = allowed.end.saturating_sub(allowed.start);
    let mut states = Vec::with_capacity(count.min(room).min(1 << 20) as usize);
    walk_region_states(bytes, count, shape, allowed, |s| states.push(s))?;
    Ok(states)
}

/// Reads the varints of a list.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                return bad(format!("the bytes end inside a number at byte {}", self.at));
            };
            self.at += 1;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return bad(format!("a number past 64 bits at byte {}", self.at));
            }
            v |= part << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        bad(format!("a number past 64 bits at byte {}", self.at))
    }
}

/// Checks that `bytes` are exactly `count` states of `shape` in `allowed`, calling `f` with
/// each, in increasing order. A caller that must not act on a bad list checks it first with a
/// `f` that does nothing, then walks it again.
pub fn walk_region_states(
    bytes: &[u8],
    count: u64,
    shape: &RegionListShape<'_>,
    allowed: Range<u64>,
    mut f: impl FnMut(u64),
) -> Result<()> {
    let f_orders = shape.orders;
    let end = allowed.end.min(shape.states);
    let mut r = Reader { bytes, at: 0 };
    let mut found = 0u64;
    let mut previous_block: Option<u64> = None;
    while found < count {
        if r.at == bytes.len() {
            return bad(format!("{found} states where {count} were declared"));
        }
        let gap = r.varint()?;
        let block = match previous_block {
            Some(p) => p.checked_add(1).and_then(|b| b.checked_add(gap)),
            None => (allowed.start / f_orders).checked_add(gap),
        };
        let Some(block) = block.filter(|&b| b < end.div_ceil(f_orders)) else {
            return bad(format!("a block past the allowed states {allowed:?}"));
        };
        previous_block = Some(block);
        if !shape.block_has_parity(block) {
            return bad(format!("block {block} is not of the layer's parity"));
        }
        let head = r.varint()?;
        let (m, bitmap) = ((head >> 1).saturating_add(1), head & 1 == 1);
        if m > f_orders || m > count - found {
            return bad(format!(
                "a record of {m} states (of {f_orders} orders, {} left to read)",
                count - found
            ));
        }
        let base = block * f_orders;
        let mut emit = |order: u64| -> Result<()> {
            let s = base + order;
            if order >= f_orders || s < allowed.start || s >= end {
                return bad(format!("state {s} outside the allowed states {allowed:?}"));
            }
            f(s);
            Ok(())
        };
        if bitmap {
            if m.saturating_mul(64) < f_orders {
                return bad(format!("a bitmap record of only {m} states"));
            }
            let n = shape.bitmap_bytes();
            let Some(map) = bytes.get(r.at..r.at + n) else {
                return bad("the bytes end inside a bitmap".into());
            };
            r.at += n;
            let ones: u64 = map.iter().map(|b| u64::from(b.count_ones())).sum();
            if ones != m {
                return bad(format!("a bitmap of {ones} states declared {m}"));
            }
            for (i, &b) in map.iter().enumerate() {
                let mut b = b;
                while b != 0 {
                    emit(i as u64 * 8 + u64::from(b.trailing_zeros()))?;
                    b &= b - 1;
                }
            }
        } else {
            let mut previous: Option<u64> = None;
            for _ in 0..m {
                let g = r.varint()?;
                let order = match previous {
                    Some(p) => p.saturating_add(1).saturating_add(g),
                    None => g,
                };
                emit(order)?;
                previous = Some(order);
            }
        }
        found += m;
    }
    if r.at != bytes.len() {
        return bad(format!(
            "{} bytes after the {count} declared states",
            bytes.len() - r.at
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Board;

    fn index(board: &str, k: usize) -> RegionIndex {
        RegionIndex::new(board.parse::<Board>().unwrap(), k).unwrap()
    }

    /// The states of `shape` of its layer's parity, in `allowed`, every `step`-th.
    fn layer_states(shape: &RegionListShape<'_>, allowed: Range<u64>, step: usize) -> Vec<u64> {
        allowed
            .filter(|&s| shape.block_has_parity(s / shape.orders))
            .step_by(step)
            .collect()
    }

    #[test]
    fn lists_round_trip_whatever_their_density() {
        for (board, k) in [("3x3", 2), ("3x4", 3), ("4x4", 3), ("3x3", 1)] {
            let index = index(board, k);
            for ignored in [false, true] {
                for depth in [0, 1] {
                    let shape = RegionListShape::new(&index, ignored, &[1, 2, 3][..k], depth);
                    let n = shape.states();
                    for allowed in [0..n, n / 3..n / 2, 5..6] {
                        for step in [1, 2, 7, 50, 1000] {
                            let states = layer_states(&shape, allowed.clone(), step);
                            let bytes =
                                encode_region_states(&shape, allowed.clone(), &states).unwrap();
                            let count = states.len() as u64;
                            assert!(bytes.len() as u64 <= shape.max_bytes(count));
                            let back = decode_region_states(&bytes, count, &shape, allowed.clone())
                                .unwrap();
                            assert_eq!(back, states);
                            if count > 0 {
                                // One state more or less than declared, a byte more or less.
                                let dec = |b: &[u8], c| {
                                    decode_region_states(b, c, &shape, allowed.clone())
                                };
                                assert!(dec(&bytes, count + 1).is_err());
                                assert!(dec(&bytes, count - 1).is_err());
                                assert!(dec(&bytes[..bytes.len() - 1], count).is_err());
                                let mut long = bytes.clone();
                                long.push(0);
                                assert!(dec(&long, count).is_err());
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn states_out_of_order_range_or_parity_are_refused() {
        let index = index("3x4", 3);
        let shape = RegionListShape::new(&index, false, &[1, 2, 3], 0);
        let all = 0..shape.states();
        let good = layer_states(&shape, all.clone(), 3);
        let (a, b) = (good[1], good[2]);
        assert!(encode_region_states(&shape, all.clone(), &[b, a]).is_err());
        assert!(encode_region_states(&shape, all.clone(), &[a, a]).is_err());
        assert!(encode_region_states(&shape, a + 1..shape.states(), &[a]).is_err());
        assert!(encode_region_states(&shape, all.clone(), &[shape.states()]).is_err());
        let wrong = (0..shape.states())
            .find(|&s| !shape.block_has_parity(s / shape.orders))
            .unwrap();
        assert!(encode_region_states(&shape, all.clone(), &[wrong]).is_err());
        // Decoded in a narrower range, or as another layer, the same bytes are refused.
        let bytes = encode_region_states(&shape, all.clone(), &[a, b]).unwrap();
        assert!(decode_region_states(&bytes, 2, &shape, a + 1..shape.states()).is_err());
        let odd = RegionListShape::new(&index, false, &[1, 2, 3], 1);
        assert!(decode_region_states(&bytes, 2, &odd, all).is_err());
    }

    /// The encoder remembers the last tile set's parity: a state of the other parity is
    /// refused right after a state of the layer's, in the next block, set or further on.
    #[test]
    fn parity_is_checked_for_every_set_a_list_enters() {
        let index = index("3x4", 3);
        for ignored in [false, true] {
            let shape = RegionListShape::new(&index, ignored, &[1, 2, 3], 0);
            let all = 0..shape.states();
            let good = layer_states(&shape, all.clone(), 1);
            let wrong: Vec<u64> = all
                .clone()
                .filter(|&s| !shape.block_has_parity(s / shape.orders))
                .collect();
            for &a in good.iter().step_by(97) {
                let after = wrong.iter().filter(|&&w| w > a).take(400).step_by(7);
                for &w in after {
                    assert!(encode_region_states(&shape, all.clone(), &[a, w]).is_err());
                }
                let later = good.iter().filter(|&&g| g > a).step_by(5).take(20);
                let list: Vec<u64> = std::iter::once(a).chain(later.copied()).collect();
                assert!(encode_region_states(&shape, all.clone(), &list).is_ok());
            }
        }
    }

    /// A list pushed a block at a time is the list pushed a state at a time, and a block
    /// out of order, range or parity is refused as its states would be.
    #[test]
    fn blocks_pushed_whole_give_the_same_bytes() {
        for (board, k) in [("3x3", 2), ("3x4", 3), ("4x4", 3)] {
            let index = index(board, k);
            for ignored in [false, true] {
                let shape = RegionListShape::new(&index, ignored, &[1, 2, 3][..k], 1);
                let n = shape.states();
                for allowed in [0..n, n / 3..n / 2] {
                    for step in [1, 2, 7, 50] {
                        let states = layer_states(&shape, allowed.clone(), step);
                        let mut encoder = RegionListEncoder::new(&shape, allowed.clone());
                        for block in states.chunk_by(|a, b| a / shape.orders == b / shape.orders) {
                            let b = block[0] / shape.orders;
                            let orders: Vec<u64> =
                                block.iter().map(|s| s - b * shape.orders).collect();
                            // A block given in two pieces is one record.
                            let (one, two) = orders.split_at(orders.len() / 2);
                            encoder.push_block(b, one);
                            encoder.push_block(b, two);
                        }
                        assert_eq!(encoder.count(), states.len() as u64);
                        assert_eq!(
                            encoder.finish().unwrap(),
                            encode_region_states(&shape, allowed.clone(), &states).unwrap()
                        );
                    }
                }
                let all = 0..n;
                let good = layer_states(&shape, all.clone(), 1);
                let (b, o) = (good[0] / shape.orders, good[0] % shape.orders);
                let block_of = |orders: &[u64]| {
                    let mut e = RegionListEncoder::new(&shape, all.clone());
                    e.push_block(b, orders);
                    e.finish()
                };
                assert!(block_of(&[o]).is_ok());
                assert!(block_of(&[o, o]).is_err());
                assert!(block_of(&[shape.orders]).is_err());
                let mut e = RegionListEncoder::new(&shape, all.clone());
                e.push_block(b, &[o]);
                e.push_block(b, &[o]);
                assert!(e.finish().is_err());
                let mut e = RegionListEncoder::new(&shape, good[0] + 1..n);
                e.push_block(b, &[o]);
                assert!(e.finish().is_err());
                let wrong = (0..n / shape.orders)
                    .find(|&w| !shape.block_has_parity(w))
                    .unwrap();
                let mut e = RegionListEncoder::new(&shape, all.clone());
                e.push_block(wrong, &[0]);
                assert!(e.finish().is_err());
                for past in [n / shape.orders, u64::MAX / 2, u64::MAX] {
                    let mut e = RegionListEncoder::new(&shape, all.clone());
                    e.push_block(past, &[0]);
                    assert!(e.finish().is_err());
                }
            }
        }
    }

    /// Any bytes decode to valid states or to an error, never a panic.
    #[test]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the byte keeps the low 8 bits on purpose"
    )]
    fn any_bytes_decode_or_fail_cleanly() {
        let index = index("3x3", 2);
        let shape = RegionListShape::new(&index, false, &[1, 2], 0);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..200usize {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            for count in [0, 1, 3, 10, u64::MAX] {
                if let Ok(states) = decode_region_states(&bytes, count, &shape, 3..100) {
                    assert_eq!(states.len() as u64, count);
                    assert!(states.windows(2).all(|w| w[0] < w[1]));
                    assert!(states.iter().all(|s| (3..100).contains(s)));
                }
            }
        }
    }
}
