//! Boards, goals and cell bitboards.
//!
//! A board is `W x H` (W columns, H rows); its `n = W * H` cells are numbered row-major from 0.
//! Sets of cells are `u32` bitboards (bit `c` is cell `c`), which is why boards hold at most
//! [`MAX_CELLS`] cells.
//!
//! ```
//! use tilepdb_common::Board;
//! let board: Board = "3x3".parse().unwrap();
//! assert_eq!(board.cells(), 9);
//! // The blank's region on 3x3 when cells 1 and 4 are walled off: {0, 3, 6, 7, 8, 5, 2}.
//! let free = board.all_cells() & !((1 << 1) | (1 << 4));
//! assert_eq!(board.region(0, free), free);
//! // Wall off cells 1 and 3 too: cell 0 is a pocket of its own.
//! let free = board.all_cells() & !((1 << 1) | (1 << 3));
//! assert_eq!(board.region(0, free), 1);
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Most cells a board may have (5x5); bitboards are `u32`.
pub const MAX_CELLS: usize = 25;

/// A rectangular sliding-tile board, `width` columns by `height` rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Board {
    width: u8,
    height: u8,
    /// Cells not in the first column.
    not_first_col: u32,
    /// Cells not in the last column.
    not_last_col: u32,
    all: u32,
}

impl Board {
    /// A board of `width` columns and `height` rows; both at least 2, at most 25 cells.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "width and height are checked: their product is at most 25"
    )]
    pub fn new(width: usize, height: usize) -> Result<Board> {
        let err = |reason| Error::Board {
            width,
            height,
            reason,
        };
        if width < 2 || height < 2 {
            return Err(err("both sides must be at least 2"));
        }
        if width.saturating_mul(height) > MAX_CELLS {
            return Err(err("boards hold at most 25 cells (5x5)"));
        }
        let n = width * height;
        let all = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        let mut first_col = 0u32;
        let mut last_col = 0u32;
        for row in 0..height {
            first_col |= 1 << (row * width);
            last_col |= 1 << (row * width + width - 1);
        }
        Ok(Board {
            width: width as u8,
            height: height as u8,
            not_first_col: all & !first_col,
            not_last_col: all & !last_col,
            all,
        })
    }

    /// Number of columns.
    #[inline]
    pub fn width(&self) -> usize {
        self.width as usize
    }

    /// Number of rows.
    #[inline]
    pub fn height(&self) -> usize {
        self.height as usize
    }

    /// Number of cells, `n = W * H`.
    #[inline]
    pub fn cells(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// The bitboard of every cell.
    #[inline]
    pub fn all_cells(&self) -> u32 {
        self.all
    }

    /// Row and column of a cell.
    #[inline]
    pub fn row_col(&self, cell: usize) -> (usize, usize) {
        (cell / self.width(), cell % self.width())
    }

    /// The cell at a row and column.
    #[inline]
    pub fn cell(&self, row: usize, col: usize) -> usize {
        row * self.width() + col
    }

    /// Manhattan distance between two cells.
    #[inline]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a distance on a board of at most 25 cells is below 50"
    )]
    pub fn distance(&self, a: usize, b: usize) -> u32 {
        let (ra, ca) = self.row_col(a);
        let (rb, cb) = self.row_col(b);
        (ra.abs_diff(rb) + ca.abs_diff(cb)) as u32
    }

    /// Cells orthogonally next to any cell of `cells`.
    #[inline]
    pub fn dilate(&self, cells: u32) -> u32 {
        let w = u32::from(self.width);
        (((cells << 1) & self.not_first_col)
            | ((cells >> 1) & self.not_last_col)
            | (cells << w)
            | (cells >> w))
            & self.all
    }

    /// Cells orthogonally next to `cell`.
    #[inline]
    pub fn neighbours(&self, cell: usize) -> u32 {
        self.dilate(1 << cell)
    }

    /// The connected set of `free` cells that holds `cell` (a bitboard flood fill).
    /// Empty if `cell` is not free.
    #[inline]
    pub fn region(&self, cell: usize, free: u32) -> u32 {
        self.flood(1 << cell, free)
    }

    /// Every `free` cell connected to a cell of `seed` (`seed & free` included).
    #[inline]
    pub fn flood(&self, seed: u32, free: u32) -> u32 {
        let mut region = seed & free;
        loop {
            let grown = (region | self.dilate(region)) & free;
            if grown == region {
                return region;
            }
            region = grown;
        }
    }

    /// Whether the `free` cells connected to `seed` include every cell of `targets`: a flood
    /// fill that stops as soon as it has reached them.
    #[inline]
    pub fn connects(&self, seed: u32, targets: u32, free: u32) -> bool {
        let mut region = seed & free;
        loop {
            if region & targets == targets {
                return true;
            }
            let grown = (region | self.dilate(region)) & free;
            if grown == region {
                return false;
            }
            region = grown;
        }
    }

    /// The cell mirrored about the main diagonal (square boards only).
    #[inline]
    pub fn transpose_cell(&self, cell: usize) -> usize {
        let (r, c) = self.row_col(cell);
        self.cell(c, r)
    }

    /// Whether this board is square, so that the reflection about the main diagonal exists.
    pub fn is_square(&self) -> bool {
        self.width == self.height
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

impl FromStr for Board {
    type Err = Error;

    /// `8`, `15`, `24` (the square puzzles) or `WxH`.
    fn from_str(s: &str) -> Result<Board> {
        let s = s.trim();
        match s {
            "8" => return Board::new(3, 3),
            "15" => return Board::new(4, 4),
            "24" => return Board::new(5, 5),
            _ => {}
        }
        let (w, h) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| Error::BoardSyntax(s.to_string()))?;
        let w: usize = w
            .trim()
            .parse()
            .map_err(|_| Error::BoardSyntax(s.to_string()))?;
        let h: usize = h
            .trim()
            .parse()
            .map_err(|_| Error::BoardSyntax(s.to_string()))?;
        Board::new(w, h)
    }
}

