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
    if rule != BlankRule::Minimized {
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

/// The packed aware proof of `payload` with parts of `part` bytes: its verdict and the
/// ranges it let go, in order.
fn prove_aware_in_parts(
    space: &StateSpace,
    payload: &[u8],
    encoding: Encoding,
    part: usize,
) -> (Result<Layers>, Vec<std::ops::Range<usize>>) {
    let zero_aware = StateSpace::new(
        space.board(),
        space.goal(),
        space.pattern().clone(),
        BlankRule::ZeroAware,
    )
    .unwrap();
    let index = zero_aware.region_index().unwrap();
    let released = std::sync::Mutex::new(vec![]);
    let release = |range| released.lock().unwrap().push(range);
    let proven = aware::prove_aware_packed(
        space,
        &zero_aware,
        &index,
        payload,
        encoding,
        (part, &release),
    );
    (proven, released.into_inner().unwrap())
}

#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's payloads are held in memory"
)]
fn an_aware_packed_entry_forged_at_a_part_boundary_is_found() {
    // Parts of a few bytes (and, on the larger board, parts that end inside a thread's
    // piece): the entries each side of a part boundary, and the first and last entries,
    // forged in turn; the error names the forged entry. A table that passes lets every byte
    // go once, in order.
    for (board, tiles, part, step) in [
        ("4x4", &[1u8, 2, 3][..], 7usize, 97usize),
        ("4x4", &[1, 2, 3, 4, 5], 3 * 4096 + 100, 10),
    ] {
        let (space, values) = built(board, tiles, Goal::BlankFirst, BlankRule::Aware);
        for encoding in [Encoding::Mod3, Encoding::OneBit] {
            let what = format!("{board} {tiles:?} {encoding}");
            let table = EncodedTable::new(&space, encoding, &values).unwrap();
            let payload = table.payload();
            let (proven, released) = prove_aware_in_parts(&space, payload, encoding, part);
            let layers = proven.unwrap();
            assert_eq!(layers.histogram, table.header.histogram, "{what}");
            assert_eq!(layers.unreached, table.header.unreached, "{what}");
            let mut next = 0;
            for range in released {
                assert_eq!(range.start, next, "{what}");
                assert!(range.end - range.start <= part, "{what}");
                next = range.end;
            }
            assert_eq!(next, payload.len(), "{what}");
            let per_byte = (space.entries() as usize).div_ceil(payload.len());
            let entries = space.entries();
            let mut forged: Vec<u64> = vec![0, entries - 1];
            for boundary in (part..payload.len()).step_by(part).step_by(step) {
                let e = (boundary * per_byte) as u64;
                forged.extend([e - 1, e]);
            }
            for e in forged {
                let bad = altered(payload, encoding, e);
                let err = prove_aware_in_parts(&space, &bad, encoding, part)
                    .0
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(&format!("entry {e} ")), "{what}: {err}");
            }
        }
    }
}

/// The zero-aware proof of `payload` (one code per entry) with parts of `part` bytes: its
/// verdict and the ranges it let go, in order.
fn prove_zero_aware_in_parts(
    space: &StateSpace,
    payload: &[u8],
    encoding: Encoding,
    part: usize,
) -> (Result<Layers>, Vec<std::ops::Range<usize>>) {
    let index = space.region_index().unwrap();
    let released = std::sync::Mutex::new(vec![]);
    let release = |range| released.lock().unwrap().push(range);
    let proven =
        zero_aware::prove_coded_in_parts(space, &index, payload, encoding, (part, &release));
    (proven, released.into_inner().unwrap())
}

#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's payloads are held in memory"
)]
fn a_zero_aware_entry_forged_in_any_part_is_found() {
    // Parts of a few bytes (and, on the larger boards, parts that end inside a thread's
    // piece): the first and last entries, the entries each side of part boundaries (the
    // first, middle and last parts among them) and, on the pattern of every tile, unreached
    // entries made reachable, forged in turn; the error names the forged entry. A table that
    // passes lets every byte go in order once per layer and once for the unreached entries.
    for (board, tiles, part, step) in [
        ("3x3", &[1u8, 2, 3][..], 7usize, 5usize),
        ("4x4", &[1, 2, 3, 4, 5], 3 * 4096 + 100, 3),
        ("3x3", &[1, 2, 3, 4, 5, 6, 7, 8], 4096 + 5, 8),
    ] {
        let (space, values) = built(board, tiles, Goal::BlankFirst, BlankRule::ZeroAware);
        for encoding in [Encoding::Mod3, Encoding::OneBit, Encoding::Byte] {
            let what = format!("{board} {tiles:?} {encoding} parts of {part}");
            let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
                // 1-bit cannot mark the unreached half of a pattern of every tile.
                assert_eq!(space.k() + 1, space.board().cells(), "{what}");
                continue;
            };
            let payload = table.payload();
            let (proven, released) = prove_zero_aware_in_parts(&space, payload, encoding, part);
            let layers = proven.unwrap();
            assert_eq!(layers.histogram, table.header.histogram, "{what}");
            assert_eq!(layers.unreached, table.header.unreached, "{what}");
            let (mut next, mut passes) = (0, 0);
            for range in released {
                assert!(range.end - range.start <= part, "{what}");
                assert_eq!(range.start, next % payload.len(), "{what}");
                if range.start == 0 {
                    passes += 1;
                }
                next = range.end;
            }
            assert_eq!(next, payload.len(), "{what}");
            let unreached_pass = usize::from(layers.unreached > 0);
            assert_eq!(passes, layers.histogram.len() + unreached_pass, "{what}");
            let entries = space.entries();
            let per_byte = (entries as usize).div_ceil(payload.len());
            let parts = payload.len().div_ceil(part);
            assert!(parts >= 3, "{what}: {parts} parts");
            let mut forged: Vec<u64> = vec![0, entries - 1, entries / 2];
            for boundary in (part..payload.len()).step_by(part).step_by(step) {
                let e = (boundary * per_byte) as u64;
                forged.extend([e - 1, e]);
            }
            // Unreached entries (the other parity of a pattern of every tile) in the first,
            // middle and last parts.
            let unreached: Vec<u64> = [0, parts / 2, parts - 1]
                .into_iter()
                .filter_map(|p| {
                    let entries_of_part = (p * part * per_byte) as u64..entries;
                    entries_of_part
                        .into_iter()
                        .find(|&e| values[e as usize] == UNREACHED)
                })
                .collect();
            assert_eq!(unreached.is_empty(), layers.unreached == 0, "{what}");
            forged.extend(&unreached);
            for e in forged {
                let bad = altered(payload, encoding, e);
                let err = prove_zero_aware_in_parts(&space, &bad, encoding, part)
                    .0
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(&format!("entry {e} ")), "{what}: {err}");
                let how = if values[e as usize] == UNREACHED {
                    "is unreachable but stores".to_string()
                } else {
                    format!("is at distance {} but stores", values[e as usize])
                };
                assert!(err.contains(&how), "{what}: {err}");
            }
        }
    }
}
