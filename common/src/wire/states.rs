//! How a task's input and result are laid out on the wire: increasing lists of states as a
//! range-coded trie of their placements.
//!
//! * Input: the current-layer states of the task's ranks.
//! * Result: the distinct states the task reached.
//!
//! A state is `rank * slots + slot`, and a rank is the mixed-radix number of its tiles'
//! digits (tile `i` has `n - i` choices: the free cells left by the tiles before it). A list
//! is the trie of its states: level `i < k` chooses tile `i`'s cell among the free cells
//! left, level `k` (not for `ignored`) the region of the blank. Each node of the trie is sent
//! as one bit per *candidate* child, "is it in the list", in order, depth first, each bit
//! coded by a binary range coder (LZMA's) with an adaptive probability of its context: the
//! level, the candidate's cell, the node's bits so far (none, out, in, out after an in). What
//! makes the lists small is what both ends know about the candidates:
//!
//! * a state of the layer at depth `d` has the parity of `d` (each move of a pattern tile
//!   changes the Manhattan distance by one), so the last tile's candidate cells are those of
//!   one colour of the checkerboard;
//! * a region is represented by its least cell ([`StateSpace`]), so the candidate slots of a
//!   placement are its regions' least cells: one candidate for most placements, costing no
//!   bit at all;
//! * a node has at least one child: the last candidate of a node without a child yet is in
//!   the list without a bit;
//! * only candidates whose states meet the list's allowed range count, so a decoder never
//!   produces a state outside it.
//!
//! The coder stops after the declared number of states; the decoder checks that it used
//! every byte and no more. Decoding is total: any bytes either decode to exactly the declared
//! number of increasing states of the right parity, regions and range, or give an error,
//! after work bounded by the declared count (never by the bytes). Encoding is streaming: the
//! encoder holds the path to the last state, never the states.
//!
//! Measured on the 15-puzzle 5-5-5 set (`coordinator/examples/wire_sizes.rs`, tasks cut as the
//! distributed coordinator cuts them), these lists take 0.28 to 0.30 (input) and 0.79 to 0.83
//! (result) bytes per state expanded, against 0.73 to 0.80 and 2.13 to 2.35 for the LEB128
//! differences with zstd level 1 that they replace (2.07 to 2.27 at level 3); bitmaps, or a
//! choice per window of 2^16 states between a bitmap and differences, did not beat the
//! differences with zstd. The chunks' zstd adds 1 % to these lists. The price is CPU: per
//! state expanded, about 60 ns to encode and 40 to decode an input, 150 and 110 a result,
//! against 10 to 20 for the differences with zstd (and 350 to 550 to expand the state). On
//! the wire (`cargo bench -p tilepdb-coordinator --bench distributed -- 5-5-5`, messages
//! included) the set takes 1.20 bytes per state expanded, 3.13 before. What a result costs
//! depends most on the task cut: a task of about one block lists 3.1 states per state
//! expanded (the moves of the pattern's first tile leave it, and reach states that other
//! tasks list too); with one task per layer, 1.9, and its result takes 0.31 bytes per state
//! expanded instead of 0.79.
//!
//! ```
//! use tilepdb_common::wire::states::{ListShape, decode_states, encode_states};
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let shape = ListShape::new(&space, 0); // the layer of depth 0: the goal
//! let goal = space.goal_state();
//! let bytes = encode_states(&shape, 0..space.states(), &[goal]).unwrap();
//! assert_eq!(decode_states(&bytes, 1, &shape, 0..space.states()).unwrap(), [goal]);
//! assert!(decode_states(&bytes[..bytes.len() - 1], 1, &shape, 0..space.states()).is_err());
//! // Whatever the bytes, what decodes lies in the allowed range.
//! if let Ok(other) = decode_states(&bytes, 1, &shape, goal + 1..space.states()) {
//!     assert!(other[0] > goal);
//! }
//! // The goal is not a state of the layer of depth 1 (its parity is wrong).
//! assert!(encode_states(&ListShape::new(&space, 1), 0..space.states(), &[goal]).is_err());
//! ```

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless,
    reason = "the range coder and the trie move bits between u8, u16, u32 and u64 within their proven bounds"
)]

use std::ops::Range;
use std::sync::OnceLock;

use crate::board::{Board, MAX_CELLS};
use crate::error::{Error, Result};
use crate::rank::falling_factorial;
use crate::space::{BlankRule, StateSpace};

/// The states of ranks `ranks` (`slots` states each).
pub fn own_states(ranks: &Range<u64>, slots: u64) -> Range<u64> {
    ranks.start * slots..ranks.end * slots
}

