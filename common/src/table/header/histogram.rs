//! A table's histogram of values: counted from the values, and its mean.

use crate::table::UNREACHED;

/// The mean value of a histogram (`histogram[v]` = entries of value `v`); `None` if empty.
///
/// ```
/// use tilepdb_common::table::header::histogram_mean;
/// assert_eq!(histogram_mean(&[1, 2, 1]), Some(1.0)); // values 0, 1, 1, 2
/// assert_eq!(histogram_mean(&[0, 0]), None);
/// ```
pub fn histogram_mean(histogram: &[u64]) -> Option<f64> {
    let (sum, count) = histogram
        .iter()
        .enumerate()
        .fold((0f64, 0u64), |(s, c), (v, &n)| {
            (s + v as f64 * n as f64, c + n)
        });
    (count > 0).then(|| sum / count as f64)
}

/// Counts of each value of reached entries (`histogram[v]`: entries of value `v`, up to the
/// largest value), and the number of unreached entries ([`UNREACHED`]).
///
/// ```
/// use tilepdb_common::table::header::histogram_of;
/// assert_eq!(histogram_of(&[0, 2, 2, 255]), (vec![1, 0, 2], 1));
/// ```
pub fn histogram_of(values: &[u8]) -> (Vec<u64>, u64) {
    let mut counts = [0u64; 256];
    for &v in values {
        counts[usize::from(v)] += 1;
    }
    let unreached = counts[usize::from(UNREACHED)];
    counts[usize::from(UNREACHED)] = 0;
    let len = counts.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    (counts[..len].to_vec(), unreached)
}
