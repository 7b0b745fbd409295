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
//!
//! This module makes the heuristic (its lookups, and each tile's plan of a child's lookups);
//! `moves.rs` is its [`Heuristic`] side: a state evaluated, and a child's lookups after a move
//! started, read and added up as the search asks for them.

use tilepdb_common::symmetry::Symmetry;
use tilepdb_common::table::Pdb;
use tilepdb_common::{BlankRule, Board, Goal, MAX_CELLS};

use super::Heuristic;
use super::pdb::LOOK_AHEAD_BYTES;
use super::table::{Index, SharedRegions, TableLookup};
use super::zero_aware::Placed;
use crate::error::{Error, Result};

mod moves;

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

/// A child: the state after a tile moved from the cell `from` to the cell `to` (`cells`
/// already updated).
#[derive(Clone, Copy)]
struct Child<'c> {
    cells: &'c [u8],
    from: usize,
    to: u8,
}

impl<'c> Child<'c> {
    /// The child after `tile` moved from `from`, of cells `cells`.
    #[inline(always)]
    fn new(cells: &'c [u8], tile: usize, from: usize) -> Child<'c> {
        Child {
            cells,
            from,
            to: cells[tile],
        }
    }
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
            let to = lookup.cell_map[child.to as usize];
            let placed = index.moved(parent.placed[l % MAX_FOLLOWED], from, to);
            return (index.placed_entry(placed, from), placed);
        }
        (self.index(l, child.cells), Placed::default())
    }

    /// The largest sum of `memo`, whose set (the first of the largest) it records.
    ///
    /// Taken over all [`MAX_SETS`] sums at once, without a loop's branches: the sums past the
    /// catalogue's sets stay 0, below or equal to every set's, so neither the largest nor its
    /// first set changes.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a set number is below MAX_SETS, so it fits in a byte"
    )]
    fn total(memo: &mut CatalogueMemo) -> u32 {
        let largest = memo.sums.iter().fold(0, |m, &x| m.max(x));
        let first = memo.sums.iter().position(|&x| x == largest).unwrap_or(0);
        memo.largest = first as u8;
        u32::from(largest)
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
