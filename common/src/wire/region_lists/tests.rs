//! The list format's round trips and refusals.

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
                        let bytes = encode_region_states(&shape, allowed.clone(), &states).unwrap();
                        let count = states.len() as u64;
                        assert!(bytes.len() as u64 <= shape.max_bytes(count));
                        let back =
                            decode_region_states(&bytes, count, &shape, allowed.clone()).unwrap();
                        assert_eq!(back, states);
                        if count > 0 {
                            // One state more or less than declared, a byte more or less.
                            let dec =
                                |b: &[u8], c| decode_region_states(b, c, &shape, allowed.clone());
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
                        let orders: Vec<u64> = block.iter().map(|s| s - b * shape.orders).collect();
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

/// A block's orders given as bits from any first order write the bytes that the same orders
/// pushed one by one write, whatever the density, and wrong bits are refused.
#[test]
#[expect(clippy::cast_possible_truncation, reason = "orders are below 120")]
fn a_blocks_bits_encode_as_its_orders() {
    // 5 tiles: 120 orders, two words of bits.
    let index = index("3x4", 5);
    for depth in [0, 1] {
        let shape = RegionListShape::new(&index, false, &[1, 2, 3, 4, 5], depth);
        let all = 0..shape.states();
        let f = shape.orders;
        for step in [1, 2, 5, 13, 23] {
            for first in [0, 1, 7, 8, 64, 100] {
                let states = layer_states(&shape, all.clone(), step);
                let mut by_bits = RegionListEncoder::new(&shape, all.clone());
                let mut blocks = states
                    .chunk_by(|a, b| a / f == b / f)
                    .enumerate()
                    .peekable();
                let mut expected = Vec::new();
                while let Some((r, run)) = blocks.next() {
                    let block = run[0] / f;
                    // The orders at or above `first` as bits; those below, in every other
                    // block, pushed one by one first (both ways meet in one record), in the
                    // others left out (the bits start the record).
                    let (low, high): (Vec<u64>, Vec<u64>) =
                        run.iter().map(|s| s % f).partition(|&o| o < first);
                    if r % 2 == 0 {
                        for &o in &low {
                            by_bits.push(block * f + o);
                            expected.push(block * f + o);
                        }
                    }
                    let mut bits = vec![0u64; (f - first).div_ceil(64) as usize];
                    for &o in &high {
                        bits[((o - first) / 64) as usize] |= 1 << ((o - first) % 64);
                        expected.push(block * f + o);
                    }
                    by_bits.push_block_bits(block, first, &bits);
                    if blocks.peek().is_none() {
                        // Bits past k! are refused.
                        let mut wrong = by_bits_clone(&shape, &all, &expected);
                        let mut past = vec![0u64; (f + 64).div_ceil(64) as usize];
                        past[(f / 64) as usize] |= 1 << (f % 64);
                        wrong.push_block_bits(block + 1, 0, &past);
                        assert!(wrong.finish().is_err());
                    }
                }
                let want = encode_region_states(&shape, all.clone(), &expected).unwrap();
                assert_eq!(
                    by_bits.finish().unwrap(),
                    want,
                    "step {step}, first {first}"
                );
            }
        }
        // A block of the other parity, or below the one before, is refused.
        let good = layer_states(&shape, all.clone(), 1);
        let other = (0..shape.states())
            .find(|&s| !shape.block_has_parity(s / f))
            .unwrap();
        let mut e = RegionListEncoder::new(&shape, all.clone());
        e.push_block_bits(other / f, other % f, &[1]);
        assert!(e.finish().is_err());
        let mut e = RegionListEncoder::new(&shape, all.clone());
        e.push(good[good.len() - 1]);
        e.push_block_bits(good[0] / f, good[0] % f, &[1]);
        assert!(e.finish().is_err());
    }
}

/// With 720 orders (6 tiles, twelve words of bits, a bitmap of 90 bytes) a block's bits
/// write what its orders pushed one by one write when gaps take two bytes: records whose gaps
/// pass the bitmap's bytes only with their last words become bitmaps, those just within keep
/// their gaps.
#[test]
#[expect(clippy::cast_possible_truncation, reason = "orders are below 720")]
fn a_blocks_bits_with_long_gaps_encode_as_its_orders() {
    let index = index("3x4", 6);
    let shape = RegionListShape::new(&index, false, &[1, 2, 3, 4, 5, 6], 0);
    let all = 0..shape.states();
    let f = shape.orders;
    assert_eq!(shape.bitmap_bytes(), 90);
    let blocks: Vec<u64> = (0..all.end / f)
        .filter(|&b| shape.block_has_parity(b))
        .take(40)
        .collect();
    for first in [0, 5, 64] {
        // Consecutive orders (a byte each) and `far` orders 200 apart (two bytes each):
        // 86 + 3 far ones take 92 bytes (a bitmap), 85 + 2 take 89 (gaps), 3 alone 6.
        for (near, far) in [(86, 3), (85, 2), (0, 3), (90, 0), (91, 0)] {
            let mut by_bits = RegionListEncoder::new(&shape, all.clone());
            let mut expected = Vec::new();
            for &block in &blocks {
                let orders: Vec<u64> = (0..near)
                    .map(|i| first + i)
                    .chain((1..=far).map(|i| first + 110 + 200 * i))
                    .filter(|&o| o < f)
                    .collect();
                let mut bits = vec![0u64; (f - first).div_ceil(64) as usize];
                for &o in &orders {
                    bits[((o - first) / 64) as usize] |= 1 << ((o - first) % 64);
                    expected.push(block * f + o);
                }
                by_bits.push_block_bits(block, first, &bits);
            }
            let want = encode_region_states(&shape, all.clone(), &expected).unwrap();
            assert_eq!(
                by_bits.finish().unwrap(),
                want,
                "first {first}, {near} near and {far} far orders"
            );
        }
    }
}

/// An encoder holding `states`.
fn by_bits_clone<'a>(
    shape: &RegionListShape<'a>,
    all: &Range<u64>,
    states: &[u64],
) -> RegionListEncoder<'a> {
    let mut e = RegionListEncoder::new(shape, all.clone());
    for &s in states {
        e.push(s);
    }
    e
}
