//! A child's lookups after a move of one tile, as the search asks for them ([`Heuristic`]):
//! each started (its entry's index computed and fetched), read, and added to its sets' sums.

use super::{
    CatalogueHeuristic, CatalogueMemo, CatalogueStarted, Child, ChildPlan, MAX_CHILD_LOOKUPS,
    MAX_FOLLOWED, MAX_LOOKUPS, MAX_SETS, ones,
};
use crate::error::Result;
use crate::heuristic::Heuristic;
use crate::heuristic::table::Index;
use crate::heuristic::zero_aware::Placed;

/// A set's sum `sum` with one of its lookups' values moved from `old` to `value`.
#[inline(always)]
fn stepped(sum: u16, value: u8, old: u8) -> u16 {
    sum.wrapping_add(u16::from(value))
        .wrapping_sub(u16::from(old))
}

/// `above`, the largest settled sum so far, with the sum `sum` of set `s` of `plan` counted
/// when it is above `limit` and every step of the set is in `done`.
#[inline(always)]
fn settled_above(
    plan: &ChildPlan,
    s: usize,
    sum: u16,
    done: u32,
    limit: u32,
    above: Option<u32>,
) -> Option<u32> {
    let sum = u32::from(sum);
    if sum > limit && u32::from(plan.set_steps[s]) & !done == 0 {
        Some(above.map_or(sum, |a| a.max(sum)))
    } else {
        above
    }
}

