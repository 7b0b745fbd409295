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

use tilepdb_common::region_index::{RegionIndex, order_rank, rank_set};
use tilepdb_common::table::mod3::{child_value, one_bit_child_value};
use tilepdb_common::table::{Encoding, Pdb, TableSet};
use tilepdb_common::{BlankRule, Board, Goal, MAX_CELLS, PlacementRanker};

use crate::error::{Error, Result};

/// An admissible estimate of the moves left, evaluated incrementally.
///
/// A child is evaluated in two halves, [`Heuristic::start_move`] then
/// [`Heuristic::finish_move`], so that a search can start the children of several nodes
/// before it needs their values: a table heuristic computes the entries' indices in the first
/// half and asks the processor to fetch them, and their memory reads then overlap with other
/// work instead of following one another ([`Heuristic::looks_ahead`] says whether that is worth
/// it). [`Heuristic::after_move`] does both at once. The halves write their results in place,
/// into memory the search keeps for the node, which spares copies in the innermost loop.
pub trait Heuristic: Sync {
    /// What a node keeps so that its children are evaluated from it.
    type Memo: Copy + Send;

    /// What the first half of a child's evaluation hands to the second.
    type Started: Copy + Default;

    /// The value of a state from scratch.
    fn evaluate(&self, cells: &[u8]) -> Result<(u32, Self::Memo)>;

    /// Starts evaluating the state after `tile` moved from `from` (`cells` already updated), a
    /// child of the node of memo `parent`, into `started`. By default nothing: heuristics that
    /// compute the whole value in [`Heuristic::finish_move`] leave it.
    #[inline]
    fn start_move(
        &self,
        _cells: &[u8],
        _tile: usize,
        _from: usize,
        _parent: &Self::Memo,
        _started: &mut Self::Started,
    ) {
    }

    /// Finishes evaluating the child from what [`Heuristic::start_move`] wrote for it: writes
    /// its memo into `memo` and returns its value. `cells`, `tile`, `from` and `parent` are the
    /// same as there (the search may have evaluated other states in between and put `cells`
    /// back).
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        started: &Self::Started,
        parent: &Self::Memo,
        memo: &mut Self::Memo,
    ) -> u32;

    /// Whether a search should start children ahead of time: worth it for lookups that miss
    /// the cache (tables), a cost for the heuristics computed on the spot. False unless
    /// overridden.
    fn looks_ahead(&self) -> bool {
        false
    }

    /// The value and memo after `tile` moved from `from` (`cells` already updated), given the
    /// parent's memo: both halves at once.
    #[inline]
    fn after_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        parent: &Self::Memo,
    ) -> (u32, Self::Memo) {
        let mut started = Self::Started::default();
        self.start_move(cells, tile, from, parent, &mut started);
        let mut memo = *parent;
        let h = self.finish_move(cells, tile, from, &started, parent, &mut memo);
        (h, memo)
    }
}

/// `distance[tile][cell]`: Manhattan distance of `tile` on `cell` to its goal cell.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a distance on a board of at most 25 cells is below 50, so it fits in a byte"
)]
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
    /// The heuristic for `board` and `goal`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles, cells and table numbers are below 25, so they fit in a byte"
    )]
    pub fn new(board: Board, goal: Goal) -> Misplaced {
        let n = board.cells();
        Misplaced {
            goal_cells: (0..n).map(|t| goal.cell_of(t, n) as u8).collect(),
        }
    }
}

impl Heuristic for Misplaced {
    type Memo = u32;
    type Started = ();

    #[expect(
        clippy::cast_possible_truncation,
        reason = "a count of at most 25 tiles fits in u32"
    )]
    fn evaluate(&self, cells: &[u8]) -> Result<(u32, u32)> {
        let h = (1..cells.len())
            .filter(|&t| cells[t] != self.goal_cells[t])
            .count() as u32;
        Ok((h, h))
    }

    #[inline]
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        (): &(),
        parent: &u32,
        memo: &mut u32,
    ) -> u32 {
        let goal = self.goal_cells[tile] as usize;
        *memo = parent + u32::from(from == goal) - u32::from(cells[tile] as usize == goal);
        *memo
    }
}

/// Sum of the Manhattan distances of the tiles to their goal cells.
pub struct Manhattan {
    distance: Vec<[u8; MAX_CELLS]>,
}

impl Manhattan {
    /// The heuristic for `board` and `goal`.
    pub fn new(board: Board, goal: Goal) -> Manhattan {
        Manhattan {
            distance: distance_table(board, goal),
        }
    }
}