impl TryFrom<String> for Board {
    type Error = Error;
    fn try_from(s: String) -> Result<Board> {
        s.parse()
    }
}

impl From<Board> for String {
    fn from(b: Board) -> String {
        b.to_string()
    }
}

/// Where the tiles sit when the puzzle is solved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Goal {
    /// Blank on cell 0, tile t on cell t (Korf's convention and `data/`'s).
    #[default]
    BlankFirst,
    /// Tile t on cell t - 1, blank on the last cell (the textbooks' convention).
    BlankLast,
}

impl Goal {
    /// The goal cell of `tile` (0 is the blank) on a board of `n` cells.
    #[inline]
    pub fn cell_of(self, tile: usize, n: usize) -> usize {
        match self {
            Goal::BlankFirst => tile,
            Goal::BlankLast => {
                if tile == 0 {
                    n - 1
                } else {
                    tile - 1
                }
            }
        }
    }

    /// The tile whose goal is `cell` (0 is the blank) on a board of `n` cells.
    #[inline]
    pub fn tile_at(self, cell: usize, n: usize) -> usize {
        match self {
            Goal::BlankFirst => cell,
            Goal::BlankLast => {
                if cell == n - 1 {
                    0
                } else {
                    cell + 1
                }
            }
        }
    }

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Goal::BlankFirst => "blank-first",
            Goal::BlankLast => "blank-last",
        }
    }
}

