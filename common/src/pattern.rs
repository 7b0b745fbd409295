//! Patterns (ordered lists of tiles) and partitions (disjoint patterns), with the registry of
//! the partitions from the literature.
//!
//! ```
//! use tilepdb_common::{Board, Partition};
//! let board: Board = "3x3".parse().unwrap();
//! let p = Partition::custom(board, &["1,2,3,4".to_string(), "5,6,7,8".to_string()]).unwrap();
//! assert_eq!(p.patterns()[1].tiles(), &[5, 6, 7, 8]);
//! assert!(Partition::custom(board, &["1,2".to_string(), "2,3".to_string()]).is_err());
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::error::{Error, Result};

/// An ordered list of distinct tiles (never the blank) of one board.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pattern {
    tiles: Vec<u8>,
}

impl Pattern {
    /// A pattern of `board`; tiles must be distinct, in `1..n`, and leave at least one cell free.
    pub fn new(board: Board, tiles: Vec<u8>) -> Result<Pattern> {
        let n = board.cells();
        let err = |reason: String| Error::Pattern {
            pattern: format_tiles(&tiles),
            reason,
        };
        if tiles.is_empty() {
            return Err(err("a pattern needs at least one tile".into()));
        }
        if tiles.len() >= n {
            return Err(err(format!("a {board} board has only {} tiles", n - 1)));
        }
        let mut seen = 0u32;
        for &t in &tiles {
            if t == 0 {
                return Err(err("tile 0 is the blank, not a pattern tile".into()));
            }
            if t as usize >= n {
                return Err(err(format!(
                    "tile {t} is not on a {board} board (tiles 1..{})",
                    n - 1
                )));
            }
            if seen & (1 << t) != 0 {
                return Err(err(format!("tile {t} is listed twice")));
            }
            seen |= 1 << t;
        }
        Ok(Pattern { tiles })
    }

    /// Parses `1,2,3` (commas or spaces).
    pub fn parse(board: Board, text: &str) -> Result<Pattern> {
        let tiles = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<u8>().map_err(|_| Error::Pattern {
                    pattern: text.to_string(),
                    reason: format!("{s:?} is not a tile number"),
                })
            })
            .collect::<Result<Vec<u8>>>()?;
        Pattern::new(board, tiles)
    }

    /// The tiles, in order (the first is the rank's most significant digit).
    pub fn tiles(&self) -> &[u8] {
        &self.tiles
    }

    /// Number of tiles, k.
    pub fn len(&self) -> usize {
        self.tiles.len()
    }

    /// Whether the pattern has no tile.
    pub fn is_empty(&self) -> bool {
        self.tiles.is_empty()
    }

    /// The bitmask of the tiles (bit t for tile t).
    pub fn tile_mask(&self) -> u32 {
        self.tiles.iter().fold(0, |m, &t| m | 1 << t)
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_tiles(&self.tiles))
    }
}

fn format_tiles(tiles: &[u8]) -> String {
    tiles
        .iter()
        .map(std::string::ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Disjoint patterns of one board whose tables add up to an admissible heuristic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    name: String,
    board: Board,
    patterns: Vec<Pattern>,
}

/// A partition of the registry: name, board, tiles, where it comes from.
pub struct KnownPartition {
    /// The name the command line and the set directories use.
    pub name: &'static str,
    /// The board's name, as [`Board`] parses it.
    pub board: &'static str,
    /// The tiles of each pattern.
    pub patterns: &'static [&'static [u8]],
    /// Where the partition comes from (paper or program).
    pub source: &'static str,
}

/// The partitions known by name (tiles for the blank-first goal; valid for either goal).
pub const KNOWN_PARTITIONS: &[KnownPartition] = &[
    KnownPartition {
        name: "8:8",
        board: "3x3",
        patterns: &[&[1, 2, 3, 4, 5, 6, 7, 8]],
        source: "every tile: the exact distance",
    },
    KnownPartition {
        name: "8:4-4",
        board: "3x3",
        patterns: &[&[1, 2, 3, 4], &[5, 6, 7, 8]],
        source: "two halves of the 8-puzzle",
    },
    KnownPartition {
        name: "15:7-8",
        board: "4x4",
        patterns: &[&[1, 2, 3, 4, 5, 6, 7], &[8, 9, 10, 11, 12, 13, 14, 15]],
        source: "Korf & Felner 2002",
    },
    KnownPartition {
        name: "15:6-6-3",
        board: "4x4",
        patterns: &[&[1, 4, 5, 8, 9, 12], &[2, 3, 6, 7, 10, 11], &[13, 14, 15]],
        source: "compact blocks: the two left columns, the two right columns, the bottom row",
    },
    KnownPartition {
        name: "15:5-5-5",
        board: "4x4",
        patterns: &[&[1, 2, 3, 6, 7], &[4, 5, 8, 9, 12], &[10, 11, 13, 14, 15]],
        source: "compact blocks: top right, left, bottom right",
    },
    KnownPartition {
        name: "15:4-4-4-3",
        board: "4x4",
        patterns: &[
            &[1, 2, 3, 4],
            &[5, 6, 7, 8],
            &[9, 10, 11, 12],
            &[13, 14, 15],
        ],
        source: "the textbook partition",
    },
    KnownPartition {
        name: "24:6-6-6-6",
        board: "5x5",
        patterns: &[
            &[1, 2, 5, 6, 7, 12],
            &[3, 4, 8, 9, 13, 14],
            &[10, 11, 15, 16, 20, 21],
            &[17, 18, 19, 22, 23, 24],
        ],
        source: "Korf & Felner 2002",
    },
];