impl Heuristic for Manhattan {
    type Memo = u32;
    type Started = ();

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, u32)> {
        let h = (1..cells.len())
            .map(|t| u32::from(self.distance[t][cells[t] as usize]))
            .sum();
        Ok((h, h))
    }

    #[inline]
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        (): &(),
        parent: &u32,
        memo: &mut u32,
    ) -> u32 {
        let d = &self.distance[tile];
        *memo = parent + u32::from(d[cells[tile] as usize]) - u32::from(d[from]);
        *memo
    }
}

/// Manhattan distance plus two moves for each tile that must leave its goal row (column) to
/// let the others of that line pass (Hansson, Mayer & Yung 1992): per line, the tiles whose
/// goal lies in it, minus the longest run of them already in goal order.
///
/// Evaluated incrementally. A line is read as a number: on each of its cells, the goal place
/// (plus one) of the line's own tile there, 0 for none, a digit in base `length + 1`; for lines
/// of at most [`TABLED_LINE`] cells a table made once gives each number's count. A move changes
/// only the tile's goal row and goal column (whose own tile it is), each by at most one digit,
/// so a child updates two numbers and looks up two counts. Longer lines are counted again from
/// their tiles when the moved tile enters or leaves them.
pub struct LinearConflict {
    manhattan: Manhattan,
    /// The row and the column of each cell.
    row: [u8; MAX_CELLS],
    col: [u8; MAX_CELLS],
    /// Each tile's goal row, goal column (as the index of its line: rows first, then
    /// columns), and its digit in each: its goal column plus one, its goal row plus one.
    tile_lines: [[u8; 2]; MAX_CELLS],
    tile_digits: [[u8; 2]; MAX_CELLS],
    /// `(length + 1)^place` along a row, along a column.
    weights: [[u32; MAX_CELLS]; 2],
    /// What each tile on each cell adds to the number of its goal row (`[tile][0][cell]`) and
    /// goal column (`[tile][1][cell]`): its digit times the place's weight if the cell lies in
    /// that line, else 0 (for a line too long to table: 1 if it lies there).
    contributions: Vec<[[u16; MAX_CELLS]; 2]>,
    /// Counts of each number of a row, of a column (if short enough to table).
    counts: [Option<Vec<u8>>; 2],
    /// Rows of the board: the index of the first column among the lines.
    height: usize,
    /// For each line (rows, then columns), the tiles whose goal lies in it.
    line_tiles: Vec<Vec<u8>>,
}

/// Lines of at most this many cells have their counts tabled (`6^5` entries), and their
/// numbers fit in 16 bits.
pub const TABLED_LINE: usize = 5;

/// Most lines of a board: its rows and columns (a 1x25 board has 26).
const MAX_LINES: usize = MAX_CELLS + 1;

/// What a [`LinearConflict`] node keeps: its Manhattan distance, each line's number and count
/// of tiles that must leave it, and their sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConflictMemo {
    manhattan: u32,
    /// The sum of `counts`.
    conflicts: u32,
    /// Per line (rows, then columns): its number (tabled lines only).
    numbers: [u16; MAX_LINES],
    /// Per line: the tiles of the line that must leave it.
    counts: [u8; MAX_LINES],
}

/// Tiles that must leave a line whose places hold `digits` (goal place plus one of the
/// line's own tile there, 0 for none): the tiles minus the longest run in goal order.
#[expect(
    clippy::cast_possible_truncation,
    reason = "a line has at most 25 cells, so its count fits in a byte"
)]
fn count_of_digits(digits: &[u8]) -> u8 {
    let mut keys = [0u8; MAX_CELLS];
    let mut k = 0;
    for &d in digits {
        if d > 0 {
            keys[k] = d;
            k += 1;
        }
    }
    (k - longest_increasing(&keys[..k])) as u8
}

/// The count of every number of a line of `length` cells.
#[expect(
    clippy::cast_possible_truncation,
    reason = "tabled lines have at most 5 cells: the exponent and each digit are below 7"
)]
fn count_table(length: usize) -> Vec<u8> {
    let base = length + 1;
    let size = base.pow(length as u32);
    let mut digits = [0u8; MAX_CELLS];
    (0..size)
        .map(|mut n| {
            for d in digits.iter_mut().take(length) {
                *d = (n % base) as u8;
                n /= base;
            }
            count_of_digits(&digits[..length])
        })
        .collect()
}

