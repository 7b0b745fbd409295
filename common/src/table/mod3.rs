//! Exact values of a `mod3` table (Breyer & Korf 2010).
//!
//! A `mod3` payload stores `h mod 3`. In a consistent table (aware, ignored) a move changes
//! `h` by at most one, so a child's value is the one of `parent - 1`, `parent`, `parent + 1`
//! that has the child's residue ([`child_value`]). A state met without a parent gets its value
//! by a descent ([`Mod3Table::root_value`]): step to any neighbour whose residue is one lower
//! (its value is then `h - 1`) until the goal; the number of steps is `h`.
//!
//! Neighbours are the moves of the abstract space: in an ignored table a pattern tile steps to
//! an adjacent cell free of pattern tiles; in an aware table a pattern tile steps into the
//! blank's region and the blank takes the tile's old cell. Unreached entries (only when the
//! pattern holds every tile) store 0; their neighbours are unreached too, so none has the
//! residue 2 that a descent from 0 looks for.
//!
//! ```
//! use tilepdb_common::table::mod3::child_value;
//! assert_eq!(child_value(7, 7 % 3), 7); // the blank moved inside its region
//! assert_eq!(child_value(7, 8 % 3), 8);
//! assert_eq!(child_value(7, 6 % 3), 6);
//! ```

use crate::board::MAX_CELLS;
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

/// A `mod3` payload with the space it encodes.
#[derive(Clone, Copy)]
pub struct Mod3Table<'a> {
    space: &'a StateSpace,
    payload: &'a [u8],
    /// Longest possible descent: the table's largest value.
    max_value: u8,
}

impl<'a> Mod3Table<'a> {
    pub fn new(space: &'a StateSpace, payload: &'a [u8], max_value: u8) -> Mod3Table<'a> {
        Mod3Table {
            space,
            payload,
            max_value,
        }
    }

    /// `h mod 3` of entry `index`.
    #[inline]
    pub fn residue(&self, index: u64) -> u8 {
        Encoding::Mod3.stored(self.payload, index)
    }

    /// Whether entry `index` is a goal entry (value 0): the goal placement with, in an aware
    /// table, the blank in the goal's region.
    fn is_goal(&self, rank: u64, free: u32, blank: Option<usize>) -> bool {
        if rank != self.space.goal_rank() {
            return false;
        }
        match blank {
            None => true,
            Some(b) => {
                let n = self.space.board().cells();
                let goal_blank = self.space.goal().cell_of(0, n);
                self.space.board().region(b, free) & (1 << goal_blank) != 0
            }
        }
    }

    /// A neighbour of entry `index` whose residue is `want`, if any; and whether `index` is a
    /// goal entry.
    fn neighbour_with(&self, index: u64, want: u8) -> (bool, Option<u64>) {
        let space = self.space;
        let board = space.board();
        let k = space.k();
        let aware = space.rule() == BlankRule::Aware;
        let slots = space.slots();
        let (rank, slot) = if aware {
            (index / slots, index % slots)
        } else {
            (index, 0)
        };
        let mut cells = [0u8; MAX_CELLS];
        let free = board.all_cells() & !space.ranker().unrank(rank, &mut cells);
        let (targets, blank) = if aware {
            let blank = crate::rank::select_bit(free, slot as u32) as usize;
            (board.region(blank, free), Some(blank))
        } else {
            (free, None)
        };
        if self.is_goal(rank, free, blank) {
            return (true, None);
        }
        let mut moved = cells;
        for i in 0..k {
            let from = cells[i] as usize;
            let mut to = board.neighbours(from) & targets;
            while to != 0 {
                let c = to.trailing_zeros() as usize;
                to &= to - 1;
                moved[i] = c as u8;
                let r = space.ranker().rank(&moved[..k]);
                let child = if aware {
                    let child_free = (free & !(1 << c)) | (1 << from);
                    r * slots + slot_of(child_free, from)
                } else {
                    r
                };
                if self.residue(child) == want {
                    return (false, Some(child));
                }
            }
            moved[i] = cells[i];
        }
        (false, None)
    }

    /// The exact value of entry `index` by descent to the goal ([`UNREACHED`] for an entry the
    /// search never reached); `Err` if the residues do not lead to the goal (not a consistent
    /// table's).
    pub fn root_value(&self, index: u64) -> Result<u8, String> {
        let mut cur = index;
        let mut steps = 0u32;
        loop {
            let r = self.residue(cur);
            let (goal, next) = self.neighbour_with(cur, (r + 2) % 3);
            if goal {
                if r != 0 {
                    return Err(format!("the goal entry {cur} has residue {r}, not 0"));
                }
                return Ok(steps as u8);
            }
            match next {
                Some(n) if steps < self.max_value as u32 => {
                    cur = n;
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
        if steps == 0 && self.is_full() && self.residue(cur) == 0 {
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
    pub fn decode_all(&self) -> Result<Vec<u8>, String> {
        let entries = self.space.entries();
        let mut values = vec![0u8; entries as usize];
        let mut known = vec![0u64; entries.div_ceil(64) as usize];
        let is_known = |known: &[u64], e: u64| known[(e >> 6) as usize] >> (e & 63) & 1 != 0;
        let mut path = Vec::new();
        for start in 0..entries {
            if is_known(&known, start) {
                continue;
            }
            path.clear();
            let mut cur = start;
            let base = loop {
                path.push(cur);
                let r = self.residue(cur);
                let (goal, next) = self.neighbour_with(cur, (r + 2) % 3);
                if goal {
                    if r != 0 {
                        return Err(format!("the goal entry {cur} has residue {r}, not 0"));
                    }
                    break 0u8;
                }
                match next {
                    Some(n) if is_known(&known, n) => {
                        let v = values[n as usize];
                        if v == UNREACHED {
                            return Err(format!("entry {cur} descends to the unreached entry {n}"));
                        }
                        break v + 1;
                    }
                    Some(n) if path.len() <= self.max_value as usize => cur = n,
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
