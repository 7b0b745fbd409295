//! Every team's provers run in one process, their lists exchanged in memory.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tilepdb_common::region_index::{OrderMoves, RegionIndex};
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::table::header::Header;
use tilepdb_common::table::write::EncodedTable;
use tilepdb_common::table::{Encoding, Pdb, UNREACHED};
use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};

use super::*;
use crate::bellman::tests::table as built;
use crate::walks::{check_regions, for_each_block_move};

mod entries_file;
mod harness;

use harness::*;

#[test]
fn good_tables_pass_with_the_single_proofs_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    for (space, values, encoding) in cases() {
        let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
            // 1-bit cannot mark the unreached half of a pattern of every tile.
            assert_eq!(space.k() + 1, space.board().cells());
            continue;
        };
        let path = dir.path().join("table.pdb");
        table.write(&path).unwrap();
        let deep = crate::verify_deep(&Pdb::open(&path).unwrap()).unwrap();
        let f = space.region_index().unwrap().orders();
        for shards in 1..=4 {
            let layout = ShardLayout::new(f, shards).unwrap();
            for keep in [Keep::Memory, Keep::Files(files.path(), SMALL_PART)] {
                let layers = prove_team(
                    &space,
                    table.payload(),
                    &table.header,
                    encoding,
                    (layout, keep),
                    &honest,
                )
                .unwrap();
                let what = what(&space, encoding, shards);
                assert_eq!(layers.histogram, deep.decoded_histogram, "{what}");
                assert_eq!(layers.unreached, deep.decoded_unreached, "{what}");
                let left = std::fs::read_dir(files.path()).unwrap().count();
                assert_eq!(left, 0, "{what}: the entries' files are removed");
            }
        }
    }
}

/// The file entry of a reached entry of shard `shard` of `layout` (a state of a zero-aware
/// table, a placement's rank of a minimized one), the middle one in file order.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's entries are in memory"
)]
fn entry_of_shard(
    space: &StateSpace,
    index: &RegionIndex,
    values: &[u8],
    layout: ShardLayout,
    shard: u32,
) -> u64 {
    let f = index.orders();
    let mut cells = [0u8; tilepdb_common::MAX_CELLS];
    let owned = (0..space.entries())
        .filter(|&e| {
            if values[e as usize] == UNREACHED {
                return false;
            }
            let order = if space.rule() == BlankRule::Minimized {
                space.ranker().unrank(e, &mut cells);
                index.set_and_order(&cells[..space.k()]).2
            } else {
                e % f
            };
            layout.owner(order) == shard
        })
        .collect::<Vec<_>>();
    assert!(!owned.is_empty(), "the shard owns reached entries");
    owned[owned.len() / 2]
}

/// `payload` with entry `e` changed to another code its encoding holds (a byte by two,
/// keeping its parity); the checksums do not matter here, the forger would recompute them.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's entries are in memory"
)]
fn forged(payload: &[u8], encoding: Encoding, e: u64) -> Vec<u8> {
    let mut bad = payload.to_vec();
    match encoding {
        Encoding::OneBit => bad[(e >> 3) as usize] ^= 1 << (e & 7),
        Encoding::Mod3 => {
            let digit = 3u8.pow((e % 5) as u32);
            let b = &mut bad[(e / 5) as usize];
            let d = *b / digit % 3;
            *b = *b - d * digit + (d + 1) % 3 * digit;
        }
        _ => bad[e as usize] = bad[e as usize].wrapping_add(2),
    }
    bad
}