/// What both ends know of a list besides its bytes: the table's shape and the parity of the
/// layer its states belong to.
#[derive(Clone, Debug)]
pub struct ListShape {
    board: Board,
    n: usize,
    k: usize,
    slots: u64,
    /// Whether states have a level for the blank's region (not for `ignored`).
    regions: bool,
    /// `weights[i]`: ranks per digit of tile `i`.
    weights: [u64; MAX_CELLS],
    states: u64,
    /// `floor(2^64 / slots) + 1`: `state / slots` as a multiplication, for states below
    /// `u64::MAX / slots`.
    reciprocal: u128,
    /// Cells whose row and column add up to an odd number.
    odd: u32,
    /// The least cells of the regions of each set of free cells, on boards of up to 16 cells.
    least_cells: LeastCells,
    /// How many tiles of a placement of the layer stand on odd cells, modulo 2.
    parity: u32,
}

impl ListShape {
    /// The shape of lists of states of `space` at `depth`.
    pub fn new(space: &StateSpace, depth: u32) -> ListShape {
        let board = space.board();
        let (n, k) = (board.cells(), space.k());
        let mut weights = [0u64; MAX_CELLS];
        for (i, w) in weights.iter_mut().enumerate().take(k) {
            *w = falling_factorial((n - 1 - i) as u64, (k - 1 - i) as u64)
                .expect("weights below the placements");
        }
        let odd = (0..n)
            .filter(|&c| {
                let (r, col) = board.row_col(c);
                (r + col) % 2 == 1
            })
            .fold(0u32, |m, c| m | 1 << c);
        let goal = space.goal_cells().iter().fold(0u32, |m, &c| m | 1 << c);
        ListShape {
            board,
            n,
            k,
            slots: space.slots(),
            regions: space.rule() != BlankRule::Ignored,
            weights,
            states: space.states(),
            reciprocal: (u64::MAX / space.slots()) as u128 + 1,
            odd,
            least_cells: LeastCells::of(board),
            parity: ((goal & odd).count_ones() + depth) % 2,
        }
    }

    /// `state / slots`, `state % slots`.
    #[inline]
    fn rank_and_slot(&self, state: u64) -> (u64, u64) {
        // Exact below 2^64 / slots: the multiplier's error times `state` stays under 1/slots.
        let rank = if state <= u64::MAX / 32 {
            ((state as u128 * self.reciprocal) >> 64) as u64
        } else {
            state / self.slots
        };
        (rank, state - rank * self.slots)
    }

    /// The deepest level: the region's, or the last tile's for `ignored`.
    fn leaf(&self) -> usize {
        if self.regions { self.k } else { self.k - 1 }
    }

    /// Most candidates a node of `level` has.
    fn most_candidates(&self, level: usize) -> u64 {
        if level < self.k {
            (self.n - level) as u64
        } else {
            self.slots
        }
    }

    /// An upper bound on the bytes of any list of `count` states: at most every candidate
    /// of every node on the way to each state is coded, once, each in at most 8.1 bits (the
    /// least probability is 15/4096), and the coder adds 5 bytes.
    pub fn max_bytes(&self, count: u64) -> u64 {
        if count == 0 {
            return 0;
        }
        let bits: u64 = (0..=self.leaf()).map(|l| self.most_candidates(l)).sum();
        count
            .saturating_mul(bits + bits.div_ceil(64))
            .saturating_add(8)
    }

    /// The candidate children (cells) of a node: `free` the cells left free by the levels
    /// above, `base` its first rank (its placement's rank on the region level).
    #[inline]
    fn candidates(&self, level: usize, free: u32, base: u64, allowed: &Allowed) -> u32 {
        if level < self.k {
            let w = self.weights[level];
            let digits = (self.n - level) as u64;
            let mut cells = free;
            if base < allowed.first_rank || base + digits * w > allowed.end_rank {
                let lo = (allowed.first_rank.saturating_sub(base) / w).min(digits);
                let hi = allowed
                    .end_rank
                    .saturating_sub(base)
                    .div_ceil(w)
                    .min(digits);
                cells = nth_bits(free, lo, hi);
            }
            if level == self.k - 1 {
                // The last tile's cell makes the placement's parity.
                let before = ((self.board.all_cells() & !free & self.odd).count_ones()) % 2;
                cells &= if before == self.parity {
                    !self.odd
                } else {
                    self.odd
                };
            }
            cells
        } else {
            let mut reps = match self.least_cells.0 {
                Some(table) => table[free as usize] as u32,
                None => least_cells(self.board, free),
            };
            let first = base * self.slots;
            if first < allowed.states.start || first + self.slots > allowed.states.end {
                let lo = allowed.states.start.saturating_sub(first).min(self.slots);
                let hi = allowed.states.end.saturating_sub(first).min(self.slots);
                reps &= nth_bits(free, lo, hi);
            }
            reps
        }
    }

