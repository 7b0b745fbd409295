//! Writing a list of region-index states as block records (see the module above).

use std::ops::Range;

use super::{RegionListShape, SetBlocks, put_varint};
use crate::error::{Error, Result};
use crate::layer::BitPositions;

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
    /// The tile set last checked.
    checked: SetBlocks,
    last: Option<u64>,
    count: u64,
    error: Option<Error>,
}

impl<'a> RegionListEncoder<'a> {
    /// An encoder of states of `shape` in `allowed`.
    pub fn new(shape: &RegionListShape<'a>, allowed: Range<u64>) -> RegionListEncoder<'a> {
        RegionListEncoder::with_buffer(shape, allowed, Vec::new())
    }

    /// An encoder of states of `shape` in `allowed` that writes its bytes into `out`'s buffer
    /// (what `out` holds is dropped): given the bytes a finished list no longer needs, it
    /// allocates no more.
    pub fn with_buffer(
        shape: &RegionListShape<'a>,
        allowed: Range<u64>,
        mut out: Vec<u8>,
    ) -> RegionListEncoder<'a> {
        out.clear();
        RegionListEncoder {
            shape: *shape,
            allowed,
            out,
            written: None,
            block: None,
            block_start: 0,
            orders: Vec::new(),
            checked: SetBlocks::default(),
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
        if !orders.windows(2).all(|w| w[0] < w[1]) {
            if self.error.is_none() {
                self.refuse(
                    block.saturating_mul(self.shape.orders),
                    "starts orders that do not increase",
                );
            }
            return;
        }
        let Some(first) = self.block_states(block, first, last) else {
            return;
        };
        if self.block != Some(block) && !self.enter_block(block, first) {
            return;
        }
        self.orders.extend_from_slice(orders);
        self.count += orders.len() as u64;
    }

    /// Checks that the orders `first..=last` of `block` lie below `k!`, the state of `first`
    /// above the one before and both in the allowed range and the index (unless the encoder
    /// holds an error already); the first state, the last one taken as the last pushed.
    fn block_states(&mut self, block: u64, first: u64, last: u64) -> Option<u64> {
        if self.error.is_some() {
            return None;
        }
        if block >= self.shape.states / self.shape.orders {
            self.refuse(self.shape.states, "is past the index's blocks");
            return None;
        }
        let base = block * self.shape.orders;
        if last >= self.shape.orders {
            self.refuse(base, "starts orders past k!");
            return None;
        }
        let (first, last) = (base + first, base + last);
        if self.last.is_some_and(|l| first <= l)
            || !self.allowed.contains(&first)
            || !self.allowed.contains(&last)
            || last >= self.shape.states
        {
            self.refuse(first, "is not above the one before in the allowed range");
            return None;
        }
        self.last = Some(last);
        Some(first)
    }

    /// Appends the states `block * k! + first + i` for every bit `i` set in `bits` (bit `i %
    /// 64` of word `i / 64`), as [`push_block`](Self::push_block) of those orders would, with
    /// the block's record written at once from the bits: the orders must lie below `k!`, the
    /// first state above the one before.
    ///
    /// ```
    /// use tilepdb_common::region_index::RegionIndex;
    /// use tilepdb_common::wire::region_lists::{RegionListEncoder, RegionListShape};
    /// use tilepdb_common::Board;
    /// let index = RegionIndex::new("4x4".parse::<Board>().unwrap(), 3).unwrap();
    /// let shape = RegionListShape::new(&index, false, &[1, 2, 3], 0);
    /// let all = 0..index.states();
    /// let block = index.state_index(&[1, 2, 3], 0) / index.orders();
    /// let (mut by_orders, mut by_bits) =
    ///     (RegionListEncoder::new(&shape, all.clone()), RegionListEncoder::new(&shape, all));
    /// by_orders.push_block(block, &[1, 5]);
    /// by_bits.push_block_bits(block, 1, &[0b1_0001]);
    /// assert_eq!(by_bits.finish().unwrap(), by_orders.finish().unwrap());
    /// ```
    pub fn push_block_bits(&mut self, block: u64, first: u64, bits: &[u64]) {
        let ones = BitPositions::new(bits, first);
        let (Some(low), Some(high)) = (ones.clone().next(), BitPositions::last(bits, first)) else {
            return;
        };
        let Some(low) = self.block_states(block, low, high) else {
            return;
        };
        let count: u64 = bits.iter().map(|w| u64::from(w.count_ones())).sum();
        self.count += count;
        // Orders of this block collected by the other calls come first: join them.
        if self.block == Some(block) {
            self.orders.extend(ones);
            return;
        }
        if !self.enter_block(block, low) {
            return;
        }
        self.block = None;
        if let Some(start) = self.write_record_of_bits(block, count, first, bits) {
            // Order `o` is bit `o % 8` of the bitmap's byte `o / 8`: the words' little-endian
            // bytes, shifted by `first`.
            let (at, shift) = (start + (first / 8) as usize, first % 8);
            let end = start + self.shape.bitmap_bytes();
            for (i, &word) in bits.iter().enumerate() {
                let wide = u128::from(word) << shift;
                for (j, byte) in wide.to_le_bytes()[..9].iter().enumerate() {
                    if *byte != 0 && at + 8 * i + j < end {
                        self.out[at + 8 * i + j] |= byte;
                    }
                }
            }
        }
    }

    /// Writes the block collected and starts collecting `block`, whose first state pushed is
    /// `state`; refuses `state` and returns false when the block is not of the layer's parity.
    #[inline(always)]
    fn enter_block(&mut self, block: u64, state: u64) -> bool {
        self.flush();
        if !self.checked.block_has_parity(&self.shape, block) {
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
        let orders = std::mem::take(&mut self.orders);
        if let Some(start) = self.write_record(block, orders.len() as u64, orders.iter().copied()) {
            for o in &orders {
                self.out[start + (o / 8) as usize] |= 1 << (o % 8);
            }
        }
        self.orders = orders;
        self.orders.clear();
    }

    /// Writes the record of `block` with the `m >= 1` increasing orders `orders`, all but the
    /// bits of a bitmap: where those go (zeroed), when the record is one.
    #[inline(always)]
    fn write_record(
        &mut self,
        block: u64,
        m: u64,
        orders: impl Iterator<Item = u64>,
    ) -> Option<usize> {
        let (header, start) = self.write_head(block, m);
        let limit = start + self.shape.bitmap_bytes();
        let fits = !self.bitmap_is_shorter(m) && {
            let mut next = 0;
            orders.into_iter().all(|o| {
                put_gap(&mut self.out, o - next);
                next = o + 1;
                self.out.len() <= limit
            })
        };
        self.end_record(header, start, fits)
    }

    /// [`write_record`](Self::write_record) of the orders `first + i` of the bits `i` set
    /// in `bits`, read a word at a time.
    #[inline(always)]
    fn write_record_of_bits(
        &mut self,
        block: u64,
        m: u64,
        first: u64,
        bits: &[u64],
    ) -> Option<usize> {
        let (header, start) = self.write_head(block, m);
        let limit = start + self.shape.bitmap_bytes();
        let fits = !self.bitmap_is_shorter(m) && {
            let (out, mut next) = (&mut self.out, 0);
            // A word's gaps are at most 64 varints: checked against the limit after each.
            bits.iter().enumerate().all(|(i, &word)| {
                let (base, mut rest) = (first + 64 * i as u64, word);
                while rest != 0 {
                    let o = base + u64::from(rest.trailing_zeros());
                    rest &= rest - 1;
                    put_gap(out, o - next);
                    next = o + 1;
                }
                out.len() <= limit
            })
        };
        self.end_record(header, start, fits)
    }

    /// Writes the gap from the block written before to `block` and the count of `m`
    /// states, as a list's: where the count's first byte is, and where the record's body
    /// starts.
    #[inline(always)]
    fn write_head(&mut self, block: u64, m: u64) -> (usize, usize) {
        let gap = match self.written {
            Some(w) => block - w - 1,
            None => block - self.allowed.start / self.shape.orders,
        };
        self.written = Some(block);
        put_varint(&mut self.out, gap);
        // A bitmap's count is one more, which never lengthens an even number's varint: its
        // first byte's low bit is set then.
        let header = self.out.len();
        put_varint(&mut self.out, 2 * (m - 1));
        (header, self.out.len())
    }

    /// Every gap takes at least a byte: a record of more states than the bitmap's bytes is
    /// a bitmap without writing its gaps.
    #[inline(always)]
    fn bitmap_is_shorter(&self, m: u64) -> bool {
        m > self.shape.bitmap_bytes() as u64
    }

    /// Ends the record whose count is at `header` and body at `start`: its gaps kept when
    /// they `fit` the bitmap's bytes, else the record made a bitmap, its bytes zeroed (where
    /// they start returned).
    #[inline(always)]
    fn end_record(&mut self, header: usize, start: usize, fits: bool) -> Option<usize> {
        if fits {
            return None;
        }
        self.out[header] |= 1;
        self.out.truncate(start);
        self.out.resize(start + self.shape.bitmap_bytes(), 0);
        Some(start)
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

/// Writes the gap `gap` as a varint, a byte without the loop when it is below 128 (as most
/// are).
#[inline(always)]
#[expect(
    clippy::cast_possible_truncation,
    reason = "a gap below 128 fits in a byte"
)]
fn put_gap(out: &mut Vec<u8>, gap: u64) {
    if gap < 0x80 {
        out.push(gap as u8);
    } else {
        put_varint(out, gap);
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
