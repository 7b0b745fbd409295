//! Catalogues: a heuristic that is the maximum over several additive sets of tables, each set
//! the sum of its tables' values (Clausecker & Reinefeld's catalogues; the ZIB code's
//! `catalogues/*.cat` files are read as they are written).
//!
//! The text: blocks of lines, blocks (the additive sets) separated by blank lines; each line a
//! pattern, its tiles separated by commas (or spaces). A line that lists `0` (the blank) names
//! a zero-aware table of the other tiles; a line without `0` a blank-ignored one. `#` starts a
//! comment, to the end of the line. The patterns of one set must be disjoint (their sum is
//! then admissible); patterns of different sets may share tiles.
//!
//! ```
//! use tilepdb_common::catalogue::Catalogue;
//! use tilepdb_common::{BlankRule, Board, Goal};
//! let board: Board = "3x3".parse().unwrap();
//! let text = "# two sets\n0,1,2,3\n0,4,5\n\n1,3\n2,4,5,8\n";
//! let catalogue = Catalogue::parse(text, board, "example.cat").unwrap();
//! assert_eq!(catalogue.sets().len(), 2);
//! assert_eq!(catalogue.sets()[0][0].rule, BlankRule::ZeroAware);
//! assert_eq!(catalogue.sets()[1][1].rule, BlankRule::Ignored);
//! // Overlapping patterns within a set are refused, with the line.
//! let err = Catalogue::parse("0,1,2\n0,2,3\n", board, "bad.cat").unwrap_err();
//! assert!(err.to_string().contains("line 2"));
//! ```

use std::path::Path;

use crate::board::{Board, Goal};
use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::space::BlankRule;
use crate::symmetry::Symmetry;

/// Most bytes of a catalogue file read (the ZIB code's largest is a few kilobytes).
pub const MAX_CATALOGUE_BYTES: u64 = 1 << 20;

/// One table a catalogue names: a pattern and what the table does with the blank.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CatalogueTable {
    /// The pattern's tiles, in the order the catalogue lists them (the blank left out).
    pub pattern: Pattern,
    /// [`BlankRule::ZeroAware`] when the catalogue lists `0`, else [`BlankRule::Ignored`].
    pub rule: BlankRule,
    /// The line of the catalogue that names it (from 1).
    pub line: usize,
}

impl CatalogueTable {
    /// The pattern as the catalogue writes it: `0,1,2,3` for zero-aware, `1,2,3` for ignored.
    pub fn text(&self) -> String {
        let mut words: Vec<String> = Vec::new();
        if self.rule != BlankRule::Ignored {
            words.push("0".into());
        }
        words.extend(self.pattern.tiles().iter().map(ToString::to_string));
        words.join(",")
    }
}

/// A catalogue: additive sets of tables on one board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catalogue {
    board: Board,
    origin: String,
    sets: Vec<Vec<CatalogueTable>>,
}

