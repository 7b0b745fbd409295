//! A child's lookups after a move of one tile, as the search asks for them ([`Heuristic`]):
//! each started (its entry's index computed and fetched), read, and added to its sets' sums.

use super::{
    CatalogueHeuristic, CatalogueMemo, CatalogueStarted, Child, ChildPlan, MAX_FOLLOWED, ones,
};
use crate::error::Result;
use crate::heuristic::Heuristic;
use crate::heuristic::table::Index;

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
            let t = &self.lookups[l].table;
            t.encoding.prefetch(t.payload, index);
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

    /// Reads the steps `steps` of `plan` into `memo` together ([`Self::child_step`]), then
    /// returns the largest sum above `limit` among the sets whose steps are all read (`done`,
    /// which gains `steps`), if any.
    #[expect(
        clippy::too_many_arguments,
        reason = "child_step's arguments, in the innermost loop"
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
        for q in ones(steps) {
            self.child_step(plan, q, child, started, parent, memo);
        }
        *done |= steps;
        Self::complete_above(plan, memo, self.lookups_sets(plan, steps), *done, limit)
    }

    /// Reads the steps `steps` of `plan` into `memo` one after the other, each added to
    /// `done`, and stops at the first that completes a set whose sum is above `limit`: the
    /// largest such sum.
    #[expect(
        clippy::too_many_arguments,
        reason = "child_step's arguments, in the innermost loop"
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
            self.child_step(plan, q, child, started, parent, memo);
            *done |= 1 << q;
            let sets = self.lookups[plan.lookups[q] as usize].sets;
            if let Some(h) = Self::complete_above(plan, memo, sets, *done, limit) {
                return Some(h);
            }
        }
        None
    }

    /// Step `q` of `plan`: reads its lookup's entry (its index in `started`, computed here if
    /// it was not started) into `memo` and moves the sums of its sets by the difference from
    /// the parent's value.
    #[inline(always)]
    fn child_step(
        &self,
        plan: &ChildPlan,
        q: usize,
        child: &Child<'_>,
        started: &CatalogueStarted,
        parent: &CatalogueMemo,
        memo: &mut CatalogueMemo,
    ) {
        let l = plan.lookups[q] as usize;
        let (index, placed) = if started.started & (1 << q) != 0 {
            (started.index[q], started.placed[q])
        } else {
            self.child_index(l, child, parent)
        };
        let lookup = &self.lookups[l];
        if lookup.follows {
            memo.placed[l % MAX_FOLLOWED] = placed;
        }
        let t = &lookup.table;
        let m = if t.child_needs_manhattan() {
            let (at, _) = self.placement(l, child.cells);
            t.manhattan(self.board, &at)
        } else {
            0
        };
        let old = parent.values[l];
        let value = t.child_value(index, m, old);
        memo.values[l] = value;
        for s in ones(lookup.sets) {
            memo.sums[s] = memo.sums[s]
                .wrapping_add(u16::from(value))
                .wrapping_sub(u16::from(old));
        }
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
        Ok((self.total(&mut memo), memo))
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
        let child = Child { cells, tile, from };
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
        let child = Child { cells, tile, from };
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
        *memo = *parent;
        let child = Child { cells, tile, from };
        let first = self.likeliest_pruner(plan, parent);
        let mut done = 0u32;
        let pruner_steps = u32::from(plan.set_steps[first]) & started.started;
        if let Some(h) = self.read_together(
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
            return Some(self.total(memo));
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
        let child = Child { cells, tile, from };
        let mut done = started.read;
        let rest = plan.all_steps() & !done;
        match self.read_one_by_one(plan, rest, &mut done, &child, started, parent, memo, limit) {
            Some(h) => h,
            None => self.total(memo),
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
        let child = Child { cells, tile, from };
        for q in 0..plan.count as usize {
            self.child_step(plan, q, &child, started, parent, memo);
        }
        self.total(memo)
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
        *memo = *parent;
        let child = Child { cells, tile, from };
        let first = self.likeliest_pruner(plan, parent);
        let mut done = 0u32;
        let pruner_steps = u32::from(plan.set_steps[first]);
        if let Some(h) = self.read_together(
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
            None => self.total(memo),
        }
    }
}
