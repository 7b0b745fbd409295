//! Exact values of `mod3` (Breyer & Korf 2010) and `1-bit` tables.
//!
//! A `mod3` payload stores `h mod 3`. In a consistent table (zero-aware, aware, ignored) a move
//! changes `h` by at most one, so a child's value is the one of `parent - 1`, `parent`,
//! `parent + 1` that has the child's residue ([`child_value`]). A `1-bit` payload stores bit 1
//! of `h`; bit 0 is the parity of the Manhattan distance `m` (`h - m` is even), so the entry
//! gives `h mod 4`, and the child's value follows the same way ([`one_bit_child_value`]).
//!
//! A state met without a parent gets its value by a descent ([`ResidueTable::root_value`]):
//! step to any neighbour whose residue is one lower (its value is then `h - 1`) until the goal;
//! the number of steps is `h`.
//!
//! Neighbours are the moves of the abstract space: in an ignored table a pattern tile steps to
//! an adjacent cell free of pattern tiles; in an aware or zero-aware table a pattern tile steps
//! into the blank's region and the blank takes the tile's old cell. Unreached entries (only
//! when the pattern holds every tile) store 0; their neighbours are unreached too, so none has
//! the residue that a descent from them looks for.
//!
//! ```
//! use tilepdb_common::table::mod3::child_value;
//! assert_eq!(child_value(7, 7 % 3), 7); // the blank moved inside its region
//! assert_eq!(child_value(7, 8 % 3), 8);
//! assert_eq!(child_value(7, 6 % 3), 6);
//! ```

use crate::board::MAX_CELLS;
use crate::region_index::RegionIndex;
use crate::space::{BlankRule, StateSpace, slot_of};

use super::UNREACHED;
use super::encoding::Encoding;

/// The value of a child of a state of value `parent_value`, from the child's residue.
#[inline]
pub fn child_value(parent_value: u8, child_residue: u8) -> u8 {
    match (child_residue + 3 - parent_value % 3) % 3 {
        0 => parent_value,
        1 => parent_value.saturating_add(1),
        _ => parent_value.saturating_sub(1),
    }
}

/// The value of a child of a state of value `parent_value` in a `1-bit` table, from the
/// child's stored bit and Manhattan distance `m`: the parent's value when the parities agree
/// (a move that leaves the entry's value), else whichever of `parent +- 1` has the bit.
///
/// ```
/// use tilepdb_common::table::mod3::one_bit_child_value;
/// assert_eq!(one_bit_child_value(7, (8 >> 1) & 1, 4), 8);
/// assert_eq!(one_bit_child_value(7, (6 >> 1) & 1, 2), 6);
/// assert_eq!(one_bit_child_value(7, (7 >> 1) & 1, 5), 7); // the blank moved
/// ```
#[inline]
pub fn one_bit_child_value(parent_value: u8, bit: u8, m: u32) -> u8 {
    if (u32::from(parent_value) ^ m) & 1 == 0 {
        return parent_value;
    }
    one_bit_step_value(parent_value, bit)
}

/// [`one_bit_child_value`] of a child whose value differs from its parent's by one (a move
/// of a pattern tile in a table whose every move changes the value): `parent_value + 1` when
/// its bit is `bit`, else `parent_value - 1`, chosen without a branch (which way a value moves
/// is what a predictor cannot guess).
///
/// ```
/// use tilepdb_common::table::mod3::one_bit_step_value;
/// assert_eq!(one_bit_step_value(7, (8 >> 1) & 1), 8);
/// assert_eq!(one_bit_step_value(7, (6 >> 1) & 1), 6);
/// ```
#[inline]
#[must_use]
pub fn one_bit_step_value(parent_value: u8, bit: u8) -> u8 {
    let up = parent_value.saturating_add(1);
    let down = parent_value.saturating_sub(1);
    // All ones when `up` has the bit, else zero.
    let take_up = 0u8.wrapping_sub(u8::from((up >> 1) & 1 == bit));
    (up & take_up) | (down & !take_up)
}

/// A `mod3` or `1-bit` payload with the space it encodes.
#[derive(Clone, Copy)]
pub struct ResidueTable<'a> {
    space: &'a StateSpace,
    payload: &'a [u8],
    /// Longest possible descent: the table's largest value.
    max_value: u8,
    encoding: Encoding,
    /// The region index of a zero-aware table.
    region: Option<&'a RegionIndex>,
}