    /// The node under `parent` (of `level - 1`) through its current child.
    #[inline]
    fn child_of(&self, level: usize, parent: &Node) -> (u32, u64) {
        let digit = (parent.free & (parent.child - 1)).count_ones() as u64;
        (
            parent.free & !parent.child,
            parent.base + digit * self.weights[level - 1],
        )
    }

    /// The state of a leaf node's current child.
    #[inline]
    fn state_of(&self, leaf: &Node) -> u64 {
        let index = (leaf.free & (leaf.child - 1)).count_ones() as u64;
        if self.regions {
            leaf.base * self.slots + index
        } else {
            leaf.base + index
        }
    }
}

/// The least cell of each region (connected set) of `free` cells.
fn least_cells(board: Board, free: u32) -> u32 {
    let mut least = 0u32;
    let mut left = free;
    while left != 0 {
        let cell = left & left.wrapping_neg();
        least |= cell;
        left &= !board.flood(cell, free);
    }
    least
}

/// [`least_cells`] of every set of free cells of a board of at most 16 cells (128 KiB for
/// 4x4), made once per board shape: a look-up instead of a flood fill per placement.
#[derive(Clone, Copy)]
struct LeastCells(Option<&'static [u16]>);

impl LeastCells {
    fn of(board: Board) -> LeastCells {
        static TABLES: [OnceLock<Box<[u16]>>; 81] = [const { OnceLock::new() }; 81];
        let (w, h) = (board.width(), board.height());
        if board.cells() > 16 {
            return LeastCells(None);
        }
        let table = TABLES[w * 9 + h].get_or_init(|| {
            (0..1u32 << board.cells())
                .map(|free| least_cells(board, free) as u16)
                .collect()
        });
        LeastCells(Some(table))
    }
}

impl std::fmt::Debug for LeastCells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "table"
        } else {
            "flood fills"
        })
    }
}

/// A list's allowed states, and the ranks they touch.
struct Allowed {
    states: Range<u64>,
    first_rank: u64,
    end_rank: u64,
}

impl Allowed {
    fn new(shape: &ListShape, states: Range<u64>) -> Allowed {
        let states = states.start.min(shape.states)..states.end.min(shape.states);
        Allowed {
            first_rank: states.start / shape.slots,
            end_rank: states.end.div_ceil(shape.slots),
            states,
        }
    }
}

/// The index of the `nth` (from 0) set bit of `bits`, which has more than `nth`: the byte
/// that holds it by three popcounts, the bit in the byte by a table.
#[inline]
fn select(bits: u32, nth: u32) -> u32 {
    let below = [
        0,
        (bits & 0xff).count_ones(),
        (bits & 0xffff).count_ones(),
        (bits & 0xff_ffff).count_ones(),
    ];
    let byte = (nth >= below[1]) as usize + (nth >= below[2]) as usize + (nth >= below[3]) as usize;
    let shift = 8 * byte as u32;
    SELECT_IN_BYTE[((bits >> shift) & 0xff) as usize][((nth - below[byte]) & 7) as usize] as u32
        + shift
}

/// `SELECT_IN_BYTE[b][n]`: the index of the `n`th set bit of the byte `b` (0 past its last).
static SELECT_IN_BYTE: [[u8; 8]; 256] = {
    let mut table = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let (mut n, mut bit) = (0, 0);
        while bit < 8 {
            if b >> bit & 1 == 1 {
                table[b][n] = bit as u8;
                n += 1;
            }
            bit += 1;
        }
        b += 1;
    }
    table
};

/// The set bits of `mask` whose index among its set bits lies in `lo..hi`.
#[inline]
fn nth_bits(mut mask: u32, lo: u64, hi: u64) -> u32 {
    for _ in 0..lo {
        mask &= mask.wrapping_sub(1);
    }
    let mut kept = 0u32;
    for _ in lo..hi {
        if mask == 0 {
            break;
        }
        let b = mask & mask.wrapping_neg();
        kept |= b;
        mask ^= b;
    }
    kept
}

/// A node of the trie on the way to the current state.
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    /// Cells left free by the levels above (tile levels: before this tile; region level: by
    /// every tile).
    free: u32,
    /// First rank under the node (the placement's rank on the region level).
    base: u64,
    /// Candidates not coded yet.
    candidates: u32,
    /// The current child (a cell bit); 0 before the first.
    child: u32,
    /// What the node's bits were so far: 0 (none yet), [`OUT`], [`IN`] or [`OUT_AFTER_IN`].
    history: u32,
}

/// The last bit was out, and no child yet.
const OUT: u32 = 1;
/// The last bit was in.
const IN: u32 = 2;
/// The last bit was out, after a child.
const OUT_AFTER_IN: u32 = 3;

impl Node {
    /// The history after a bit out.
    #[inline]
    fn out(&self) -> u32 {
        if self.child == 0 { OUT } else { OUT_AFTER_IN }
    }
}

