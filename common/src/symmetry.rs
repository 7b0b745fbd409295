//! The symmetries of a square board (rotations and reflections) and which of them let a table
//! built for one tile set serve the symmetric image of that set.
//!
//! A symmetry σ maps cells to cells and keeps adjacency, so it maps moves to moves. With it
//! goes a renaming of the tiles that keeps the goal: tile `t`, whose goal cell is `g(t)`, is
//! renamed to the tile whose goal cell is `σ(g(t))`. The table of a pattern `S` then serves the
//! pattern `σ(S)` (the renamed tiles) when the abstract goal of `σ(S)`, mapped back through
//! `σ⁻¹`, is the abstract goal of `S`:
//!
//! * every tile of `S` must be renamed to a tile (`σ` must not take a goal cell of `S` onto
//!   the blank's goal cell);
//! * for blank-ignored tables that is all: their goal is the placement alone;
//! * for the tables that know the blank (zero-aware, minimized, aware) the blank's goal cell
//!   `b` must map back into the blank's goal region of `S`: `σ⁻¹(b)` must lie in the region of
//!   the cells free of `S`'s goal placement that holds `b` (a move of the blank inside its
//!   region costs nothing, so every cell of that region is the goal).
//!
//! The value of a state `x` in the table of `σ(S)` is then the value in the table of `S` of
//! `σ⁻¹(x)`: the tile `t` of `S` on the cell `σ⁻¹(x[τ(t)])`, the blank on `σ⁻¹(x[0])`, `τ`
//! the renaming. The relation "serves" is symmetric and transitive, so the patterns fall
//! into classes that one file serves ([`Symmetry::serves`]).
//!
//! ```
//! use tilepdb_common::symmetry::Symmetry;
//! use tilepdb_common::{BlankRule, Board, Goal};
//! let board: Board = "5x5".parse().unwrap();
//! let all = Symmetry::all(board);
//! assert_eq!(all.len(), 8);
//! let transpose = all.iter().find(|s| s.name() == "transpose").unwrap();
//! // Korf & Felner's first pattern and its transposition: tiles 1,2,5,6,7,12 -> 5,10,1,6,11,12.
//! let image = transpose.image(board, Goal::BlankFirst, &[1, 2, 5, 6, 7, 12]).unwrap();
//! assert_eq!(image, vec![5, 10, 1, 6, 11, 12]);
//! assert!(transpose.serves(board, Goal::BlankFirst, &[1, 2, 5, 6, 7, 12], BlankRule::ZeroAware));
//! ```

use std::fmt;

use crate::board::{Board, Goal};
use crate::space::BlankRule;

/// One of the 8 symmetries of a square board: optionally the transposition about the main
/// diagonal, then optionally the rows reversed, then optionally the columns reversed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Symmetry {
    transpose: bool,
    flip_rows: bool,
    flip_cols: bool,
}

impl Symmetry {
    /// The identity.
    pub const IDENTITY: Symmetry = Symmetry {
        transpose: false,
        flip_rows: false,
        flip_cols: false,
    };

    /// Every symmetry of `board`, the identity first: 8 on a square board, the identity alone on
    /// others (whose rotations change the shape; their two mirror images are left out too).
    pub fn all(board: Board) -> Vec<Symmetry> {
        if !board.is_square() {
            return vec![Symmetry::IDENTITY];
        }
        (0..8u8)
            .map(|bits| Symmetry {
                transpose: bits & 1 != 0,
                flip_rows: bits & 2 != 0,
                flip_cols: bits & 4 != 0,
            })
            .collect()
    }

