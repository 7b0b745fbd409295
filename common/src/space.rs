//! The abstract state space of one pattern: blank rules, state indices, sizes.
//!
//! A state index is `rank * slots + slot`. For the `minimized` and `aware` rules there are
//! `slots = n - k` per placement: slot `j` is the `j`-th free cell in increasing order, and a
//! region of the blank is represented by its smallest cell. For `ignored`, `slots = 1` and the
//! state is the placement.
//!
//! ```
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! assert_eq!(space.placements(), 72);
//! assert_eq!(space.slots(), 7);
//! assert_eq!(space.states(), 504);
//! assert_eq!(space.entries(), 72); // one least value per placement
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::board::{Board, Goal, MAX_CELLS};
use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::rank::PlacementRanker;
use crate::region_index::RegionIndex;

/// What the abstraction does with the blank (DESIGN section 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlankRule {
    /// (placement, region of the blank); the table keeps the least value over the regions.
    #[default]
    Minimized,
    /// The same search; the table keeps the value of every (placement, blank cell).
    Aware,
    /// The placement alone; a pattern tile steps to any adjacent free cell.
    Ignored,
    /// The same search as `aware`, one entry per (placement, region of the blank) in the order
    /// of the region index ([`crate::region_index`]); Clausecker & Reinefeld 2019.
    ZeroAware,
}

impl BlankRule {
    /// The rule's name, as the command line and the files spell it.
    pub fn name(self) -> &'static str {
        match self {
            BlankRule::Minimized => "minimized",
            BlankRule::Aware => "aware",
            BlankRule::Ignored => "ignored",
            BlankRule::ZeroAware => "zero-aware",
        }
    }

    /// Whether a legal move changes the table's value by at most one.
    pub fn is_consistent(self) -> bool {
        !matches!(self, BlankRule::Minimized)
    }

    /// Every rule.
    pub const ALL: [BlankRule; 4] = [
        BlankRule::Minimized,
        BlankRule::Aware,
        BlankRule::Ignored,
        BlankRule::ZeroAware,
    ];
}

impl fmt::Display for BlankRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BlankRule {
    type Err = Error;
    fn from_str(s: &str) -> Result<BlankRule> {
        match s.trim() {
            "minimized" => Ok(BlankRule::Minimized),
            "aware" => Ok(BlankRule::Aware),
            "ignored" => Ok(BlankRule::Ignored),
            "zero-aware" => Ok(BlankRule::ZeroAware),
            other => Err(Error::BlankRuleSyntax(other.to_string())),
        }
    }
}

/// Board, goal, pattern and blank rule: everything that defines one table.
#[derive(Clone, Debug)]
pub struct StateSpace {
    board: Board,
    goal: Goal,
    pattern: Pattern,
    rule: BlankRule,
    ranker: PlacementRanker,
    /// Goal cell of each pattern tile, in pattern order.
    goal_cells: [u8; MAX_CELLS],
    /// The states of the region index (`T * k!`), counted for `zero-aware` tables only.
    region_states: Option<u64>,
}

impl StateSpace {
    /// The state space of `pattern` on `board`, with `goal` and `rule`; refuses a pattern of another board or a space too large to index.
    pub fn new(board: Board, goal: Goal, pattern: Pattern, rule: BlankRule) -> Result<StateSpace> {
        let pattern = Pattern::new(board, pattern.tiles().to_vec())?;
        let n = board.cells();
        let ranker = PlacementRanker::new(n, pattern.len())?;
        let mut goal_cells = [0u8; MAX_CELLS];
        for (slot, &t) in goal_cells.iter_mut().zip(pattern.tiles()) {
            *slot = u8::try_from(goal.cell_of(usize::from(t), n)).expect("a cell is below 25");
        }
        let space = StateSpace {
            board,
            goal,
            pattern,
            rule,
            ranker,
            goal_cells,
            region_states: None,
        };
        let mut space = space;
        if rule == BlankRule::ZeroAware {
            space.region_states = Some(space.region_index()?.states());
        }
        space.states_checked()?;
        Ok(space)
    }

    /// The board.
    pub fn board(&self) -> Board {
        self.board
    }

    /// The goal.
    pub fn goal(&self) -> Goal {
        self.goal
    }