impl LinearConflict {
    /// The heuristic for `board` and `goal`.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "tiles, cells and table numbers are below 25, so they fit in a byte"
    )]
    pub fn new(board: Board, goal: Goal) -> LinearConflict {
        let n = board.cells();
        let (w, h) = (board.width(), board.height());
        let (mut row, mut col) = ([0u8; MAX_CELLS], [0u8; MAX_CELLS]);
        for c in 0..n {
            (row[c], col[c]) = ((c / w) as u8, (c % w) as u8);
        }
        let mut tile_lines = [[0u8; 2]; MAX_CELLS];
        let mut tile_digits = [[0u8; 2]; MAX_CELLS];
        let mut line_tiles = vec![Vec::new(); h + w];
        for t in 1..n {
            let g = goal.cell_of(t, n);
            tile_lines[t] = [(g / w) as u8, (h + g % w) as u8];
            tile_digits[t] = [(g % w + 1) as u8, (g / w + 1) as u8];
            line_tiles[g / w].push(t as u8);
            line_tiles[h + g % w].push(t as u8);
        }
        let weights = |length: usize| {
            let mut weights = [0u32; MAX_CELLS];
            let mut weight = 1u32;
            for x in weights.iter_mut().take(length) {
                *x = weight;
                weight = weight.saturating_mul(length as u32 + 1);
            }
            weights
        };
        let tabled = |length: usize| (length <= TABLED_LINE).then(|| count_table(length));
        let weights = [weights(w), weights(h)];
        let lengths = [w, h];
        let contributions = (0..n)
            .map(|t| {
                let mut by_cell = [[0u16; MAX_CELLS]; 2];
                for (side, cells) in by_cell.iter_mut().enumerate() {
                    if t == 0 {
                        continue;
                    }
                    let line = tile_lines[t][side] as usize;
                    let index = if side == 0 { line } else { line - h } as u8;
                    let (on, along) = if side == 0 {
                        (&row, &col)
                    } else {
                        (&col, &row)
                    };
                    for c in (0..n).filter(|&c| on[c] == index) {
                        cells[c] = if lengths[side] <= TABLED_LINE {
                            (u32::from(tile_digits[t][side]) * weights[side][along[c] as usize])
                                as u16
                        } else {
                            1
                        };
                    }
                }
                by_cell
            })
            .collect();
        LinearConflict {
            manhattan: Manhattan::new(board, goal),
            row,
            col,
            tile_lines,
            tile_digits,
            weights,
            contributions,
            counts: [tabled(w), tabled(h)],
            height: h,
            line_tiles,
        }
    }

    /// Line `line`'s orientation (0: a row, 1: a column), its index among those, and the
    /// cells' index and place along it.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a board has at most 25 lines, so a line index fits in a byte"
    )]
    fn line(&self, line: usize) -> (usize, u8, &[u8; MAX_CELLS], &[u8; MAX_CELLS]) {
        if line < self.height {
            (0, line as u8, &self.row, &self.col)
        } else {
            (1, (line - self.height) as u8, &self.col, &self.row)
        }
    }

    /// The number and count of line `line` of `cells`, from its tiles.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a tabled line number is below 6^5, which fits in u16"
    )]
    fn scan_line(&self, cells: &[u8], line: usize) -> (u16, u8) {
        let (side, index, on, along) = self.line(line);
        let mut digits = [0u8; MAX_CELLS];
        let mut number = 0u32;
        for &t in &self.line_tiles[line] {
            let c = cells[t as usize] as usize;
            if on[c] == index {
                let digit = self.tile_digits[t as usize][side];
                digits[along[c] as usize] = digit;
                number += u32::from(digit) * self.weights[side][along[c] as usize];
            }
        }
        match &self.counts[side] {
            Some(counts) => (number as u16, counts[number as usize]),
            None => (0, count_of_digits(&digits)),
        }
    }

    /// The memo of `cells` from scratch, given its Manhattan distance.
    fn memo(&self, cells: &[u8], manhattan: u32) -> ConflictMemo {
        let mut memo = ConflictMemo {
            manhattan,
            conflicts: 0,
            numbers: [0; MAX_LINES],
            counts: [0; MAX_LINES],
        };
        for line in 0..self.line_tiles.len() {
            (memo.numbers[line], memo.counts[line]) = self.scan_line(cells, line);
            memo.conflicts += u32::from(memo.counts[line]);
        }
        memo
    }
}

/// Length of the longest strictly increasing subsequence (short slices).
fn longest_increasing(keys: &[u8]) -> usize {
    let mut best = [1u8; MAX_CELLS];
    let mut longest = 0;
    for i in 0..keys.len() {
        for j in 0..i {
            if keys[j] < keys[i] {
                best[i] = best[i].max(best[j] + 1);
            }
        }
        longest = longest.max(best[i] as usize);
    }
    longest
}

impl Heuristic for LinearConflict {
    type Memo = ConflictMemo;
    type Started = ();

