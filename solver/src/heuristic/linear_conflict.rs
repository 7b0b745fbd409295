//! Linear conflict: the Manhattan distance plus two moves per tile that must leave its line.

use tilepdb_common::{Board, Goal, MAX_CELLS};

use super::{Heuristic, Manhattan};
use crate::error::Result;

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