    /// The pattern.
    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }

    /// The blank rule.
    pub fn rule(&self) -> BlankRule {
        self.rule
    }

    /// The ranker of the pattern's placements.
    pub fn ranker(&self) -> &PlacementRanker {
        &self.ranker
    }

    /// Number of pattern tiles.
    pub fn k(&self) -> usize {
        self.pattern.len()
    }

    /// Number of placements, `n! / (n-k)!`.
    pub fn placements(&self) -> u64 {
        self.ranker.placements()
    }

    /// States per placement: `n - k`, or 1 when the blank is ignored.
    pub fn slots(&self) -> u64 {
        match self.rule {
            BlankRule::Ignored => 1,
            _ => (self.board.cells() - self.k()) as u64,
        }
    }

    fn states_checked(&self) -> Result<u64> {
        self.placements()
            .checked_mul(self.slots())
            .ok_or_else(|| Error::Pattern {
                pattern: self.pattern.to_string(),
                reason: "the state count overflows 64 bits".into(),
            })
    }

    /// Number of abstract states in the search, `placements * slots`.
    pub fn states(&self) -> u64 {
        self.placements() * self.slots()
    }

    /// Entries of the finished table: one per placement, one per (placement, free cell)
    /// for `aware`, one per (placement, region) for `zero-aware`.
    pub fn entries(&self) -> u64 {
        match self.rule {
            BlankRule::Aware => self.states(),
            BlankRule::ZeroAware => self.region_states.expect("counted for zero-aware"),
            _ => self.placements(),
        }
    }

    /// The region index of this space's board and pattern size, shared with every holder of
    /// the same one in this process ([`RegionIndex::shared`]; built by a flood fill per tile
    /// set when no one holds it).
    pub fn region_index(&self) -> Result<Arc<RegionIndex>> {
        RegionIndex::shared(self.board, self.k())
    }

    /// States of the region-indexed search: `T * k!` (placement, region) states, or the
    /// placements when the blank is ignored.
    pub fn region_search_states(&self) -> Result<u64> {
        match (self.rule, self.region_states) {
            (BlankRule::Ignored, _) => Ok(self.placements()),
            (_, Some(states)) => Ok(states),
            _ => Ok(self.region_index()?.states()),
        }
    }

    /// The goal cell of each pattern tile, in pattern order.
    pub fn goal_cells(&self) -> &[u8] {
        &self.goal_cells[..self.k()]
    }

    /// The placement of the pattern in the goal.
    pub fn goal_rank(&self) -> u64 {
        self.ranker.rank(self.goal_cells())
    }

    /// Sum of the Manhattan distances of the tiles of a placement to their goal cells.
    #[inline]
    pub fn manhattan(&self, cells: &[u8]) -> u32 {
        cells[..self.k()]
            .iter()
            .zip(self.goal_cells())
            .map(|(&c, &g)| self.board.distance(c as usize, g as usize))
            .sum()
    }
}

/// The slot of `cell` among the `free` cells: how many free cells lie below it.
#[inline]
pub fn slot_of(free: u32, cell: usize) -> u64 {
    u64::from((free & ((1u32 << cell) - 1)).count_ones())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_cells_of_both_goals() {
        let board: Board = "4x4".parse().unwrap();
        let p = Pattern::new(board, vec![1, 2, 3]).unwrap();
        let s = StateSpace::new(board, Goal::BlankFirst, p.clone(), BlankRule::Minimized).unwrap();
        assert_eq!(s.goal_cells(), &[1, 2, 3]);
        let s = StateSpace::new(board, Goal::BlankLast, p, BlankRule::Aware).unwrap();
        assert_eq!(s.goal_cells(), &[0, 1, 2]);
        assert_eq!(s.goal_rank(), 0);
    }

    #[test]
    fn sizes_of_the_24_puzzle() {
        let board: Board = "24".parse().unwrap();
        let p = Pattern::new(board, vec![1, 2, 5, 6, 7, 12]).unwrap();
        let s = StateSpace::new(board, Goal::BlankFirst, p, BlankRule::Minimized).unwrap();
        assert_eq!(s.placements(), 127_512_000);
        assert_eq!(s.states().div_ceil(4), 605_682_000);
    }
}