/// The adaptive probabilities of the bits of a list, one per context: the level, the
/// candidate's cell, the node's history.
struct Model {
    probabilities: Vec<u16>,
}

impl Model {
    fn new(shape: &ListShape) -> Model {
        Model {
            probabilities: vec![PROB_ONE as u16 / 2; (shape.leaf() + 1) * MAX_CELLS * 4],
        }
    }

    #[inline]
    fn context(&mut self, level: usize, node: &Node, cell: u32) -> &mut u16 {
        let i = (level * MAX_CELLS + cell as usize) * 4 + node.history as usize;
        &mut self.probabilities[i]
    }
}

/// Probabilities are in 1/4096.
const PROB_BITS: u32 = 12;
const PROB_ONE: u32 = 1 << PROB_BITS;
/// Each coded bit moves its probability 1/16 of the way towards it.
const ADAPT: u32 = 4;
const TOP: u32 = 1 << 24;

/// A context's state: the probability of a 0 in its low 12 bits, how many bits it has seen
/// (up to `ADAPT - 1`) above.
#[inline]
fn probability_of(state: u16) -> u32 {
    (state & (PROB_ONE as u16 - 1)) as u32
}

/// Moves a context's probability towards the bit it saw: by 1/2, 1/4, 1/8 for its first
/// bits (about the frequency so far), then by 1/16.
#[inline]
fn adapt(state: &mut u16, one: bool) {
    let p = probability_of(*state);
    let seen = (*state >> PROB_BITS) as u32;
    let shift = (seen + 1).min(ADAPT);
    let p = if one {
        p - (p >> shift)
    } else {
        p + ((PROB_ONE - p) >> shift)
    };
    *state = (((seen + 1).min(ADAPT - 1)) << PROB_BITS | p) as u16;
}

/// A binary range coder (that of LZMA): 32-bit range, carries through a cache byte.
struct RangeEncoder {
    low: u64,
    range: u32,
    cache: u8,
    pending: u64,
    bytes: Vec<u8>,
}

impl RangeEncoder {
    fn new() -> RangeEncoder {
        RangeEncoder {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending: 1,
            bytes: Vec::new(),
        }
    }

    #[inline]
    fn code(&mut self, probability: &mut u16, one: bool) {
        let p = probability_of(*probability);
        let bound = (self.range >> PROB_BITS) * p;
        if one {
            self.low += bound as u64;
            self.range -= bound;
        } else {
            self.range = bound;
        }
        adapt(probability, one);
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    fn shift_low(&mut self) {
        if (self.low as u32) < 0xff00_0000 || self.low >> 32 != 0 {
            let carry = (self.low >> 32) as u8;
            let mut byte = self.cache;
            loop {
                self.bytes.push(byte.wrapping_add(carry));
                byte = 0xff;
                self.pending -= 1;
                if self.pending == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00ff_ffff) << 8;
    }

    fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.bytes
    }
}

/// Reads what [`RangeEncoder`] wrote; past the end it reads zeros and remembers it.
struct RangeDecoder<'a> {
    bytes: &'a [u8],
    at: usize,
    range: u32,
    code: u32,
    overrun: bool,
}

impl<'a> RangeDecoder<'a> {
    fn new(bytes: &'a [u8]) -> Result<RangeDecoder<'a>> {
        if bytes.len() < 5 || bytes[0] != 0 {
            return bad("does not start as a range coder's output".into());
        }
        let code = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        if code == u32::MAX {
            return bad("starts with a code out of its range".into());
        }
        Ok(RangeDecoder {
            bytes,
            at: 5,
            range: u32::MAX,
            code,
            overrun: false,
        })
    }

    #[inline]
    fn decode(&mut self, probability: &mut u16) -> bool {
        let p = probability_of(*probability);
        let bound = (self.range >> PROB_BITS) * p;
        let one = self.code >= bound;
        if one {
            self.code -= bound;
            self.range -= bound;
        } else {
            self.range = bound;
        }
        adapt(probability, one);
        while self.range < TOP {
            self.range <<= 8;
            let byte = if let Some(&b) = self.bytes.get(self.at) {
                b
            } else {
                self.overrun = true;
                0
            };
            self.at += 1;
            self.code = (self.code << 8) | byte as u32;
        }
        one
    }

    fn finish(self) -> Result<()> {
        if self.overrun {
            return bad(format!("ends early ({} bytes)", self.bytes.len()));
        }
        if self.at != self.bytes.len() {
            return bad(format!(
                "{} bytes follow the last state",
                self.bytes.len() - self.at
            ));
        }
        Ok(())
    }
}

fn bad<T>(why: String) -> Result<T> {
    Err(Error::Wire(format!("state list: {why}")))
}

/// Writes an increasing list of states as it comes, without holding the states.
pub struct StateEncoder<'a> {
    shape: &'a ListShape,
    allowed: Allowed,
    coder: RangeEncoder,
    model: Model,
    nodes: [Node; MAX_CELLS + 1],
    last: Option<u64>,
    count: u64,
    error: Option<Error>,
}

