//! The two-bit state array of the breadth-first search and one-bit layer bitmaps.
//!
//! [`StateCodes`] keeps two bits per state (Korf's two-bit breadth-first search): `0` unseen,
//! [`DONE`] expanded, and the two other codes for the current and the next layer, which swap
//! roles from one layer to the next ([`StateCodes::code_of_depth`]), so no pass converts codes
//! between layers. Marking only changes an unseen state (a compare-and-swap from `0`), and
//! retiring a task's range only changes its own current states to [`DONE`] (an atomic OR of
//! the high bit), so concurrent marking can never turn a current state that is still to be
//! expanded into a done one.
//!
//! ```
//! use tilepdb_common::StateCodes;
//! let codes = StateCodes::new(100);
//! let (current, next) = (StateCodes::code_of_depth(0), StateCodes::code_of_depth(1));
//! assert!(codes.try_mark(42, current));
//! assert!(!codes.try_mark(42, next)); // seen already
//! let mut layer = vec![];
//! codes.for_each_with_code(0..100, current, |s| layer.push(s));
//! assert_eq!(layer, vec![42]);
//! codes.retire(0..100, current);
//! assert_eq!(codes.get(42), tilepdb_common::layer::DONE);
//! ```

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::atomic_array::AtomicArray;

const FIELDS_PER_WORD: u64 = 32;
const LOW_BITS: u64 = 0x5555_5555_5555_5555;

/// The code of an expanded state.
pub const DONE: u8 = 3;

/// Two bits per state: unseen, current or next layer, done. Safe to mark from many threads.
///
/// The words live on the heap ([`StateCodes::new`]) or in a memory-mapped file
/// ([`StateCodes::from_mmap`], the coordinator's checkpointed state array): an
/// [`AtomicArray`].
pub struct StateCodes {
    words: AtomicArray<AtomicU64>,
    states: u64,
}