/// The error of the proof by one team of `table` (of `space`, in `encoding`, on `layout`)
/// with its entry `e` forged, the provers keeping their entries as `keep` says; and the
/// case's name for the assertion's message.
fn refusal_of_forged_entry(
    space: &StateSpace,
    table: &EncodedTable,
    encoding: Encoding,
    (layout, keep): (ShardLayout, Keep<'_>),
    e: u64,
) -> (String, String) {
    let bad = forged(table.payload(), encoding, e);
    let err = prove_team(
        space,
        &bad,
        &table.header,
        encoding,
        (layout, keep),
        &honest,
    )
    .unwrap_err()
    .to_string();
    (err, what(space, encoding, layout.shards()))
}

#[test]
fn a_forged_entry_in_each_shard_is_found() {
    let files = tempfile::tempdir().unwrap();
    for (space, values, encoding) in cases() {
        let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
            continue;
        };
        let index = space.region_index().unwrap();
        for shards in 2..=4 {
            let layout = ShardLayout::new(index.orders(), shards).unwrap();
            for shard in 0..shards {
                let e = entry_of_shard(&space, &index, &values, layout, shard);
                for keep in [Keep::Memory, Keep::Files(files.path(), SMALL_PART)] {
                    let (err, what) =
                        refusal_of_forged_entry(&space, &table, encoding, (layout, keep), e);
                    assert!(
                        err.contains(&format!("entry {e} ")),
                        "{what}, entry {e} of shard {shard}: {err}"
                    );
                }
            }
        }
    }
}

/// The zero-aware depths of `space` by a breadth-first search that drops every successor of
/// a state of shard `from` of `layout` that lies on shard `to`: the table a build makes when
/// the worker of one shard withholds those successors (or its receiver ignores them). Written
/// here, a plain search state by state, apart from the provers.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the test's states are in memory"
)]
fn withheld_depths(
    space: &StateSpace,
    index: &RegionIndex,
    layout: ShardLayout,
    from: u32,
    to: u32,
) -> Vec<u8> {
    check_regions(space, index).unwrap();
    let f = index.orders();
    let moves = OrderMoves::new(index.k());
    let mut depths = vec![UNREACHED; index.states() as usize];
    let blank = space.goal().cell_of(0, space.board().cells());
    let goal = index.state_index(space.goal_cells(), blank);
    depths[goal as usize] = 0;
    let mut current = vec![goal];
    let mut depth = 0u8;
    while !current.is_empty() {
        let mut next = vec![];
        for &s in &current {
            let (block, c) = index.block_and_set(s);
            let region = index.regions_of(c)[(block - index.first_block(c)) as usize];
            let order = s % f;
            for_each_block_move(space, index, c, region, |m| {
                let moved = moves.moved(m.pa, m.pb, order);
                if layout.owner(order) == from && layout.owner(moved) == to {
                    return Ok(());
                }
                let child = m.block * f + moved;
                if depths[child as usize] == UNREACHED {
                    depths[child as usize] = depth + 1;
                    next.push(child);
                }
                Ok(())
            })
            .unwrap();
        }
        current = next;
        depth += 1;
    }
    depths
}

