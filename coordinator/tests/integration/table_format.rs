//! Table files (issue 3): round trips of every encoding, determinism, corruption, table sets.
//!
//! The heavy test on a 15-puzzle 7-tile table is ignored by default; run it with
//! `cargo test --release -p tilepdb-coordinator --test integration table_format:: -- --ignored`.

#![expect(
    clippy::cast_possible_truncation,
    reason = "the oracle indexes tables by u64 ranks, which index arrays in memory, and moves cells (below 25) between u8, u32 and usize"
)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tilepdb_common::table::header::{HEADER_LEN, OFF_HEADER_CRC};
use tilepdb_common::table::{
    Defect, EncodedTable, Encoding, Manifest, Pdb, TableError, TableSet, UNREACHED,
};
use tilepdb_common::{BlankRule, Board, Goal, Partition, Pattern, PuzzleState, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_coordinator::output::{set_dir, table_file_name, write_manifest, write_table};
use tilepdb_proof::verify_deep;

fn space(board: &str, goal: Goal, tiles: &[u8], rule: BlankRule) -> StateSpace {
    let b: Board = board.parse().unwrap();
    StateSpace::new(b, goal, Pattern::new(b, tiles.to_vec()).unwrap(), rule).unwrap()
}

fn build(space: &StateSpace) -> Vec<u8> {
    build_table(space, &BuildOptions::default(), &())
        .unwrap()
        .values
        .into_bytes()
        .expect("a byte per entry")
}

fn encodings_for(space: &StateSpace) -> Vec<Encoding> {
    let mut e = vec![Encoding::Byte, Encoding::Nibble];
    if space.rule().is_consistent() {
        e.push(Encoding::Mod3);
        // One bit cannot mark the unreached half of a pattern of every tile.
        if space.k() + 1 < space.board().cells() {
            e.push(Encoding::OneBit);
        }
    }
    for c in [1, 2, 4, 64] {
        e.push(Encoding::min_nibble(c).unwrap());
    }
    e
}

fn write(dir: &Path, space: &StateSpace, encoding: Encoding, values: &[u8]) -> Pdb {
    write_table(dir, space, encoding, values).unwrap()
}

/// The Manhattan distance of each entry's placement.
fn manhattan_of_entries(space: &StateSpace) -> Vec<u32> {
    let mut m = Vec::with_capacity(space.entries() as usize);
    tilepdb_common::table::walk::for_each_entry(space, |entry, cells, d| {
        assert_eq!(entry, m.len() as u64);
        assert_eq!(space.manhattan(cells), d);
        m.push(d);
    });
    m
}

/// A random walk of full-puzzle moves from the goal.
fn random_walk(board: Board, goal: Goal, steps: usize, rng: &mut StdRng) -> Vec<PuzzleState> {
    let mut tiles = PuzzleState::goal(board, goal).tiles().to_vec();
    let mut out = vec![PuzzleState::new(board, tiles.clone()).unwrap()];
    for _ in 0..steps {
        let blank = tiles.iter().position(|&t| t == 0).unwrap();
        let nb = board.neighbours(blank);
        let pick = rng.random_range(0..nb.count_ones());
        let mut bits = nb;
        for _ in 0..pick {
            bits &= bits - 1;
        }
        tiles.swap(blank, bits.trailing_zeros() as usize);
        out.push(PuzzleState::new(board, tiles.clone()).unwrap());
    }
    out
}

fn cell_of_tile(state: &PuzzleState) -> Vec<u8> {
    let mut c = vec![0u8; state.tiles().len()];
    for (cell, &t) in state.tiles().iter().enumerate() {
        c[t as usize] = cell as u8;
    }
    c
}

/// Checks every entry of `pdb` against the exact `values`.
fn check_round_trip(pdb: &Pdb, values: &[u8], m: &[u32]) {
    let label = format!("{} {}", pdb.path().display(), pdb.encoding());
    let decoded = pdb.decode_all().unwrap();
    assert_eq!(decoded.len(), values.len());
    for (i, (&h, &d)) in values.iter().zip(&decoded).enumerate() {
        let v = pdb.value(i as u64).unwrap();
        assert_eq!(v, d, "{label}: value and decode_all differ at {i}");
        match pdb.encoding() {
            Encoding::Byte | Encoding::Mod3 | Encoding::OneBit => {
                assert_eq!(d, h, "{label}: entry {i}");
            }
            Encoding::Nibble if h == UNREACHED => {}
            Encoding::Nibble => {
                if (u32::from(h) - m[i]) / 2 < 15 {
                    assert_eq!(d, h, "{label}: entry {i}");
                } else {
                    assert_eq!(u32::from(d), m[i] + 30, "{label}: saturated entry {i}");
                }
            }
            Encoding::MinNibble { .. } => {
                assert!(d <= h, "{label}: entry {i} decodes to {d} above {h}");
                assert!(u32::from(d) >= m[i] && (u32::from(d) - m[i]).is_multiple_of(2));
            }
        }
    }
    if let Encoding::MinNibble { group_log2 } = pdb.encoding() {
        // The group's least excess is attained by some member.
        let c = 1usize << group_log2;
        for (g, chunk) in values.chunks(c).enumerate() {
            let attained = chunk.iter().enumerate().any(|(j, &h)| {
                let i = g * c + j;
                h == UNREACHED || decoded[i] == h || (u32::from(h) - m[i]) / 2 >= 15
            });
            assert!(
                attained,
                "{label}: group {g} stores less than its least excess"
            );
        }
    }
}

/// Follows random walks from the goal with the parent's value (mod3, 1-bit), as a search does.
fn check_parent_chains(pdb: &Pdb, values: &[u8], seed: u64) {
    let space = pdb.space();
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..20 {
        let walk = random_walk(space.board(), space.goal(), 300, &mut rng);
        let (first, _) = pdb.index_of(&cell_of_tile(&walk[0]));
        let mut h = pdb.root_value(first).unwrap();
        assert_eq!(h, 0);
        for s in &walk[1..] {
            let (index, m) = pdb.index_of(&cell_of_tile(s));
            h = match pdb.encoding() {
                Encoding::OneBit => pdb.one_bit_child_value(h, index, m),
                _ => pdb.child_value(h, index),
            };
            assert_eq!(h, values[index as usize], "chain through {s}");
            if rng.random_range(0..50) == 0 {
                // A lone state: the descent to the goal gives the same value.
                assert_eq!(pdb.root_value(index).unwrap(), h, "descent from {s}");
                assert_eq!(pdb.value_of_state(s).unwrap(), h);
            }
        }
    }
}

#[test]
fn every_encoding_round_trips_on_every_entry_of_small_tables() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, Goal, &[u8])] = &[
        ("3x3", Goal::BlankFirst, &[1, 2, 3, 4]),
        ("3x3", Goal::BlankLast, &[8, 1, 5]),
        ("4x2", Goal::BlankFirst, &[1, 2, 3, 4, 5, 6, 7]), // every tile: half unreached
        ("4x4", Goal::BlankFirst, &[1, 2, 3]),
        ("4x4", Goal::BlankLast, &[13, 14, 15]),
    ];
    let mut n = 0;
    for &(board, goal, tiles) in cases {
        for rule in BlankRule::ALL {
            let s = space(board, goal, tiles, rule);
            let values = build(&s);
            let m = manhattan_of_entries(&s);
            for encoding in encodings_for(&s) {
                let sub = dir.path().join(format!("{n}"));
                n += 1;
                let pdb = write(&sub, &s, encoding, &values);
                check_round_trip(&pdb, &values, &m);
                if encoding.needs_parent() {
                    check_parent_chains(&pdb, &values, n);
                }
                verify_deep(&pdb).unwrap();
            }
        }
    }
}

