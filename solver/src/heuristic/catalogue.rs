//! The heuristic of a catalogue: the maximum over several additive sets, each set the sum of
//! its tables' values, a table possibly read through a symmetry of the board
//! ([`tilepdb_common::symmetry`]).
//!
//! Each distinct (table, symmetry) pair is one *lookup*, whose value a node keeps in its memo
//! (followed along the path from the parent's value for mod3 and 1-bit tables, as
//! [`super::PdbHeuristic`] does), with each set's sum. A child looks up again only the lookups
//! whose pattern holds the moved tile (every lookup of an aware table), and adds each
//! difference to the sums of the sets that use it. The memo also keeps the placement of each
//! zero-aware lookup (its set and order ranks), from which a child's entry is followed after a
//! move of one of its tiles instead of being ranked from scratch.

use tilepdb_common::symmetry::Symmetry;
use tilepdb_common::table::Pdb;
use tilepdb_common::{BlankRule, Board, Goal, MAX_CELLS};

use super::Heuristic;
use super::pdb::LOOK_AHEAD_BYTES;
use super::table::{Index, SharedRegions, TableLookup};
use super::zero_aware::Placed;
use crate::error::{Error, Result};

/// Most distinct (table, symmetry) lookups of a [`CatalogueHeuristic`].
pub const MAX_LOOKUPS: usize = 64;

/// Most additive sets of a [`CatalogueHeuristic`].
pub const MAX_SETS: usize = 16;

/// Most lookups whose placements a node's memo keeps ([`Placed`]), the catalogue's first: a
/// child follows the entries of these from its parent's, and looks the others up from scratch.
const MAX_FOLLOWED: usize = 32;

/// Most lookups a child makes after a move of one tile (one per set holding it, and every
/// lookup of an aware table).
const MAX_CHILD_LOOKUPS: usize = 16;

/// One pattern of a catalogue and the table that serves it: the table of `pdb`, read through
/// `symmetry` (which maps the table's pattern onto the catalogue's), in the additive set `set`.
#[derive(Clone, Copy)]
pub struct CatalogueSlot<'a> {
    /// The additive set (from 0).
    pub set: usize,
    /// The table.
    pub pdb: &'a Pdb,
    /// The symmetry from the table's pattern to the catalogue's.
    pub symmetry: Symmetry,
}

/// The values of each lookup for a node, each set's sum, the first set of the largest sum,
/// and the placements of the lookups that children follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogueMemo {
    values: [u8; MAX_LOOKUPS],
    sums: [u16; MAX_SETS],
    largest: u8,
    placed: [Placed; MAX_FOLLOWED],
}

impl Default for CatalogueMemo {
    fn default() -> CatalogueMemo {
        CatalogueMemo {
            values: [0; MAX_LOOKUPS],
            sums: [0; MAX_SETS],
            largest: 0,
            placed: [Placed::default(); MAX_FOLLOWED],
        }
    }
}

/// The entry indices of a child's lookups, being fetched since [`Heuristic::start_move`]
/// (bit `q` of `started` for step `q` of the child's plan), with the placements of those the
/// child follows, and the steps that [`Heuristic::probe_move`] read.
#[derive(Clone, Copy, Debug, Default)]
pub struct CatalogueStarted {
    index: [u64; MAX_CHILD_LOOKUPS],
    placed: [Placed; MAX_CHILD_LOOKUPS],
    started: u32,
    read: u32,
}

/// A child: the state after `tile` moved from the cell `from` (`cells` already updated).
#[derive(Clone, Copy)]
struct Child<'c> {
    cells: &'c [u8],
    tile: usize,
    from: usize,
}

/// One distinct (table, symmetry) pair.
struct Lookup<'a> {
    table: TableLookup<'a>,
    /// `cell_map[c]`: the cell `σ⁻¹(c)` (256 entries: a cell byte needs no bounds check).
    cell_map: [u8; 256],
    /// The sets that sum this lookup's value (bit `s` for set `s`).
    sets: u32,
    /// Whether a child follows this lookup's entry from its parent's placement ([`Placed`]):
    /// a zero-aware table that keeps one, among the first [`MAX_FOLLOWED`] lookups.
    follows: bool,
}