impl StateCodes {
    /// All `states` unseen. Memory comes zeroed from the allocator (untouched pages cost nothing).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the words are allocated in memory, so their count fits in usize"
    )]
    pub fn new(states: u64) -> StateCodes {
        StateCodes {
            words: AtomicArray::zeroed(Self::words_for(states) as usize),
            states,
        }
    }

    /// The codes of `states` kept in a writable shared mapping of a file of at least
    /// [`StateCodes::file_bytes`] bytes (a new file of zeros holds every state unseen).
    /// Changes reach the file; [`StateCodes::flush`] waits for them. `None` if the mapping is
    /// too small.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the words are mapped into memory, so their count fits in usize"
    )]
    pub fn from_mmap(map: memmap2::MmapMut, states: u64) -> Option<StateCodes> {
        Some(StateCodes {
            words: AtomicArray::from_mmap(map, Self::words_for(states) as usize)?,
            states,
        })
    }

    /// Bytes of a file that holds the codes of `states`.
    pub fn file_bytes(states: u64) -> u64 {
        Self::words_for(states) * 8
    }

    /// Words (of 32 codes each) that hold `states` codes.
    pub fn words_for(states: u64) -> u64 {
        states.div_ceil(FIELDS_PER_WORD)
    }

    /// Writes a file-backed array's changes to its file and waits; nothing for a heap array.
    pub fn flush(&self) -> std::io::Result<()> {
        self.words.flush()
    }

    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        self.words.as_slice()
    }

    /// The code of the states of the layer at `depth` until they are expanded: 1 or 2,
    /// alternating.
    #[inline]
    pub fn code_of_depth(depth: u32) -> u8 {
        1 + (depth % 2) as u8
    }

    /// Turns every state of `states` whose code is `code` (1 or 2) into [`DONE`]. Other
    /// threads may mark unseen states of the same words meanwhile; they never touch these.
    pub fn retire(&self, states: Range<u64>, code: u8) {
        self.retire_and_count(states, code, None);
    }

    /// [`retire`](Self::retire)s the states of `states` with code `retired` and, in the same
    /// pass over their words, counts those with code `counted` (0 when `None`; exact when no
    /// other thread marks states of `states` meanwhile).
    ///
    /// ```
    /// use tilepdb_common::StateCodes;
    /// let codes = StateCodes::new(100);
    /// codes.try_mark(5, 1);
    /// codes.try_mark(6, 2);
    /// codes.try_mark(90, 2);
    /// assert_eq!(codes.retire_and_count(0..80, 1, Some(2)), 1);
    /// assert_eq!((codes.get(5), codes.get(6), codes.get(90)), (3, 2, 2));
    /// ```
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a word number is below the array's length, a usize"
    )]
    pub fn retire_and_count(&self, states: Range<u64>, retired: u8, counted: Option<u8>) -> u64 {
        if states.is_empty() {
            return 0;
        }
        debug_assert!(retired == 1 || retired == 2);
        let first = states.start / FIELDS_PER_WORD;
        let last = (states.end - 1) / FIELDS_PER_WORD;
        let mut count = 0;
        for w in first..=last {
            let word = &self.words()[w as usize];
            let value = word.load(Relaxed);
            if let Some(code) = counted {
                count += u64::from(fields_with_code(value, code, w, &states).count_ones());
            }
            let matches = fields_with_code(value, retired, w, &states);
            if matches != 0 {
                // Setting both bits of a field that is 01 or 10 gives 11.
                word.fetch_or(matches | (matches << 1), Relaxed);
            }
        }
        count
    }

    /// Number of states.
    pub fn states(&self) -> u64 {
        self.states
    }

    /// Bytes of memory the array holds.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// Asks the processor to bring the word of `state` into the cache (a hint; no effect on
    /// other targets than x86-64).
    #[inline]
    pub fn prefetch(&self, state: u64) {
        self.words.prefetch((state / FIELDS_PER_WORD) as usize);
    }

    /// Asks the processor to bring in the words of the `count` states `each`, all of them
    /// within `states` ([`AtomicArray::prefetch_within`]; a hint).
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a word number is below the array's length, a usize"
    )]
    pub fn prefetch_within(
        &self,
        states: Range<u64>,
        count: usize,
        each: impl Iterator<Item = u64>,
    ) {
        let words = (states.start / FIELDS_PER_WORD) as usize
            ..states.end.div_ceil(FIELDS_PER_WORD) as usize;
        self.words
            .prefetch_within(words, count, each.map(|s| (s / FIELDS_PER_WORD) as usize));
    }

    /// The code of `state`.
    #[inline]
    pub fn get(&self, state: u64) -> u8 {
        let w = self.words()[(state / FIELDS_PER_WORD) as usize].load(Relaxed);
        ((w >> (2 * (state % FIELDS_PER_WORD))) & 3) as u8
    }

    /// Gives an unseen `state` the `code`; returns whether this call did (false if seen).
    #[inline]
    pub fn try_mark(&self, state: u64, code: u8) -> bool {
        debug_assert!((1..=3).contains(&code));
        let word = &self.words()[(state / FIELDS_PER_WORD) as usize];
        let shift = 2 * (state % FIELDS_PER_WORD);
        let mut current = word.load(Relaxed);
        loop {
            if (current >> shift) & 3 != 0 {
                return false;
            }
            match word.compare_exchange_weak(
                current,
                current | u64::from(code) << shift,
                Relaxed,
                Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// Calls `f` with every state of `states` whose code is `code`, in increasing order.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a word number is below the array's length, a usize"
    )]
    pub fn for_each_with_code(&self, states: Range<u64>, code: u8, f: impl FnMut(u64)) {
        let words = self.words();
        scan_codes(|w| words[w as usize].load(Relaxed), states, code, f);
    }

    /// Writes into `bits` one bit per state of `states` (bit `i` of word `i / 64` for the
    /// state `states.start + i`), set when the state's code is `code`; the number set. A scan
    /// of the array's words, with no call per state ([`for_each_with_code`](Self::for_each_with_code)
    /// calls one).
    ///
    /// ```
    /// use tilepdb_common::StateCodes;
    /// let codes = StateCodes::new(200);
    /// for s in [3, 70, 131] {
    ///     codes.try_mark(s, 1);
    /// }
    /// let mut bits = Vec::new();
    /// assert_eq!(codes.bits_with_code(3..131, 1, &mut bits), 2);
    /// assert_eq!(bits, [1, 1 << (70 - 3 - 64)]);
    /// ```
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a word number is below the array's length, a usize"
    )]
    pub fn bits_with_code(&self, states: Range<u64>, code: u8, bits: &mut Vec<u64>) -> u64 {
        bits.clear();
        if states.is_empty() {
            return 0;
        }
        bits.resize((states.end - states.start).div_ceil(64) as usize, 0);
        let words = self.words();
        let mut count = 0;
        for w in states.start / FIELDS_PER_WORD..=(states.end - 1) / FIELDS_PER_WORD {
            let matches = fields_with_code(words[w as usize].load(Relaxed), code, w, &states);
            if matches == 0 {
                continue;
            }
            count += u64::from(matches.count_ones());
            let packed = low_bits_packed(matches);
            let base = w * FIELDS_PER_WORD;
            if base < states.start {
                bits[0] |= packed >> (states.start - base);
                continue;
            }
            let at = base - states.start;
            let (i, shift) = ((at / 64) as usize, at % 64);
            bits[i] |= packed << shift;
            // Fields past the word's end go to the next one (they lie in `states`, so it exists).
            if shift > 32 && packed >> (64 - shift) != 0 {
                bits[i + 1] |= packed >> (64 - shift);
            }
        }
        count
    }

    /// Number of states of `states` with `code`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a word number is below the array's length, a usize"
    )]
    pub fn count_with_code(&self, states: Range<u64>, code: u8) -> u64 {
        if states.is_empty() {
            return 0;
        }
        let words = self.words();
        (states.start / FIELDS_PER_WORD..=(states.end - 1) / FIELDS_PER_WORD)
            .map(|w| {
                let value = words[w as usize].load(Relaxed);
                u64::from(fields_with_code(value, code, w, &states).count_ones())
            })
            .sum()
    }
}

