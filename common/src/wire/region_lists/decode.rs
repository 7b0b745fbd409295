//! Reading a list of region-index states, every record checked (see the module above).

use std::ops::Range;

use super::{RegionListShape, SetBlocks, bad};
use crate::error::Result;

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
    /// The next varint: most are one byte (a gap between orders), read here without a loop.
    #[inline]
    fn varint(&mut self) -> Result<u64> {
        match self.bytes.get(self.at) {
            Some(&b) if b < 0x80 => {
                self.at += 1;
                Ok(u64::from(b))
            }
            _ => self.long_varint(),
        }
    }

    fn long_varint(&mut self) -> Result<u64> {
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
    let mut set = SetBlocks::default();
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
        if !set.block_has_parity(shape, block) {
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