impl<'a> Lookup<'a> {
    /// The lookup of `slot`'s table through its symmetry, in no set yet.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles and cells are below 256, so they fit in a byte"
    )]
    fn new(
        board: Board,
        goal: Goal,
        slot: &CatalogueSlot<'a>,
        regions: &mut SharedRegions,
    ) -> Lookup<'a> {
        let n = board.cells();
        let tile_map: Vec<u8> = (0..n)
            .map(|t| slot.symmetry.tile(board, goal, t) as u8)
            .collect();
        let inverse = slot.symmetry.inverse();
        let mut cell_map = [0u8; 256];
        for (c, m) in cell_map.iter_mut().enumerate().take(n) {
            *m = inverse.cell(board, c) as u8;
        }
        Lookup {
            table: TableLookup::new(slot.pdb, &tile_map, regions),
            cell_map,
            sets: 0,
            follows: false,
        }
    }
}

/// What a child looks up after a move of one tile, and which of those lookups each set sums.
#[derive(Clone, Copy, Debug, Default)]
struct ChildPlan {
    count: u8,
    lookups: [u8; MAX_CHILD_LOOKUPS],
    /// `set_steps[s]`: the steps `q` (bit `q`) whose lookup set `s` sums; 0 for a set that
    /// the move leaves as it was.
    set_steps: [u16; MAX_SETS],
    /// The sets that some step changes (bit `s` for set `s`).
    touched: u32,
}

impl ChildPlan {
    /// Every step of the plan (bit `q` for step `q`).
    #[inline(always)]
    fn all_steps(&self) -> u32 {
        (1 << self.count) - 1
    }
}

/// The maximum over additive sets of the sums of their tables' values.
pub struct CatalogueHeuristic<'a> {
    board: Board,
    lookups: Vec<Lookup<'a>>,
    /// Which lookup serves each slot, in the order the slots were given.
    slot_lookup: Vec<usize>,
    slot_set: Vec<usize>,
    sets: usize,
    child_plans: [ChildPlan; MAX_CELLS],
    look_ahead: bool,
}

/// The positions of the set bits of `mask`, lowest first.
#[inline(always)]
fn ones(mut mask: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let bit = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            bit
        })
    })
}

/// The tiles of `slot`'s pattern as the catalogue names them (its table's tiles through its
/// symmetry), as a mask; refuses a table of another board or goal, or a symmetry that does
/// not serve it.
fn slot_tiles(board: Board, goal: Goal, slot: &CatalogueSlot<'_>) -> Result<u32> {
    let space = slot.pdb.space();
    let path = slot.pdb.path().display();
    if space.board() != board || space.goal() != goal {
        return Err(Error::Mismatch {
            tables: format!("{path} ({}, {} goal)", space.board(), space.goal()),
            state: format!("the catalogue ({board}, {goal} goal)"),
        });
    }
    let tiles = space.pattern().tiles();
    if !slot.symmetry.serves(board, goal, tiles, space.rule()) {
        return Err(Error::Unsupported(format!(
            "the symmetry {} does not serve the {} table {path}: its image of the goal is not \
             the goal",
            slot.symmetry,
            space.rule()
        )));
    }
    let image = slot.symmetry.image(board, goal, tiles).unwrap_or_default();
    Ok(image.iter().fold(0u32, |m, &t| m | 1 << t))
}