/// Calls `f` with every state of `states` whose code is `code`, reading word `w` with `load(w)`.
#[inline(always)]
fn scan_codes(load: impl Fn(u64) -> u64, states: Range<u64>, code: u8, mut f: impl FnMut(u64)) {
    if states.is_empty() {
        return;
    }
    let first = states.start / FIELDS_PER_WORD;
    let last = (states.end - 1) / FIELDS_PER_WORD;
    for w in first..=last {
        let mut matches = fields_with_code(load(w), code, w, &states);
        while matches != 0 {
            let bit = u64::from(matches.trailing_zeros());
            f(w * FIELDS_PER_WORD + bit / 2);
            matches &= matches - 1;
        }
    }
}

/// The low bits of the 32 fields of `word` (bits 0, 2, .., 62) packed into bits 0 to 31.
#[inline(always)]
fn low_bits_packed(word: u64) -> u64 {
    let mut x = word & LOW_BITS;
    x = (x | x >> 1) & 0x3333_3333_3333_3333;
    x = (x | x >> 2) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | x >> 4) & 0x00ff_00ff_00ff_00ff;
    x = (x | x >> 8) & 0x0000_ffff_0000_ffff;
    (x | x >> 16) & 0x0000_0000_ffff_ffff
}

/// The low bits of the fields of `word` (word `w` of an array) that hold `code` and whose
/// states lie in `states`.
#[inline(always)]
fn fields_with_code(word: u64, code: u8, w: u64, states: &Range<u64>) -> u64 {
    let x = word ^ (LOW_BITS * u64::from(code));
    // A field matches when both of its bits are zero in x.
    let mut matches = !(x | (x >> 1)) & LOW_BITS;
    let base = w * FIELDS_PER_WORD;
    if states.start > base {
        matches &= u64::MAX << (2 * (states.start - base));
    }
    if states.end < base + FIELDS_PER_WORD {
        matches &= (1u64 << (2 * (states.end - base))) - 1;
    }
    matches
}

/// One bit per state of a range of states: a set of states that a kernel can read as its
/// current layer (a worker's task input, decoded; benchmarks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerBitmap {
    start: u64,
    len: u64,
    words: Vec<u64>,
}