#[test]
fn nibbles_saturate_into_lower_bounds() {
    // Real tables of small boards rarely exceed Manhattan by 30 moves: use made-up values
    // h = m + 2x with excesses x from 0 to 39 (the encoders check only h >= m, even h - m).
    let s = space("5x5", Goal::BlankFirst, &[1, 2], BlankRule::Ignored);
    let m = manhattan_of_entries(&s);
    let values: Vec<u8> = m
        .iter()
        .enumerate()
        .map(|(i, &m)| (m + 2 * (i as u32 * 7 % 40)) as u8)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut saturated = 0;
    for encoding in [Encoding::Nibble, Encoding::min_nibble(8).unwrap()] {
        let pdb = write(&dir.path().join(encoding.name()), &s, encoding, &values);
        check_round_trip(&pdb, &values, &m);
        for (i, &h) in values.iter().enumerate() {
            let v = pdb.value(i as u64).unwrap();
            if encoding == Encoding::Nibble && v < h {
                assert_eq!(u32::from(v), m[i] + 30);
                saturated += 1;
            }
        }
    }
    assert!(saturated > 100, "{saturated}");
    // Odd excess or below Manhattan: refused by the encoders that store the excess.
    let mut bad = values.clone();
    bad[5] = m[5] as u8 + 1;
    let err = EncodedTable::new(&s, Encoding::Nibble, &bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("entry 5"), "{err}");
}

