//! Heuristics, each evaluated incrementally: after a move only what the moved tile changes is
//! looked up again.
//!
//! A state is given as the cell of each tile, `cells[tile]`, `cells[0]` being the blank.
//!
//! ```
//! use tilepdb_common::{Board, Goal, PuzzleState};
//! use tilepdb_solver::heuristic::{Heuristic, Manhattan};
//! let board: Board = "3x3".parse().unwrap();
//! let h = Manhattan::new(board, Goal::BlankFirst);
//! let state = PuzzleState::parse(board, "1 0 2 3 4 5 6 7 8").unwrap();
//! let (value, memo) = h.evaluate(&state.cells()).unwrap();
//! assert_eq!(value, 1);
//! // Slide tile 1 back onto the goal cell 1 -> 0? No: tile 1 moves from cell 0 to cell 1.
//! let mut cells = state.cells();
//! cells[1] = 1;
//! cells[0] = 0;
//! assert_eq!(h.after_move(&cells, 1, 0, &memo).0, 0);
//! ```

use tilepdb_common::table::mod3::child_value;
use tilepdb_common::table::{Encoding, Pdb, TableSet};
use tilepdb_common::{BlankRule, Board, Goal, MAX_CELLS, PlacementRanker};

use crate::error::{Error, Result};

/// An admissible estimate of the moves left, evaluated incrementally.
pub trait Heuristic: Sync {
    /// What a node keeps so that its children are evaluated from it.
    type Memo: Copy + Send;

    /// The value of a state from scratch.
    fn evaluate(&self, cells: &[u8]) -> Result<(u32, Self::Memo)>;

    /// The value after `tile` moved from `from` (`cells` already updated), given the parent's
    /// memo.
    fn after_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        parent: &Self::Memo,
    ) -> (u32, Self::Memo);
}

/// `distance[tile][cell]`: Manhattan distance of `tile` on `cell` to its goal cell.
fn distance_table(board: Board, goal: Goal) -> Vec<[u8; MAX_CELLS]> {
    let n = board.cells();
    (0..n)
        .map(|tile| {
            let mut row = [0u8; MAX_CELLS];
            for (cell, d) in row.iter_mut().enumerate().take(n) {
                *d = board.distance(cell, goal.cell_of(tile, n)) as u8;
            }
            row
        })
        .collect()
}

/// Number of tiles (not the blank) off their goal cell.
pub struct Misplaced {
    goal_cells: Vec<u8>,
}

impl Misplaced {
    pub fn new(board: Board, goal: Goal) -> Misplaced {
        let n = board.cells();
        Misplaced {
            goal_cells: (0..n).map(|t| goal.cell_of(t, n) as u8).collect(),
        }
    }
}

impl Heuristic for Misplaced {
    type Memo = u32;

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, u32)> {
        let h = (1..cells.len())
            .filter(|&t| cells[t] != self.goal_cells[t])
            .count() as u32;
        Ok((h, h))
    }

    #[inline]
    fn after_move(&self, cells: &[u8], tile: usize, from: usize, parent: &u32) -> (u32, u32) {
        let goal = self.goal_cells[tile] as usize;
        let h = parent + (from == goal) as u32 - (cells[tile] as usize == goal) as u32;
        (h, h)
    }
}

/// Sum of the Manhattan distances of the tiles to their goal cells.
pub struct Manhattan {
    distance: Vec<[u8; MAX_CELLS]>,
}

impl Manhattan {
    pub fn new(board: Board, goal: Goal) -> Manhattan {
        Manhattan {
            distance: distance_table(board, goal),
        }
    }
}

impl Heuristic for Manhattan {
    type Memo = u32;

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, u32)> {
        let h = (1..cells.len())
            .map(|t| self.distance[t][cells[t] as usize] as u32)
            .sum();
        Ok((h, h))
    }

    #[inline]
    fn after_move(&self, cells: &[u8], tile: usize, from: usize, parent: &u32) -> (u32, u32) {
        let d = &self.distance[tile];
        let h = parent + d[cells[tile] as usize] as u32 - d[from] as u32;
        (h, h)
    }
}

/// Manhattan distance plus two moves for each tile that must leave its goal row (column) to
/// let the others of that line pass (Hansson, Mayer & Yung 1992): per line, the tiles whose
/// goal lies in it, minus the longest run of them already in goal order.
pub struct LinearConflict {
    board: Board,
    manhattan: Manhattan,
    goal_cells: Vec<u8>,
}

impl LinearConflict {
    pub fn new(board: Board, goal: Goal) -> LinearConflict {
        let n = board.cells();
        LinearConflict {
            board,
            manhattan: Manhattan::new(board, goal),
            goal_cells: (0..n).map(|t| goal.cell_of(t, n) as u8).collect(),
        }
    }

