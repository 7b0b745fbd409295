use super::*;
use crate::bellman::tests::table as built;
use tilepdb_common::Goal;
use tilepdb_common::table::encoding::nibble;

fn prove(space: &StateSpace, payload: &[u8], encoding: Encoding) -> Result<Layers> {
    match space.rule() {
        BlankRule::Minimized => prove_minimized(space, payload, encoding),
        BlankRule::Aware => prove_aware(space, payload, encoding),
        BlankRule::Ignored => prove_ignored(space, payload, encoding),
        BlankRule::ZeroAware => prove_zero_aware(space, payload, encoding),
    }
}

const BOARDS: [(&str, &[u8]); 5] = [
    ("3x3", &[1, 2, 3]),
    ("3x4", &[1, 5, 6, 2]),
    ("4x4", &[1, 2, 5]),
    ("4x4", &[1, 2, 3, 4, 5]),
    ("3x3", &[1, 2, 3, 4, 5, 6, 7, 8]),
];

fn encodings(rule: BlankRule) -> Vec<Encoding> {
    let mut all = vec![
        Encoding::Byte,
        Encoding::Nibble,
        Encoding::min_nibble(4).unwrap(),
    ];
    if matches!(rule, BlankRule::ZeroAware | BlankRule::Ignored) {
        all.extend([Encoding::Mod3, Encoding::OneBit]);
    }
    all
}

#[test]
fn order_ranks_are_the_rankers_ranks() {
    for (board, tiles) in BOARDS {
        let (space, _) = built(board, tiles, Goal::BlankFirst, BlankRule::Minimized);
        let index = space.region_index().unwrap();
        let ranks = OrderRanks::new(&space, &index);
        for c in 0..index.sets() {
            let cells = set_cells(index.set_mask(c));
            for o in 0..index.orders() {
                let placement = index.placement_cells(c, o);
                let want = space.ranker().rank(&placement[..index.k()]);
                assert_eq!(
                    ranks.rank(&cells, o),
                    want,
                    "{board} {tiles:?} set {c} order {o}"
                );
            }
        }
    }
}

#[test]
fn built_tables_pass_with_their_histogram() {
    for rule in [
        BlankRule::ZeroAware,
        BlankRule::Aware,
        BlankRule::Minimized,
        BlankRule::Ignored,
    ] {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            for (board, tiles) in BOARDS {
                let (space, values) = built(board, tiles, goal, rule);
                for encoding in encodings(rule) {
                    let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
                        // 1-bit and nibbles cannot mark the unreached half of a pattern of
                        // every tile.
                        assert_eq!(space.k() + 1, space.board().cells());
                        continue;
                    };
                    let layers = prove(&space, table.payload(), encoding).unwrap();
                    let what = format!("{rule} {board} {tiles:?} {goal:?} {encoding}");
                    assert_eq!(layers.histogram, table.header.histogram, "{what}");
                    assert_eq!(layers.unreached, table.header.unreached, "{what}");
                }
            }
        }
    }
}

/// The payload with the value stored for unit `u` (an entry, or a group of min-nibble)
/// replaced by another one the encoding can hold.
#[expect(
    clippy::cast_possible_truncation,
    reason = "entries index the test's payload in memory"
)]
fn altered(payload: &[u8], encoding: Encoding, u: u64) -> Vec<u8> {
    let mut bad = payload.to_vec();
    match encoding {
        Encoding::Byte => bad[u as usize] = bad[u as usize].wrapping_add(2),
        Encoding::Nibble | Encoding::MinNibble { .. } => {
            let shift = (u & 1) * 4;
            let n = (nibble(payload, u) + 1) & 0x0f;
            let b = &mut bad[(u >> 1) as usize];
            *b = *b & !(0x0f << shift) | n << shift;
        }
        Encoding::OneBit => bad[(u >> 3) as usize] ^= 1 << (u & 7),
        Encoding::Mod3 => {
            let digit = 3u8.pow((u % 5) as u32);
            let b = &mut bad[(u / 5) as usize];
            let d = *b / digit % 3;
            *b = *b - d * digit + (d + 1) % 3 * digit;
        }
    }
    bad
}

#[test]
fn every_single_wrong_entry_is_found() {
    // Each stored value in turn changed (a byte by two, so that it keeps its parity; a
    // nibble, a base-3 digit or a bit to the next value): the proof fails.
    for rule in [
        BlankRule::ZeroAware,
        BlankRule::Aware,
        BlankRule::Minimized,
        BlankRule::Ignored,
    ] {
        // Every stored value of the 3x3 tables, every 11th of the 3x4 ones; every 5th and
        // 37th of the aware ones, which have an entry per free cell.
        let every = if rule == BlankRule::Aware {
            [5, 37]
        } else {
            [1, 11]
        };
        for (board, tiles, step) in [
            ("3x3", &[1u8, 2, 3][..], every[0]),
            ("3x4", &[1, 5, 6], every[1]),
        ] {
            let (space, values) = built(board, tiles, Goal::BlankFirst, rule);
            for encoding in encodings(rule) {
                let table = EncodedTable::new(&space, encoding, &values).unwrap();
                for u in (0..encoding.units(space.entries())).step_by(step) {
                    let bad = altered(table.payload(), encoding, u);
                    assert!(
                        prove(&space, &bad, encoding).is_err(),
                        "{rule} {board} {tiles:?} {encoding}: unit {u} changed passed"
                    );
                }
            }
        }
    }
}

#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's placements are held in memory"
)]
fn a_minimized_value_raised_where_the_blank_has_several_regions_is_found() {
    // Each reached placement whose free cells are several regions, raised by two in turn
    // (its parity kept). The rule a minimized table keeps on its own (no entry above one
    // more than its least neighbour's, exact where the blank has one region) let most of
    // these through; the search's least depth over the regions does not.
    let (space, values) = built("3x3", &[1, 2, 3, 4], Goal::BlankFirst, BlankRule::Minimized);
    let board = space.board();
    let mut cells = [0u8; MAX_CELLS];
    let mut raised = 0;
    for rank in 0..space.placements() as usize {
        let free = board.all_cells() & !space.ranker().unrank(rank as u64, &mut cells);
        let least = free.trailing_zeros() as usize;
        if board.region(least, free) == free || values[rank] == UNREACHED {
            continue;
        }
        let mut bad = values.clone();
        bad[rank] += 2;
        let err = prove_minimized(&space, &bad, Encoding::Byte)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("entry {rank} stores")), "{err}");
        raised += 1;
    }
    assert!(raised > 1000, "{raised} placements with several regions");
}
