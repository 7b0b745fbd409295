//! Task units: what the tasks of a layer are ranges of.
//!
//! A table is searched on one of two state indexes ([`StateIndex`]):
//!
//! * the cell index: a unit is a placement rank of the pattern; the states of units `a..b`
//!   are the states `a * slots..b * slots` (every blank slot of each placement). The free
//!   functions of this module ([`unit_states`], [`cut_units`], [`plan_tasks`]) are this index's
//!   (the distributed job's);
//! * the region index ([`RegionIndex`]): a unit is a tile-set rank; the states of sets `a..b`
//!   are the contiguous blocks of their (region, order) states.
//!
//! [`StateIndex::unit_states`] is the one place that maps units to states: the layer loop,
//! the executors and the planner ask it, and never do the arithmetic themselves.

use std::ops::Range;
use std::sync::Arc;

use tilepdb_common::region_index::RegionIndex;
use tilepdb_common::{BlankRule, StateSpace, cut_layer};

use crate::error::Result;

/// The index a table's states are searched on, and so what its task units are.
#[derive(Clone, Debug)]
pub enum StateIndex {
    /// `rank * slots + slot`; units are placement ranks.
    Cell,
    /// The dense (set, region, order) index; units are tile-set ranks.
    Region(Arc<RegionIndex>),
}

impl StateIndex {
    /// The region index of `space` (built anew).
    pub fn region(space: &StateSpace) -> Result<StateIndex> {
        Ok(StateIndex::Region(Arc::new(space.region_index()?)))
    }

    /// The states of a table of `space` on this index (the size of its state array).
    pub fn states(&self, space: &StateSpace) -> u64 {
        match self {
            StateIndex::Cell => space.states(),
            StateIndex::Region(index) => match space.rule() {
                BlankRule::Ignored => index.placements(),
                _ => index.states(),
            },
        }
    }

    /// The depth bytes the search keeps: one per entry on the cell index; on the region index
    /// one per placement index for `minimized`, else one per state.
    pub fn depth_entries(&self, space: &StateSpace) -> u64 {
        match self {
            StateIndex::Cell => space.entries(),
            StateIndex::Region(index) => match space.rule() {
                BlankRule::Minimized => index.placements(),
                _ => self.states(space),
            },
        }
    }

    /// The number of units of a table of `space`.
    pub fn unit_count(&self, space: &StateSpace) -> u64 {
        match self {
            StateIndex::Cell => unit_count(space),
            StateIndex::Region(index) => index.sets(),
        }
    }

    /// The states of the units `units` of `space`: a contiguous range of the index.
    ///
    /// ```
    /// use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};
    /// use tilepdb_coordinator::engine::units::StateIndex;
    /// let p = Partition::named("8:4-4").unwrap();
    /// let space = StateSpace::new(p.board(), Goal::BlankFirst, p.patterns()[0].clone(),
    ///                             BlankRule::Aware).unwrap();
    /// let cell = StateIndex::Cell;
    /// assert_eq!(cell.unit_states(&space, &(2..3)), 2 * space.slots()..3 * space.slots());
    /// let region = StateIndex::region(&space).unwrap();
    /// let all = region.unit_states(&space, &(0..region.unit_count(&space)));
    /// assert_eq!(all, 0..region.states(&space));
    /// ```
    pub fn unit_states(&self, space: &StateSpace, units: &Range<u64>) -> Range<u64> {
        match self {
            StateIndex::Cell => unit_states(space, units),
            StateIndex::Region(index) => {
                let f = index.orders();
                if space.rule() == BlankRule::Ignored {
                    units.start * f..units.end * f
                } else {
                    index.first_block(units.start) * f..index.first_block(units.end) * f
                }
            }
        }
    }

    /// The tasks of each layer of `space`, cut by size: at most `max_units` units each
    /// (default: about `parts` tasks of about equal numbers of states).
    pub fn cut_units(
        &self,
        space: &StateSpace,
        max_units: Option<u64>,
        parts: u64,
    ) -> Vec<Range<u64>> {
        match self {
            StateIndex::Cell => cut_units(space, max_units, parts),
            StateIndex::Region(index) => {
                set_tasks(index, space.rule() == BlankRule::Ignored, max_units, parts)
            }
        }
    }
}