#[test]
fn a_table_made_wrong_by_withholding_passes_one_rotated_search_but_not_two_teams() {
    // The 15-puzzle's first 5-tile pattern, zero-aware, in 1-bit and bytes.
    let pattern = Partition::named("15:5-5-5").unwrap().patterns()[0].clone();
    let (space, exact) = built(
        "4x4",
        pattern.tiles(),
        Goal::BlankFirst,
        BlankRule::ZeroAware,
    );
    let index = space.region_index().unwrap();
    let f = index.orders();
    for shards in [2u32, 4] {
        let build = ShardLayout::new(f, shards).unwrap();
        // Rotated, shard s is proven by worker s + 1: the bad worker 0 builds shard 0 and
        // proves shard P - 1. The table: shard P - 1's successors on shard 0 withheld (worker
        // 0 ignored them in the build).
        let bad_worker = 0;
        let (from, to) = (shards - 1, 0);
        let wrong = withheld_depths(&space, &index, build, from, to);
        assert!(
            wrong.iter().all(|&d| d != UNREACHED),
            "every state still met"
        );
        let too_large = wrong.iter().zip(&exact).filter(|(w, e)| w > e).count();
        assert!(too_large > 0, "withholding made no entry wrong");
        assert!(
            wrong.iter().zip(&exact).all(|(w, e)| w >= e),
            "withholding only lengthens paths"
        );
        for encoding in [Encoding::OneBit, Encoding::Byte] {
            // The file as the writer makes it: the wrong depths, their own histogram.
            let table = EncodedTable::new(&space, encoding, &wrong).unwrap();
            let what = what(&space, encoding, shards);
            // The single proof refuses it.
            assert!(
                crate::layers::prove_zero_aware(&space, table.payload(), encoding).is_err(),
                "{what}"
            );
            // Searched honestly on the build's layout, the table fails.
            assert!(
                prove_team(
                    &space,
                    table.payload(),
                    &table.header,
                    encoding,
                    (build, Keep::Memory),
                    &honest
                )
                .is_err(),
                "{what}"
            );
            // One rotated search: the bad worker proves shard `from` and withholds its lists
            // to shard `to` again; the honest prover of shard `to` derives the same wrong
            // depths and the table passes.
            assert_eq!((from + 1) % shards, bad_worker);
            let rotated = prove_team(
                &space,
                table.payload(),
                &table.header,
                encoding,
                (build, Keep::Memory),
                &|a, b| a == from && b == to,
            )
            .unwrap_or_else(|e| panic!("{what}: the rotated search refused it: {e}"));
            assert_eq!(rotated.histogram, table.header.histogram, "{what}");
            // Two disjoint teams: the bad worker is in team A, whose verdict it can make
            // whatever it likes (say, a pass); team B has no bad worker, derives the exact
            // depths and refuses the table, so the proof fails.
            let teams = ProofTeams::new(build).unwrap().unwrap();
            let [a, b] = &teams.teams;
            assert!(a.provers.contains(&bad_worker) && !b.provers.contains(&bad_worker));
            let err = prove_team(
                &space,
                table.payload(),
                &table.header,
                encoding,
                (b.layout, Keep::Memory),
                &honest,
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("is at distance") || err.contains("differ from the header"),
                "{what}: {err}"
            );
        }
    }
}

#[test]
#[expect(clippy::cast_possible_truncation, reason = "a team has a few workers")]
fn the_teams_are_disjoint_and_prove_every_shard_once() {
    let f = 720;
    assert_eq!(
        ProofTeams::new(ShardLayout::new(f, 1).unwrap()).unwrap(),
        None
    );
    for shards in 2..=9 {
        let build = ShardLayout::new(f, shards).unwrap();
        let teams = ProofTeams::new(build).unwrap().unwrap();
        let [a, b] = &teams.teams;
        let half = shards.div_ceil(2);
        let mut sorted_a = a.provers.clone();
        sorted_a.sort_unstable();
        let mut sorted_b = b.provers.clone();
        sorted_b.sort_unstable();
        assert_eq!(sorted_a, (0..half).collect::<Vec<_>>(), "{shards}");
        assert_eq!(sorted_b, (half..shards).collect::<Vec<_>>(), "{shards}");
        assert_eq!(a.layout.shards(), half);
        assert_eq!(b.layout.shards(), shards - half);
        // Each team takes the rotation of its workers over its proof shards that shares
        // the fewest orders with what they built (none where a rotation allows it).
        for team in [a, b] {
            let m = team.provers.len() as u32;
            let first = team.provers.iter().min().copied().unwrap();
            let shared_by = |prover_of: &dyn Fn(u32) -> u32| -> u64 {
                (0..m)
                    .map(|j| {
                        let proof = team.layout.orders_of(j);
                        let built = build.orders_of(prover_of(j));
                        proof
                            .end
                            .min(built.end)
                            .saturating_sub(proof.start.max(built.start))
                    })
                    .sum()
            };
            let least = (0..m)
                .map(|r| shared_by(&|j| first + (j + r) % m))
                .min()
                .unwrap();
            assert_eq!(shared_by(&|j| team.provers[j as usize]), least, "{shards}");
        }
    }
    // Six workers: teams of three, each can prove only orders it did not build.
    let teams = ProofTeams::new(ShardLayout::new(f, 6).unwrap())
        .unwrap()
        .unwrap();
    for team in &teams.teams {
        for (j, &w) in team.provers.iter().enumerate() {
            let proof = team.layout.orders_of(j as u32);
            let built = ShardLayout::new(f, 6).unwrap().orders_of(w);
            assert!(
                proof.end <= built.start || built.end <= proof.start,
                "worker {w}"
            );
        }
    }
}