#[test]
fn one_bit_is_refused_for_minimized_tables_and_patterns_of_every_tile() {
    let s = space("3x3", Goal::BlankFirst, &[1, 2, 3], BlankRule::Minimized);
    let values = build(&s);
    let err = EncodedTable::new(&s, Encoding::OneBit, &values)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("1-bit") && err.contains("minimized") && err.contains("not consistent"),
        "{err}"
    );
    let s = space("2x2", Goal::BlankFirst, &[1, 2, 3], BlankRule::ZeroAware);
    let values = build(&s);
    let err = EncodedTable::new(&s, Encoding::OneBit, &values)
        .unwrap_err()
        .to_string();
    assert!(err.contains("every tile"), "{err}");
}

/// A zero-aware table's entries, spread over the free cells of their regions, are the aware
/// table's (both built by the engine: the region index's order against the cell order).
#[test]
fn zero_aware_tables_spread_to_the_aware_tables() {
    for (board, goal, tiles) in [
        ("4x4", Goal::BlankFirst, &[1u8, 2, 3, 4, 5][..]),
        ("3x4", Goal::BlankLast, &[11, 3, 7]),
    ] {
        let zero = space(board, goal, tiles, BlankRule::ZeroAware);
        let aware = space(board, goal, tiles, BlankRule::Aware);
        let z = build(&zero);
        let a = build(&aware);
        let index = zero.region_index().unwrap();
        assert_eq!(index.aware_from_zero_aware(aware.ranker(), &z), a);
        assert_eq!(index.zero_aware_from_aware(aware.ranker(), &a), z);
    }
}

#[test]
fn mod3_is_refused_for_minimized_tables() {
    let s = space("3x3", Goal::BlankFirst, &[1, 2, 3], BlankRule::Minimized);
    let values = build(&s);
    let err = EncodedTable::new(&s, Encoding::Mod3, &values)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("minimized") && err.contains("not consistent") && err.contains("aware"),
        "{err}"
    );
    let out = tempfile::tempdir().unwrap();
    let partition = Partition::named("8:4-4").unwrap();
    let err = open_or_build(
        out.path(),
        &partition,
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Mod3,
        &BuildOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not consistent"), "{err}");
}