/// Ranges of tile-set ranks of about `parts` equal numbers of states (at most `task_sets`
/// sets each when given): the tasks of the region index.
fn set_tasks(
    index: &RegionIndex,
    ignored: bool,
    task_sets: Option<u64>,
    parts: u64,
) -> Vec<Range<u64>> {
    let sets = index.sets();
    let blocks = |c: u64| {
        if ignored { c } else { index.first_block(c) }
    };
    let total = blocks(sets);
    let per_task = (total / parts.max(1)).max(1);
    let mut tasks = Vec::new();
    let mut start = 0;
    while start < sets {
        let end = if let Some(max) = task_sets {
            (start + max.max(1)).min(sets)
        } else {
            // The first set whose blocks reach the goal.
            let goal = blocks(start) + per_task;
            let (mut lo, mut hi) = (start + 1, sets);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if blocks(mid) >= goal {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            lo
        };
        let end = end.max(start + 1);
        tasks.push(start..end);
        start = end;
    }
    tasks
}

/// The number of units of a table of `space` (its placements).
pub fn unit_count(space: &StateSpace) -> u64 {
    space.placements()
}

/// The states of the units `units` of `space`.
///
/// ```
/// use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};
/// use tilepdb_coordinator::engine::units::unit_states;
/// let p = Partition::named("8:4-4").unwrap();
/// let space = StateSpace::new(p.board(), Goal::BlankFirst, p.patterns()[0].clone(),
///                             BlankRule::Minimized).unwrap();
/// assert_eq!(unit_states(&space, &(2..3)), 2 * space.slots()..3 * space.slots());
/// ```
pub fn unit_states(space: &StateSpace, units: &Range<u64>) -> Range<u64> {
    units.start * space.slots()..units.end * space.slots()
}

/// Units per block: the placements with the pattern's first tile on one cell (only that
/// tile's moves leave a block).
pub fn block_units(space: &StateSpace) -> u64 {
    space.ranker().block_len()
}

/// The tasks of each layer of `space` when they are cut by size, for both single-machine
/// and distributed builds: unit ranges of at most `max_units` units (default: about `parts`
/// tasks, at least 4096 units each), cut along blocks ([`cut_layer`]).
pub fn cut_units(space: &StateSpace, max_units: Option<u64>, parts: u64) -> Vec<Range<u64>> {
    let units = unit_count(space);
    let max_units = max_units.unwrap_or_else(|| (units / parts.max(1)).max(4096));
    cut_layer(units, block_units(space), max_units)
}

/// The tasks of a layer cut along the layer: whole blocks grouped until a task holds about
/// 1/`tasks_per_layer` of the layer's states, and blocks that hold more cut along eighths of
/// a block. `count` gives the current states of each of some unit ranges. Ranges without a
/// current state are left out. Returns the tasks and their current states.
pub fn plan_tasks(
    space: &StateSpace,
    tasks_per_layer: u64,
    count: impl Fn(&[Range<u64>]) -> Vec<u64>,
) -> (Vec<Range<u64>>, Vec<u64>) {
    let block = block_units(space);
    let units = cut_layer(unit_count(space), block, block.div_ceil(8));
    let unit_counts = count(&units);
    let total: u64 = unit_counts.iter().sum();
    let target = total.div_ceil(tasks_per_layer.max(1)).max(1);
    let mut tasks: Vec<(Range<u64>, u64)> = Vec::new();
    let mut open: Option<(Range<u64>, u64)> = None;
    let mut i = 0;
    while i < units.len() {
        // The units of one block.
        let block_index = units[i].start / block;
        let mut j = i;
        while j < units.len() && units[j].start / block == block_index {
            j += 1;
        }
        let block_states: u64 = unit_counts[i..j].iter().sum();
        let block_range = units[i].start..units[j - 1].end;
        if block_states > 2 * target {
            // Close the open task; cut this block along its units.
            tasks.extend(open.take());
            for (u, &c) in units[i..j].iter().zip(&unit_counts[i..j]) {
                if c == 0 {
                    tasks.extend(open.take());
                    continue;
                }
                match &mut open {
                    Some((r, n)) if *n + c <= target => {
                        r.end = u.end;
                        *n += c;
                    }
                    _ => {
                        tasks.extend(open.take());
                        open = Some((u.clone(), c));
                    }
                }
            }
            tasks.extend(open.take());
        } else if block_states > 0 {
            match &mut open {
                Some((r, n)) if *n + block_states <= target && r.end == block_range.start => {
                    r.end = block_range.end;
                    *n += block_states;
                }
                _ => {
                    tasks.extend(open.take());
                    open = Some((block_range, block_states));
                }
            }
        } else {
            tasks.extend(open.take());
        }
        i = j;
    }
    tasks.extend(open);
    tasks.into_iter().unzip()
}