impl<'a> ResidueTable<'a> {
    /// The table of `space` whose `payload` is in `encoding` (mod3 or 1-bit); `region` is the
    /// space's region index, needed for zero-aware tables.
    pub fn new(
        space: &'a StateSpace,
        payload: &'a [u8],
        max_value: u8,
        encoding: Encoding,
        region: Option<&'a RegionIndex>,
    ) -> ResidueTable<'a> {
        debug_assert!(encoding.needs_parent());
        debug_assert!(space.rule() != BlankRule::ZeroAware || region.is_some());
        ResidueTable {
            space,
            payload,
            max_value,
            encoding,
            region,
        }
    }

    /// The modulus of the residues: 3 (mod3) or 4 (1-bit).
    fn modulus(&self) -> u8 {
        if self.encoding == Encoding::OneBit {
            4
        } else {
            3
        }
    }

    /// `h mod 3` (mod3) or `h mod 4` (1-bit) of entry `index`, whose placement has Manhattan
    /// distance `m`.
    #[inline]
    pub fn residue(&self, index: u64, m: u32) -> u8 {
        let stored = self.encoding.stored(self.payload, index);
        match self.encoding {
            Encoding::OneBit => 2 * stored + (m & 1) as u8,
            _ => stored,
        }
    }

    /// The placement of entry `index`, its free cells and, with a region, the blank's region
    /// (aware: the region of the entry's cell; zero-aware: the entry's region).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a slot is below the 25 cells of a board"
    )]
    fn entry(&self, index: u64) -> ([u8; MAX_CELLS], u32, Option<u32>, u64) {
        let space = self.space;
        let board = space.board();
        match space.rule() {
            BlankRule::ZeroAware => {
                let region = self.region.expect("zero-aware tables carry their index");
                let (cells, r) = region.decode(index);
                let set = cells[..space.k()].iter().fold(0u32, |m, &c| m | 1 << c);
                (cells, board.all_cells() & !set, Some(r), 0)
            }
            BlankRule::Aware => {
                let slots = space.slots();
                let mut cells = [0u8; MAX_CELLS];
                let rank = index / slots;
                let free = board.all_cells() & !space.ranker().unrank(rank, &mut cells);
                let blank = crate::rank::select_bit(free, (index % slots) as u32) as usize;
                (cells, free, Some(board.region(blank, free)), rank)
            }
            _ => {
                let mut cells = [0u8; MAX_CELLS];
                let free = board.all_cells() & !space.ranker().unrank(index, &mut cells);
                (cells, free, None, index)
            }
        }
    }

    /// The Manhattan distance of entry `index`'s placement.
    fn manhattan_of(&self, index: u64) -> u32 {
        self.space.manhattan(&self.entry(index).0)
    }

    /// Whether the entry of `cells` with the blank's `region` is a goal entry (value 0): the
    /// goal placement with, in an aware or zero-aware table, the blank in the goal's region.
    fn is_goal(&self, cells: &[u8], region: Option<u32>) -> bool {
        if cells[..self.space.k()] != *self.space.goal_cells() {
            return false;
        }
        match region {
            None => true,
            Some(r) => {
                let n = self.space.board().cells();
                r & (1 << self.space.goal().cell_of(0, n)) != 0
            }
        }
    }

    /// A neighbour of entry `index` whose residue is `want`, if any, with its Manhattan
    /// distance; and whether `index` is a goal entry.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a cell is below 25, so it fits in a byte"
    )]
    fn neighbour_with(&self, index: u64, want: u8) -> (bool, Option<(u64, u32)>) {
        let space = self.space;
        let board = space.board();
        let k = space.k();
        let slots = space.slots();
        let (cells, free, region, _) = self.entry(index);
        if self.is_goal(&cells, region) {
            return (true, None);
        }
        let targets = region.unwrap_or(free);
        let mut moved = cells;
        for i in 0..k {
            let from = cells[i] as usize;
            let mut to = board.neighbours(from) & targets;
            while to != 0 {
                let c = to.trailing_zeros() as usize;
                to &= to - 1;
                moved[i] = c as u8;
                let child = match space.rule() {
                    BlankRule::ZeroAware => self
                        .region
                        .expect("zero-aware tables carry their index")
                        .state_index(&moved[..k], from),
                    BlankRule::Aware => {
                        let child_free = (free & !(1 << c)) | (1 << from);
                        space.ranker().rank(&moved[..k]) * slots + slot_of(child_free, from)
                    }
                    _ => space.ranker().rank(&moved[..k]),
                };
                let m = space.manhattan(&moved);
                if self.residue(child, m) == want {
                    return (false, Some((child, m)));
                }
            }
            moved[i] = cells[i];
        }
        (false, None)
    }

    /// The exact value of entry `index` by descent to the goal ([`UNREACHED`] for an entry the
    /// search never reached); `Err` if the residues do not lead to the goal (not a consistent
    /// table's).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the steps are below the table's maximum value, a byte"
    )]
    pub fn root_value(&self, index: u64) -> Result<u8, String> {
        let modulus = self.modulus();
        let mut cur = index;
        let mut m = self.manhattan_of(index);
        let mut steps = 0u32;
        loop {
            let r = self.residue(cur, m);
            let (goal, next) = self.neighbour_with(cur, (r + modulus - 1) % modulus);
            if goal {
                if r != 0 {
                    return Err(format!("the goal entry {cur} has residue {r}, not 0"));
                }
                return Ok(steps as u8);
            }
            match next {
                Some((n, nm)) if steps < u32::from(self.max_value) => {
                    cur = n;
                    m = nm;
                    steps += 1;
                }
                Some(_) => {
                    return Err(format!(
                        "the descent from entry {index} is longer than the table's largest value {}",
                        self.max_value
                    ));
                }
                None => return self.dead_end(index, cur, steps),
            }
        }
    }

    fn dead_end(&self, index: u64, cur: u64, steps: u32) -> Result<u8, String> {
        if steps == 0 && self.is_full() && self.encoding.stored(self.payload, cur) == 0 {
            Ok(UNREACHED)
        } else {
            Err(format!(
                "the descent from entry {index} stops at entry {cur} after {steps} steps: no \
                 neighbour has a residue one lower"
            ))
        }
    }

    fn is_full(&self) -> bool {
        self.space.k() + 1 == self.space.board().cells()
    }

    /// Every entry's exact value, each descent stopping at the first entry already known (so
    /// each entry's neighbours are scanned once).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "entries index the values held in memory, so they fit in usize; a path is at most the largest value (a byte) long, and a value is checked against it before the cast"
    )]
    pub fn decode_all(&self) -> Result<Vec<u8>, String> {
        let entries = self.space.entries();
        let mut values = vec![0u8; entries as usize];
        let mut known = vec![0u64; entries.div_ceil(64) as usize];
        let is_known = |known: &[u64], e: u64| known[(e >> 6) as usize] >> (e & 63) & 1 != 0;
        let mut path = Vec::new();
        let modulus = self.modulus();
        for start in 0..entries {
            if is_known(&known, start) {
                continue;
            }
            path.clear();
            let mut cur = start;
            let mut m = self.manhattan_of(start);
            let base = loop {
                path.push(cur);
                let r = self.residue(cur, m);
                let (goal, next) = self.neighbour_with(cur, (r + modulus - 1) % modulus);
                if goal {
                    if r != 0 {
                        return Err(format!("the goal entry {cur} has residue {r}, not 0"));
                    }
                    break 0u8;
                }
                match next {
                    Some((n, _)) if is_known(&known, n) => {
                        let v = values[n as usize];
                        if v == UNREACHED {
                            return Err(format!("entry {cur} descends to the unreached entry {n}"));
                        }
                        break v + 1;
                    }
                    Some((n, nm)) if path.len() <= self.max_value as usize => {
                        cur = n;
                        m = nm;
                    }
                    Some(_) => {
                        return Err(format!(
                            "the descent from entry {start} is longer than the table's largest value {}",
                            self.max_value
                        ));
                    }
                    None => {
                        self.dead_end(start, cur, path.len() as u32 - 1)?;
                        break UNREACHED;
                    }
                }
            };
            let len = path.len();
            for (i, &e) in path.iter().enumerate() {
                let v = if base == UNREACHED {
                    UNREACHED
                } else {
                    let v = base as usize + (len - 1 - i);
                    if v > self.max_value as usize {
                        return Err(format!(
                            "entry {e} decodes to {v}, above the table's largest value {}",
                            self.max_value
                        ));
                    }
                    v as u8
                };
                values[e as usize] = v;
                known[(e >> 6) as usize] |= 1 << (e & 63);
            }
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free step agrees with the general rule for every value and bit.
    #[test]
    fn one_bit_step_value_is_one_bit_child_value_after_a_step() {
        for parent in 0..=u8::MAX {
            for bit in 0..=1 {
                assert_eq!(
                    one_bit_step_value(parent, bit),
                    one_bit_child_value(parent, bit, u32::from(parent) ^ 1),
                    "parent {parent}, bit {bit}"
                );
            }
        }
    }
}
