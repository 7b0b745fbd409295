//! The provers' entries kept in files: a forged entry in any part, an unreached one, and a
//! file changed on disk between its parts, each refused.

use super::*;

/// The 15-puzzle's first 5-tile pattern, zero-aware.
fn zero_aware_five() -> (StateSpace, Vec<u8>) {
    let pattern = Partition::named("15:5-5-5").unwrap().patterns()[0].clone();
    built(
        "4x4",
        pattern.tiles(),
        Goal::BlankFirst,
        BlankRule::ZeroAware,
    )
}

/// A file entry of shard `shard` of `layout` whose value `keep` takes, in the first, a middle
/// and the last part of the shard's entries in parts of [`SMALL_PART`] bytes (`bits` a code).
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's entries are in memory"
)]
fn entries_in_parts(
    index: &RegionIndex,
    values: &[u8],
    layout: ShardLayout,
    shard: u32,
    bits: u64,
    keep: impl Fn(u8) -> bool,
) -> Vec<u64> {
    let f = index.orders();
    let own = layout.orders_of(shard);
    let width = own.end - own.start;
    let per_part = SMALL_PART as u64 * 8 / bits;
    let parts = (index.region_count() * width).div_ceil(per_part);
    assert!(parts >= 3, "a few parts");
    [0, parts / 2, parts - 1]
        .into_iter()
        .map(|part| {
            (part * per_part..((part + 1) * per_part).min(index.region_count() * width))
                .map(|l| (l / width) * f + own.start + l % width)
                .find(|&e| keep(values[e as usize]))
                .unwrap_or_else(|| panic!("part {part} of shard {shard} has such an entry"))
        })
        .collect()
}

#[test]
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's entries are in memory"
)]
fn a_forged_entry_in_the_first_a_middle_and_the_last_part_of_a_file_is_found() {
    let files = tempfile::tempdir().unwrap();
    let (space, values) = zero_aware_five();
    let index = space.region_index().unwrap();
    let layout = ShardLayout::new(index.orders(), 2).unwrap();
    for (encoding, bits) in [
        (Encoding::OneBit, 1),
        (Encoding::Mod3, 2),
        (Encoding::Byte, 8),
    ] {
        let table = EncodedTable::new(&space, encoding, &values).unwrap();
        for shard in 0..2 {
            let reached = entries_in_parts(&index, &values, layout, shard, bits, |v| {
                v != UNREACHED && v > 0
            });
            for e in reached {
                let (err, what) = refusal_of_forged_entry(
                    &space,
                    &table,
                    encoding,
                    (layout, Keep::Files(files.path(), SMALL_PART)),
                    e,
                );
                assert!(
                    err.contains(&format!("entry {e} is at distance {} ", values[e as usize])),
                    "{what}, entry {e} of shard {shard}: {err}"
                );
                assert_eq!(std::fs::read_dir(files.path()).unwrap().count(), 0);
            }
        }
    }
}

#[test]
fn a_forged_unreached_entry_in_a_file_is_found() {
    let files = tempfile::tempdir().unwrap();
    // Every tile of the 8-puzzle: the odd half of the placements is unreached.
    let (space, values) = built(
        "3x3",
        &[1, 2, 3, 4, 5, 6, 7, 8],
        Goal::BlankFirst,
        BlankRule::ZeroAware,
    );
    let index = space.region_index().unwrap();
    let layout = ShardLayout::new(index.orders(), 2).unwrap();
    for (encoding, bits) in [(Encoding::Mod3, 2), (Encoding::Byte, 8)] {
        let table = EncodedTable::new(&space, encoding, &values).unwrap();
        for shard in 0..2 {
            let unreached =
                entries_in_parts(&index, &values, layout, shard, bits, |v| v == UNREACHED);
            for e in unreached {
                let (err, what) = refusal_of_forged_entry(
                    &space,
                    &table,
                    encoding,
                    (layout, Keep::Files(files.path(), SMALL_PART)),
                    e,
                );
                assert!(
                    err.contains(&format!("entry {e} is unreachable but stores")),
                    "{what}, entry {e} of shard {shard}: {err}"
                );
            }
        }
    }
}

#[test]
fn an_entries_file_changed_on_disk_between_parts_is_refused_by_its_crc() {
    let files = tempfile::tempdir().unwrap();
    let (space, values) = zero_aware_five();
    let table = EncodedTable::new(&space, Encoding::OneBit, &values).unwrap();
    let index = Arc::new(space.region_index().unwrap());
    let layout = ShardLayout::new(index.orders(), 1).unwrap();
    let keep = Keep::Files(files.path(), SMALL_PART);
    let entries = keep
        .entries(&space, &index, layout, 0, Encoding::OneBit, table.payload())
        .unwrap();
    let mut prover = ShardProver::new(
        &space,
        Arc::clone(&index),
        layout,
        0,
        Encoding::OneBit,
        entries,
    )
    .unwrap();
    // The first layer proven with the file as written.
    prover
        .expand(0..prover.sets(), 1 << 16, &mut |_, _| {
            unreachable!("one shard")
        })
        .unwrap();
    assert!(prover.finish_layer().unwrap() > 0);
    // A bit of the file's last part changed on disk (one entry's code, which the checks of
    // the entries alone would not tell from a forged table's): its part is read back later,
    // at the latest for the entries never met.
    let path = keep.path(0).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let err = loop {
        if let Err(e) = prover.expand(0..prover.sets(), 1 << 16, &mut |_, _| {
            unreachable!("one shard")
        }) {
            break e;
        }
        match prover.finish_layer() {
            Err(e) => break e,
            Ok(0) => match prover.finish() {
                Err(e) => break e,
                Ok(tally) => panic!("a changed file was accepted: {tally:?}"),
            },
            Ok(_) => {}
        }
    }
    .to_string();
    assert!(
        err.contains("changed on disk") && err.contains("CRC-32"),
        "{err}"
    );
}
