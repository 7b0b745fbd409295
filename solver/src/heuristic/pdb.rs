//! The additive heuristic of a table set: the sum of its tables' values, with reflection the
//! larger of that sum and its reflection's, followed along the search path so that a child
//! looks up only the tables that hold the moved tile (every table, for aware sets).

use tilepdb_common::table::TableSet;
use tilepdb_common::{BlankRule, Board, MAX_CELLS};

use super::Heuristic;
use super::table::{SharedRegions, TableLookup};
use crate::error::{Error, Result};

/// A [`PdbHeuristic`] looks ahead ([`Heuristic::looks_ahead`]) when its tables hold more
/// than this many bytes in all: smaller sets stay in the processor's caches, where fetching
/// ahead costs more than it saves (the 15-puzzle's 6-6-3 set, 11 MiB, is about 4% slower with
/// it; the 7-8 set, 550 MiB, about 40% faster).
pub const LOOK_AHEAD_BYTES: u64 = 32 << 20;

/// Most tables a [`PdbHeuristic`] sums.
pub const MAX_TABLES: usize = 16;

/// The values of each table for a node, and for its reflection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PdbMemo {
    /// `values[0]`: the state's; `values[1]`: its reflection's.
    values: [[u8; MAX_TABLES]; 2],
    /// The sum of each side's values.
    sums: [u32; 2],
}

/// Lookups whose indices a [`PdbStarted`] holds: a child of a minimized, zero-aware or ignored set has
/// at most two (the moved tile's table, and the one of its mirror image), one of an aware set
/// one per table and side; the indices of further lookups (aware sets of more than four
/// tables with reflection) are computed again by [`Heuristic::finish_move`].
const STARTED_LOOKUPS: usize = 4;

/// The entry indices of a child's lookups, whose memory is being fetched since
/// [`Heuristic::start_move`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PdbStarted {
    index: [u64; STARTED_LOOKUPS],
}

/// The tables a child looks up after a move of one tile, with the side of each (false: the
/// state, true: its reflection): the first [`STARTED_LOOKUPS`] of them.
#[derive(Clone, Copy, Debug, Default)]
struct ChildLookups {
    count: u8,
    lookups: [(u8, bool); STARTED_LOOKUPS],
}

impl ChildLookups {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a table number is below the set's tables, at most 24"
    )]
    fn push(&mut self, table: usize, mirrored: bool) {
        if (self.count as usize) < STARTED_LOOKUPS {
            self.lookups[self.count as usize] = (table as u8, mirrored);
            self.count += 1;
        }
    }
}

/// The additive heuristic of a table set: the sum of its tables' values, and with reflection
/// the larger of that sum and the sum for the state mirrored about the main diagonal.
pub struct PdbHeuristic<'a> {
    board: Board,
    /// The board's cells as a bitboard.
    all_cells: u32,
    tables: Vec<TableLookup<'a>>,
    /// `mirror_cell[c]`: the reflection of cell `c` (256 entries: a cell byte needs no bounds
    /// check).
    mirror_cell: [u8; 256],
    reflect: bool,
    /// What a child looks up, by the tile moved.
    child_lookups: [ChildLookups; MAX_CELLS],
    /// Lookups of a child in an aware set: every table, and every table again mirrored when
    /// reflecting; 0 otherwise.
    aware_lookups: usize,
    look_ahead: bool,
}