impl Catalogue {
    /// Parses the text of a catalogue of `board`; errors name `origin` and the line.
    pub fn parse(text: &str, board: Board, origin: &str) -> Result<Catalogue> {
        let bad = |line: usize, reason: String| Error::Catalogue {
            origin: origin.to_string(),
            line,
            reason,
        };
        let mut sets: Vec<Vec<CatalogueTable>> = Vec::new();
        let mut current: Vec<CatalogueTable> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let code = raw.split('#').next().unwrap_or_default().trim();
            if code.is_empty() {
                // A comment alone ends no block; a blank line does.
                if raw.trim().is_empty() && !current.is_empty() {
                    sets.push(std::mem::take(&mut current));
                }
                continue;
            }
            let table = parse_line(code, board).map_err(|reason| bad(line, reason))?;
            if let Some(other) = current
                .iter()
                .find(|t| t.pattern.tile_mask() & table.pattern.tile_mask() != 0)
            {
                let shared =
                    (other.pattern.tile_mask() & table.pattern.tile_mask()).trailing_zeros();
                return Err(bad(
                    line,
                    format!(
                        "tile {shared} is also in the pattern {} of line {} of the same set: the \
                         patterns of an additive set must be disjoint (a blank line starts a new set)",
                        other.text(),
                        other.line
                    ),
                ));
            }
            current.push(CatalogueTable { line, ..table });
        }
        if !current.is_empty() {
            sets.push(current);
        }
        if sets.is_empty() {
            return Err(bad(0, "the catalogue names no pattern".into()));
        }
        Ok(Catalogue {
            board,
            origin: origin.to_string(),
            sets,
        })
    }

    /// Reads the catalogue file `path` of `board`.
    pub fn read(path: &Path, board: Board) -> Result<Catalogue> {
        let origin = path.display().to_string();
        let text =
            crate::files::read_text(path, MAX_CATALOGUE_BYTES).map_err(|e| Error::Catalogue {
                origin: origin.clone(),
                line: 0,
                reason: format!("cannot read it: {e}"),
            })?;
        Catalogue::parse(&text, board, &origin)
    }

    /// The board of every pattern.
    pub fn board(&self) -> Board {
        self.board
    }

    /// Where the catalogue is from (its file).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The additive sets, in the catalogue's order, each its tables in order.
    pub fn sets(&self) -> &[Vec<CatalogueTable>] {
        &self.sets
    }

    /// Every table the catalogue names, with its set: `(set, table)`.
    pub fn tables(&self) -> impl Iterator<Item = (usize, &CatalogueTable)> {
        self.sets
            .iter()
            .enumerate()
            .flat_map(|(s, set)| set.iter().map(move |t| (s, t)))
    }

    /// The distinct tables that serve every pattern of the catalogue with the goal `goal`,
    /// after symmetric reuse ([`Symmetry::serves`]): one per class of patterns that symmetries
    /// map onto each other, named by the class's smallest tile set (tiles in increasing
    /// order), in the order the catalogue first names a pattern of each class.
    pub fn distinct_tables(&self, goal: Goal) -> Vec<DistinctTable> {
        let mut distinct: Vec<DistinctTable> = Vec::new();
        for (set, table) in self.tables() {
            let (tiles, symmetry) = representative(self.board, goal, table);
            let use_ = TableUse {
                set,
                line: table.line,
                symmetry,
            };
            match distinct
                .iter_mut()
                .find(|d| d.rule == table.rule && d.tiles == tiles)
            {
                Some(d) => d.uses.push(use_),
                None => distinct.push(DistinctTable {
                    tiles,
                    rule: table.rule,
                    uses: vec![use_],
                }),
            }
        }
        distinct
    }
}

/// One table file that serves patterns of a catalogue ([`Catalogue::distinct_tables`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistinctTable {
    /// The table's tiles, in increasing order.
    pub tiles: Vec<u8>,
    /// Its blank rule.
    pub rule: BlankRule,
    /// The catalogue's patterns it serves.
    pub uses: Vec<TableUse>,
}

/// A pattern of a catalogue served by a [`DistinctTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableUse {
    /// The set of the pattern.
    pub set: usize,
    /// The catalogue's line that names the pattern.
    pub line: usize,
    /// The symmetry that maps the table's pattern onto the catalogue's.
    pub symmetry: Symmetry,
}

/// The smallest tile set (in increasing order) whose table serves `table`'s pattern, and the
/// symmetry that maps it onto the pattern.
fn representative(board: Board, goal: Goal, table: &CatalogueTable) -> (Vec<u8>, Symmetry) {
    let tiles = table.pattern.tiles();
    let mut best: Option<(Vec<u8>, Symmetry)> = None;
    for sigma in Symmetry::all(board) {
        // The table of `tiles` serves its image through `sigma`, and the image's table serves
        // `tiles` through the inverse (the relation is symmetric).
        if !sigma.serves(board, goal, tiles, table.rule) {
            continue;
        }
        let Some(mut image) = sigma.image(board, goal, tiles) else {
            continue;
        };
        image.sort_unstable();
        if best.as_ref().is_none_or(|(b, _)| image < *b) {
            best = Some((image, sigma.inverse()));
        }
    }
    best.unwrap_or_else(|| {
        // The identity always serves: never reached, but the pattern itself is a sound answer.
        let mut own = tiles.to_vec();
        own.sort_unstable();
        (own, Symmetry::IDENTITY)
    })
}