fn set_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn files_are_byte_identical_across_threads_and_task_sizes() {
    let root = tempfile::tempdir().unwrap();
    let partition = Partition::custom(
        "4x4".parse().unwrap(),
        &["1,2,3,4,5".to_string(), "6,7,8".to_string()],
    )
    .unwrap();
    let mut reference: Option<Vec<(String, Vec<u8>)>> = None;
    let configs = [(1, None), (2, Some(1000)), (4, Some(7777)), (2, None)];
    for (i, (threads, task_ranks)) in configs.into_iter().enumerate() {
        let options = BuildOptions {
            threads,
            task_ranks,
            memory_limit: None,
            ..BuildOptions::default()
        };
        for (rule, encoding) in [
            (BlankRule::Minimized, Encoding::Byte),
            (BlankRule::Minimized, Encoding::min_nibble(4).unwrap()),
            (BlankRule::Aware, Encoding::Mod3),
            (BlankRule::Ignored, Encoding::Nibble),
            (BlankRule::ZeroAware, Encoding::OneBit),
            (BlankRule::ZeroAware, Encoding::Byte),
        ] {
            let out = root.path().join(format!("run{i}"));
            let dir = set_dir(&out, &partition, rule, Goal::BlankFirst, encoding);
            let mut tables = Vec::new();
            for p in partition.patterns() {
                let s =
                    StateSpace::new(partition.board(), Goal::BlankFirst, p.clone(), rule).unwrap();
                let values = build_table(&s, &options, &()).unwrap().values;
                tables.push(write_table(&dir, &s, encoding, &values).unwrap());
            }
            write_manifest(&dir, &partition, Goal::BlankFirst, rule, encoding, &tables).unwrap();
        }
        let mut all = Vec::new();
        for set in std::fs::read_dir(root.path().join(format!("run{i}"))).unwrap() {
            let set = set.unwrap().path();
            for (name, bytes) in set_files(&set) {
                all.push((
                    format!("{}/{name}", set.file_name().unwrap().to_string_lossy()),
                    bytes,
                ));
            }
        }
        all.sort();
        assert_eq!(all.len(), 6 * 3, "6 sets of 2 tables and a manifest");
        match &reference {
            None => reference = Some(all),
            Some(r) => {
                for ((na, a), (nb, b)) in r.iter().zip(&all) {
                    assert_eq!(na, nb);
                    assert!(
                        a == b,
                        "{na} differs with {threads} threads, {task_ranks:?} ranks"
                    );
                }
            }
        }
    }
}