    fn evaluate(&self, cells: &[u8]) -> Result<(u32, ConflictMemo)> {
        let (m, _) = self.manhattan.evaluate(cells)?;
        let memo = self.memo(cells, m);
        Ok((m + 2 * memo.conflicts, memo))
    }

    #[inline]
    fn finish_move(
        &self,
        cells: &[u8],
        tile: usize,
        from: usize,
        (): &(),
        parent: &ConflictMemo,
        memo: &mut ConflictMemo,
    ) -> u32 {
        let to = cells[tile] as usize;
        *memo = *parent;
        (memo.manhattan, _) = self
            .manhattan
            .after_move(cells, tile, from, &parent.manhattan);
        // Only the tile's goal row and goal column change: its digit leaves the place of
        // `from` if that cell is in the line, and takes the place of `to` if that one is.
        for (side, contributions) in self.contributions[tile].iter().enumerate() {
            let (was, is) = (contributions[from], contributions[to]);
            if was == is {
                // Neither cell lies in the line (two cells of a line differ in place).
                continue;
            }
            let line = self.tile_lines[tile][side] as usize;
            let count = match &self.counts[side] {
                Some(counts) => {
                    let number = memo.numbers[line] + is - was;
                    memo.numbers[line] = number;
                    counts[number as usize]
                }
                None => self.scan_line(cells, line).1,
            };
            memo.conflicts = memo.conflicts + u32::from(count) - u32::from(memo.counts[line]);
            memo.counts[line] = count;
        }
        memo.manhattan + 2 * memo.conflicts
    }
}

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

/// Lookups whose indices a [`PdbStarted`] holds: a child of a minimized or ignored set has
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

/// One table of a set, ready for lookups.
struct TableLookup<'a> {
    pdb: &'a Pdb,
    payload: &'a [u8],
    encoding: Encoding,
    ranker: PlacementRanker,
    /// The pattern's tiles, `k` of them (arrays of the largest size: no bounds to check).
    tiles: [u8; MAX_CELLS],
    k: usize,
    /// The tile of the real state whose mirrored cell is the cell of `tiles[i]` in the
    /// reflected state.
    mirror_sources: [u8; MAX_CELLS],
    goal_cells: Vec<u8>,
    /// `slots` for aware tables (entries per placement), 1 otherwise.
    slots: u64,
    /// The region index of a zero-aware table: its entry is (set, region of the blank, order).
    region: Option<&'a RegionIndex>,
    /// Whether the value needs the placement's Manhattan distance (nibbles, 1-bit).
    needs_manhattan: bool,
}