impl CatalogueHeuristic<'_> {
    /// Computes the entry indices of the steps `steps` (bit `q` for step `q`) of `plan` into
    /// `started` and asks the processor to fetch them.
    #[inline(always)]
    fn start_steps(
        &self,
        plan: &ChildPlan,
        steps: u32,
        child: &Child<'_>,
        parent: &CatalogueMemo,
        started: &mut CatalogueStarted,
    ) {
        for q in ones(steps) {
            let l = plan.lookups[q] as usize;
            let (index, placed) = self.child_index(l, child, parent);
            self.lookups[l].table.prefetch(index);
            started.index[q] = index;
            started.placed[q] = placed;
        }
        started.started |= steps;
    }

    /// The touched set (of `plan`) that was the parent's largest, the first of the largest:
    /// the likeliest to prune the child. The parent's own when the move touches every set.
    #[inline(always)]
    fn likeliest_pruner(&self, plan: &ChildPlan, parent: &CatalogueMemo) -> usize {
        if plan.touched == (1u32 << self.sets) - 1 {
            return usize::from(parent.largest);
        }
        let mut first = 0;
        let mut largest = None;
        for s in ones(plan.touched) {
            if largest.is_none_or(|l| parent.sums[s] > l) {
                largest = Some(parent.sums[s]);
                first = s;
            }
        }
        first
    }

    /// The largest sum above `limit` among the sets that the move of `plan` leaves as they
    /// are in `memo`: the child is pruned without a lookup.
    #[inline(always)]
    fn untouched_above(&self, plan: &ChildPlan, memo: &CatalogueMemo, limit: u32) -> Option<u32> {
        let all_sets = (1u32 << self.sets) - 1;
        Self::complete_above(plan, memo, all_sets & !plan.touched, 0, limit)
    }

    /// Reads the steps `steps` of `plan` into `memo` together ([`Self::step_value`],
    /// [`Self::apply_step`]), then returns the largest sum above `limit` among the sets whose
    /// steps are all read (`done`, which gains `steps`), if any: a single step's sets checked
    /// as it is written.
    #[expect(
        clippy::too_many_arguments,
        reason = "apply_step's arguments, in the innermost loop"
    )]
    #[inline(always)]
    fn read_together(
        &self,
        plan: &ChildPlan,
        steps: u32,
        done: &mut u32,
        child: &Child<'_>,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
        limit: u32,
    ) -> Option<u32> {
        if steps == 0 {
            return None;
        }
        *done |= steps;
        if steps.is_power_of_two() {
            let q = steps.trailing_zeros() as usize;
            let (value, placed) = self.step_value(plan, q, child, started, parent);
            return self.apply_step(plan, q, value, placed, parent, memo, *done, limit);
        }
        for q in ones(steps) {
            let (value, placed) = self.step_value(plan, q, child, started, parent);
            self.apply_step(plan, q, value, placed, parent, memo, *done, u32::MAX);
        }
        Self::complete_above(plan, memo, self.lookups_sets(plan, steps), *done, limit)
    }

    /// Reads the steps `steps` of `plan` into `memo` one after the other, each added to
    /// `done`, and stops at the first that completes a set whose sum is above `limit`: the
    /// largest such sum.
    #[expect(
        clippy::too_many_arguments,
        reason = "apply_step's arguments, in the innermost loop"
    )]
    #[inline(always)]
    fn read_one_by_one(
        &self,
        plan: &ChildPlan,
        steps: u32,
        done: &mut u32,
        child: &Child<'_>,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
        limit: u32,
    ) -> Option<u32> {
        for q in ones(steps) {
            let (value, placed) = self.step_value(plan, q, child, started, parent);
            *done |= 1 << q;
            if let Some(h) = self.apply_step(plan, q, value, placed, parent, memo, *done, limit) {
                return Some(h);
            }
        }
        None
    }

    /// Step `q` of `plan`: reads its lookup's entry (its index in `started`, computed here if
    /// it was not started) and returns the child's value in its lookup, with the child's
    /// placement when the lookup follows it.
    #[inline(always)]
    fn step_value(
        &self,
        plan: &ChildPlan,
        q: usize,
        child: &Child<'_>,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
    ) -> (u8, Placed) {
        let q = q % MAX_CHILD_LOOKUPS;
        let l = plan.lookups[q] as usize;
        let (index, placed) = if started.started & (1 << q) != 0 {
            (started.index[q], started.placed[q])
        } else {
            self.child_index(l, child, parent)
        };
        let lookup = &self.lookups[l];
        let t = &lookup.table;
        let old = parent.values[l % MAX_LOOKUPS];
        let value = if t.steps_by_one() {
            t.one_bit_step(index, old)
        } else {
            let m = if t.child_needs_manhattan() {
                let (at, _) = self.placement(l, child.cells);
                t.manhattan(self.board, &at)
            } else {
                0
            };
            t.child_value(index, m, old)
        };
        (value, placed)
    }

    /// Writes the value `value` (and placement `placed`) of step `q` of `plan` into `memo`,
    /// moves the sums of its lookup's sets by the difference from the parent's value, and
    /// returns the largest of those sums above `limit` whose sets have all their steps in
    /// `done` (which holds `q`), if any.
    #[expect(
        clippy::too_many_arguments,
        reason = "a step's value and where it goes, in the innermost loop"
    )]
    #[inline(always)]
    fn apply_step(
        &self,
        plan: &ChildPlan,
        q: usize,
        value: u8,
        placed: Placed,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
        done: u32,
        limit: u32,
    ) -> Option<u32> {
        let l = plan.lookups[q % MAX_CHILD_LOOKUPS] as usize;
        let lookup = &self.lookups[l];
        if lookup.follows {
            memo.placed[l % MAX_FOLLOWED] = placed;
        }
        let l = l % MAX_LOOKUPS;
        let old = parent.values[l];
        memo.values[l] = value;
        let mut above = None;
        for s in ones(lookup.sets) {
            let s = s % MAX_SETS;
            memo.sums[s] = stepped(memo.sums[s], value, old);
            above = settled_above(plan, s, memo.sums[s], done, limit, above);
        }
        above
    }

    /// The largest sum above `limit` that the sets of step `q`'s lookup would have, of those
    /// whose only step is `q`, with the child's value `value` in it and the parent's sums
    /// (`parent`): [`Self::apply_step`]'s answer for the step read first, without the child's
    /// memo.
    #[inline(always)]
    fn above_after_step(
        &self,
        plan: &ChildPlan,
        q: usize,
        value: u8,
        parent: &CatalogueMemo,
        limit: u32,
    ) -> Option<u32> {
        let l = plan.lookups[q % MAX_CHILD_LOOKUPS] as usize;
        let lookup = &self.lookups[l];
        let old = parent.values[l % MAX_LOOKUPS];
        let mut above = None;
        for s in ones(lookup.sets) {
            let s = s % MAX_SETS;
            let sum = stepped(parent.sums[s], value, old);
            above = settled_above(plan, s, sum, 1 << q, limit, above);
        }
        above
    }

    /// Reads the steps `pruner` of `plan` (the likeliest pruner's, [`Self::likeliest_pruner`])
    /// into `memo`, a copy of `parent` made here, with `done` (empty) gaining them, and
    /// returns the largest sum above `limit` among the sets whose steps are all read, if any
    /// ([`Self::read_together`]). A single step that settles the child is read without the
    /// copy, since then the child's memo is not needed.
    #[expect(
        clippy::too_many_arguments,
        reason = "read_together's arguments, in the innermost loop"
    )]
    #[inline(always)]
    fn read_pruner(
        &self,
        plan: &ChildPlan,
        pruner: u32,
        done: &mut u32,
        child: &Child<'_>,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
        limit: u32,
    ) -> Option<u32> {
        if pruner.is_power_of_two() {
            let q = pruner.trailing_zeros() as usize;
            let (value, placed) = self.step_value(plan, q, child, started, parent);
            if let Some(h) = self.above_after_step(plan, q, value, parent, limit) {
                return Some(h);
            }
            *memo = *parent;
            *done |= pruner;
            return self.apply_step(plan, q, value, placed, parent, memo, *done, limit);
        }
        *memo = *parent;
        self.read_together(plan, pruner, done, child, started, parent, memo, limit)
    }

    /// The sets that sum the lookups of the steps `steps` (bit `q` for step `q`) of `plan`.
    #[inline(always)]
    fn lookups_sets(&self, plan: &ChildPlan, steps: u32) -> u32 {
        ones(steps).fold(0, |sets, q| {
            sets | self.lookups[plan.lookups[q] as usize].sets
        })
    }

    /// The largest sum above `limit` among the sets of `candidates` whose steps are all in
    /// `done` (their sums in `memo` final), if any.
    #[inline(always)]
    fn complete_above(
        plan: &ChildPlan,
        memo: &CatalogueMemo,
        candidates: u32,
        done: u32,
        limit: u32,
    ) -> Option<u32> {
        let mut above = None;
        for s in ones(candidates) {
            let sum = u32::from(memo.sums[s]);
            if u32::from(plan.set_steps[s]) & !done == 0 && sum > limit {
                above = Some(above.map_or(sum, |a: u32| a.max(sum)));
            }
        }
        above
    }
}