    fn conflicts(&self, cells: &[u8]) -> u32 {
        let (w, h) = (self.board.width(), self.board.height());
        let mut tiles_on = [0u8; MAX_CELLS];
        for (t, &c) in cells.iter().enumerate() {
            tiles_on[c as usize] = t as u8;
        }
        let mut extra = 0;
        // Rows: tiles whose goal row is this row, in column order; their goal columns.
        for row in 0..h {
            let keys: Vec<usize> = (0..w)
                .map(|col| tiles_on[row * w + col] as usize)
                .filter(|&t| t != 0 && self.goal_cells[t] as usize / w == row)
                .map(|t| self.goal_cells[t] as usize % w)
                .collect();
            extra += keys.len() - longest_increasing(&keys);
        }
        for col in 0..w {
            let keys: Vec<usize> = (0..h)
                .map(|row| tiles_on[row * w + col] as usize)
                .filter(|&t| t != 0 && self.goal_cells[t] as usize % w == col)
                .map(|t| self.goal_cells[t] as usize / w)
                .collect();
            extra += keys.len() - longest_increasing(&keys);
        }
        2 * extra as u32
    }
}

/// Length of the longest strictly increasing subsequence (short slices).
fn longest_increasing(keys: &[usize]) -> usize {
    let mut best = vec![1usize; keys.len()];
    for i in 0..keys.len() {
        for j in 0..i {
            if keys[j] < keys[i] {
                best[i] = best[i].max(best[j] + 1);
            }
        }
    }
    best.into_iter().max().unwrap_or(0)
}

impl Heuristic for LinearConflict {
    /// The Manhattan part.
    type Memo = u32;

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, u32)> {
        let (m, _) = self.manhattan.evaluate(cells)?;
        Ok((m + self.conflicts(cells), m))
    }

    #[inline]
    fn after_move(&self, cells: &[u8], tile: usize, from: usize, parent: &u32) -> (u32, u32) {
        let (m, _) = self.manhattan.after_move(cells, tile, from, parent);
        (m + self.conflicts(cells), m)
    }
}

/// Most tables a [`PdbHeuristic`] sums.
pub const MAX_TABLES: usize = 16;

/// The values of each table for a node, and for its reflection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PdbMemo {
    values: [u8; MAX_TABLES],
    mirrored: [u8; MAX_TABLES],
}

/// One table of a set, ready for lookups.
struct TableLookup<'a> {
    pdb: &'a Pdb,
    payload: &'a [u8],
    encoding: Encoding,
    ranker: PlacementRanker,
    tiles: Vec<u8>,
    /// The tile of the real state whose mirrored cell is the cell of `tiles[i]` in the
    /// reflected state.
    mirror_sources: Vec<u8>,
    goal_cells: Vec<u8>,
    /// `slots` for aware tables (entries per placement), 1 otherwise.
    slots: u64,
}

/// The additive heuristic of a table set: the sum of its tables' values, and with reflection
/// the larger of that sum and the sum for the state mirrored about the main diagonal.
pub struct PdbHeuristic<'a> {
    board: Board,
    tables: Vec<TableLookup<'a>>,
    /// The table of each tile (`u8::MAX` for none), and of its mirror image.
    table_of_tile: [u8; MAX_CELLS],
    mirror_table_of_tile: [u8; MAX_CELLS],
    mirror_cell: [u8; MAX_CELLS],
    reflect: bool,
    /// Aware tables depend on the blank: every move changes every table's entry.
    blank_aware: bool,
}

