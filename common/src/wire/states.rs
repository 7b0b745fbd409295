//! How a task's input and result are laid out on the wire: increasing lists of states as
//! LEB128 varints of their differences, zstd-compressed by the chunk layer.
//!
//! * Input: the current-layer states of the task's ranks.
//! * Result: the distinct states the task reached. A task of whole blocks of ranks keeps the
//!   successors of every tile but the pattern's first inside its own ranks, so most of the
//!   list is dense and its differences small.
//!
//! Measured on the 15-puzzle 5-5-5 set (tasks of one block), these lists take 0.7 (input) and
//! 2.1 (result) bytes per state expanded after zstd, against 2.7 for the range's two-bit codes
//! and 1.1 for bitmaps (`examples/wire_sizes.rs`).
//!
//! ```
//! use tilepdb_common::wire::states::{decode_deltas, encode_deltas};
//! let states = [3u64, 4, 1000, 1_000_000];
//! let bytes = encode_deltas(&states);
//! assert_eq!(bytes.len(), 1 + 1 + 2 + 3);
//! assert_eq!(decode_deltas(&bytes, 4, 0..2_000_000).unwrap(), states);
//! assert!(decode_deltas(&bytes, 4, 5..2_000_000).is_err()); // 3 and 4 are out of range
//! ```

use std::ops::Range;

use crate::error::{Error, Result};

/// The states of ranks `ranks` (`slots` states each).
pub fn own_states(ranks: &Range<u64>, slots: u64) -> Range<u64> {
    ranks.start * slots..ranks.end * slots
}

/// An increasing list as LEB128 varints of the differences (the first from 0).
pub fn encode_deltas(states: &[u64]) -> Vec<u8> {
    let mut encoder = DeltaEncoder::with_capacity(states.len() * 2);
    for &s in states {
        encoder.push(s);
    }
    encoder.finish()
}

/// Writes an increasing list of states as it comes, without holding the states.
#[derive(Debug, Default)]
pub struct DeltaEncoder {
    bytes: Vec<u8>,
    previous: u64,
    count: u64,
}

impl DeltaEncoder {
    pub fn with_capacity(bytes: usize) -> DeltaEncoder {
        DeltaEncoder {
            bytes: Vec::with_capacity(bytes),
            ..DeltaEncoder::default()
        }
    }

    /// Appends `state`, which must not be below the one before.
    #[inline]
    pub fn push(&mut self, state: u64) {
        debug_assert!(state >= self.previous);
        let mut d = state - self.previous;
        self.previous = state;
        self.count += 1;
        loop {
            let low = (d & 0x7f) as u8;
            d >>= 7;
            if d == 0 {
                self.bytes.push(low);
                break;
            }
            self.bytes.push(low | 0x80);
        }
    }

    /// States pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Decodes exactly `count` strictly increasing states, each in `allowed`, from exactly
/// `bytes`.
pub fn decode_deltas(bytes: &[u8], count: u64, allowed: Range<u64>) -> Result<Vec<u64>> {
    let mut states = Vec::with_capacity(count.min(bytes.len() as u64) as usize);
    walk_deltas(bytes, count, allowed, |s| states.push(s))?;
    Ok(states)
}

/// Checks that `bytes` are exactly `count` strictly increasing states, each in `allowed`,
/// calling `f` with each. A caller that must not act on a bad list checks it first with a
/// `f` that does nothing (no state is held either way).
pub fn walk_deltas(
    bytes: &[u8],
    count: u64,
    allowed: Range<u64>,
    mut f: impl FnMut(u64),
) -> Result<()> {
    let bad = |why: String| Err(Error::Wire(format!("state list: {why}")));
    if count > bytes.len() as u64 {
        return bad(format!(
            "{count} states cannot fit in {} bytes",
            bytes.len()
        ));
    }
    let mut pos = 0usize;
    let mut previous: Option<u64> = None;
    for i in 0..count {
        let mut d = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&b) = bytes.get(pos) else {
                return bad(format!("ends inside state {i} of {count}"));
            };
            pos += 1;
            if shift == 63 && b > 1 || shift > 63 {
                return bad(format!("state {i}: a difference over 64 bits"));
            }
            d |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        let s = match previous {
            None => d,
            Some(p) => {
                if d == 0 {
                    return bad(format!("state {i} repeats the one before"));
                }
                match p.checked_add(d) {
                    Some(s) => s,
                    None => return bad(format!("state {i} overflows")),
                }
            }
        };
        if !allowed.contains(&s) {
            return bad(format!("state {s} is outside {allowed:?}"));
        }
        f(s);
        previous = Some(s);
    }
    if pos != bytes.len() {
        return bad(format!("{} bytes follow the last state", bytes.len() - pos));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn deltas_round_trip(mut states in proptest::collection::vec(0u64..u64::MAX, 0..200)) {
            states.sort_unstable();
            states.dedup();
            let bytes = encode_deltas(&states);
            let back = decode_deltas(&bytes, states.len() as u64, 0..u64::MAX).unwrap();
            prop_assert_eq!(back, states);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), count in 0u64..80) {
            let _ = decode_deltas(&bytes, count, 10..1000);
        }
    }

    #[test]
    fn refuses_bad_lists() {
        let b = encode_deltas(&[5, 5]);
        assert!(decode_deltas(&b, 2, 0..100).is_err());
        let b = encode_deltas(&[5, 6]);
        assert!(decode_deltas(&b, 1, 0..100).is_err());
        assert!(decode_deltas(&b, 3, 0..100).is_err());
        assert!(decode_deltas(&b, 2, 0..6).is_err());
        assert!(decode_deltas(&[0xff; 11], 1, 0..u64::MAX).is_err());
    }
}
