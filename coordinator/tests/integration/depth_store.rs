//! The compact depth store (issue 10): a build that keeps only what the table's encoding
//! stores of each depth (bit 1 for `1-bit`, `d mod 3` for `mod3`) writes the same table files
//! as a build that keeps a byte per entry, for every blank rule and encoding, on 1, 2 and 4
//! threads; and its memory figure is what a too small limit refuses, before anything is
//! allocated.

use tilepdb_common::table::{DepthCode, Encoding, TableValues};
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_memory, build_table};
use tilepdb_coordinator::engine::build_memory::PROGRAM_BYTES;
use tilepdb_coordinator::output::write_table;

fn space(board: &str, goal: Goal, tiles: &[u8], rule: BlankRule) -> StateSpace {
    let b: Board = board.parse().unwrap();
    StateSpace::new(b, goal, Pattern::new(b, tiles.to_vec()).unwrap(), rule).unwrap()
}

const RULES: [BlankRule; 4] = [
    BlankRule::Minimized,
    BlankRule::Aware,
    BlankRule::ZeroAware,
    BlankRule::Ignored,
];

/// The file of `space`'s table built with `options`, written in `encoding`.
fn file(space: &StateSpace, options: &BuildOptions, encoding: Encoding) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let table = build_table(space, options, &()).unwrap();
    let expected = options.depth_code(space);
    assert_eq!(
        table.values.code(),
        expected,
        "{} {encoding}",
        space.pattern()
    );
    if expected != DepthCode::Byte {
        assert!(
            table.depth_bytes * 8 <= space.region_search_states().unwrap() * expected.bits() + 8,
            "a packed store of {} bytes",
            table.depth_bytes
        );
    }
    let pdb = write_table(dir.path(), space, encoding, &table.values).unwrap();
    std::fs::read(pdb.path()).unwrap()
}

#[test]
fn compact_store_writes_the_byte_store_files() {
    let mut packed = 0;
    for (board, tiles) in [
        ("3x3", &[1u8, 2, 3, 4][..]),
        ("3x4", &[1, 2, 5, 6]),
        ("4x4", &[1, 2, 3, 4]),
    ] {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            for rule in RULES {
                let s = space(board, goal, tiles, rule);
                let bytes = BuildOptions {
                    threads: 2,
                    ..BuildOptions::default()
                };
                for encoding in Encoding::ALL {
                    if encoding.check_rule(rule).is_err() {
                        continue;
                    }
                    let reference = file(&s, &bytes, encoding);
                    for threads in [1, 2, 4] {
                        let compact = BuildOptions {
                            threads,
                            task_ranks: Some(5),
                            encoding: Some(encoding),
                            ..BuildOptions::default()
                        };
                        packed += u32::from(compact.depth_code(&s) != DepthCode::Byte);
                        assert!(
                            file(&s, &compact, encoding) == reference,
                            "{board} {goal} {rule} {tiles:?} {encoding} on {threads} threads"
                        );
                    }
                }
            }
        }
    }
    // 1-bit and mod3 for aware, zero-aware and ignored on 3 boards, 2 goals, 3 thread counts.
    assert_eq!(packed, 2 * 3 * 3 * 2 * 3);
}

#[test]
fn compact_store_of_five_tiles_on_4x4() {
    for rule in [BlankRule::ZeroAware, BlankRule::Aware] {
        let s = space("4x4", Goal::BlankFirst, &[1, 2, 5, 6, 7], rule);
        let bytes = BuildOptions::default();
        for encoding in [Encoding::OneBit, Encoding::Mod3] {
            let reference = file(&s, &bytes, encoding);
            for threads in [1, 4] {
                let compact = BuildOptions {
                    threads,
                    encoding: Some(encoding),
                    ..BuildOptions::default()
                };
                assert!(
                    file(&s, &compact, encoding) == reference,
                    "{rule} {encoding} {threads}"
                );
            }
        }
    }
}