impl<'a> CatalogueHeuristic<'a> {
    /// The heuristic of `slots` on `board` with `goal`. Refused: a table of another board or
    /// goal, a symmetry that does not serve the table ([`Symmetry::serves`]), sets whose
    /// patterns share a tile, sets numbered with gaps, or more than [`MAX_LOOKUPS`] lookups
    /// or [`MAX_SETS`] sets.
    pub fn new(
        board: Board,
        goal: Goal,
        slots: &[CatalogueSlot<'a>],
    ) -> Result<CatalogueHeuristic<'a>> {
        let n = board.cells();
        let sets = slots.iter().map(|s| s.set + 1).max().unwrap_or(0);
        if sets == 0 {
            return Err(Error::Unsupported("a catalogue of no table".into()));
        }
        if sets > MAX_SETS {
            return Err(Error::Unsupported(format!(
                "a catalogue of {sets} sets; at most {MAX_SETS} are compared"
            )));
        }
        let mut set_tiles = vec![0u32; sets];
        let mut lookups: Vec<Lookup<'a>> = Vec::new();
        let mut regions = SharedRegions::default();
        let mut keys: Vec<(*const Pdb, Symmetry)> = Vec::new();
        let mut lookup_tiles: Vec<u32> = Vec::new();
        let mut slot_lookup = Vec::new();
        for slot in slots {
            let mask = slot_tiles(board, goal, slot)?;
            if set_tiles[slot.set] & mask != 0 {
                return Err(Error::Unsupported(format!(
                    "tile {} is in two patterns of set {}: the patterns of an additive set must \
                     be disjoint",
                    (set_tiles[slot.set] & mask).trailing_zeros(),
                    slot.set + 1
                )));
            }
            set_tiles[slot.set] |= mask;
            let key = (std::ptr::from_ref(slot.pdb), slot.symmetry);
            let at = if let Some(at) = keys.iter().position(|k| *k == key) {
                at
            } else {
                if lookups.len() == MAX_LOOKUPS {
                    return Err(Error::Unsupported(format!(
                        "a catalogue of more than {MAX_LOOKUPS} distinct (table, symmetry) lookups"
                    )));
                }
                keys.push(key);
                lookup_tiles.push(if slot.pdb.space().rule() == BlankRule::Aware {
                    // Every move changes an aware table's entry.
                    board.all_cells() & !1
                } else {
                    mask
                });
                let mut lookup = Lookup::new(board, goal, slot, &mut regions);
                lookup.follows = lookups.len() < MAX_FOLLOWED
                    && matches!(&lookup.table.index, Index::ZeroAware(index) if index.follows_moves());
                lookups.push(lookup);
                lookups.len() - 1
            };
            lookups[at].sets |= 1 << slot.set;
            slot_lookup.push(at);
        }
        if let Some(empty) = set_tiles.iter().position(|&m| m == 0) {
            return Err(Error::Unsupported(format!(
                "set {} of the catalogue has no table",
                empty + 1
            )));
        }
        let lookup_sets: Vec<u32> = lookups.iter().map(|l| l.sets).collect();
        let child_plans = child_plans(n, &lookup_tiles, &lookup_sets)?;
        let bytes: u64 = keys
            .iter()
            .enumerate()
            .filter(|(i, k)| keys[..*i].iter().all(|o| o.0 != k.0))
            .map(|(i, _)| lookups[i].table.pdb.file_len())
            .sum();
        Ok(CatalogueHeuristic {
            board,
            lookups,
            slot_lookup,
            slot_set: slots.iter().map(|s| s.set).collect(),
            sets,
            child_plans,
            look_ahead: bytes > LOOK_AHEAD_BYTES,
        })
    }