/// The additive heuristic of a table set: the sum of its tables' values, and with reflection
/// the larger of that sum and the sum for the state mirrored about the main diagonal.
pub struct PdbHeuristic<'a> {
    board: Board,
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
        let mut blank_aware = false;
        for (i, pdb) in set.tables().iter().enumerate() {
            let space = pdb.space();
            blank_aware |= space.rule() == BlankRule::Aware;
            for &t in space.pattern().tiles() {
                table_of_tile[t as usize] = i as u8;
            }
            let pattern = space.pattern().tiles();
            let (mut tiles, mut mirror_sources) = ([0u8; MAX_CELLS], [0u8; MAX_CELLS]);
            for (j, &t) in pattern.iter().enumerate() {
                tiles[j] = t;
                mirror_sources[j] = mirror_tile[t as usize];
            }
            tables.push(TableLookup {
                pdb,
                payload: pdb.payload(),
                encoding: pdb.encoding(),
                ranker: space.ranker().clone(),
                tiles,
                k: pattern.len(),
                mirror_sources,
                goal_cells: space.goal_cells().to_vec(),
                slots: space.entries() / space.placements(),
                region: pdb.region_index(),
                needs_manhattan: pdb.encoding().needs_manhattan()
                    || pdb.encoding() == Encoding::OneBit,
            });
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
        // The table of each tile (`u8::MAX` for none) and of its mirror image; aware tables
        // depend on the blank, so every move changes every table's entry.
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

    /// The cell of the `j`-th tile of table `i` in the state `cells` or in its reflection.
    #[inline(always)]
    fn cell(&self, i: usize, cells: &[u8], mirrored: bool, j: usize) -> u8 {
        let t = &self.tables[i];
        if mirrored {
            self.mirror_cell[cells[t.mirror_sources[j] as usize] as usize]
        } else {
            cells[t.tiles[j] as usize]
        }
    }

    /// The index of table `i`'s entry for the state `cells` or its reflection.
    #[inline(always)]
    fn index(&self, i: usize, cells: &[u8], mirrored: bool) -> u64 {
        let t = &self.tables[i];
        if let Some(region) = t.region {
            return self.zero_aware_index(region, i, cells, mirrored);
        }
        let (rank, occupied) = t.ranker.rank_by(|j| self.cell(i, cells, mirrored, j));
        if t.slots == 1 {
            return rank;
        }
        let blank = if mirrored {
            self.mirror_cell[cells[0] as usize]
        } else {
            cells[0]
        };
        let free = self.board.all_cells() & !occupied;
        rank * t.slots + u64::from((free & ((1u32 << blank) - 1)).count_ones())
    }

    /// The entry of zero-aware table `i` (region index `region`) for the state `cells` or its
    /// reflection: (set, region holding the blank, order of the tiles on the set's cells).
    #[inline(always)]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a tile of the pattern is numbered below k <= 25, so it fits in a byte"
    )]
    fn zero_aware_index(
        &self,
        region: &RegionIndex,
        i: usize,
        cells: &[u8],
        mirrored: bool,
    ) -> u64 {
        let t = &self.tables[i];
        let mut at = [0u8; MAX_CELLS];
        let mut set = 0u32;
        for (j, c) in at.iter_mut().enumerate().take(t.k) {
            *c = self.cell(i, cells, mirrored, j);
            set |= 1 << *c;
        }
        let mut order = [0u8; MAX_CELLS];
        for (j, &c) in at.iter().enumerate().take(t.k) {
            order[(set & ((1u32 << c) - 1)).count_ones() as usize] = j as u8;
        }
        let blank = if mirrored {
            self.mirror_cell[cells[0] as usize]
        } else {
            cells[0]
        } as usize;
        let c = rank_set(set);
        (region.first_block(c) + region.region_holding(c, blank)) * region.orders()
            + order_rank(&order[..t.k])
    }

    /// The Manhattan distance of table `i`'s tiles in the state `cells` or its reflection when
    /// the table's encoding needs it, else 0.
    #[inline(always)]
    fn manhattan(&self, i: usize, cells: &[u8], mirrored: bool) -> u32 {
        let t = &self.tables[i];
        if !t.needs_manhattan {
            return 0;
        }
        (0..t.k)
            .map(|j| {
                let c = self.cell(i, cells, mirrored, j);
                self.board.distance(c as usize, t.goal_cells[j] as usize)
            })
            .sum()
    }

    /// The entry of table `i` for the state `cells` (mirrored or not), and the Manhattan
    /// distance of its placement when the encoding needs it.
    #[inline(always)]
    fn entry(&self, i: usize, cells: &[u8], mirrored: bool) -> (u64, u32) {
        (
            self.index(i, cells, mirrored),
            self.manhattan(i, cells, mirrored),
        )
    }

    /// Reads entry `index` of table `i` (placement Manhattan distance `m`) into `memo`'s side
    /// `mirrored` (a mod3 value from the parent's).
    #[inline(always)]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "an index is below the table's entries, whose payload is mapped into memory, so it fits in usize"
    )]
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
        let t = &self.tables[i];
        let old = parent.values[side][i];
        let value = match t.encoding {
            Encoding::Byte => t.payload[index as usize],
            Encoding::Mod3 => child_value(old, Encoding::Mod3.stored(t.payload, index)),
            Encoding::OneBit => {
                one_bit_child_value(old, Encoding::OneBit.stored(t.payload, index), m)
            }
            e => e.decode(e.stored(t.payload, index), m),
        };
        memo.values[side][i] = value;
        memo.sums[side] = memo.sums[side] + u32::from(value) - u32::from(old);
    }

    #[expect(
        clippy::cast_possible_truncation,
        reason = "an index is below the table's entries, whose payload is mapped into memory, so it fits in usize"
    )]
    fn root_lookup(&self, i: usize, cells: &[u8], mirrored: bool) -> Result<u8> {
        let t = &self.tables[i];
        let (index, m) = self.entry(i, cells, mirrored);
        Ok(match t.encoding {
            Encoding::Mod3 | Encoding::OneBit => t.pdb.root_value(index)?,
            Encoding::Byte => t.payload[index as usize],
            e => e.decode(e.stored(t.payload, index), m),
        })
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
                .prefetch(t.payload, self.entry(i, cells, mirrored).0);
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
            let m = self.manhattan(i, cells, mirrored);
            self.read(i, mirrored, started.index[q], m, parent, memo);
        }
        for p in STARTED_LOOKUPS..self.aware_lookups {
            let (i, mirrored) = aware_lookup(self.reflect, p);
            let (index, m) = self.entry(i, cells, mirrored);
            self.read(i, mirrored, index, m, parent, memo);
        }
        self.total(memo)
    }
}
