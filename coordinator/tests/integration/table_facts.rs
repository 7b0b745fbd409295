//! The facts of DESIGN section 4 hold for every entry of small tables, and the checks that
//! verify them can fail.
//!
//! * On tables of 2x4, 3x3, 3x4 and 4x4 boards (patterns of up to 7 tiles where quick), for
//!   every blank rule and both goals: `check_lower_bound` (value >= Manhattan distance, even
//!   difference), `check_consistent` for aware and ignored tables, and
//!   `check_minimized_against_aware` (a minimized value is the least aware value of its
//!   placement).
//! * Minimized tables are NOT consistent: on the 4x4 table of tiles {1..6}, an independent
//!   scan (own placement enumeration, own rank, own neighbours) finds legal moves across
//!   which the value changes by more than 1, so nothing may assume consistency of them.
//! * Each check rejects a table with one corrupted entry (so passing means something).

#![expect(
    clippy::cast_possible_truncation,
    reason = "the oracle indexes tables by u64 ranks, which index arrays in memory, and moves cells (below 25) between u8, u32 and usize"
)]

use crate::support::{Grid, falling};
use tilepdb_common::table::UNREACHED;
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};
use tilepdb_proof::facts::{check_consistent, check_lower_bound, check_minimized_against_aware};

fn space(board: &str, goal: Goal, tiles: &[u8], rule: BlankRule) -> StateSpace {
    let board: Board = board.parse().unwrap();
    StateSpace::new(
        board,
        goal,
        Pattern::new(board, tiles.to_vec()).unwrap(),
        rule,
    )
    .unwrap()
}

fn build(space: &StateSpace) -> Vec<u8> {
    let options = BuildOptions {
        threads: 2,
        ..BuildOptions::default()
    };
    build_table(space, &options, &())
        .unwrap()
        .values
        .into_bytes()
        .expect("a byte per entry")
}

/// Builds the three tables of a pattern for both goals and runs every check that applies.
fn check_all_facts(board: &str, tiles: &[u8]) {
    for goal in [Goal::BlankFirst, Goal::BlankLast] {
        let what = format!("{board} {goal} {tiles:?}");
        let minimized = space(board, goal, tiles, BlankRule::Minimized);
        let aware = space(board, goal, tiles, BlankRule::Aware);
        let ignored = space(board, goal, tiles, BlankRule::Ignored);
        let (min_values, aware_values, ignored_values) =
            (build(&minimized), build(&aware), build(&ignored));

        for (space, values) in [
            (&minimized, &min_values),
            (&aware, &aware_values),
            (&ignored, &ignored_values),
        ] {
            check_lower_bound(space, values)
                .unwrap_or_else(|e| panic!("{what} {}: {e}", space.rule()));
        }
        check_consistent(&aware, &aware_values).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_consistent(&ignored, &ignored_values).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_minimized_against_aware(&minimized, &min_values, &aware_values)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        // The checker itself refuses to treat a minimized table as consistent.
        assert!(check_consistent(&minimized, &min_values).is_err());
        // Weaker abstraction, weaker values: ignored <= minimized <= every aware value.
        let slots = aware.slots() as usize;
        for rank in 0..minimized.placements() as usize {
            let (i, m) = (ignored_values[rank], min_values[rank]);
            assert!(
                i <= m || m == UNREACHED,
                "{what}: ignored {i} > minimized {m}"
            );
        }
        assert_eq!(aware_values.len(), min_values.len() * slots);
    }
}