    /// Looks ahead ([`Heuristic::looks_ahead`]) or not, whatever the size of the tables.
    pub fn with_look_ahead(mut self, look_ahead: bool) -> CatalogueHeuristic<'a> {
        self.look_ahead = look_ahead;
        self
    }

    /// The number of distinct (table, symmetry) lookups.
    pub fn lookups(&self) -> usize {
        self.lookups.len()
    }

    /// Each set's values (in the order its slots were given) and sum, for `cells`.
    pub fn set_values(&self, cells: &[u8]) -> Result<Vec<(Vec<u8>, u32)>> {
        let (_, memo) = self.evaluate(cells)?;
        let mut out = vec![(Vec::new(), 0u32); self.sets];
        for (slot, &l) in self.slot_lookup.iter().enumerate() {
            let (values, sum) = &mut out[self.slot_set[slot]];
            values.push(memo.values[l]);
            *sum += u32::from(memo.values[l]);
        }
        Ok(out)
    }

    /// The cells of lookup `l`'s table tiles in `cells` mapped through `σ⁻¹`, and the blank's.
    #[inline(always)]
    fn placement(&self, l: usize, cells: &[u8]) -> ([u8; MAX_CELLS], u8) {
        let lookup = &self.lookups[l];
        let t = &lookup.table;
        let mut at = [0u8; MAX_CELLS];
        for (j, c) in at.iter_mut().enumerate().take(t.k) {
            *c = lookup.cell_map[cells[t.mirror_sources[j] as usize] as usize];
        }
        (at, lookup.cell_map[cells[0] as usize])
    }

    #[inline(always)]
    fn index(&self, l: usize, cells: &[u8]) -> u64 {
        let (at, blank) = self.placement(l, cells);
        self.lookups[l]
            .table
            .entry(&at, blank, self.board.all_cells())
    }

    /// The entry of lookup `l` for `child` of the node of memo `parent`, and the child's
    /// placement when the lookup follows it ([`Lookup::follows`]: from the parent's, the moved
    /// tile going from `from` to its cell in `child.cells`, the blank onto `from`; else from
    /// scratch).
    #[inline(always)]
    fn child_index(&self, l: usize, child: &Child<'_>, parent: &CatalogueMemo) -> (u64, Placed) {
        let lookup = &self.lookups[l];
        if lookup.follows
            && let Index::ZeroAware(index) = &lookup.table.index
        {
            let from = lookup.cell_map[child.from & 0xff];
            let to = lookup.cell_map[child.cells[child.tile] as usize];
            let placed = index.moved(parent.placed[l % MAX_FOLLOWED], from, to);
            return (index.placed_entry(placed, from), placed);
        }
        (self.index(l, child.cells), Placed::default())
    }

    /// The largest sum of `memo`, whose set (the first of the largest) it records.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a set number is below MAX_SETS, so it fits in a byte"
    )]
    fn total(&self, memo: &mut CatalogueMemo) -> u32 {
        let mut largest = 0;
        for s in 1..self.sets {
            if memo.sums[s] > memo.sums[largest] {
                largest = s;
            }
        }
        memo.largest = largest as u8;
        u32::from(memo.sums[largest])
    }

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

/// The lookups a child makes after a move of each tile: those whose pattern (`tiles[l]`, a
/// bitmask of the catalogue's tiles) holds it.
#[expect(
    clippy::cast_possible_truncation,
    reason = "lookup numbers are below MAX_LOOKUPS, so they fit in a byte"
)]
fn child_plans(n: usize, tiles: &[u32], sets: &[u32]) -> Result<[ChildPlan; MAX_CELLS]> {
    let mut plans = [ChildPlan::default(); MAX_CELLS];
    for (tile, plan) in plans.iter_mut().enumerate().take(n).skip(1) {
        for (l, &mask) in tiles.iter().enumerate() {
            if mask & (1 << tile) == 0 {
                continue;
            }
            let q = plan.count as usize;
            if q == MAX_CHILD_LOOKUPS {
                return Err(Error::Unsupported(format!(
                    "tile {tile} is in more than {MAX_CHILD_LOOKUPS} lookups of the catalogue"
                )));
            }
            plan.lookups[q] = l as u8;
            plan.touched |= sets[l];
            for s in ones(sets[l]) {
                plan.set_steps[s] |= 1 << q;
            }
            plan.count += 1;
        }
    }
    Ok(plans)
}

impl Heuristic for CatalogueHeuristic<'_> {
    type Memo = CatalogueMemo;
    type Started = CatalogueStarted;

    /// For tables of more than [`LOOK_AHEAD_BYTES`] in all, unless set otherwise
    /// ([`CatalogueHeuristic::with_look_ahead`]).
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
        *memo = *parent;
        let plan = &self.child_plans[tile];
        if let Some(h) = self.untouched_above(plan, memo, limit) {
            return Some(h);
        }
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
        *memo = *parent;
        let plan = &self.child_plans[tile];
        if let Some(h) = self.untouched_above(plan, memo, limit) {
            return h;
        }
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
