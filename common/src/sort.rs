//! Sorting lists of state numbers (a prover's lists), or of values by such a number (a
//! shard's outgoing successors, by their block): a least-significant-digit radix sort in as
//! few passes as digits of at most 14 bits allow, the digits of equal width (28-bit numbers
//! in two passes of 14 bits, 32-bit ones in three of 11).
//!
//! ```
//! use tilepdb_common::sort::radix_sort;
//!
//! let mut states = vec![70_000, 3, 1 << 40, 3, 12];
//! radix_sort(&mut states, &mut Vec::new());
//! assert_eq!(states, [3, 3, 12, 70_000, 1 << 40]);
//! ```

/// Widest digit: the counts of one pass (16,384 of them, 64 KiB) stay in the second-level
/// cache, and the places a pass writes to stay few enough for the processor to keep open.
const MAX_DIGIT_BITS: u32 = 14;
/// Lists shorter than this are sorted by comparison (a pass costs more than they do).
const SHORT: usize = 256;

/// The width of each digit for numbers of `bits` bits: the fewest passes of at most
/// [`MAX_DIGIT_BITS`] bits, the bits shared out evenly.
fn digit_bits(bits: u32) -> u32 {
    let passes = bits.div_ceil(MAX_DIGIT_BITS).max(1);
    bits.div_ceil(passes).max(1)
}

/// Sorts `values` in increasing order; `scratch` is the second buffer of the passes (what it
/// holds before and after is of no meaning; keeping it spares an allocation per list).
pub fn radix_sort(values: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    radix_sort_by_key(values, scratch, |&v| v);
}

/// Sorts `values` by `key` in increasing order, as [`radix_sort`] sorts numbers; values of
/// equal keys keep no particular order.
///
/// ```
/// use tilepdb_common::sort::radix_sort_by_key;
///
/// let mut pairs: Vec<(u64, char)> = (0..300).map(|i| ((i * 7919) % 300, 'a')).collect();
/// radix_sort_by_key(&mut pairs, &mut Vec::new(), |p| p.0);
/// assert!(pairs.windows(2).all(|w| w[0].0 <= w[1].0));
/// ```
#[expect(
    clippy::cast_possible_truncation,
    reason = "a digit is masked to at most MAX_DIGIT_BITS bits, an index of the counts; a \
              count is below the list's length, checked to fit a u32"
)]
pub fn radix_sort_by_key<T: Copy + Default>(
    values: &mut Vec<T>,
    scratch: &mut Vec<T>,
    key: impl Fn(&T) -> u64,
) {
    if values.len() < SHORT || u32::try_from(values.len()).is_err() {
        values.sort_unstable_by_key(&key);
        return;
    }
    let bits = 64 - values.iter().fold(0, |m, v| m | key(v)).leading_zeros();
    let width = digit_bits(bits);
    let mask = (1usize << width) - 1;
    // The scratch's old values are overwritten by each pass: only a longer list zeroes
    // (and maps) more of it.
    if scratch.len() >= values.len() {
        scratch.truncate(values.len());
    } else {
        scratch.resize(values.len(), T::default());
    }
    let digit = |v: &T, shift: u32| (key(v) >> shift) as usize & mask;
    let mut starts = vec![0u32; mask + 1];
    let mut shift = 0;
    while shift < bits {
        starts.fill(0);
        for v in values.iter() {
            starts[digit(v, shift)] += 1;
        }
        // A digit the same in every value leaves the order as it is.
        if !starts.contains(&(values.len() as u32)) {
            let mut at = 0;
            for start in &mut starts {
                let n = *start;
                *start = at;
                at += n;
            }
            for v in values.iter() {
                let d = digit(v, shift);
                scratch[starts[d] as usize] = *v;
                starts[d] += 1;
            }
            std::mem::swap(values, scratch);
        }
        shift += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers from a xorshift generator, kept below `1 << bits`.
    fn numbers(n: usize, bits: u32, mut x: u64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if bits == 64 { x } else { x & ((1 << bits) - 1) }
            })
            .collect()
    }

    #[test]
    fn sorts_as_the_standard_sort_does() {
        let mut scratch = vec![7; 3];
        for n in [0, 1, 2, SHORT - 1, SHORT, 1000, 70_000] {
            for bits in [0, 1, 8, 10, 11, 14, 15, 28, 29, 32, 41, 64] {
                let mut values = numbers(n, bits, 0x9e37_79b9_7f4a_7c15 ^ n as u64);
                // Repeats, as successors reached twice are.
                let repeats: Vec<u64> = values.iter().step_by(3).copied().collect();
                values.extend(repeats);
                let mut expected = values.clone();
                expected.sort_unstable();
                radix_sort(&mut values, &mut scratch);
                assert_eq!(values, expected, "{n} numbers of {bits} bits");
            }
        }
    }

    #[test]
    fn a_scratch_longer_than_the_list_and_full_of_numbers_is_of_no_account() {
        let mut scratch = numbers(100_000, 64, 11);
        for n in [70_000, 5_000, SHORT, 1000] {
            let mut values = numbers(n, 33, n as u64);
            let mut expected = values.clone();
            expected.sort_unstable();
            radix_sort(&mut values, &mut scratch);
            assert_eq!(values, expected, "{n} numbers");
        }
    }

    #[test]
    fn digits_are_as_few_and_as_even_as_fourteen_bits_allow() {
        let widths: Vec<(u32, u32)> = [1, 14, 15, 28, 29, 32, 42, 43, 64]
            .iter()
            .map(|&b| (b, digit_bits(b)))
            .collect();
        assert_eq!(
            widths,
            [
                (1, 1),
                (14, 14),
                (15, 8),
                (28, 14),
                (29, 10),
                (32, 11),
                (42, 14),
                (43, 11),
                (64, 13)
            ]
        );
    }

    #[test]
    fn a_digit_shared_by_every_number_is_skipped_correctly() {
        // Every number has the same middle digit; the low and high ones differ.
        let mut values: Vec<u64> = numbers(5000, 10, 3)
            .into_iter()
            .zip(numbers(5000, 10, 5))
            .map(|(low, high)| high << 20 | 5 << 10 | low)
            .collect();
        let mut expected = values.clone();
        expected.sort_unstable();
        radix_sort(&mut values, &mut Vec::new());
        assert_eq!(values, expected);
    }

    #[test]
    fn values_are_sorted_by_their_keys_and_none_lost() {
        for n in [0, 5, SHORT, 70_000] {
            let keys = numbers(n, 23, 9);
            let mut values: Vec<(u64, u32)> = keys.iter().zip(0..).map(|(&k, i)| (k, i)).collect();
            radix_sort_by_key(&mut values, &mut Vec::new(), |v| v.0);
            assert!(values.windows(2).all(|w| w[0].0 <= w[1].0), "{n} values");
            let mut tags: Vec<u32> = values.iter().map(|v| v.1).collect();
            tags.sort_unstable();
            assert_eq!(tags, (0..u32::try_from(n).unwrap()).collect::<Vec<_>>());
            assert!(values.iter().all(|&(k, i)| keys[i as usize] == k));
        }
    }
}
