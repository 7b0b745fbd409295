use super::*;
use crate::facts::check_consistent;
use tilepdb_common::{Board, Goal, Pattern};
use tilepdb_coordinator::build::{BuildOptions, build_table};

/// The space of `tiles` on `board` and its table, built, one byte per entry.
pub(crate) fn table(
    board: &str,
    tiles: &[u8],
    goal: Goal,
    rule: BlankRule,
) -> (StateSpace, Vec<u8>) {
    let board: Board = board.parse().unwrap();
    let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
    let space = StateSpace::new(board, goal, pattern, rule).unwrap();
    let values = build_table(&space, &BuildOptions::default(), &())
        .unwrap()
        .values
        .into_bytes()
        .expect("a byte per entry");
    (space, values)
}

#[test]
fn built_tables_pass() {
    for goal in [Goal::BlankFirst, Goal::BlankLast] {
        for rule in [BlankRule::Aware, BlankRule::ZeroAware, BlankRule::Ignored] {
            for (board, tiles) in [
                ("3x3", &[1u8, 2, 3, 4][..]),
                ("3x4", &[1, 5, 6]),
                ("2x4", &[1, 2, 3, 4, 5, 6, 7]),
            ] {
                let (space, values) = table(board, tiles, goal, rule);
                check_distances(&space, &values).unwrap();
            }
        }
    }
}

#[test]
fn every_single_wrong_entry_is_found() {
    // Every entry of a small table changed by ±2 (parity and the Manhattan bound kept
    // where possible) and to unreached: each is caught.
    for rule in [BlankRule::Aware, BlankRule::ZeroAware, BlankRule::Ignored] {
        let (space, values) = table("3x3", &[1, 2, 3], Goal::BlankFirst, rule);
        for e in 0..values.len() {
            for forged in [
                values[e].wrapping_add(2),
                values[e].wrapping_sub(2),
                UNREACHED,
            ] {
                if forged == values[e] || forged > 250 && forged != UNREACHED {
                    continue;
                }
                let mut bad = values.clone();
                bad[e] = forged;
                assert!(
                    check_distances(&space, &bad).is_err(),
                    "{rule} entry {e}: {} -> {forged} passed",
                    values[e]
                );
            }
        }
    }
}

#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "ranks index the test's values in memory; a cell is below 25"
)]
fn a_lowered_local_maximum_is_consistent_but_not_a_distance() {
    // A state whose neighbours all have h - 1, lowered to h - 2: every move still changes
    // the value by at most one, so consistency accepts it; the Bellman rule does not.
    let (space, values) = table("3x3", &[1, 2, 3, 4], Goal::BlankFirst, BlankRule::Ignored);
    let mut found = false;
    for rank in 0..space.placements() {
        let mut cells = [0u8; MAX_CELLS];
        let occupied = space.ranker().unrank(rank, &mut cells);
        let free = space.board().all_cells() & !occupied;
        let h = values[rank as usize];
        let mut moved = cells;
        let mut all_below = true;
        for i in 0..space.k() {
            let mut t = space.board().neighbours(cells[i] as usize) & free;
            while t != 0 {
                moved[i] = t.trailing_zeros() as u8;
                t &= t - 1;
                all_below &= values[space.ranker().rank(&moved[..space.k()]) as usize] + 1 == h;
            }
            moved[i] = cells[i];
        }
        if all_below && h >= 2 && rank != space.goal_rank() {
            let mut bad = values.clone();
            bad[rank as usize] = h - 2;
            check_consistent(&space, &bad).unwrap();
            assert!(check_distances(&space, &bad).is_err());
            found = true;
            break;
        }
    }
    assert!(found, "the table has a local maximum");
}

#[test]
fn minimized_is_refused_with_the_reason() {
    let (space, values) = table("3x3", &[1, 2], Goal::BlankFirst, BlankRule::Minimized);
    let e = check_distances(&space, &values).unwrap_err().to_string();
    assert!(e.contains("not a distance function"), "{e}");
}

#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the minimum with a byte value fits in a byte"
)]
fn saturated_ignored_values_are_proven_and_every_change_is_found() {
    // Ignored tables saturated low (at m + 2 and m + 4), as nibbles saturate at m + 30:
    // they pass; each entry raised or lowered by two within what the saturation can
    // store fails.
    for (board, tiles) in [("3x3", &[1u8, 2, 3][..]), ("3x4", &[1, 2, 5])] {
        let (space, values) = table(board, tiles, Goal::BlankFirst, BlankRule::Ignored);
        let mut cells = [0u8; MAX_CELLS];
        let manhattan: Vec<u32> = (0..space.placements())
            .map(|r| {
                space.ranker().unrank(r, &mut cells);
                space.manhattan(&cells[..space.k()])
            })
            .collect();
        for saturation in [2u32, 4] {
            let top = |e: usize| manhattan[e] + saturation;
            let stored: Vec<u8> = (0..values.len())
                .map(|e| u32::from(values[e]).min(top(e)) as u8)
                .collect();
            check_ignored_saturated(&space, &stored, saturation).unwrap();
            for e in 0..stored.len() {
                for changed in [stored[e].wrapping_add(2), stored[e].wrapping_sub(2)] {
                    if u32::from(changed) > top(e) || u32::from(changed) < manhattan[e] {
                        continue;
                    }
                    let mut bad = stored.clone();
                    bad[e] = changed;
                    assert!(
                        check_ignored_saturated(&space, &bad, saturation).is_err(),
                        "{board} {tiles:?} saturation {saturation}: entry {e} {} -> {changed}",
                        stored[e]
                    );
                }
            }
        }
    }
}