#[test]
fn facts_hold_on_2x4() {
    check_all_facts("2x4", &[1, 2, 3, 4, 5]);
    check_all_facts("2x4", &[7, 3, 5, 1]);
    // Every tile: the exact distance; half the placements are unreachable by parity.
    check_all_facts("2x4", &[1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn facts_hold_on_3x3() {
    check_all_facts("3x3", &[1, 2, 3, 4, 5]);
    check_all_facts("3x3", &[8, 6, 4, 2, 7, 5]);
    check_all_facts("3x3", &[1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn facts_hold_on_3x4() {
    check_all_facts("3x4", &[1, 2, 3, 4, 5, 6]);
    check_all_facts("3x4", &[11, 9, 2, 6]);
}

#[test]
fn facts_hold_on_4x4() {
    check_all_facts("4x4", &[1, 2, 3, 4, 5]);
    check_all_facts("4x4", &[15, 10, 12, 3]);
}

/// Calls `f` with every placement of `k` tiles on `n` cells (own enumeration, no allocation).
fn for_each_placement(n: usize, k: usize, f: &mut impl FnMut(&[u8], u32)) {
    fn go(n: usize, k: usize, cells: &mut Vec<u8>, used: u32, f: &mut impl FnMut(&[u8], u32)) {
        if cells.len() == k {
            f(cells, used);
            return;
        }
        for c in 0..n as u8 {
            if used & (1 << c) == 0 {
                cells.push(c);
                go(n, k, cells, used | 1 << c, f);
                cells.pop();
            }
        }
    }
    go(n, k, &mut Vec::with_capacity(k), 0, f);
}

/// The rank of DESIGN section 3 with a bitmask of the cells placed so far: `d_i` counts the
/// cells below `p_i` that are not yet placed.
fn fast_rank(placement: &[u8], weights: &[u64]) -> u64 {
    let mut used = 0u32;
    let mut rank = 0;
    for (&cell, &weight) in placement.iter().zip(weights) {
        let taken_below = u64::from((used & ((1u32 << cell) - 1)).count_ones());
        rank += (u64::from(cell) - taken_below) * weight;
        used |= 1 << cell;
    }
    rank
}

#[test]
fn minimized_tables_are_not_consistent() {
    let (board, tiles) = ("4x4", [1u8, 2, 3, 4, 5, 6]);
    let space = space(board, Goal::BlankFirst, &tiles, BlankRule::Minimized);
    let values = build(&space);
    let grid = Grid::new(4, 4);
    let (n, k) = (grid.cells(), tiles.len());
    let weights: Vec<u64> = (0..k)
        .map(|i| falling((n - 1 - i) as u64, (k - 1 - i) as u64))
        .collect();
    let neighbours: Vec<Vec<usize>> = (0..n).map(|c| grid.neighbours(c)).collect();

    // Every legal move of a pattern tile: the blank is on a free cell next to the tile, the
    // tile slides onto it. Count the moves across which the value changes by more than one.
    let (mut moves, mut jumps, mut largest, mut even_changes) = (0u64, 0u64, 0u8, 0u64);
    let mut example = None;
    let mut moved = vec![0u8; k];
    for_each_placement(n, k, &mut |placement, used| {
        let h = values[fast_rank(placement, &weights) as usize];
        moved.copy_from_slice(placement);
        for (i, &from) in placement.iter().enumerate() {
            for &blank in &neighbours[from as usize] {
                if used & (1 << blank) != 0 {
                    continue;
                }
                moved[i] = blank as u8;
                let child = values[fast_rank(&moved, &weights) as usize];
                moves += 1;
                let change = h.abs_diff(child);
                // Values keep the parity of the Manhattan distance, which a tile move flips.
                if change.is_multiple_of(2) {
                    even_changes += 1;
                }
                if change > 1 {
                    jumps += 1;
                    if change > largest {
                        largest = change;
                        example = Some((placement.to_vec(), tiles[i], blank, h, child));
                    }
                }
            }
            moved[i] = from;
        }
    });
    println!(
        "{board} minimized {tiles:?}: {jumps} of {moves} tile moves ({:.2} %) change the value \
         by more than 1; the largest change is {largest}, e.g. {example:?} \
         (placement, tile, blank cell, value, value after the move)",
        100.0 * jumps as f64 / moves as f64
    );
    assert_eq!(
        moves as usize,
        count_tile_moves(grid, k),
        "every legal move was scanned"
    );
    assert_eq!(
        even_changes, 0,
        "every tile move changes a value by an odd amount"
    );
    assert!(
        jumps > 0,
        "a minimized table must have moves that change its value by more than 1"
    );
    // DESIGN section 4: about 2 % of the moves, by up to 7.
    assert!((0.01..0.03).contains(&(jumps as f64 / moves as f64)));
    assert_eq!(largest, 7);
}

/// Legal moves of a pattern tile over all placements: for each tile and each free cell next
/// to it, counted by a formula independent of the scan above.
fn count_tile_moves(grid: Grid, k: usize) -> usize {
    // Ordered pairs of adjacent cells (tile cell, free cell), times the ways to place the
    // other k - 1 tiles on the n - 2 remaining cells, times k (which tile moves).
    let n = grid.cells();
    let adjacent_pairs: usize = (0..n).map(|c| grid.neighbours(c).len()).sum();
    adjacent_pairs * k * falling((n - 2) as u64, (k - 1) as u64) as usize
}

/// The entry (rank) of the first placement whose value satisfies `pred`, with its cells.
fn find_entry(space: &StateSpace, values: &[u8], pred: impl Fn(u8, u32) -> bool) -> (usize, u32) {
    let per_rank = space.entries() / space.placements();
    let mut cells = [0u8; 25];
    for rank in 0..space.placements() {
        space.ranker().unrank(rank, &mut cells);
        let m = space.manhattan(&cells);
        for entry in rank * per_rank..(rank + 1) * per_rank {
            if pred(values[entry as usize], m) {
                return (entry as usize, m);
            }
        }
    }
    panic!("no entry of {} matches", space.pattern());
}

#[test]
fn lower_bound_check_rejects_a_corrupt_entry() {
    for rule in [BlankRule::Minimized, BlankRule::Aware, BlankRule::Ignored] {
        let space = space("3x3", Goal::BlankFirst, &[1, 2, 3, 4], rule);
        let values = build(&space);
        check_lower_bound(&space, &values).unwrap();

        // Odd difference with the Manhattan distance.
        let (entry, _) = find_entry(&space, &values, |h, _| h != UNREACHED && h > 0);
        let mut bad = values.clone();
        bad[entry] += 1;
        let err = check_lower_bound(&space, &bad).unwrap_err().to_string();
        assert!(err.contains(&format!("entry {entry} ")), "{rule}: {err}");

        // Below the Manhattan distance (same parity).
        let (entry, m) = find_entry(&space, &values, |h, m| {
            h != UNREACHED && m >= 2 && u32::from(h) >= m
        });
        let mut bad = values.clone();
        bad[entry] = m as u8 - 2;
        let err = check_lower_bound(&space, &bad).unwrap_err().to_string();
        assert!(err.contains("Manhattan distance"), "{rule}: {err}");

        // A reached entry lost: the count of unreached entries is wrong.
        let mut bad = values.clone();
        bad[entry] = UNREACHED;
        let err = check_lower_bound(&space, &bad).unwrap_err().to_string();
        assert!(
            err.contains("1 entries unreached, expected 0"),
            "{rule}: {err}"
        );

        // A table of the wrong size.
        assert!(check_lower_bound(&space, &values[1..]).is_err());
    }
}

#[test]
fn consistency_check_rejects_a_corrupt_entry() {
    for rule in [BlankRule::Aware, BlankRule::Ignored] {
        for tiles in [&[1u8, 2, 3, 4][..], &[5, 8, 7]] {
            let space = space("3x3", Goal::BlankLast, tiles, rule);
            let values = build(&space);
            check_consistent(&space, &values).unwrap();
            // Raising a non-goal value by 2 keeps it a lower bound of the right parity, but
            // its BFS parent (value h - 1, one legal move away) is now 3 away.
            let (entry, _) = find_entry(&space, &values, |h, _| h != UNREACHED && h > 0);
            let mut bad = values.clone();
            bad[entry] += 2;
            check_lower_bound(&space, &bad).unwrap();
            let err = check_consistent(&space, &bad).unwrap_err().to_string();
            assert!(err.contains("gives"), "{rule} {tiles:?}: {err}");
        }
    }
}

/// Aware entries whose blank cell has no pattern tile next to it: only blank moves lead there.
fn aware_entries_away_from_tiles(space: &StateSpace) -> Vec<usize> {
    let board = space.board();
    let slots = space.slots();
    let mut cells = [0u8; 25];
    let mut out = Vec::new();
    for rank in 0..space.placements() {
        let occupied = space.ranker().unrank(rank, &mut cells);
        let free = board.all_cells() & !occupied;
        let free_cells = (0..board.cells()).filter(|&c| free & (1 << c) != 0);
        for (slot, cell) in free_cells.enumerate() {
            if board.neighbours(cell) & occupied == 0 {
                out.push((rank * slots) as usize + slot);
            }
        }
    }
    out
}

#[test]
fn consistency_check_of_aware_tables_covers_blank_moves() {
    // A blank move is a legal move too: an aware value that differs by 2 from the value of
    // the cell next to it (same region) breaks consistency, even where no pattern tile is
    // next to the blank.
    let space = space("3x3", Goal::BlankFirst, &[3, 4], BlankRule::Aware);
    let values = build(&space);
    check_consistent(&space, &values).unwrap();
    let entries = aware_entries_away_from_tiles(&space);
    let entry = *entries
        .iter()
        .find(|&&e| values[e] != UNREACHED && values[e] > 0)
        .expect("a placement with a free cell away from the tiles");
    let mut bad = values.clone();
    bad[entry] += 2;
    check_lower_bound(&space, &bad).unwrap();
    assert!(
        check_consistent(&space, &bad).is_err(),
        "entry {entry} raised by 2 inside its region must be caught"
    );
}

#[test]
fn minimized_against_aware_check_rejects_a_corrupt_entry() {
    let minimized = space("3x4", Goal::BlankFirst, &[1, 2, 3, 4], BlankRule::Minimized);
    let aware = space("3x4", Goal::BlankFirst, &[1, 2, 3, 4], BlankRule::Aware);
    let (min_values, aware_values) = (build(&minimized), build(&aware));
    check_minimized_against_aware(&minimized, &min_values, &aware_values).unwrap();

    // A minimized value raised by 2 (still a lower bound of the right parity) no longer is
    // the least aware value.
    let (rank, _) = find_entry(&minimized, &min_values, |h, m| u32::from(h) == m + 2);
    let mut bad = min_values.clone();
    bad[rank] += 2;
    check_lower_bound(&minimized, &bad).unwrap();
    let err = check_minimized_against_aware(&minimized, &bad, &aware_values)
        .unwrap_err()
        .to_string();
    assert!(err.contains("least aware value"), "{err}");

    // Lowering one aware value below the minimized one is caught as well.
    let slots = aware.slots() as usize;
    let mut bad = aware_values.clone();
    let least = (0..slots)
        .min_by_key(|&j| aware_values[rank * slots + j])
        .unwrap();
    bad[rank * slots + least] -= 2;
    assert!(check_minimized_against_aware(&minimized, &min_values, &bad).is_err());
}