impl<'a> PdbHeuristic<'a> {
    /// A heuristic over `set`; `reflect` needs a square board whose goal puts the blank on the
    /// main diagonal.
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
        let mut mirror_cell = [0u8; MAX_CELLS];
        for (c, m) in mirror_cell.iter_mut().enumerate().take(n) {
            *m = if reflect {
                board.transpose_cell(c) as u8
            } else {
                c as u8
            };
        }
        let mut table_of_tile = [u8::MAX; MAX_CELLS];
        let mut tables = Vec::new();
        let mut blank_aware = false;
        for (i, pdb) in set.tables().iter().enumerate() {
            let space = pdb.space();
            blank_aware |= space.rule() == BlankRule::Aware;
            for &t in space.pattern().tiles() {
                table_of_tile[t as usize] = i as u8;
            }
            tables.push(TableLookup {
                pdb,
                payload: pdb.payload(),
                encoding: pdb.encoding(),
                ranker: space.ranker().clone(),
                tiles: space.pattern().tiles().to_vec(),
                mirror_sources: space
                    .pattern()
                    .tiles()
                    .iter()
                    .map(|&t| mirror_tile[t as usize])
                    .collect(),
                goal_cells: space.goal_cells().to_vec(),
                slots: space.entries() / space.placements(),
            });
        }
        let mut mirror_table_of_tile = [u8::MAX; MAX_CELLS];
        for t in 0..n {
            mirror_table_of_tile[t] = table_of_tile[mirror_tile[t] as usize];
        }
        Ok(PdbHeuristic {
            board,
            tables,
            table_of_tile,
            mirror_table_of_tile,
            mirror_cell,
            reflect,
            blank_aware,
        })
    }

    /// The entry of table `i` for the state `cells` (mirrored or not), and the Manhattan
    /// distance of its placement when the encoding needs it.
    #[inline]
    fn entry(&self, i: usize, cells: &[u8], mirrored: bool) -> (u64, u32) {
        let t = &self.tables[i];
        let mut placement = [0u8; MAX_CELLS];
        let k = t.tiles.len();
        if mirrored {
            for (p, &src) in placement.iter_mut().zip(&t.mirror_sources) {
                *p = self.mirror_cell[cells[src as usize] as usize];
            }
        } else {
            for (p, &tile) in placement.iter_mut().zip(&t.tiles) {
                *p = cells[tile as usize];
            }
        }
        let rank = t.ranker.rank(&placement);
        let mut index = rank;
        if t.slots > 1 {
            let blank = if mirrored {
                self.mirror_cell[cells[0] as usize]
            } else {
                cells[0]
            };
            let occupied = placement[..k].iter().fold(0u32, |m, &c| m | 1 << c);
            let free = self.board.all_cells() & !occupied;
            index = rank * t.slots + (free & ((1u32 << blank) - 1)).count_ones() as u64;
        }
        let m = if t.encoding.needs_manhattan() {
            placement[..k]
                .iter()
                .zip(&t.goal_cells)
                .map(|(&c, &g)| self.board.distance(c as usize, g as usize))
                .sum()
        } else {
            0
        };
        (index, m)
    }

    #[inline]
    fn lookup(&self, i: usize, cells: &[u8], mirrored: bool, parent: u8) -> u8 {
        let t = &self.tables[i];
        let (index, m) = self.entry(i, cells, mirrored);
        match t.encoding {
            Encoding::Byte => t.payload[index as usize],
            Encoding::Mod3 => child_value(parent, Encoding::Mod3.stored(t.payload, index)),
            e => e.decode(e.stored(t.payload, index), m),
        }
    }

    fn root_lookup(&self, i: usize, cells: &[u8], mirrored: bool) -> Result<u8> {
        let t = &self.tables[i];
        let (index, m) = self.entry(i, cells, mirrored);
        Ok(match t.encoding {
            Encoding::Mod3 => t.pdb.root_value(index)?,
            Encoding::Byte => t.payload[index as usize],
            e => e.decode(e.stored(t.payload, index), m),
        })
    }

    #[inline]
    fn total(&self, memo: &PdbMemo) -> u32 {
        let n = self.tables.len();
        let sum: u32 = memo.values[..n].iter().map(|&v| v as u32).sum();
        if self.reflect {
            sum.max(memo.mirrored[..n].iter().map(|&v| v as u32).sum())
        } else {
            sum
        }
    }

    /// Each table's value for the state and for its reflection (when reflecting).
    pub fn table_values(&self, cells: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        let (_, memo) = self.evaluate(cells)?;
        let n = self.tables.len();
        Ok((
            memo.values[..n].to_vec(),
            self.reflect.then(|| memo.mirrored[..n].to_vec()),
        ))
    }
}

impl Heuristic for PdbHeuristic<'_> {
    type Memo = PdbMemo;

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, PdbMemo)> {
        let mut memo = PdbMemo::default();
        for i in 0..self.tables.len() {
            memo.values[i] = self.root_lookup(i, cells, false)?;
            if self.reflect {
                memo.mirrored[i] = self.root_lookup(i, cells, true)?;
            }
        }
        Ok((self.total(&memo), memo))
    }

    #[inline]
    fn after_move(
        &self,
        cells: &[u8],
        tile: usize,
        _from: usize,
        parent: &PdbMemo,
    ) -> (u32, PdbMemo) {
        let mut memo = *parent;
        if self.blank_aware {
            for i in 0..self.tables.len() {
                memo.values[i] = self.lookup(i, cells, false, parent.values[i]);
                if self.reflect {
                    memo.mirrored[i] = self.lookup(i, cells, true, parent.mirrored[i]);
                }
            }
        } else {
            let i = self.table_of_tile[tile];
            if i != u8::MAX {
                let i = i as usize;
                memo.values[i] = self.lookup(i, cells, false, parent.values[i]);
            }
            if self.reflect {
                let j = self.mirror_table_of_tile[tile];
                if j != u8::MAX {
                    let j = j as usize;
                    memo.mirrored[j] = self.lookup(j, cells, true, parent.mirrored[j]);
                }
            }
        }
        (self.total(&memo), memo)
    }
}
