//! How a task's input and result are laid out on the wire.
//!
//! * Input: the two-bit codes of the words that cover the task's states
//!   ([`input_words`]), as little-endian `u64`s. The worker expands the states of the layer's
//!   code, and, since the codes also say which of its own states were seen already, reports
//!   only unseen ones.
//! * Result: the unseen states it reached among its own states, as a bitmap (moves of every
//!   tile but the pattern's first keep a placement in its block, so most successors land
//!   there), and the states it reached elsewhere as an increasing list of LEB128 varint
//!   differences. Both are zstd-compressed by the chunk layer.
//!
//! ```
//! use tilepdb_common::wire::states::{decode_deltas, encode_deltas};
//! let states = [3u64, 4, 1000, 1_000_000];
//! let bytes = encode_deltas(&states);
//! assert_eq!(bytes.len(), 1 + 1 + 2 + 3);
//! assert_eq!(decode_deltas(&bytes, 4, 0..2_000_000, 5..10).unwrap(), states);
//! assert!(decode_deltas(&bytes, 4, 0..2_000_000, 0..5).is_err()); // 3 and 4 are excluded
//! ```

use std::ops::Range;

use crate::error::{Error, Result};
use crate::layer::StateCodes;

/// The words of a state array that cover the states of ranks `ranks` (`slots` states each).
pub fn input_words(ranks: &Range<u64>, slots: u64) -> Range<u64> {
    let states = own_states(ranks, slots);
    if states.is_empty() {
        return 0..0;
    }
    StateCodes::word_of(states.start)..StateCodes::word_of(states.end - 1) + 1
}

/// The states of ranks `ranks`.
pub fn own_states(ranks: &Range<u64>, slots: u64) -> Range<u64> {
    ranks.start * slots..ranks.end * slots
}

/// Bytes of the bitmap of `states` states: whole `u64` words.
pub fn bitmap_bytes(states: u64) -> u64 {
    states.div_ceil(64) * 8
}

/// Words as little-endian bytes.
pub fn words_to_bytes(words: &[u64]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(words.len() * 8);
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    bytes
}

/// Little-endian bytes as words; an error unless whole words.
pub fn bytes_to_words(bytes: &[u8]) -> Result<Vec<u64>> {
    if bytes.len() % 8 != 0 {
        return Err(Error::Wire(format!(
            "{} bytes are not a whole number of 64-bit words",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// An increasing list as LEB128 varints of the differences (the first from 0).
pub fn encode_deltas(states: &[u64]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(states.len() * 2);
    let mut previous = 0u64;
    for &s in states {
        debug_assert!(s >= previous);
        let mut d = s - previous;
        previous = s;
        loop {
            let low = (d & 0x7f) as u8;
            d >>= 7;
            if d == 0 {
                bytes.push(low);
                break;
            }
            bytes.push(low | 0x80);
        }
    }
    bytes
}

/// Decodes exactly `count` strictly increasing states, each in `allowed` and none in
/// `excluded`, from exactly `bytes`.
pub fn decode_deltas(
    bytes: &[u8],
    count: u64,
    allowed: Range<u64>,
    excluded: Range<u64>,
) -> Result<Vec<u64>> {
    let bad = |why: String| Err(Error::Wire(format!("state list: {why}")));
    if count > bytes.len() as u64 {
        return bad(format!(
            "{count} states cannot fit in {} bytes",
            bytes.len()
        ));
    }
    let mut states = Vec::with_capacity(count as usize);
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
            return bad(format!("state {s} is outside the job's states {allowed:?}"));
        }
        if excluded.contains(&s) {
            return bad(format!(
                "state {s} belongs in the task's own bitmap {excluded:?}"
            ));
        }
        states.push(s);
        previous = Some(s);
    }
    if pos != bytes.len() {
        return bad(format!("{} bytes follow the last state", bytes.len() - pos));
    }
    Ok(states)
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
            let back = decode_deltas(&bytes, states.len() as u64, 0..u64::MAX, 0..0).unwrap();
            prop_assert_eq!(back, states);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), count in 0u64..80) {
            let _ = decode_deltas(&bytes, count, 0..1000, 10..20);
        }
    }

    #[test]
    fn refuses_bad_lists() {
        let b = encode_deltas(&[5, 5]);
        assert!(decode_deltas(&b, 2, 0..100, 0..0).is_err());
        let b = encode_deltas(&[5, 6]);
        assert!(decode_deltas(&b, 1, 0..100, 0..0).is_err());
        assert!(decode_deltas(&b, 3, 0..100, 0..0).is_err());
        assert!(decode_deltas(&b, 2, 0..6, 0..0).is_err());
        assert!(decode_deltas(&[0xff; 11], 1, 0..u64::MAX, 0..0).is_err());
        assert_eq!(input_words(&(1..3), 16), 0..2);
        assert_eq!(input_words(&(2..4), 16), 1..2);
    }
}