impl Partition {
    /// Checks that the patterns are disjoint and belong to `board`.
    pub fn new(name: impl Into<String>, board: Board, patterns: Vec<Pattern>) -> Result<Partition> {
        let name = name.into();
        if patterns.is_empty() {
            return Err(Error::Partition(format!("{name}: no patterns")));
        }
        let mut seen = 0u32;
        for p in &patterns {
            Pattern::new(board, p.tiles.clone())?;
            let overlap = seen & p.tile_mask();
            if overlap != 0 {
                return Err(Error::Partition(format!(
                    "{name}: tile {} is in more than one pattern; the patterns of an additive partition must be disjoint",
                    overlap.trailing_zeros()
                )));
            }
            seen |= p.tile_mask();
        }
        Ok(Partition {
            name,
            board,
            patterns,
        })
    }

    /// A partition from the registry, e.g. `15:7-8`.
    pub fn named(name: &str) -> Result<Partition> {
        let known = KNOWN_PARTITIONS
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| Error::UnknownPartition {
                name: name.to_string(),
                known: KNOWN_PARTITIONS
                    .iter()
                    .map(|k| k.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let board: Board = known.board.parse()?;
        let patterns = known
            .patterns
            .iter()
            .map(|tiles| Pattern::new(board, tiles.to_vec()))
            .collect::<Result<Vec<_>>>()?;
        Partition::new(known.name, board, patterns)
    }

    /// A partition from the registry by its name (`15:6-6-3`), or by the part after the colon
    /// (`6-6-3`) when one known partition has it (on `board`, if given).
    ///
    /// ```
    /// use tilepdb_common::Partition;
    /// let p = Partition::named_on("6-6-3", Some("15".parse().unwrap())).unwrap();
    /// assert_eq!(p.name(), "15:6-6-3");
    /// assert!(Partition::named_on("6-6-3", Some("24".parse().unwrap())).is_err());
    /// ```
    pub fn named_on(name: &str, board: Option<Board>) -> Result<Partition> {
        if name.contains(':') {
            return Partition::named(name);
        }
        let matches: Vec<&KnownPartition> = KNOWN_PARTITIONS
            .iter()
            .filter(|k| {
                k.name
                    .split_once(':')
                    .is_some_and(|(_, short)| short == name)
            })
            .filter(|k| board.is_none_or(|b| k.board.parse::<Board>().is_ok_and(|kb| kb == b)))
            .collect();
        match matches.as_slice() {
            [one] => Partition::named(one.name),
            _ => Partition::named(name),
        }
    }

    /// The default partition of a board: 8 -> 8:8, 15 -> 15:6-6-3, 24 -> 24:6-6-6-6.
    pub fn default_for(board: Board) -> Result<Partition> {
        match (board.width(), board.height()) {
            (3, 3) => Partition::named("8:8"),
            (4, 4) => Partition::named("15:6-6-3"),
            (5, 5) => Partition::named("24:6-6-6-6"),
            _ => Err(Error::Partition(format!(
                "no default partition for {board}"
            ))),
        }
    }

    /// Patterns given on the command line, each `1,2,3`.
    pub fn custom(board: Board, patterns: &[String]) -> Result<Partition> {
        let patterns = patterns
            .iter()
            .map(|p| Pattern::parse(board, p))
            .collect::<Result<Vec<_>>>()?;
        let name = format!(
            "{board}:{}",
            patterns
                .iter()
                .map(|p| p.len().to_string())
                .collect::<Vec<_>>()
                .join("-")
        );
        Partition::new(name, board, patterns)
    }

    /// The partition's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The board the patterns are on.
    pub fn board(&self) -> Board {
        self.board
    }

    /// The patterns, in order.
    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    /// Whether the patterns hold every tile of the board.
    pub fn is_complete(&self) -> bool {
        let all_tiles = self.board.all_cells() & !1;
        self.patterns.iter().fold(0, |m, p| m | p.tile_mask()) == all_tiles
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_valid_and_complete() {
        for k in KNOWN_PARTITIONS {
            let p = Partition::named(k.name).unwrap();
            assert!(p.is_complete(), "{}", k.name);
            assert_eq!(
                k.name.split(':').nth(1).unwrap(),
                p.patterns()
                    .iter()
                    .map(|p| p.len().to_string())
                    .collect::<Vec<_>>()
                    .join("-")
            );
        }
        assert!(
            Partition::named("15:9-6")
                .unwrap_err()
                .to_string()
                .contains("15:7-8")
        );
    }

    #[test]
    fn bad_patterns() {
        let b: Board = "15".parse().unwrap();
        let e = |s: &str| Pattern::parse(b, s).unwrap_err().to_string();
        assert!(e("1,2,16").contains("tile 16 is not on a 4x4 board"));
        assert!(e("1,0").contains("blank"));
        assert!(e("1,1").contains("twice"));
        assert!(e("").contains("at least one"));
        assert!(e("1,a").contains("not a tile number"));
        let err = Partition::custom(b, &["1,2,3".into(), "3,4".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("tile 3 is in more than one pattern"), "{err}");
    }
}