impl<'a> PdbHeuristic<'a> {
    /// A heuristic over `set`; `reflect` needs a square board whose goal puts the blank on the
    /// main diagonal.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles, cells and table numbers are below 25, so they fit in a byte"
    )]
    pub fn new(set: &'a TableSet, reflect: bool) -> Result<PdbHeuristic<'a>> {
        let board = set.board();
        let goal = set.goal();
        let n = board.cells();
        if reflect && !set.reflection() {
            return Err(Error::Unsupported(format!(
                "reflection needs a square board with the goal's blank on the main diagonal; the set is {board} {goal}"
            )));
        }
        if set.tables().len() > MAX_TABLES {
            return Err(Error::Unsupported(format!(
                "a set of {} tables; at most {MAX_TABLES} are summed",
                set.tables().len()
            )));
        }
        let mirror_tile: Vec<u8> = (0..n)
            .map(|t| {
                if reflect {
                    goal.tile_at(board.transpose_cell(goal.cell_of(t, n)), n) as u8
                } else {
                    t as u8
                }
            })
            .collect();
        let mut mirror_cell = [0u8; 256];
        for (c, m) in mirror_cell.iter_mut().enumerate().take(n) {
            *m = if reflect {
                board.transpose_cell(c) as u8
            } else {
                c as u8
            };
        }
        let mut table_of_tile = [u8::MAX; MAX_CELLS];
        let mut tables = Vec::new();
        let mut regions = SharedRegions::default();
        let mut blank_aware = false;
        for (i, pdb) in set.tables().iter().enumerate() {
            let space = pdb.space();
            blank_aware |= space.rule() == BlankRule::Aware;
            for &t in space.pattern().tiles() {
                table_of_tile[t as usize] = i as u8;
            }
            tables.push(TableLookup::new(pdb, &mirror_tile, &mut regions));
        }
        let mut mirror_table_of_tile = [u8::MAX; MAX_CELLS];
        for t in 0..n {
            mirror_table_of_tile[t] = table_of_tile[mirror_tile[t] as usize];
        }
        let aware_lookups = if blank_aware {
            tables.len() * (1 + usize::from(reflect))
        } else {
            0
        };
        // The table of each tile (`u8::MAX` for none) and of its mirror image. Aware tables
        // depend on the blank's cell, so every move changes every table's entry; a zero-aware
        // table's entry depends on the blank's region only, which a move of a tile outside the
        // pattern keeps (see `zero_aware`).
        let mut child_lookups = [ChildLookups::default(); MAX_CELLS];
        for (tile, lookups) in child_lookups.iter_mut().enumerate().take(n).skip(1) {
            if blank_aware {
                for p in 0..aware_lookups {
                    let (i, mirrored) = aware_lookup(reflect, p);
                    lookups.push(i, mirrored);
                }
            } else {
                if table_of_tile[tile] != u8::MAX {
                    lookups.push(table_of_tile[tile] as usize, false);
                }
                if reflect && mirror_table_of_tile[tile] != u8::MAX {
                    lookups.push(mirror_table_of_tile[tile] as usize, true);
                }
            }
        }
        Ok(PdbHeuristic {
            board,
            all_cells: board.all_cells(),
            tables,
            mirror_cell,
            reflect,
            child_lookups,
            aware_lookups,
            look_ahead: set
                .tables()
                .iter()
                .map(tilepdb_common::table::Pdb::file_len)
                .sum::<u64>()
                > LOOK_AHEAD_BYTES,
        })
    }

    /// Looks ahead ([`Heuristic::looks_ahead`]) or not, whatever the size of the tables.
    pub fn with_look_ahead(mut self, look_ahead: bool) -> PdbHeuristic<'a> {
        self.look_ahead = look_ahead;
        self
    }

    /// The cells of table `i`'s tiles in the state `cells` or in its reflection, and the
    /// blank's cell there.
    #[inline(always)]
    fn placement(&self, i: usize, cells: &[u8], mirrored: bool) -> ([u8; MAX_CELLS], u8) {
        let t = &self.tables[i];
        let mut at = [0u8; MAX_CELLS];
        if mirrored {
            for (j, c) in at.iter_mut().enumerate().take(t.k) {
                *c = self.mirror_cell[cells[t.mirror_sources[j] as usize] as usize];
            }
            (at, self.mirror_cell[cells[0] as usize])
        } else {
            for (j, c) in at.iter_mut().enumerate().take(t.k) {
                *c = cells[t.tiles[j] as usize];
            }
            (at, cells[0])
        }
    }

    /// The index of table `i`'s entry for the state `cells` or its reflection.
    #[inline(always)]
    fn index(&self, i: usize, cells: &[u8], mirrored: bool) -> u64 {
        let (at, blank) = self.placement(i, cells, mirrored);
        self.tables[i].entry(&at, blank, self.all_cells)
    }

    /// The Manhattan distance of table `i`'s tiles in the state `cells` or its reflection when
    /// a child's value in the table needs it, else 0.
    #[inline(always)]
    fn child_manhattan(&self, i: usize, cells: &[u8], mirrored: bool) -> u32 {
        let t = &self.tables[i];
        if !t.child_needs_manhattan() {
            return 0;
        }
        let (at, _) = self.placement(i, cells, mirrored);
        t.manhattan(self.board, &at)
    }

    /// Reads entry `index` of table `i` (placement Manhattan distance `m`, when needed) into
    /// `memo`'s side `mirrored` (a mod3 or 1-bit value from the parent's).
    #[inline(always)]
    fn read(
        &self,
        i: usize,
        mirrored: bool,
        index: u64,
        m: u32,
        parent: &PdbMemo,
        memo: &mut PdbMemo,
    ) {
        let side = usize::from(mirrored);
        let old = parent.values[side][i];
        let value = self.tables[i].child_value(index, m, old);
        memo.values[side][i] = value;
        memo.sums[side] = memo.sums[side] + u32::from(value) - u32::from(old);
    }

    fn root_lookup(&self, i: usize, cells: &[u8], mirrored: bool) -> Result<u8> {
        let (at, blank) = self.placement(i, cells, mirrored);
        self.tables[i].root_value(self.board, &at, blank)
    }

    #[inline]
    fn total(&self, memo: &PdbMemo) -> u32 {
        if self.reflect {
            memo.sums[0].max(memo.sums[1])
        } else {
            memo.sums[0]
        }
    }

    /// Each table's value for the state and for its reflection (when reflecting).
    pub fn table_values(&self, cells: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        let (_, memo) = self.evaluate(cells)?;
        let n = self.tables.len();
        Ok((
            memo.values[0][..n].to_vec(),
            self.reflect.then(|| memo.values[1][..n].to_vec()),
        ))
    }
}

