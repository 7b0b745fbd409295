//! Learning the machine: the breadth-first search of blank-move strings (see the parent
//! module for what it forbids and why that is exact).

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use tilepdb_common::Board;

use super::{Direction, MovePruning};
use crate::error::{Error, Result};

/// The shortest depth learned: strings of two moves, the undo rule.
pub const MIN_DEPTH: u8 = 2;
/// The longest depth learned (strings are packed two bits a move in a `u64`).
pub const MAX_DEPTH: u8 = 31;

/// What the search found at one string length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LengthCounts {
    /// The length of the strings.
    pub length: u8,
    /// Strings kept (legal somewhere, holding no forbidden string): extended at the next length.
    pub kept: u64,
    /// Minimal forbidden strings of this length.
    pub forbidden: u64,
}

/// A learned machine and the search's counts per length.
#[derive(Clone, Debug)]
pub struct Learned {
    /// The machine.
    pub machine: MovePruning,
    /// Per string length, 1 to the depth.
    pub per_length: Vec<LengthCounts>,
}

/// A cell as its (column, row) offset from the blank's start, at most 31 away.
type Offset = (i32, i32);

/// Where a string's blank goes and what it moves, relative to the blank's start: the cells
/// whose content changed, each with the cell the content came from, sorted; and the start
/// cells of `board` it is legal from. `None` when it is legal from none.
fn effect(board: Board, moves: &[Direction]) -> Option<(Vec<u8>, u32)> {
    let mut changed: Vec<(Offset, Offset)> = Vec::with_capacity(moves.len() + 1);
    let content = |changed: &[(Offset, Offset)], cell: Offset| {
        changed
            .iter()
            .find(|(c, _)| *c == cell)
            .map_or(cell, |&(_, from)| from)
    };
    let set = |changed: &mut Vec<(Offset, Offset)>, cell, from| match changed
        .iter_mut()
        .find(|(c, _)| *c == cell)
    {
        Some(entry) => entry.1 = from,
        None => changed.push((cell, from)),
    };
    let (mut x, mut y) = (0i32, 0i32);
    let (mut min_x, mut max_x, mut min_y, mut max_y) = (0, 0, 0, 0);
    for &m in moves {
        let (dx, dy) = m.offset();
        let (nx, ny) = (x + dx, y + dy);
        let blank = content(&changed, (x, y));
        let tile = content(&changed, (nx, ny));
        set(&mut changed, (x, y), tile);
        set(&mut changed, (nx, ny), blank);
        (x, y) = (nx, ny);
        (min_x, max_x) = (min_x.min(x), max_x.max(x));
        (min_y, max_y) = (min_y.min(y), max_y.max(y));
    }
    let (w, h) = (
        i32::try_from(board.width()).ok()?,
        i32::try_from(board.height()).ok()?,
    );
    let mut legal = 0u32;
    for cell in 0..board.cells() {
        let (row, col) = board.row_col(cell);
        let (row, col) = (i32::try_from(row).ok()?, i32::try_from(col).ok()?);
        if col + min_x >= 0 && col + max_x < w && row + min_y >= 0 && row + max_y < h {
            legal |= 1 << cell;
        }
    }
    if legal == 0 {
        return None;
    }
    changed.retain(|(c, from)| c != from);
    changed.sort_unstable();
    let byte = |v: i32| u8::try_from(v + 64).unwrap_or(0);
    let key = changed
        .iter()
        .flat_map(|&((cx, cy), (fx, fy))| [byte(cx), byte(cy), byte(fx), byte(fy)])
        .collect();
    Some((key, legal))
}

/// The moves of the string of `length` packed in `packed` (first move most significant).
fn unpack(packed: u64, length: u8) -> Vec<Direction> {
    (0..length)
        .rev()
        .map(|i| Direction::ALL[((packed >> (2 * i)) & 3) as usize])
        .collect()
}