    /// The symmetry's name: `identity`, `transpose`, `anti-transpose`, `rotate-180`,
    /// `rotate-90-clockwise`, `rotate-90-counterclockwise`, `mirror-rows` (top and bottom
    /// exchanged) or `mirror-columns` (left and right exchanged).
    pub fn name(self) -> &'static str {
        match (self.transpose, self.flip_rows, self.flip_cols) {
            (false, false, false) => "identity",
            (true, false, false) => "transpose",
            (true, true, true) => "anti-transpose",
            (false, true, true) => "rotate-180",
            (true, false, true) => "rotate-90-clockwise",
            (true, true, false) => "rotate-90-counterclockwise",
            (false, true, false) => "mirror-rows",
            (false, false, true) => "mirror-columns",
        }
    }

    /// The image of `cell` on `board` (square, unless the symmetry is the identity).
    #[inline]
    pub fn cell(self, board: Board, cell: usize) -> usize {
        let (mut r, mut c) = board.row_col(cell);
        if self.transpose {
            (r, c) = (c, r);
        }
        if self.flip_rows {
            r = board.height() - 1 - r;
        }
        if self.flip_cols {
            c = board.width() - 1 - c;
        }
        board.cell(r, c)
    }

    /// The symmetry that undoes this one.
    pub fn inverse(self) -> Symmetry {
        // A transposition followed by flips is undone by the flips swapped, then the
        // transposition; written in this type's order that is the transposition with the flips
        // exchanged.
        if self.transpose {
            Symmetry {
                transpose: true,
                flip_rows: self.flip_cols,
                flip_cols: self.flip_rows,
            }
        } else {
            self
        }
    }

    /// The tile that `tile` is renamed to: the one whose goal cell is the image of `tile`'s
    /// (0 for the blank's goal cell).
    pub fn tile(self, board: Board, goal: Goal, tile: usize) -> usize {
        let n = board.cells();
        goal.tile_at(self.cell(board, goal.cell_of(tile, n)), n)
    }

    /// The image of the pattern `tiles` (each renamed, in the same order), or `None` when a
    /// tile would be renamed to the blank.
    pub fn image(self, board: Board, goal: Goal, tiles: &[u8]) -> Option<Vec<u8>> {
        tiles
            .iter()
            .map(|&t| match self.tile(board, goal, usize::from(t)) {
                0 => None,
                image => u8::try_from(image).ok(),
            })
            .collect()
    }

    /// Whether the table of the pattern `tiles` under `rule` serves the image of the pattern
    /// (see the module's documentation): the image has no blank and, unless the table ignores
    /// the blank, `σ⁻¹` of the blank's goal cell lies in the blank's goal region of `tiles`.
    pub fn serves(self, board: Board, goal: Goal, tiles: &[u8], rule: BlankRule) -> bool {
        if self.image(board, goal, tiles).is_none() {
            return false;
        }
        if rule == BlankRule::Ignored {
            return true;
        }
        let n = board.cells();
        let blank = goal.cell_of(0, n);
        let occupied = tiles
            .iter()
            .fold(0u32, |m, &t| m | 1 << goal.cell_of(usize::from(t), n));
        let region = board.region(blank, board.all_cells() & !occupied);
        region & (1 << self.inverse().cell(board, blank)) != 0
    }
}

impl fmt::Display for Symmetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eight_symmetries_are_distinct_permutations_with_their_inverses() {
        for board in ["3x3", "4x4", "5x5"] {
            let board: Board = board.parse().unwrap();
            let n = board.cells();
            let all = Symmetry::all(board);
            let mut images: Vec<Vec<usize>> = Vec::new();
            for s in &all {
                let image: Vec<usize> = (0..n).map(|c| s.cell(board, c)).collect();
                let mut sorted = image.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{s} is a permutation");
                for c in 0..n {
                    assert_eq!(s.inverse().cell(board, s.cell(board, c)), c, "{s}");
                    // Adjacency is kept.
                    for d in 0..n {
                        assert_eq!(
                            board.distance(c, d) == 1,
                            board.distance(s.cell(board, c), s.cell(board, d)) == 1
                        );
                    }
                }
                assert!(!images.contains(&image), "{s} twice");
                images.push(image);
            }
            let names: std::collections::HashSet<_> = all.iter().map(|s| s.name()).collect();
            assert_eq!(names.len(), 8);
        }
    }

    #[test]
    fn only_symmetries_keeping_the_blanks_corner_serve_an_enclosed_blank() {
        let board: Board = "5x5".parse().unwrap();
        let goal = Goal::BlankFirst;
        // Tiles 1 and 5 wall cell 0 in: its region is the cell alone.
        let walled = [1u8, 2, 5, 6, 7, 12];
        let serving: Vec<_> = Symmetry::all(board)
            .into_iter()
            .filter(|s| s.serves(board, goal, &walled, BlankRule::ZeroAware))
            .map(Symmetry::name)
            .collect();
        assert_eq!(serving, ["identity", "transpose"]);
        // The bottom right block leaves 0, 4 and 20 in one region; 24 is a tile.
        let corner = [13u8, 14, 18, 19, 23, 24];
        let zero_aware = Symmetry::all(board)
            .into_iter()
            .filter(|s| s.serves(board, goal, &corner, BlankRule::ZeroAware))
            .count();
        assert_eq!(zero_aware, 6);
        // Blank-ignored: any symmetry that does not rename tile 24 to the blank.
        let ignored = Symmetry::all(board)
            .into_iter()
            .filter(|s| s.serves(board, goal, &corner, BlankRule::Ignored))
            .count();
        assert_eq!(ignored, 6);
        let middle = [6u8, 7, 8, 11, 12, 13];
        assert_eq!(
            Symmetry::all(board)
                .into_iter()
                .filter(|s| s.serves(board, goal, &middle, BlankRule::Ignored))
                .count(),
            8
        );
    }
}