#[test]
fn a_list_with_a_state_of_another_shard_is_refused() {
    let (space, values) = built("3x3", &[1, 2, 3, 4], Goal::BlankFirst, BlankRule::ZeroAware);
    let table = EncodedTable::new(&space, Encoding::OneBit, &values).unwrap();
    let index = Arc::new(space.region_index().unwrap());
    let layout = ShardLayout::new(index.orders(), 2).unwrap();
    let entries = Keep::Memory
        .entries(&space, &index, layout, 0, Encoding::OneBit, table.payload())
        .unwrap();
    let prover = ShardProver::new(
        &space,
        Arc::clone(&index),
        layout,
        0,
        Encoding::OneBit,
        entries,
    )
    .unwrap();
    let theirs = layout.orders_of(1).start;
    let err = prover.merge(&[0, theirs]).unwrap_err().to_string();
    assert!(err.contains("does not own"), "{err}");
    let err = prover.merge(&[2, 1]).unwrap_err().to_string();
    assert!(err.contains("not increasing"), "{err}");
}

#[test]
fn the_provers_memory_is_known_before_they_are_made() {
    let files = tempfile::tempdir().unwrap();
    for (space, values, encoding) in cases() {
        let Ok(table) = EncodedTable::new(&space, encoding, &values) else {
            continue;
        };
        let index = Arc::new(space.region_index().unwrap());
        for shards in 1..=4 {
            let layout = ShardLayout::new(index.orders(), shards).unwrap();
            for j in 0..shards {
                let path = files.path().join("entries");
                for in_file in [false, true] {
                    let place = if in_file {
                        EntriesPlace::file(&path)
                    } else {
                        EntriesPlace::memory()
                    };
                    let entries = ShardEntries::from_payload(
                        &space,
                        &index,
                        layout,
                        j,
                        encoding,
                        place,
                        table.payload(),
                    )
                    .unwrap();
                    let prover =
                        ShardProver::new(&space, Arc::clone(&index), layout, j, encoding, entries)
                            .unwrap();
                    let what = what(&space, encoding, shards);
                    let bytes = prover.bytes();
                    assert_eq!(
                        prover_bytes(&space, &index, layout, j, encoding, in_file).unwrap(),
                        bytes,
                        "{what}"
                    );
                    let zero_aware = space.rule() == BlankRule::ZeroAware;
                    assert_eq!(bytes.disk > 0, in_file && zero_aware, "{what}");
                    if bytes.disk > 0 {
                        assert_eq!(std::fs::metadata(&path).unwrap().len(), bytes.disk);
                    }
                    drop(prover);
                    assert!(
                        !path.exists(),
                        "{what}: the file is removed with its prover"
                    );
                }
            }
        }
        if let Some(teams) = ProofTeams::new(ShardLayout::new(index.orders(), 3).unwrap()).unwrap()
        {
            // Three workers: team B is one worker, whose prover holds the whole table.
            for in_file in [false, true] {
                let whole = prover_bytes(
                    &space,
                    &index,
                    ShardLayout::new(index.orders(), 1).unwrap(),
                    0,
                    encoding,
                    in_file,
                )
                .unwrap();
                assert_eq!(
                    teams
                        .largest_prover_bytes(&space, &index, encoding, in_file)
                        .unwrap(),
                    whole
                );
            }
        }
    }
    let (space, _) = built("3x3", &[1, 2, 3], Goal::BlankFirst, BlankRule::Aware);
    let index = space.region_index().unwrap();
    let layout = ShardLayout::new(index.orders(), 2).unwrap();
    assert!(prover_bytes(&space, &index, layout, 0, Encoding::Byte, true).is_err());
}