/// The table and side of the `p`-th lookup of a child in an aware set (every table changes):
/// table by table, the state's then, when reflecting, the reflection's.
fn aware_lookup(reflect: bool, p: usize) -> (usize, bool) {
    if reflect {
        (p / 2, p % 2 == 1)
    } else {
        (p, false)
    }
}

impl Heuristic for PdbHeuristic<'_> {
    type Memo = PdbMemo;
    type Started = PdbStarted;

    /// For tables of more than [`LOOK_AHEAD_BYTES`] in all, unless set otherwise
    /// ([`PdbHeuristic::with_look_ahead`]).
    fn looks_ahead(&self) -> bool {
        self.look_ahead
    }

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, PdbMemo)> {
        let mut memo = PdbMemo::default();
        for i in 0..self.tables.len() {
            memo.values[0][i] = self.root_lookup(i, cells, false)?;
            if self.reflect {
                memo.values[1][i] = self.root_lookup(i, cells, true)?;
            }
        }
        for side in 0..2 {
            memo.sums[side] = memo.values[side].iter().map(|&v| u32::from(v)).sum();
        }
        Ok((self.total(&memo), memo))
    }

    #[inline(always)]
    fn start_move(
        &self,
        cells: &[u8],
        tile: usize,
        _from: usize,
        _: &PdbMemo,
        started: &mut PdbStarted,
    ) {
        let plan = &self.child_lookups[tile];
        for q in 0..plan.count as usize {
            let (i, mirrored) = plan.lookups[q];
            let t = &self.tables[i as usize];
            let index = self.index(i as usize, cells, mirrored);
            t.encoding.prefetch(t.payload, index);
            started.index[q] = index;
        }
        for p in STARTED_LOOKUPS..self.aware_lookups {
            let (i, mirrored) = aware_lookup(self.reflect, p);
            let t = &self.tables[i];
            t.encoding
                .prefetch(t.payload, self.index(i, cells, mirrored));
        }
    }

    #[inline(always)]
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        _from: usize,
        started: &PdbStarted,
        parent: &PdbMemo,
        memo: &mut PdbMemo,
    ) -> u32 {
        *memo = *parent;
        let plan = &self.child_lookups[tile];
        for q in 0..plan.count as usize {
            let (i, mirrored) = (plan.lookups[q].0 as usize, plan.lookups[q].1);
            let m = self.child_manhattan(i, cells, mirrored);
            self.read(i, mirrored, started.index[q], m, parent, memo);
        }
        for p in STARTED_LOOKUPS..self.aware_lookups {
            let (i, mirrored) = aware_lookup(self.reflect, p);
            let index = self.index(i, cells, mirrored);
            let m = self.child_manhattan(i, cells, mirrored);
            self.read(i, mirrored, index, m, parent, memo);
        }
        self.total(memo)
    }
}