/// Learns the machine of `board` from the strings of at most `depth` moves
/// ([`MIN_DEPTH`]..=[`MAX_DEPTH`]).
///
/// ```
/// use tilepdb_common::Board;
/// use tilepdb_solver::move_pruning::learn;
/// let learned = learn("3x3".parse::<Board>().unwrap(), 6).unwrap();
/// assert!(learned.machine.forbidden_strings() > 4); // more than the undo rule's four
/// ```
pub fn learn(board: Board, depth: u8) -> Result<Learned> {
    if !(MIN_DEPTH..=MAX_DEPTH).contains(&depth) {
        return Err(Error::Unsupported(format!(
            "a move-pruning machine is learned to a depth from {MIN_DEPTH} to {MAX_DEPTH}, not {depth}"
        )));
    }
    // Per effect: the start cells from which a smaller string has it.
    let mut covered: HashMap<Vec<u8>, u32> = HashMap::new();
    covered.insert(Vec::new(), board.all_cells());
    let mut level: Vec<u64> = vec![0];
    let mut forbidden: Vec<Vec<Direction>> = Vec::new();
    let mut per_length = Vec::with_capacity(usize::from(depth));
    for length in 1..=depth {
        let kept_before: HashSet<u64> = level.iter().copied().collect();
        let suffix_mask = (1u64 << (2 * (length - 1))) - 1;
        let mut next = Vec::with_capacity(level.len() * 3);
        let mut forbidden_here = 0u64;
        for &prefix in &level {
            for m in 0..4u64 {
                let packed = prefix << 2 | m;
                if !kept_before.contains(&(packed & suffix_mask)) {
                    continue;
                }
                let moves = unpack(packed, length);
                let Some((key, legal)) = effect(board, &moves) else {
                    continue;
                };
                let cells = covered.entry(key).or_insert(0);
                if legal & !*cells == 0 {
                    forbidden.push(moves);
                    forbidden_here += 1;
                } else {
                    *cells |= legal;
                    next.push(packed);
                }
            }
        }
        per_length.push(LengthCounts {
            length,
            kept: next.len() as u64,
            forbidden: forbidden_here,
        });
        level = next;
    }
    Ok(Learned {
        machine: MovePruning::from_forbidden(board, depth, &forbidden),
        per_length,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{Down, Left, Right, Up};

    #[test]
    fn a_move_and_its_inverse_have_no_effect() {
        let board: Board = "3x3".parse().unwrap();
        let (key, legal) = effect(board, &[Up, Down]).unwrap();
        assert!(key.is_empty());
        assert_eq!(legal, 0b111_111_000); // the blank must start below the top row
    }

    #[test]
    fn strings_too_wide_for_the_board_are_illegal_everywhere() {
        let board: Board = "3x3".parse().unwrap();
        assert!(effect(board, &[Right, Right, Right]).is_none());
        assert!(effect(board, &[Left, Left]).is_some());
    }

    #[test]
    fn going_round_a_block_twelve_times_is_the_identity() {
        // Around a 2x2 block a cycle of four moves turns three tiles; three cycles undo it,
        // so a 12-move string has the empty string's effect.
        let board: Board = "3x3".parse().unwrap();
        let cycle = [Up, Right, Down, Left];
        let moves: Vec<_> = cycle.iter().cycle().take(12).copied().collect();
        assert!(effect(board, &moves).unwrap().0.is_empty());
        assert!(!effect(board, &cycle).unwrap().0.is_empty());
    }

    #[test]
    fn depth_out_of_range_is_refused() {
        let board: Board = "3x3".parse().unwrap();
        assert!(learn(board, 1).is_err());
        assert!(learn(board, 32).is_err());
    }

    #[test]
    fn the_4x4_depth_4_machine_forbids_no_four_move_cycle() {
        // No string of 3 or 4 moves other than those with an undo is a duplicate: the
        // shortest non-trivial duplicates (two ways round a block) are 6 moves long.
        let board: Board = "4x4".parse().unwrap();
        let learned = learn(board, 4).unwrap();
        assert_eq!(learned.machine.forbidden_strings(), 4);
        let six = learn(board, 6).unwrap();
        assert!(six.machine.forbidden_strings() > 4);
    }
}