/// A line's pattern: its tiles and rule (the line is set later).
fn parse_line(code: &str, board: Board) -> std::result::Result<CatalogueTable, String> {
    let mut tiles = Vec::new();
    let mut blank = false;
    for word in code
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        let tile: u8 = word.parse().map_err(|_| {
            format!("{word:?} is not a tile number (a pattern is a line such as 0,1,2,3)")
        })?;
        if tile == 0 {
            if blank {
                return Err("the blank (0) is listed twice".into());
            }
            blank = true;
        } else {
            tiles.push(tile);
        }
    }
    let pattern = Pattern::new(board, tiles).map_err(|e| e.to_string())?;
    Ok(CatalogueTable {
        pattern,
        rule: if blank {
            BlankRule::ZeroAware
        } else {
            BlankRule::Ignored
        },
        line: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn five() -> Board {
        "5x5".parse().unwrap()
    }

    #[test]
    fn blocks_comments_and_rules() {
        let text = "# head\n0,1,2 # tail\n3,4\n\n\n# between\n0,1,3\n";
        let c = Catalogue::parse(text, five(), "t.cat").unwrap();
        assert_eq!(c.sets().len(), 2);
        assert_eq!(c.sets()[0].len(), 2);
        assert_eq!(c.sets()[0][0].pattern.tiles(), &[1, 2]);
        assert_eq!(c.sets()[0][0].line, 2);
        assert_eq!(c.sets()[0][1].rule, BlankRule::Ignored);
        assert_eq!(c.sets()[1][0].text(), "0,1,3");
        // A comment line between patterns does not split a set.
        let c = Catalogue::parse("0,1\n# note\n0,2\n", five(), "t.cat").unwrap();
        assert_eq!(c.sets().len(), 1);
    }

    #[test]
    fn malformed_lines_are_refused_with_their_reason() {
        for (text, words) in [
            ("0,1,x\n", "\"x\" is not a tile number"),
            ("0,1,25\n", "tile 25 is not on a 5x5 board"),
            ("0,1,1\n", "tile 1 is listed twice"),
            ("0,0,1\n", "the blank (0) is listed twice"),
            ("0\n", "at least one tile"),
            ("# nothing\n\n", "names no pattern"),
            (
                "0,1,2\n0,3\n0,2,4\n",
                "tile 2 is also in the pattern 0,1,2 of line 1",
            ),
        ] {
            let e = Catalogue::parse(text, five(), "t.cat")
                .unwrap_err()
                .to_string();
            assert!(e.contains(words), "{text:?}: {e}");
            assert!(e.starts_with("t.cat, line "), "{e}");
        }
    }

    #[test]
    fn symmetric_patterns_share_one_table() {
        // Korf & Felner's partition and its transposition: 8 patterns, 4 tables (the
        // transposition maps each pattern onto one of the other partition).
        let text = "0,1,2,5,6,7,12\n0,3,4,8,9,13,14\n0,10,11,15,16,20,21\n0,17,18,19,22,23,24\n\n\
                    0,1,5,6,10,11,12\n0,15,16,20,21,17,22\n0,2,3,4,7,8,9\n0,13,14,18,19,23,24\n";
        let c = Catalogue::parse(text, five(), "kf.cat").unwrap();
        let distinct = c.distinct_tables(Goal::BlankFirst);
        assert_eq!(distinct.iter().map(|d| d.uses.len()).sum::<usize>(), 8);
        for d in &distinct {
            for u in &d.uses {
                let table = c.sets()[u.set].iter().find(|t| t.line == u.line).unwrap();
                let mut image = u
                    .symmetry
                    .image(five(), Goal::BlankFirst, &d.tiles)
                    .unwrap();
                image.sort_unstable();
                let mut own = table.pattern.tiles().to_vec();
                own.sort_unstable();
                assert_eq!(image, own);
                assert!(
                    u.symmetry
                        .serves(five(), Goal::BlankFirst, &d.tiles, d.rule)
                );
            }
        }
        assert!(distinct.len() < 8, "{distinct:?}");
    }

    /// `small-t` (data/small-t.cat): its 56 patterns need few distinct tables. Prints each
    /// with its entries and its file's payload in 1-bit and in bytes (`cargo test -p
    /// tilepdb-common --lib small_t -- --nocapture`).
    #[test]
    fn small_t_needs_few_distinct_tables() {
        let text = include_str!("../../data/small-t.cat");
        let c = Catalogue::parse(text, five(), "small-t.cat").unwrap();
        assert_eq!(c.sets().len(), 14);
        assert_eq!(c.tables().count(), 56);
        let distinct = c.distinct_tables(Goal::BlankFirst);
        let (mut bits, mut bytes) = (0u64, 0u64);
        for d in &distinct {
            let pattern = Pattern::new(five(), d.tiles.clone()).unwrap();
            let space =
                crate::space::StateSpace::new(five(), Goal::BlankFirst, pattern, d.rule).unwrap();
            let entries = space.entries();
            bits += entries.div_ceil(8);
            bytes += entries;
            let uses: Vec<String> = d
                .uses
                .iter()
                .map(|u| format!("set {} line {} ({})", u.set + 1, u.line, u.symmetry))
                .collect();
            println!(
                "{} {:?}: {entries} entries, 1-bit {} B, byte {entries} B; serves {}",
                d.rule,
                d.tiles,
                entries.div_ceil(8),
                uses.join(", ")
            );
        }
        println!(
            "{} distinct tables for 56 patterns: 1-bit {bits} B, byte {bytes} B",
            distinct.len()
        );
        assert_eq!(distinct.iter().map(|d| d.uses.len()).sum::<usize>(), 56);
        assert!(distinct.len() < 28, "{}", distinct.len());
    }

    /// The solver benchmark's catalogues in `docs/catalogues/` (the 24-puzzle's and the
    /// 15-puzzle's): each set is a partition of the board's tiles; small-t with the 7-7-7-3
    /// partition needs small-t's 11 tables and 4 more, and the catalogue with 7-7-6-4
    /// partitions 14 tables, each in 1-bit files of at most 2 GB.
    #[test]
    fn the_benchmarks_catalogues_are_partitions() {
        let four: Board = "4x4".parse().unwrap();
        for (text, board, name) in [
            (
                include_str!("../../docs/catalogues/kf-t.cat"),
                five(),
                "kf-t",
            ),
            (
                include_str!("../../docs/catalogues/small-t-7-6-6-5.cat"),
                five(),
                "7-6-6-5",
            ),
            (
                include_str!("../../docs/catalogues/small-t-7-7-7-3.cat"),
                five(),
                "7-7-7-3",
            ),
            (
                include_str!("../../docs/catalogues/small-t-7-7-6-4.cat"),
                five(),
                "7-7-6-4",
            ),
            (
                include_str!("../../docs/catalogues/15-6-6-3-t.cat"),
                four,
                "15-6-6-3-t",
            ),
            (
                include_str!("../../docs/catalogues/15-6-6-3-5-5-5-t.cat"),
                four,
                "15-mixed",
            ),
        ] {
            let c = Catalogue::parse(text, board, name).unwrap();
            for set in c.sets() {
                let mut tiles: Vec<u8> = set
                    .iter()
                    .flat_map(|t| t.pattern.tiles().to_vec())
                    .collect();
                tiles.sort_unstable();
                let all: Vec<u8> = (1..board.cells())
                    .map(|t| u8::try_from(t).unwrap())
                    .collect();
                assert_eq!(tiles, all, "{name}");
            }
        }
        for (text, name, tables) in [
            (
                include_str!("../../docs/catalogues/small-t-7-7-7-3.cat"),
                "7-7-7-3",
                15,
            ),
            (
                include_str!("../../docs/catalogues/small-t-7-7-6-4.cat"),
                "7-7-6-4",
                14,
            ),
        ] {
            let c = Catalogue::parse(text, five(), name).unwrap();
            assert_eq!(c.sets().len(), 16, "{name}");
            let distinct = c.distinct_tables(Goal::BlankFirst);
            assert_eq!(distinct.len(), tables, "{name}");
            let bytes: u64 = distinct
                .iter()
                .map(|d| {
                    let pattern = Pattern::new(five(), d.tiles.clone()).unwrap();
                    crate::space::StateSpace::new(five(), Goal::BlankFirst, pattern, d.rule)
                        .unwrap()
                        .entries()
                        .div_ceil(8)
                })
                .sum();
            assert!(bytes < 2_000_000_000, "{name}: {bytes}");
        }
    }
}