impl<'a> StateEncoder<'a> {
    /// An encoder of states of `shape` in `allowed`.
    pub fn new(shape: &'a ListShape, allowed: Range<u64>) -> StateEncoder<'a> {
        StateEncoder {
            shape,
            allowed: Allowed::new(shape, allowed),
            coder: RangeEncoder::new(),
            model: Model::new(shape),
            nodes: [Node::default(); MAX_CELLS + 1],
            last: None,
            count: 0,
            error: None,
        }
    }

    /// Appends `state`, which must lie above the one before, in the allowed range, and be a
    /// state of the shape's layer (parity, least cell of its region); otherwise the encoder
    /// keeps the error for [`finish`](Self::finish) and ignores what follows.
    #[inline]
    pub fn push(&mut self, state: u64) {
        if self.error.is_none() && !self.try_push(state) {
            self.refuse(state);
        }
    }

    #[cold]
    #[inline(never)]
    fn refuse(&mut self, state: u64) {
        self.error = Some(Error::Wire(format!(
            "state list: state {state} (after {:?}) is not a state of the layer (parity {}, \
             least cell of its region) in {:?} above the one before",
            self.last, self.shape.parity, self.allowed.states
        )));
    }

    /// Codes `state`; false if it cannot be.
    #[inline]
    fn try_push(&mut self, state: u64) -> bool {
        let shape = self.shape;
        if self.last.is_some_and(|l| state <= l) || !self.allowed.states.contains(&state) {
            return false;
        }
        let leaf = shape.leaf();
        let (rank, slot) = if shape.regions {
            shape.rank_and_slot(state)
        } else {
            (state, 0)
        };
        // The level where the state leaves the path of the one before.
        let split = if self.last.is_none() {
            let free = shape.board.all_cells();
            self.nodes[0] = Node {
                free,
                candidates: shape.candidates(0, free, 0, &self.allowed),
                ..Node::default()
            };
            0
        } else {
            let mut level = leaf;
            if !shape.regions || rank != self.nodes[shape.k].base {
                level = shape.k - 1;
                while level > 0 {
                    let span = (shape.n - level) as u64 * shape.weights[level];
                    if rank < self.nodes[level].base + span {
                        break;
                    }
                    level -= 1;
                }
            }
            // Close the nodes below, the deepest first: their other candidates are out.
            for l in (level + 1..=leaf).rev() {
                let node = &mut self.nodes[l];
                while node.candidates != 0 {
                    let c = node.candidates.trailing_zeros();
                    node.candidates &= node.candidates - 1;
                    self.coder.code(self.model.context(l, node, c), false);
                    node.history = OUT_AFTER_IN;
                }
            }
            level
        };
        for level in split..=leaf {
            if level > split {
                let (free, base) = shape.child_of(level, &self.nodes[level - 1]);
                let candidates = shape.candidates(level, free, base, &self.allowed);
                self.nodes[level] = Node {
                    free,
                    base,
                    candidates,
                    ..Node::default()
                };
            }
            let node = &mut self.nodes[level];
            let index = if level == shape.k {
                slot
            } else if level == shape.k - 1 {
                rank - node.base
            } else {
                (rank - node.base) / shape.weights[level]
            } as u32;
            let cell = if node.child == 0 && node.candidates.is_power_of_two() {
                // A new node of one candidate (a placement of one region, mostly): the
                // state's cell must be that one; nothing to code.
                let only = node.candidates;
                if (node.free & (only - 1)).count_ones() != index {
                    return false;
                }
                node.candidates = 0;
                node.child = only;
                continue;
            } else {
                1u32 << select(node.free, index)
            };
            if node.candidates & cell == 0 {
                return false;
            }
            while node.candidates & (cell - 1) != 0 {
                let c = node.candidates.trailing_zeros();
                node.candidates &= node.candidates - 1;
                self.coder.code(self.model.context(level, node, c), false);
                node.history = node.out();
            }
            node.candidates ^= cell;
            if node.child != 0 || node.candidates != 0 {
                self.coder
                    .code(self.model.context(level, node, cell.trailing_zeros()), true);
            }
            node.history = IN;
            node.child = cell;
        }
        self.last = Some(state);
        self.count += 1;
        true
    }

    /// States pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The list's bytes (none for an empty list), or the first state that could not be
    /// pushed.
    pub fn finish(self) -> Result<Vec<u8>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.count == 0 {
            return Ok(Vec::new());
        }
        Ok(self.coder.finish())
    }
}

/// The bytes of an increasing list of states of `shape` in `allowed`.
pub fn encode_states(shape: &ListShape, allowed: Range<u64>, states: &[u64]) -> Result<Vec<u8>> {
    let mut encoder = StateEncoder::new(shape, allowed);
    for &s in states {
        encoder.push(s);
    }
    encoder.finish()
}