/// A small valid table file: 4x4 {1,2,3} aware in mod3 (43,680 entries, 8,736 payload bytes).
fn small_table(dir: &Path) -> (PathBuf, Vec<u8>) {
    let s = space("4x4", Goal::BlankFirst, &[1, 2, 3], BlankRule::Aware);
    let values = build(&s);
    let pdb = write(dir, &s, Encoding::Mod3, &values);
    let path = pdb.path().to_path_buf();
    drop(pdb);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

fn refused(path: &Path, bytes: &[u8]) -> TableError {
    let err = Pdb::from_vec(path, bytes.to_vec()).expect_err("a damaged table was accepted");
    let msg = err.to_string();
    assert!(
        msg.contains(&path.display().to_string()),
        "the error does not name the file: {msg}"
    );
    err
}

fn refused_on_disk(path: &Path, bytes: &[u8]) -> TableError {
    std::fs::write(path, bytes).unwrap();
    let err = Pdb::open(path).expect_err("a damaged table file was accepted");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    err
}

fn reseal(bytes: &mut [u8]) {
    let crc = crc32fast::hash(&bytes[..OFF_HEADER_CRC]);
    bytes[OFF_HEADER_CRC..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn every_header_bit_flip_and_random_payload_bit_flips_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, good) = small_table(dir.path());
    assert!(Pdb::from_vec(&path, good.clone()).is_ok());
    let damaged = dir.path().join("damaged.pdb");
    for bit in 0..HEADER_LEN * 8 {
        let mut b = good.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        let err = if bit % 97 == 0 {
            refused_on_disk(&damaged, &b)
        } else {
            refused(&damaged, &b)
        };
        assert!(
            matches!(
                err.defect(),
                Some(Defect::Magic { .. } | Defect::Version { .. } | Defect::HeaderChecksum { .. })
            ),
            "bit {bit}: {err}"
        );
    }
    let mut rng = StdRng::seed_from_u64(3);
    let payload_bits = (good.len() - HEADER_LEN) * 8;
    for i in 0..3000 {
        let bit = HEADER_LEN * 8 + rng.random_range(0..payload_bits);
        let mut b = good.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        let err = if i % 50 == 0 {
            refused_on_disk(&damaged, &b)
        } else {
            refused(&damaged, &b)
        };
        assert!(
            matches!(err.defect(), Some(Defect::PayloadChecksum { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("payload checksum mismatch"));
    }
}

#[test]
fn truncation_appending_and_edited_fields_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, good) = small_table(dir.path());
    let damaged = dir.path().join("damaged.pdb");
    for len in [0, 5, 8, 100, HEADER_LEN - 1, HEADER_LEN, good.len() - 1] {
        let err = refused_on_disk(&damaged, &good[..len]);
        let msg = err.to_string();
        assert!(msg.contains("truncated"), "{len}: {msg}");
    }
    for extra in [1usize, 4096] {
        let mut b = good.clone();
        b.extend(std::iter::repeat_n(0u8, extra));
        let msg = refused_on_disk(&damaged, &b).to_string();
        assert!(msg.contains("unexpected bytes after the payload"), "{msg}");
    }
    // The magic.
    let mut b = good.clone();
    b[0] = b'X';
    assert!(
        refused(&path, &b)
            .to_string()
            .contains("not a tilepdb table")
    );
    // The major version, with and without a fixed-up checksum.
    for fix in [false, true] {
        let mut b = good.clone();
        b[8] = 2;
        if fix {
            reseal(&mut b);
        }
        let msg = refused(&path, &b).to_string();
        assert!(msg.contains("format version 2.0 is not supported"), "{msg}");
    }
    // A newer minor version of the same major is read (its new fields would be in the
    // reserved bytes), once the header's checksum matches.
    let mut b = good.clone();
    b[10] = 1;
    assert!(refused(&path, &b).to_string().contains("header checksum"));
    reseal(&mut b);
    assert_eq!(Pdb::from_vec(&path, b).unwrap().header().minor, 1);
    // The board: 4x4 -> 5x4 (more entries), 4x4 -> 3x4 (tile 13 is off the board).
    for (w, needle) in [(5u8, "entries"), (3u8, "tiles")] {
        let mut b = good.clone();
        b[16] = w;
        assert!(refused(&path, &b).to_string().contains("header checksum"));
        reseal(&mut b);
        let msg = refused(&path, &b).to_string();
        assert!(msg.contains(needle), "{msg}");
    }
    // Blank rule minimized with mod3.
    let mut b = good.clone();
    b[19] = 0;
    reseal(&mut b);
    let msg = refused(&path, &b).to_string();
    assert!(msg.contains("not consistent"), "{msg}");
    // A missing file.
    let err = Pdb::open(dir.path().join("missing.pdb")).unwrap_err();
    assert!(err.to_string().contains("missing.pdb"), "{err}");
}

#[test]
fn lookups_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = small_table(dir.path());
    let pdb = Pdb::open(&path).unwrap();
    let err = pdb.value(pdb.entries()).unwrap_err().to_string();
    assert!(err.contains("out of range"), "{err}");
    let other: Board = "3x3".parse().unwrap();
    let err = pdb
        .value_of_state(&PuzzleState::goal(other, Goal::BlankFirst))
        .unwrap_err()
        .to_string();
    assert!(err.contains("3x3") && err.contains("4x4"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..9000)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.pdb");
        std::fs::write(&path, &bytes).unwrap();
        prop_assert!(Pdb::open(&path).is_err());
    }

    /// Damage to a valid file, with both checksums fixed up so that the fields and the
    /// payload are what the reader meets: refused or read, never a panic, also in lookups.
    #[test]
    fn resealed_damage_never_panics(
        edits in proptest::collection::vec((0usize..2136, any::<u8>()), 1..4),
        payload_edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
    ) {
        let s = space("3x3", Goal::BlankFirst, &[1, 2, 3], BlankRule::Aware);
        let values = build(&s);
        let table = EncodedTable::new(&s, Encoding::Mod3, &values).unwrap();
        let mut b = table.header.to_bytes();
        b.extend_from_slice(table.payload());
        for (off, v) in edits {
            b[off] = v;
        }
        let payload_len = b.len() - HEADER_LEN;
        for (off, v) in payload_edits {
            b[HEADER_LEN + off % payload_len] = v;
        }
        let crc = crc32fast::hash(&b[HEADER_LEN..]);
        b[88..92].copy_from_slice(&crc.to_le_bytes());
        reseal(&mut b);
        if let Ok(pdb) = Pdb::from_vec("fuzz.pdb", b) {
            for i in [0, 1, pdb.entries() / 2, pdb.entries() - 1] {
                let _ = pdb.value(i);
            }
            let _ = pdb.decode_all();
            let _ = verify_deep(&pdb);
        }
    }
}

#[test]
fn sets_open_through_their_manifest_and_refuse_foreign_files() {
    let cache = tempfile::tempdir().unwrap();
    let partition = Partition::named("8:4-4").unwrap();
    let options = BuildOptions::default();
    let open = |goal, encoding| {
        open_or_build(
            cache.path(),
            &partition,
            goal,
            BlankRule::Aware,
            encoding,
            &options,
        )
        .unwrap()
    };
    let (set, built) = open(Goal::BlankFirst, Encoding::Byte);
    assert_eq!(built, 2);
    assert!(set.reflection());
    let (mod3, _) = open(Goal::BlankFirst, Encoding::Mod3);
    let (nibble, _) = open(Goal::BlankFirst, Encoding::Nibble);
    let (_, built) = open(Goal::BlankFirst, Encoding::Byte);
    assert_eq!(built, 0, "the second request is served from the cache");

    // Sums by full state agree across encodings; reflection never lowers the value.
    let mut rng = StdRng::seed_from_u64(7);
    for s in random_walk(set.board(), set.goal(), 400, &mut rng) {
        let h = set.value(&s).unwrap();
        assert_eq!(mod3.value(&s).unwrap(), h);
        assert!(nibble.value(&s).unwrap() <= h);
        let r = set.value_reflected(&s).unwrap();
        assert!(r >= h);
        assert_eq!(r, set.value(&s.transposed(set.goal())).unwrap().max(h));
    }

    // A table of the other goal put in place of one of the set's: refused.
    let dir = set.dir().to_path_buf();
    drop((set, mod3, nibble));
    let (other, _) = open(Goal::BlankLast, Encoding::Byte);
    let name = table_file_name(other.tables()[0].space());
    std::fs::copy(other.dir().join(&name), dir.join(&name)).unwrap();
    let err = TableSet::open(&dir).unwrap_err().to_string();
    assert!(
        err.contains(&name) && err.contains("goal blank-last"),
        "{err}"
    );
    // The cache notices and builds that table again.
    let (_, built) = open(Goal::BlankFirst, Encoding::Byte);
    assert_eq!(built, 1);
    TableSet::open(&dir).unwrap();

    // A manifest whose patterns overlap: refused.
    let mut m = Manifest::read(&dir).unwrap();
    m.tables[1].tiles[0] = 1;
    m.write(&dir).unwrap();
    let err = TableSet::open(&dir).unwrap_err().to_string();
    assert!(
        err.contains("manifest.json") && err.contains("more than one pattern"),
        "{err}"
    );
}

#[test]
fn reflection_of_the_exact_table_gives_the_same_value() {
    // 8:8 is the exact distance: a state and its reflection are equally far from the goal.
    let cache = tempfile::tempdir().unwrap();
    let (set, _) = open_or_build(
        cache.path(),
        &Partition::named("8:8").unwrap(),
        Goal::BlankLast,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    for s in random_walk(set.board(), set.goal(), 500, &mut rng) {
        let t = s.transposed(set.goal());
        assert!(t.is_solvable(set.goal()));
        assert_eq!(set.value(&s).unwrap(), set.value(&t).unwrap(), "{s}");
    }
}

fn cli(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn inspect_plans_the_sizes_of_the_design() {
    let (ok, out, err) = cli(&[
        "inspect",
        "--plan",
        "--puzzle",
        "24",
        "--pattern",
        "1,2,5,6,7,12",
        "--blank",
        "aware",
        "--encoding",
        "mod3",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("2,422,728,000 entries in 484,545,600 payload bytes"),
        "{out}"
    );
    let (ok, out, err) = cli(&[
        "inspect",
        "--plan",
        "--partition",
        "24:6-6-6-6",
        "--encoding",
        "min-nibble:2",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for t in v["tables"].as_array().unwrap() {
        assert_eq!(t["entries"], 127_512_000);
        assert_eq!(t["stored"], 63_756_000);
        assert_eq!(t["stored_unit"], "groups");
        assert_eq!(t["payload_bytes"], 31_878_000);
    }
    let (ok, _, err) = cli(&[
        "inspect",
        "--plan",
        "--puzzle",
        "15",
        "--pattern",
        "1,2,3",
        "--encoding",
        "mod3",
    ]);
    assert!(!ok && err.contains("not consistent"), "{err}");
}

#[test]
fn build_inspect_and_verify_commands() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let (ok, _, err) = cli(&[
        "build",
        "--partition",
        "8:4-4",
        "--blank",
        "ignored",
        "--encoding",
        "mod3",
        "--out",
        o,
    ]);
    assert!(ok, "{err}");
    let set = out.path().join("3x3-4-4-ignored-blank-first-mod3");
    let (ok, text, err) = cli(&["inspect", set.to_str().unwrap(), "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let t = &v["tables"][0];
    for key in [
        "board",
        "goal",
        "blank_rule",
        "tiles",
        "encoding",
        "entries",
        "max_value",
        "histogram",
        "checksum",
    ] {
        assert!(!t[key].is_null(), "{key} missing in {t}");
    }
    assert_eq!(t["entries"], 3024);
    let (ok, text, err) = cli(&["verify", "--deep", set.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(text.matches("ok ").count(), 2, "{text}");
    // Damage one byte of a table: verify fails and names the file.
    let file = set.join("pattern-5-6-7-8.pdb");
    let mut b = std::fs::read(&file).unwrap();
    *b.last_mut().unwrap() ^= 1;
    std::fs::write(&file, b).unwrap();
    let (ok, text, err) = cli(&["verify", set.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        text.contains("pattern-5-6-7-8.pdb") && text.contains("payload checksum mismatch"),
        "{text}"
    );
    assert!(err.contains("1 of 2"), "{err}");
    // The build notices and rebuilds it.
    let (ok, text, err) = cli(&[
        "build",
        "--partition",
        "8:4-4",
        "--blank",
        "ignored",
        "--encoding",
        "mod3",
        "--out",
        o,
    ]);
    assert!(ok, "{err}");
    assert!(text.contains("1 built, 1 already built"), "{text}");
    let (ok, _, err) = cli(&["verify", set.to_str().unwrap()]);
    assert!(ok, "{err}");
}

/// Sampled entries of 15-puzzle 7-tile tables: {1..7} minimized (57,657,600 entries) in byte,
/// nibble and min-nibble; {1..7} ignored in mod3 (roots and parent chains).
/// Run: `cargo test --release -p tilepdb-coordinator --test integration table_format:: -- --ignored`.
#[test]
#[ignore = "builds two 15-puzzle 7-tile tables (about 90 s in release)"]
fn sampled_entries_of_a_7_tile_table() {
    let dir = tempfile::tempdir().unwrap();
    let tiles = [1, 2, 3, 4, 5, 6, 7];
    let mut rng = StdRng::seed_from_u64(17);
    let s = space("4x4", Goal::BlankFirst, &tiles, BlankRule::Minimized);
    let values = build(&s);
    for encoding in [
        Encoding::Byte,
        Encoding::Nibble,
        Encoding::min_nibble(2).unwrap(),
        Encoding::min_nibble(16).unwrap(),
    ] {
        let pdb = write(&dir.path().join(encoding.name()), &s, encoding, &values);
        for _ in 0..200_000 {
            let i = rng.random_range(0..pdb.entries());
            let h = values[i as usize];
            let v = pdb.value(i).unwrap();
            let mut cells = [0u8; 16];
            s.ranker().unrank(i, &mut cells);
            let m = s.manhattan(&cells);
            match encoding {
                Encoding::Nibble if (u32::from(h) - m) / 2 >= 15 => {
                    assert_eq!(u32::from(v), m + 30);
                }
                Encoding::Byte | Encoding::Nibble => assert_eq!(v, h),
                _ => assert!(v <= h && u32::from(v) >= m),
            }
        }
    }
    drop(values);
    let s = space("4x4", Goal::BlankFirst, &tiles, BlankRule::Ignored);
    let values = build(&s);
    let pdb = write(&dir.path().join("mod3"), &s, Encoding::Mod3, &values);
    for _ in 0..20_000 {
        let i = rng.random_range(0..pdb.entries());
        assert_eq!(pdb.root_value(i).unwrap(), values[i as usize], "entry {i}");
    }
    check_parent_chains(&pdb, &values, 5);
}
