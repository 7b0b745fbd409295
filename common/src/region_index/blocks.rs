//! The first block of every tile set, in a few bits per set: [`SetBlocks`].
//!
//! A set of rank `c` owns the blocks `offset[c] .. offset[c] + R(c)` of the state index, one
//! per region of its free cells. Every set has at least one region, so `offset[c] = c +
//! (the extra regions of the sets before c)`, where a set's extra regions are its regions but
//! one: a few bits per set, mostly zero. Sets are taken 64 at a time in rank order: for each
//! group, the extra regions of the sets before it, then `planes` words whose bit `i` of word
//! `j` is bit `j` of the extra regions of the group's `i`-th set. A set's first block is then
//! the group's word plus a masked popcount per plane, from words that fit in the processor's
//! caches where an offset per set would not.

use crate::error::{Error, Result};

/// The most bit planes of extra regions: 15 extra regions, more than a board of 25 cells has
/// (two regions never touch, so a board of `n` cells has at most `ceil(n / 2)`).
const MAX_PLANES: usize = 4;

/// Sets per group.
const GROUP: usize = 64;

/// [`GROUP`] as a set rank.
const GROUP_SETS: u64 = GROUP as u64;

/// The first block of every set of a region index and its extra regions (see the module's
/// documentation).
///
/// ```
/// use tilepdb_common::region_index::SetBlocks;
/// // Three sets of 1, 3 and 2 regions: blocks 0, 1..4 and 4..6.
/// let blocks = SetBlocks::new(&[1, 3, 2]).unwrap();
/// assert_eq!(blocks.first_block(1), (1, 2));
/// assert_eq!(blocks.first_block(2), (4, 1));
/// assert_eq!(blocks.blocks(), 6);
/// assert_eq!(blocks.set_of_block(3), 1);
/// ```
#[derive(Clone, Debug)]
pub struct SetBlocks {
    sets: u64,
    blocks: u64,
    planes: usize,
    /// `planes + 1` words a group: the extra regions before it, then its bit planes.
    groups: Vec<u64>,
}

impl SetBlocks {
    /// The blocks of sets of `regions[c]` regions each (every count between 1 and
    /// `2^MAX_PLANES`).
    pub fn new(regions: &[u8]) -> Result<SetBlocks> {
        let extra = |c: usize| u64::from(regions[c]).wrapping_sub(1);
        let largest = (0..regions.len()).map(extra).max().unwrap_or(0);
        if largest >= 1 << MAX_PLANES {
            return Err(Error::Pattern {
                pattern: "of this board".into(),
                reason: format!(
                    "a tile set with {} regions (between 1 and {} are indexed)",
                    largest.wrapping_add(1),
                    1 << MAX_PLANES
                ),
            });
        }
        let planes = (64 - largest.leading_zeros() as usize).max(1);
        let sets = regions.len();
        let mut groups = Vec::with_capacity(sets.div_ceil(GROUP) * (planes + 1));
        let mut before = 0u64;
        for group in regions.chunks(GROUP) {
            groups.push(before);
            let mut words = [0u64; MAX_PLANES];
            for (i, &count) in group.iter().enumerate() {
                let e = u64::from(count) - 1;
                before += e;
                for (j, word) in words.iter_mut().enumerate().take(planes) {
                    *word |= ((e >> j) & 1) << i;
                }
            }
            groups.extend_from_slice(&words[..planes]);
        }
        Ok(SetBlocks {
            sets: sets as u64,
            blocks: sets as u64 + before,
            planes,
            groups,
        })
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.sets
    }

    /// Number of blocks: the regions of all sets.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> u64 {
        8 * self.groups.len() as u64
    }

    /// The most bytes held for `sets` sets.
    pub fn most_memory_bytes(sets: u64) -> u64 {
        8 * sets.div_ceil(GROUP_SETS) * (MAX_PLANES as u64 + 1)
    }

    /// The first block of the set of rank `c` and its extra regions.
    #[inline(always)]
    pub fn first_block(&self, c: u64) -> (u64, u64) {
        match self.planes {
            3 => self.first_block_in::<3>(c),
            2 => self.first_block_in::<2>(c),
            1 => self.first_block_in::<1>(c),
            _ => self.first_block_in::<MAX_PLANES>(c),
        }
    }

    /// [`SetBlocks::first_block`] for counts of `P` planes (`self.planes`), the loop over them
    /// unrolled.
    #[inline(always)]
    fn first_block_in<const P: usize>(&self, c: u64) -> (u64, u64) {
        let at = (c / GROUP_SETS) as usize * (P + 1);
        let group = &self.groups[at..=at + P];
        let bit = c % GROUP_SETS;
        let below = (1u64 << bit) - 1;
        let mut first = c + group[0];
        let mut extra = 0;
        for j in 0..P {
            let word = group[1 + j];
            first += u64::from((word & below).count_ones()) << j;
            extra |= ((word >> bit) & 1) << j;
        }
        (first, extra)
    }

    /// The set that owns `block` (below [`SetBlocks::blocks`]).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "groups are below the number held in memory, so they fit in usize"
    )]
    pub fn set_of_block(&self, block: u64) -> u64 {
        debug_assert!(block < self.blocks);
        let width = self.planes + 1;
        let groups = self.groups.len() / width;
        // The last group whose first block is at or below `block`, then the last of its sets
        // whose first block is: every set has a block, so first blocks increase.
        let g = partition_point(groups as u64, |g| {
            g * GROUP_SETS + self.groups[g as usize * width] <= block
        }) - 1;
        let first = g * GROUP_SETS;
        let in_group = (self.sets - first).min(GROUP_SETS);
        first + partition_point(in_group, |i| self.first_block(first + i).0 <= block) - 1
    }
}

/// The first `i` in `0..len` where `below(i)` is false (`below` true then false over the
/// range).
fn partition_point(len: u64, below: impl Fn(u64) -> bool) -> u64 {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every set's first block and extra regions, and the set of every block, against running
    /// sums over counts of every plane width and group edge.
    #[test]
    fn first_blocks_and_the_set_of_each_block_match_running_sums() {
        for (len, most) in [(1u64, 1u8), (63, 2), (64, 3), (65, 5), (200, 9), (300, 16)] {
            let counts: Vec<u8> = (0..len)
                .map(|c| 1 + u8::try_from((c * 7 + c / 5) % u64::from(most)).unwrap())
                .collect();
            let blocks = SetBlocks::new(&counts).unwrap();
            let mut first = 0;
            for (c, &count) in counts.iter().enumerate() {
                let c = c as u64;
                assert_eq!(blocks.first_block(c), (first, u64::from(count) - 1));
                for b in first..first + u64::from(count) {
                    assert_eq!(blocks.set_of_block(b), c, "block {b} of {len} sets");
                }
                first += u64::from(count);
            }
            assert_eq!(blocks.blocks(), first);
            assert!(blocks.memory_bytes() <= SetBlocks::most_memory_bytes(len));
        }
    }

    #[test]
    fn a_set_of_more_regions_than_the_planes_hold_is_refused() {
        let err = SetBlocks::new(&[1, 17]).unwrap_err().to_string();
        assert!(err.contains("17 regions"), "{err}");
    }
}
