//! Task units: what the tasks of a layer are ranges of.
//!
//! A table is searched on the region index ([`RegionIndex`]): a unit is a tile-set rank, and
//! the states of sets `a..b` are the contiguous blocks of their (region, order) states (the
//! placements `a * k!..b * k!` when the blank is ignored).
//!
//! [`StateIndex::unit_states`] is the one place that maps units to states: the layer loop,
//! the executors and the planner ask it, and never do the arithmetic themselves.

use std::ops::Range;
use std::sync::Arc;

use tilepdb_common::region_index::{RegionIndex, set_ranges};
use tilepdb_common::{BlankRule, StateSpace};

use crate::error::Result;

/// The index a table's states are searched on: the dense (set, region, order) index of its
/// space; units are tile-set ranks.
#[derive(Clone, Debug)]
pub struct StateIndex(Arc<RegionIndex>);

impl StateIndex {
    /// The region index of `space` (built anew).
    pub fn region(space: &StateSpace) -> Result<StateIndex> {
        Ok(StateIndex(space.region_index()?))
    }

    /// The region index itself.
    pub fn regions(&self) -> &Arc<RegionIndex> {
        &self.0
    }

    /// The states of a table of `space` on this index (the size of its state array).
    pub fn states(&self, space: &StateSpace) -> u64 {
        match space.rule() {
            BlankRule::Ignored => self.0.placements(),
            _ => self.0.states(),
        }
    }

    /// The entries of the depth store: one per placement index for `minimized`, else one per
    /// state.
    pub fn depth_entries(&self, space: &StateSpace) -> u64 {
        match space.rule() {
            BlankRule::Minimized => self.0.placements(),
            _ => self.states(space),
        }
    }

    /// The number of units of a table of `space`: its tile sets.
    pub fn unit_count(&self, _space: &StateSpace) -> u64 {
        self.0.sets()
    }

    /// The states of the units `units` of `space`: a contiguous range of the index.
    ///
    /// ```
    /// use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};
    /// use tilepdb_coordinator::engine::units::StateIndex;
    /// let p = Partition::named("8:4-4").unwrap();
    /// let space = StateSpace::new(p.board(), Goal::BlankFirst, p.patterns()[0].clone(),
    ///                             BlankRule::Aware).unwrap();
    /// let index = StateIndex::region(&space).unwrap();
    /// let all = index.unit_states(&space, &(0..index.unit_count(&space)));
    /// assert_eq!(all, 0..index.states(&space));
    /// ```
    pub fn unit_states(&self, space: &StateSpace, units: &Range<u64>) -> Range<u64> {
        let f = self.0.orders();
        if space.rule() == BlankRule::Ignored {
            units.start * f..units.end * f
        } else {
            self.0.first_block(units.start) * f..self.0.first_block(units.end) * f
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
        set_tasks(
            &self.0,
            space.rule() == BlankRule::Ignored,
            max_units,
            parts,
        )
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
    let Some(max) = task_sets else {
        return set_ranges(index, ignored, parts);
    };
    let sets = index.sets();
    let step = max.max(1);
    (0..sets.div_ceil(step))
        .map(|t| t * step..((t + 1) * step).min(sets))
        .collect()
}