#[test]
fn packed_values_carry_the_histogram_of_the_bytes() {
    for rule in [BlankRule::Aware, BlankRule::ZeroAware, BlankRule::Ignored] {
        let s = space("3x4", Goal::BlankLast, &[3, 4, 7, 8], rule);
        let bytes = build_table(&s, &BuildOptions::default(), &()).unwrap();
        let compact = BuildOptions {
            encoding: Some(Encoding::OneBit),
            ..BuildOptions::default()
        };
        let packed = build_table(&s, &compact, &()).unwrap();
        assert_eq!(packed.histogram, bytes.histogram, "{rule}");
        assert_eq!(packed.unreached, bytes.unreached, "{rule}");
        let TableValues::Packed(values) = &packed.values else {
            panic!("{rule}: a byte store");
        };
        assert_eq!(values.histogram, bytes.histogram, "{rule}");
        // Bit 1 of each value, in entry order.
        let expected = bytes.values.bytes().unwrap();
        for (e, &v) in expected.iter().enumerate() {
            assert_eq!(
                DepthCode::OneBit.get(&values.data, e as u64),
                (v >> 1) & 1,
                "{rule} {e}"
            );
        }
    }
}

#[test]
fn packed_values_refuse_another_encoding() {
    let s = space("3x3", Goal::BlankFirst, &[1, 2, 3], BlankRule::ZeroAware);
    let compact = BuildOptions {
        encoding: Some(Encoding::OneBit),
        ..BuildOptions::default()
    };
    let table = build_table(&s, &compact, &()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = write_table(dir.path(), &s, Encoding::Nibble, &table.values)
        .unwrap_err()
        .to_string();
    assert!(err.contains("1-bit") && err.contains("nibble"), "{err}");
}

#[test]
fn memory_figure_counts_the_compact_store() {
    // 24-puzzle, 7 tiles, zero-aware: 4,066,655,040 states. Two-bit array: 1,016,663,760
    // bytes; one bit each: 508,331,880 bytes; the region index: 8 * C(25, 7) = 3,845,600
    // bytes of sets and 4 * 806,876 = 3,227,504 of region blocks.
    let s = space(
        "5x5",
        Goal::BlankFirst,
        &[1, 2, 5, 6, 7, 10, 11],
        BlankRule::ZeroAware,
    );
    let one_bit = BuildOptions {
        encoding: Some(Encoding::OneBit),
        ..BuildOptions::default()
    };
    // The region index at most: five words per 64 of the 480,700 sets, a mask per region.
    let (bytes, detail) = build_memory(&s, &one_bit).unwrap();
    assert_eq!(
        bytes,
        PROGRAM_BYTES + 1_016_663_760 + 508_331_880 + 300_440 + 3_227_504,
        "{detail}"
    );
    // Written and proven: the layer search's two bits per state, two flags per block
    // (2 * 806,876) and its own region index, beside a 4 MiB part of the file mapped (each
    // layer is compared with the file a part at a time, each part let go), hold less than the
    // build, whose figure is the plan's.
    let proven = BuildOptions {
        written_as: Some(Encoding::OneBit),
        proves: true,
        ..one_bit.clone()
    };
    let (bytes, detail) = build_memory(&s, &proven).unwrap();
    let index = 300_440 + 3_227_504;
    let build = 1_016_663_760 + 508_331_880 + index;
    assert!((1_016_663_760 + 2 * 806_876 + index) + (4 << 20) < build);
    assert_eq!(bytes, PROGRAM_BYTES + build, "{detail}");
    for words in ["its proof (layer-search)", "a part at a time"] {
        assert!(detail.contains(words), "{words}: {detail}");
    }
    // A byte per state is the search's state, with no two-bit array beside it: the store,
    // then the store with the part of the file being written from it (a part of 512 Ki
    // entries, written as it is, and the file's 64 KiB buffer).
    let (bytes, detail) = build_memory(&s, &BuildOptions::default()).unwrap();
    assert_eq!(
        bytes,
        PROGRAM_BYTES + 4_066_655_040 + (524_288 + 65_536) + 300_440 + 3_227_504,
        "{detail}"
    );
    assert!(detail.contains("the search's state"), "{detail}");
    // Refused before anything is allocated (a 4 GB allocation would be felt).
    let limited = BuildOptions {
        memory_limit: Some(1 << 30),
        ..one_bit
    };
    let err = build_table(&s, &limited, &()).unwrap_err().to_string();
    assert!(
        err.contains("needs 1.4 GiB") && err.contains("1.0 GiB"),
        "{err}"
    );
}