impl LayerBitmap {
    /// An empty bitmap of the states `states`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the words are allocated in memory, so their count fits in usize"
    )]
    pub fn new(states: Range<u64>) -> LayerBitmap {
        let len = states.end - states.start;
        LayerBitmap {
            start: states.start,
            len,
            words: vec![0; len.div_ceil(64) as usize],
        }
    }

    /// The states this bitmap covers.
    pub fn states(&self) -> Range<u64> {
        self.start..self.start + self.len
    }

    /// The bitmap's words, 64 states each, least state in the lowest bit.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Marks `state`, which lies in [`states`](Self::states).
    #[inline]
    pub fn insert(&mut self, state: u64) {
        let i = state - self.start;
        debug_assert!(i < self.len);
        self.words[(i / 64) as usize] |= 1 << (i % 64);
    }

    /// Whether `state` is marked (false outside [`states`](Self::states)).
    #[inline]
    pub fn contains(&self, state: u64) -> bool {
        let Some(i) = state.checked_sub(self.start).filter(|&i| i < self.len) else {
            return false;
        };
        self.words[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// Number of states in the set.
    pub fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Calls `f` with every state in the set within `states`, in increasing order.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a word number is below the bitmap's length, a usize"
    )]
    pub fn for_each_in(&self, states: Range<u64>, mut f: impl FnMut(u64)) {
        let lo = states.start.max(self.start);
        let hi = states.end.min(self.start + self.len);
        if lo >= hi {
            return;
        }
        let (first, last) = ((lo - self.start) / 64, (hi - 1 - self.start) / 64);
        for w in first..=last {
            let mut bits = self.words[w as usize];
            let base = self.start + w * 64;
            if w == first {
                bits &= u64::MAX << ((lo - self.start) % 64);
            }
            if w == last {
                let end = hi - base;
                if end < 64 {
                    bits &= (1u64 << end) - 1;
                }
            }
            while bits != 0 {
                f(base + u64::from(bits.trailing_zeros()));
                bits &= bits - 1;
            }
        }
    }
}

/// The states of a layer, as the expansion kernel reads them.
pub trait CurrentLayer: Sync {
    /// Calls `f` with every state of the layer within `states`, in increasing order.
    fn for_each_current(&self, states: Range<u64>, f: impl FnMut(u64));
}

/// The layer of `depth` in a two-bit state array.
pub struct CodeLayer<'a> {
    /// The state array.
    pub codes: &'a StateCodes,
    /// The layer's depth.
    pub depth: u32,
}

impl CurrentLayer for CodeLayer<'_> {
    #[inline]
    fn for_each_current(&self, states: Range<u64>, f: impl FnMut(u64)) {
        self.codes
            .for_each_with_code(states, StateCodes::code_of_depth(self.depth), f);
    }
}

impl CurrentLayer for LayerBitmap {
    #[inline]
    fn for_each_current(&self, states: Range<u64>, f: impl FnMut(u64)) {
        self.for_each_in(states, f);
    }
}

/// The positions of the bits set in a bitmap (bit `i % 64` of word `i / 64` for position
/// `i`), each plus `first`, increasing.
///
/// ```
/// use tilepdb_common::layer::BitPositions;
/// let bits = [0b101, 1 << 63];
/// assert_eq!(BitPositions::new(&bits, 10).collect::<Vec<_>>(), [10, 12, 137]);
/// assert_eq!(BitPositions::last(&bits, 10), Some(137));
/// ```
#[derive(Clone)]
pub struct BitPositions<'b> {
    bits: &'b [u64],
    word: usize,
    rest: u64,
    first: u64,
}