/// Decodes exactly `count` states of `shape` in `allowed` from exactly `bytes`.
pub fn decode_states(
    bytes: &[u8],
    count: u64,
    shape: &ListShape,
    allowed: Range<u64>,
) -> Result<Vec<u64>> {
    let room = allowed.end.saturating_sub(allowed.start);
    let mut states = Vec::with_capacity(count.min(room).min(1 << 20) as usize);
    walk_states(bytes, count, shape, allowed, |s| states.push(s))?;
    Ok(states)
}

/// Checks that `bytes` are exactly `count` states of `shape` in `allowed`, calling `f` with
/// each, in increasing order. A caller that must not act on a bad list checks it first with
/// a `f` that does nothing (no state is held either way).
pub fn walk_states(
    bytes: &[u8],
    count: u64,
    shape: &ListShape,
    allowed: Range<u64>,
    mut f: impl FnMut(u64),
) -> Result<()> {
    if count == 0 {
        if bytes.is_empty() {
            return Ok(());
        }
        return bad(format!("{} bytes for no state", bytes.len()));
    }
    let allowed = Allowed::new(shape, allowed);
    let mut coder = RangeDecoder::new(bytes)?;
    let mut model = Model::new(shape);
    let leaf = shape.leaf();
    let mut nodes = [Node::default(); MAX_CELLS + 1];
    let free = shape.board.all_cells();
    nodes[0] = Node {
        free,
        candidates: shape.candidates(0, free, 0, &allowed),
        ..Node::default()
    };
    let mut level = 0;
    let mut found = 0u64;
    loop {
        let node = &mut nodes[level];
        if node.candidates == 0 {
            if node.child == 0 {
                return bad(format!(
                    "a node without candidates (level {level}) after {found} of {count} states"
                ));
            }
            if level == 0 {
                return bad(format!("ends after {found} of {count} states"));
            }
            level -= 1;
            continue;
        }
        let cell = node.candidates & node.candidates.wrapping_neg();
        node.candidates ^= cell;
        let one = if node.child == 0 && node.candidates == 0 {
            true
        } else {
            coder.decode(model.context(level, node, cell.trailing_zeros()))
        };
        if !one {
            node.history = node.out();
            continue;
        }
        node.history = IN;
        node.child = cell;
        if level == leaf {
            if coder.overrun {
                return bad(format!("ends early ({} bytes)", bytes.len()));
            }
            f(shape.state_of(node));
            found += 1;
            if found == count {
                break;
            }
            continue;
        }
        let (free, base) = shape.child_of(level + 1, node);
        let candidates = shape.candidates(level + 1, free, base, &allowed);
        if level + 1 == leaf && candidates.is_power_of_two() {
            // A leaf node with one candidate (most placements have one region): the state
            // is in the list without a bit, and the node is done.
            if coder.overrun {
                return bad(format!("ends early ({} bytes)", bytes.len()));
            }
            f(shape.state_of(&Node {
                free,
                base,
                child: candidates,
                ..Node::default()
            }));
            found += 1;
            if found == count {
                break;
            }
            continue;
        }
        level += 1;
        nodes[level] = Node {
            free,
            base,
            candidates,
            ..Node::default()
        };
    }
    coder.finish()
}

/// A list that [`walk_states`] checked, kept as LEB128 varints of its differences (one or two
/// bytes a state): what a coordinator merges once a whole result is known to be good, without
/// decoding the list twice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckedStates {
    deltas: Vec<u8>,
    count: u64,
}

impl CheckedStates {
    /// Checks `bytes` as [`walk_states`] does and keeps their states.
    pub fn decode(
        bytes: &[u8],
        count: u64,
        shape: &ListShape,
        allowed: Range<u64>,
    ) -> Result<CheckedStates> {
        let mut deltas = Vec::with_capacity(bytes.len() * 4);
        let mut previous = 0;
        walk_states(bytes, count, shape, allowed, |s| {
            let mut d = s - previous;
            previous = s;
            while d >= 0x80 {
                deltas.push(d as u8 | 0x80);
                d >>= 7;
            }
            deltas.push(d as u8);
        })?;
        Ok(CheckedStates { deltas, count })
    }