impl fmt::Display for Goal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Goal {
    type Err = Error;
    fn from_str(s: &str) -> Result<Goal> {
        match s.trim() {
            "blank-first" => Ok(Goal::BlankFirst),
            "blank-last" => Ok(Goal::BlankLast),
            other => Err(Error::GoalSyntax(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The cells next to `cell` from its row and column, without bitboards.
    fn naive_neighbours(width: usize, height: usize, cell: usize) -> Vec<usize> {
        let (row, col) = (cell / width, cell % width);
        let mut out = vec![];
        if row > 0 {
            out.push(cell - width);
        }
        if row + 1 < height {
            out.push(cell + width);
        }
        if col > 0 {
            out.push(cell - 1);
        }
        if col + 1 < width {
            out.push(cell + 1);
        }
        out
    }

    /// The free cells connected to any free cell of `seeds`, by a queue-based BFS.
    fn naive_region(width: usize, height: usize, seeds: &[usize], free: &[bool]) -> Vec<bool> {
        let mut seen = vec![false; width * height];
        let mut queue: std::collections::VecDeque<usize> =
            seeds.iter().copied().filter(|&c| free[c]).collect();
        for &c in &queue {
            seen[c] = true;
        }
        while let Some(c) = queue.pop_front() {
            for d in naive_neighbours(width, height, c) {
                if free[d] && !seen[d] {
                    seen[d] = true;
                    queue.push_back(d);
                }
            }
        }
        seen
    }

    fn to_mask(cells: &[bool]) -> u32 {
        cells
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b)
            .fold(0, |m, (c, _)| m | 1 << c)
    }

    proptest! {
        #[test]
        fn region_equals_a_naive_bfs(
            width in 2usize..=5,
            height in 2usize..=5,
            mask in any::<u32>(),
            dense in any::<u32>(),
            cell in 0usize..25,
        ) {
            let board = Board::new(width, height).unwrap();
            let n = width * height;
            let cell = cell % n;
            // About three quarters of the cells free, then about half: regions both large
            // and fragmented.
            let free_mask = (mask | dense) & board.all_cells();
            for free_mask in [free_mask, mask & board.all_cells()] {
                let free: Vec<bool> = (0..n).map(|c| free_mask & (1 << c) != 0).collect();
                let want = to_mask(&naive_region(width, height, &[cell], &free));
                prop_assert_eq!(board.region(cell, free_mask), want);
                if free[cell] {
                    prop_assert!(want & (1 << cell) != 0);
                } else {
                    prop_assert_eq!(want, 0);
                }
            }
        }

        #[test]
        fn flood_equals_a_naive_bfs(
            width in 2usize..=5,
            height in 2usize..=5,
            free_mask in any::<u32>(),
            seed_mask in any::<u32>(),
        ) {
            let board = Board::new(width, height).unwrap();
            let n = width * height;
            let free_mask = free_mask & board.all_cells();
            let seed_mask = seed_mask & board.all_cells();
            let free: Vec<bool> = (0..n).map(|c| free_mask & (1 << c) != 0).collect();
            let seeds: Vec<usize> = (0..n).filter(|&c| seed_mask & (1 << c) != 0).collect();
            let want = to_mask(&naive_region(width, height, &seeds, &free));
            prop_assert_eq!(board.flood(seed_mask, free_mask), want);
        }

        #[test]
        fn dilate_equals_naive_neighbours(width in 2usize..=5, height in 2usize..=5, cells in any::<u32>()) {
            let board = Board::new(width, height).unwrap();
            let n = width * height;
            let cells = cells & board.all_cells();
            let want = (0..n)
                .filter(|&c| cells & (1 << c) != 0)
                .flat_map(|c| naive_neighbours(width, height, c))
                .fold(0u32, |m, d| m | 1 << d);
            prop_assert_eq!(board.dilate(cells), want);
            for c in 0..n {
                let want = naive_neighbours(width, height, c).iter().fold(0u32, |m, &d| m | 1 << d);
                prop_assert_eq!(board.neighbours(c), want);
            }
        }
    }

    #[test]
    fn parses_boards() {
        assert_eq!("15".parse::<Board>().unwrap(), Board::new(4, 4).unwrap());
        assert_eq!("3x4".parse::<Board>().unwrap().width(), 3);
        assert_eq!("3x4".parse::<Board>().unwrap().height(), 4);
        assert!("6x6".parse::<Board>().is_err());
        assert!("1x5".parse::<Board>().is_err());
        assert!("abc".parse::<Board>().is_err());
        let msg = "6x5".parse::<Board>().unwrap_err().to_string();
        assert!(msg.contains("6x5") && msg.contains("25 cells"), "{msg}");
    }

    #[test]
    fn connects_agrees_with_flood() {
        let b = Board::new(3, 3).unwrap();
        for free in 0u32..(1 << 9) {
            for seed_cell in 0..9 {
                let region = b.region(seed_cell, free);
                for targets in [0u32, 1, 0b110, 0b1_0000_0001, free] {
                    assert_eq!(
                        b.connects(1 << seed_cell, targets, free),
                        region & targets == targets,
                        "free {free:#b} seed {seed_cell} targets {targets:#b}"
                    );
                }
            }
        }
    }

    #[test]
    fn neighbours_on_3x2() {
        // 0 1 2
        // 3 4 5
        let b = Board::new(3, 2).unwrap();
        assert_eq!(b.neighbours(0), (1 << 1) | (1 << 3));
        assert_eq!(b.neighbours(2), (1 << 1) | (1 << 5));
        assert_eq!(b.neighbours(3), (1 << 0) | (1 << 4));
        assert_eq!(b.neighbours(4), (1 << 1) | (1 << 3) | (1 << 5));
    }

    #[test]
    fn goals() {
        assert_eq!(Goal::BlankLast.cell_of(0, 16), 15);
        assert_eq!(Goal::BlankLast.cell_of(1, 16), 0);
        for n in [4, 9, 16] {
            for goal in [Goal::BlankFirst, Goal::BlankLast] {
                for t in 0..n {
                    assert_eq!(goal.tile_at(goal.cell_of(t, n), n), t);
                }
            }
        }
    }
}