impl<'b> BitPositions<'b> {
    /// The positions set in `bits`, each plus `first`.
    pub fn new(bits: &'b [u64], first: u64) -> BitPositions<'b> {
        BitPositions {
            bits,
            word: 0,
            rest: bits.first().copied().unwrap_or(0),
            first,
        }
    }

    /// The last position set, plus `first`.
    pub fn last(bits: &[u64], first: u64) -> Option<u64> {
        let (i, &w) = bits.iter().enumerate().rev().find(|(_, w)| **w != 0)?;
        Some(first + 64 * i as u64 + 63 - u64::from(w.leading_zeros()))
    }
}

impl Iterator for BitPositions<'_> {
    type Item = u64;

    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        while self.rest == 0 {
            self.word += 1;
            self.rest = *self.bits.get(self.word)?;
        }
        let bit = u64::from(self.rest.trailing_zeros());
        self.rest &= self.rest - 1;
        Some(self.first + 64 * self.word as u64 + bit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn codes_scan_matches_get(marks in proptest::collection::vec((0u64..300, 1u8..=3), 0..100), lo in 0u64..300, len in 0u64..300) {
            let codes = StateCodes::new(300);
            for &(s, c) in &marks {
                codes.try_mark(s, c);
            }
            let hi = (lo + len).min(300);
            for code in 1..=3 {
                let mut got = vec![];
                codes.for_each_with_code(lo..hi, code, |s| got.push(s));
                let want: Vec<u64> = (lo..hi).filter(|&s| codes.get(s) == code).collect();
                prop_assert_eq!(codes.count_with_code(lo..hi, code), want.len() as u64);
                prop_assert_eq!(got, want);
            }
        }

        #[test]
        fn codes_bits_match_get(marks in proptest::collection::vec((0u64..300, 1u8..=3), 0..150), lo in 0u64..300, len in 0u64..300) {
            let codes = StateCodes::new(300);
            for &(s, c) in &marks {
                codes.try_mark(s, c);
            }
            let hi = (lo + len).min(300);
            let mut bits = vec![u64::MAX; 9];
            for code in 1..=3 {
                let count = codes.bits_with_code(lo..hi, code, &mut bits);
                prop_assert_eq!(bits.len() as u64, (hi - lo).div_ceil(64));
                let got: Vec<u64> = (0..hi - lo)
                    .filter(|i| bits[(i / 64) as usize] >> (i % 64) & 1 == 1)
                    .map(|i| lo + i)
                    .collect();
                let want: Vec<u64> = (lo..hi).filter(|&s| codes.get(s) == code).collect();
                prop_assert_eq!(count, want.len() as u64);
                prop_assert_eq!(got, want);
                // No bit past the range's end.
                if (hi - lo) % 64 != 0 {
                    prop_assert_eq!(bits[bits.len() - 1] >> ((hi - lo) % 64), 0);
                }
            }
        }

        #[test]
        #[expect(clippy::cast_possible_truncation, reason = "states are below 300")]
        fn retire_changes_only_the_code_in_range(marks in proptest::collection::vec((0u64..300, 1u8..=3), 0..100), lo in 0u64..300, len in 0u64..300, code in 1u8..=2, counted in proptest::option::of(1u8..=3)) {
            let codes = StateCodes::new(300);
            for &(s, c) in &marks {
                codes.try_mark(s, c);
            }
            let before: Vec<u8> = (0..300).map(|s| codes.get(s)).collect();
            let hi = (lo + len).min(300);
            // The count is of the codes before the pass (a retired state was `code`).
            let want_count = counted.map_or(0, |c| (lo..hi).filter(|&s| before[s as usize] == c).count() as u64);
            prop_assert_eq!(codes.retire_and_count(lo..hi, code, counted), want_count);
            for s in 0..300u64 {
                let want = if (lo..hi).contains(&s) && before[s as usize] == code { DONE } else { before[s as usize] };
                prop_assert_eq!(codes.get(s), want);
            }
        }

        #[test]
        fn bitmap_scan(start in 0u64..100, len in 1u64..400, ins in proptest::collection::vec(0u64..400, 0..60), lo in 0u64..600, hi in 0u64..600) {
            let mut b = LayerBitmap::new(start..start + len);
            for &i in &ins {
                if i < len { b.insert(start + i); }
            }
            let mut got = vec![];
            b.for_each_in(lo..hi, |s| got.push(s));
            let want: Vec<u64> = (lo..hi).filter(|&s| b.contains(s)).collect();
            prop_assert_eq!(got, want);
        }
    }
}