    /// States in the list.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether the list has no state.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Calls `f` with each state, in increasing order.
    pub fn for_each(&self, mut f: impl FnMut(u64)) {
        let (mut state, mut d, mut shift) = (0u64, 0u64, 0u32);
        for &b in &self.deltas {
            d |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b < 0x80 {
                state += d;
                f(state);
                (d, shift) = (0, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::select_bit;
    use crate::{Goal, Pattern};
    use proptest::prelude::*;

    fn space(board: &str, tiles: &[u8], rule: BlankRule) -> StateSpace {
        let board: Board = board.parse().unwrap();
        StateSpace::new(
            board,
            Goal::BlankFirst,
            Pattern::new(board, tiles.to_vec()).unwrap(),
            rule,
        )
        .unwrap()
    }

    /// Every state of `space` in `allowed` that a layer of `depth`'s parity may hold.
    fn candidates(space: &StateSpace, depth: u32, allowed: Range<u64>) -> Vec<u64> {
        let board = space.board();
        let goal_odd = parity_of(space, space.goal_cells());
        let mut cells = [0u8; MAX_CELLS];
        allowed
            .filter(|&s| {
                let rank = s / space.slots();
                space.ranker().unrank(rank, &mut cells);
                if !(parity_of(space, &cells[..space.k()]) + goal_odd + depth).is_multiple_of(2) {
                    return false;
                }
                if space.rule() == BlankRule::Ignored {
                    return true;
                }
                let occupied = cells[..space.k()].iter().fold(0u32, |m, &c| m | 1 << c);
                let free = board.all_cells() & !occupied;
                let cell = select_bit(free, (s % space.slots()) as u32) as usize;
                board.region(cell, free).trailing_zeros() as usize == cell
            })
            .collect()
    }

    fn parity_of(space: &StateSpace, cells: &[u8]) -> u32 {
        let board = space.board();
        cells
            .iter()
            .map(|&c| {
                let (r, col) = board.row_col(c as usize);
                ((r + col) % 2) as u32
            })
            .sum::<u32>()
            % 2
    }

    const SPACES: [(&str, &[u8], BlankRule); 7] = [
        ("3x3", &[1, 2], BlankRule::Minimized),
        ("3x3", &[1, 2, 3, 4], BlankRule::Minimized),
        ("3x3", &[2, 5, 8], BlankRule::Aware),
        ("3x3", &[1, 3, 7], BlankRule::Ignored),
        ("2x3", &[1, 2, 3, 4], BlankRule::Minimized),
        ("4x3", &[1, 5, 6], BlankRule::Minimized),
        ("3x3", &[1, 2, 3, 4, 5, 6, 7, 8], BlankRule::Minimized),
    ];

    /// A space, a depth, an allowed range and an increasing list of states in it.
    fn a_list() -> impl Strategy<Value = (usize, u32, Range<u64>, Vec<u64>)> {
        (
            0..SPACES.len(),
            0u32..4,
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
        )
            .prop_map(|(i, depth, a, b, pick)| {
                let (board, tiles, rule) = SPACES[i];
                let space = space(board, tiles, rule);
                let states = space.states();
                let (a, b) = (a % (states + 1), b % (states + 1));
                let allowed = a.min(b)..a.max(b);
                // A dense, a sparse or an empty selection, from a seeded generator.
                let mut seed = pick | 1;
                let keep = [0u64, 1, 8, 40, 64][(pick % 5) as usize];
                let states = candidates(&space, depth, allowed.clone())
                    .into_iter()
                    .filter(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed % 64 < keep
                    })
                    .collect();
                (i, depth, allowed, states)
            })
    }

    fn shape_of(i: usize, depth: u32) -> (StateSpace, ListShape) {
        let (board, tiles, rule) = SPACES[i];
        let space = space(board, tiles, rule);
        let shape = ListShape::new(&space, depth);
        (space, shape)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn lists_round_trip((i, depth, allowed, states) in a_list()) {
            let (_, shape) = shape_of(i, depth);
            let bytes = encode_states(&shape, allowed.clone(), &states).unwrap();
            prop_assert!(bytes.len() as u64 <= shape.max_bytes(states.len() as u64));
            let back = decode_states(&bytes, states.len() as u64, &shape, allowed.clone());
            prop_assert_eq!(back.unwrap(), states.clone());
            let checked = CheckedStates::decode(&bytes, states.len() as u64, &shape, allowed.clone()).unwrap();
            let mut again = vec![];
            checked.for_each(|s| again.push(s));
            prop_assert_eq!(checked.len(), states.len() as u64);
            prop_assert_eq!(again, states.clone());
            if !states.is_empty() {
                // A byte less, a byte more, no bytes: refused.
                let n = states.len() as u64;
                prop_assert!(decode_states(&bytes[..bytes.len() - 1], n, &shape, allowed.clone()).is_err());
                let mut longer = bytes.clone();
                longer.push(0);
                prop_assert!(decode_states(&longer, n, &shape, allowed.clone()).is_err());
                prop_assert!(decode_states(&[], n, &shape, allowed.clone()).is_err());
                // A state more: refused, or (rarely) a longer list that begins with this one.
                if let Ok(more) = decode_states(&bytes, n + 1, &shape, allowed.clone()) {
                    prop_assert_eq!(&more[..states.len()], &states[..]);
                }
            }
        }

        /// Whatever the bytes, decoding never panics, and what it accepts is a valid list.
        #[test]
        fn any_bytes_decode_to_a_valid_list_or_an_error(
            (i, depth, allowed, states) in a_list(),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            garbage in proptest::collection::vec(any::<u8>(), 0..40),
            count in 0u64..50,
            use_garbage: bool,
        ) {
            let (space, shape) = shape_of(i, depth);
            let mut bytes = if use_garbage {
                garbage
            } else {
                encode_states(&shape, allowed.clone(), &states).unwrap()
            };
            if !bytes.is_empty() {
                for (at, x) in flips {
                    let l = bytes.len();
                    bytes[at % l] ^= x;
                }
            }
            let count = if use_garbage { count } else { states.len() as u64 };
            if let Ok(got) = decode_states(&bytes, count, &shape, allowed.clone()) {
                prop_assert_eq!(got.len() as u64, count);
                prop_assert!(got.windows(2).all(|w| w[0] < w[1]));
                let valid = candidates(&space, depth, allowed.clone());
                prop_assert!(got.iter().all(|s| valid.binary_search(s).is_ok()));
            }
        }
    }

    #[test]
    fn refuses_states_it_cannot_encode() {
        let space = space("3x3", &[1, 2], BlankRule::Minimized);
        let all = 0..space.states();
        let shape = ListShape::new(&space, 3);
        let valid = candidates(&space, 3, all.clone());
        let (a, b) = (valid[10], valid[11]);
        assert!(encode_states(&shape, all.clone(), &[a, b]).is_ok());
        // Not increasing, repeated, out of the allowed range.
        assert!(encode_states(&shape, all.clone(), &[b, a]).is_err());
        assert!(encode_states(&shape, all.clone(), &[a, a]).is_err());
        assert!(encode_states(&shape, a + 1..space.states(), &[a, b]).is_err());
        assert!(encode_states(&shape, 0..b, &[a, b]).is_err());
        // The other parity; a slot that is not the least cell of its region.
        let other = candidates(&space, 4, all.clone());
        assert!(encode_states(&shape, all.clone(), &[other[0]]).is_err());
        let slots = space.slots();
        let not_least = (0..space.states())
            .find(|&s| {
                s % slots != 0 && valid.binary_search(&(s - s % slots)).is_ok() && {
                    // The same placement, another slot, not a candidate.
                    valid.binary_search(&s).is_err()
                }
            })
            .unwrap();
        assert!(encode_states(&shape, all.clone(), &[not_least]).is_err());
        assert!(encode_states(&shape, all, &[space.states()]).is_err());
    }

    #[test]
    fn refuses_malformed_bytes() {
        let space = space("3x3", &[1, 2, 3], BlankRule::Minimized);
        let all = 0..space.states();
        let shape = ListShape::new(&space, 1);
        let states: Vec<u64> = candidates(&space, 1, all.clone())
            .into_iter()
            .step_by(3)
            .collect();
        let n = states.len() as u64;
        let bytes = encode_states(&shape, all.clone(), &states).unwrap();
        assert_eq!(
            decode_states(&bytes, n, &shape, all.clone()).unwrap(),
            states
        );
        // No bytes for no states, and only then.
        assert!(
            decode_states(&[], 0, &shape, all.clone())
                .unwrap()
                .is_empty()
        );
        assert!(decode_states(&[0], 0, &shape, all.clone()).is_err());
        // A first byte that a range coder never writes; a code out of range.
        let mut b = bytes.clone();
        b[0] = 1;
        assert!(decode_states(&b, n, &shape, all.clone()).is_err());
        assert!(decode_states(&[0, 0xff, 0xff, 0xff, 0xff], 1, &shape, all.clone()).is_err());
        // Too few bytes to start.
        assert!(decode_states(&[0, 0, 0], 1, &shape, all.clone()).is_err());
        // A range with fewer candidates than states.
        let valid = candidates(&space, 1, all.clone());
        let few = valid[valid.len() + 1 - n as usize]..space.states();
        assert!(decode_states(&bytes, n, &shape, few).is_err());
        // A huge declared count ends in an error, not in a loop.
        assert!(decode_states(&bytes, u64::MAX, &shape, all).is_err());
    }

    /// Dense lists cost a fraction of a byte per state.
    #[test]
    fn dense_lists_are_small() {
        let space = space("3x3", &[1, 2, 3, 4], BlankRule::Minimized);
        let all = 0..space.states();
        let shape = ListShape::new(&space, 0);
        let states = candidates(&space, 0, all.clone());
        let bytes = encode_states(&shape, all, &states).unwrap();
        assert!(
            (bytes.len() as f64) < 0.05 * states.len() as f64,
            "{} bytes for {} states",
            bytes.len(),
            states.len()
        );
    }
}
