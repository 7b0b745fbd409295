//! Writing a list of region-index states as block records (see the module above).

use std::ops::Range;

use super::{RegionListShape, SetBlocks, put_varint, varint_len};
use crate::error::{Error, Result};

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