impl Heuristic for CatalogueHeuristic<'_> {
    type Memo = CatalogueMemo;
    type Started = CatalogueStarted;

    /// For tables of more than [`LOOK_AHEAD_BYTES`](crate::heuristic::pdb::LOOK_AHEAD_BYTES)
    /// in all, unless set otherwise ([`CatalogueHeuristic::with_look_ahead`]).
    fn looks_ahead(&self) -> bool {
        self.look_ahead
    }

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, CatalogueMemo)> {
        let mut memo = CatalogueMemo::default();
        for (l, lookup) in self.lookups.iter().enumerate() {
            let (at, blank) = self.placement(l, cells);
            let value = lookup.table.root_value(self.board, &at, blank)?;
            memo.values[l] = value;
            if lookup.follows
                && let Index::ZeroAware(index) = &lookup.table.index
            {
                memo.placed[l % MAX_FOLLOWED] = index.placed(&at, lookup.table.k);
            }
            for s in 0..self.sets {
                if lookup.sets & (1 << s) != 0 {
                    memo.sums[s] += u16::from(value);
                }
            }
        }
        Ok((Self::total(&mut memo), memo))
    }

    #[inline(always)]
    fn start_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        parent: &CatalogueMemo,
        started: &mut CatalogueStarted,
    ) {
        let plan = &self.child_plans[tile];
        started.started = 0;
        let child = Child::new(cells, tile, from);
        self.start_steps(plan, plan.all_steps(), &child, parent, started);
    }

    /// Starts nothing when a set the move leaves as it was is above `limit` (the child is
    /// pruned as it is), only the lookup of the parent's largest touched set
    /// ([`CatalogueHeuristic::finish_move_within`]'s first) when that set is within a step of
    /// `limit` (one more and the child may be pruned), else every lookup.
    #[inline(always)]
    fn start_move_within(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        parent: &CatalogueMemo,
        started: &mut CatalogueStarted,
        limit: u32,
    ) {
        let plan = &self.child_plans[tile];
        started.started = 0;
        if self.untouched_above(plan, parent, limit).is_some() {
            return;
        }
        let first = self.likeliest_pruner(plan, parent);
        let steps = if u32::from(parent.sums[first]) + 1 > limit {
            u32::from(plan.set_steps[first])
        } else {
            plan.all_steps()
        };
        let child = Child::new(cells, tile, from);
        self.start_steps(plan, steps, &child, parent, started);
    }

    /// Reads the started lookups, the parent's largest touched set's first, stopping as
    /// [`CatalogueHeuristic::finish_move_within`] does; starts the others if the child is
    /// not settled by then.
    #[inline(always)]
    fn probe_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &mut CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
        limit: u32,
    ) -> Option<u32> {
        let plan = &self.child_plans[tile];
        if let Some(h) = self.untouched_above(plan, parent, limit) {
            return Some(h);
        }
        let child = Child::new(cells, tile, from);
        let first = self.likeliest_pruner(plan, parent);
        let mut done = 0u32;
        let pruner_steps = u32::from(plan.set_steps[first]) & started.started;
        if let Some(h) = self.read_pruner(
            plan,
            pruner_steps,
            &mut done,
            &child,
            started,
            parent,
            memo,
            limit,
        ) {
            return Some(h);
        }
        let rest = started.started & !done;
        if let Some(h) =
            self.read_one_by_one(plan, rest, &mut done, &child, started, parent, memo, limit)
        {
            return Some(h);
        }
        if done == plan.all_steps() {
            return Some(Self::total(memo));
        }
        self.start_steps(
            plan,
            plan.all_steps() & !started.started,
            &child,
            parent,
            started,
        );
        started.read = done;
        None
    }

    #[inline(always)]
    fn resume_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
        limit: u32,
    ) -> u32 {
        let plan = &self.child_plans[tile];
        let child = Child::new(cells, tile, from);
        let mut done = started.read;
        let rest = plan.all_steps() & !done;
        match self.read_one_by_one(plan, rest, &mut done, &child, started, parent, memo, limit) {
            Some(h) => h,
            None => Self::total(memo),
        }
    }

    #[inline(always)]
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
    ) -> u32 {
        *memo = *parent;
        let plan = &self.child_plans[tile];
        let child = Child::new(cells, tile, from);
        for q in 0..plan.count as usize {
            let (value, placed) = self.step_value(plan, q, &child, started, parent);
            self.apply_step(plan, q, value, placed, parent, memo, 0, u32::MAX);
        }
        Self::total(memo)
    }

    /// Stops as soon as a set's sum is final and above `limit`: first the sets the move
    /// leaves as they were, then the set that was the parent's largest (the likeliest to prune
    /// the child), then the others as their lookups are read.
    #[inline(always)]
    fn finish_move_within(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
        limit: u32,
    ) -> u32 {
        let plan = &self.child_plans[tile];
        if let Some(h) = self.untouched_above(plan, parent, limit) {
            return h;
        }
        let child = Child::new(cells, tile, from);
        let first = self.likeliest_pruner(plan, parent);
        let mut done = 0u32;
        let pruner_steps = u32::from(plan.set_steps[first]);
        if let Some(h) = self.read_pruner(
            plan,
            pruner_steps,
            &mut done,
            &child,
            started,
            parent,
            memo,
            limit,
        ) {
            return h;
        }
        let rest = plan.all_steps() & !done;
        match self.read_one_by_one(plan, rest, &mut done, &child, started, parent, memo, limit) {
            Some(h) => h,
            None => Self::total(memo),
        }
    }
}
