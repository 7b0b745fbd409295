//! The real `tilepdb-coordinator` binary, run as a user would run it.
//!
//! * A small build writes one file per pattern whose bytes are the library's table, and its
//!   `--json` summary is consistent with those files (histograms sum to the placements).
//! * `--check` passes for every blank rule; `partitions` lists the known partitions with their
//!   tiles.
//! * Bad input of each kind (overlapping or out-of-range patterns, boards over 5x5, unknown
//!   partitions, goals or blank rules, a partition of another board, patterns too large for
//!   the memory, too many threads, an output path that is a file) exits non-zero with a clear
//!   message on stderr, never a panic, and writes nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table};

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "tilepdb-cli-test-{}-{n}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the binary with `args` in `dir`, with plain info logs on stderr.
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must succeed; returns its stdout and stderr.
fn succeeds(dir: &Path, args: &[&str]) -> (String, String) {
    let out = run(dir, args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "{args:?} failed ({:?}):\n{stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "{args:?}:\n{stderr}");
    (stdout, stderr)
}

/// Runs `build` with `args` and an `--out` inside a fresh directory: it must fail with a
/// clear message containing every one of `expected`, without a panic, writing nothing.
fn build_fails(args: &[&str], expected: &[&str]) {
    let tmp = TempDir::new("bad");
    let out_dir = tmp.path().join("tables");
    let mut all = vec!["build", "--out", out_dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run(tmp.path(), &all);
    let stderr = text(&out.stderr);
    let code = out.status.code();
    assert!(
        matches!(code, Some(1 | 2)),
        "{args:?}: exit {:?} (101 is a panic, none a signal):\n{stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "{args:?} panicked:\n{stderr}");
    assert!(
        stderr.contains("error:"),
        "{args:?}: no error line:\n{stderr}"
    );
    for want in expected {
        assert!(
            stderr.contains(want),
            "{args:?}: message lacks {want:?}:\n{stderr}"
        );
    }
    assert!(
        !out_dir.exists(),
        "{args:?}: the refused build wrote {}",
        out_dir.display()
    );
    assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
}

fn library_table(board: &str, tiles: &[u8], rule: BlankRule) -> Vec<u8> {
    let board: Board = board.parse().unwrap();
    let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
    let space = StateSpace::new(board, Goal::BlankFirst, pattern, rule).unwrap();
    build_table(&space, &BuildOptions::default(), &())
        .unwrap()
        .values
        .into_bytes()
        .expect("a byte per entry")
}

#[test]
fn small_build_writes_the_tables_and_a_json_summary() {
    let tmp = TempDir::new("build");
    let out_dir = tmp.path().join("out");
    let (stdout, _) = succeeds(
        tmp.path(),
        &[
            "build",
            "--puzzle",
            "3x3",
            "--pattern",
            "1,2,3",
            "--pattern",
            "4,5,6",
            "--threads",
            "2",
            "--json",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let summary: Value = serde_json::from_str(&stdout).expect("stdout is JSON");
    assert_eq!(summary["partition"], "3x3:3-3");
    assert_eq!(
        Path::new(summary["set_dir"].as_str().unwrap()),
        out_dir.join("3x3-1.2.3_4.5.6-minimized-blank-first")
    );
    let tables = summary["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 2);
    for (table, tiles) in tables.iter().zip([[1u8, 2, 3], [4, 5, 6]]) {
        let what = format!("table {tiles:?}");
        assert_eq!(table["board"], "3x3");
        assert_eq!(table["goal"], "blank-first");
        assert_eq!(table["blank_rule"], "minimized");
        assert_eq!(table["tiles"], serde_json::json!(tiles), "{what}");
        assert_eq!(table["placements"], 9 * 8 * 7, "{what}");
        assert_eq!(table["entries"], 9 * 8 * 7, "{what}");
        assert_eq!(table["unreached"], 0, "{what}");
        let histogram: Vec<u64> = table["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(histogram.iter().sum::<u64>(), 504, "{what}");
        assert_eq!(histogram[0], 1, "{what}: only the goal placement is 0");
        assert_eq!(table["max_value"], histogram.len() as u64 - 1, "{what}");

        // The file (byte encoding) is a 4096-byte header, then one byte per entry: the
        // library's values, whose counts are the histogram.
        let file = PathBuf::from(table["file"].as_str().unwrap());
        assert_eq!(
            file,
            out_dir.join(format!(
                "3x3-1.2.3_4.5.6-minimized-blank-first/pattern-{}-{}-{}.pdb",
                tiles[0], tiles[1], tiles[2]
            ))
        );
        let file_bytes = std::fs::read(&file).unwrap();
        assert_eq!(&file_bytes[..8], b"TILEPDB\x1a", "{what}");
        let bytes = file_bytes[4096..].to_vec();
        assert_eq!(bytes.len(), 504, "{what}");
        assert_eq!(
            bytes,
            library_table("3x3", &tiles, BlankRule::Minimized),
            "{what}"
        );
        let mut counts = vec![0u64; histogram.len()];
        for &b in &bytes {
            counts[b as usize] += 1;
        }
        assert_eq!(counts, histogram, "{what}");
    }
    // No partial files left behind: the two tables and the set's manifest.
    let names: Vec<String> =
        std::fs::read_dir(out_dir.join("3x3-1.2.3_4.5.6-minimized-blank-first"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.iter().any(|n| n == "manifest.json"), "{names:?}");
}

#[test]
fn check_flag_passes_for_every_rule() {
    for rule in ["minimized", "aware", "ignored"] {
        for goal in ["blank-first", "blank-last"] {
            let tmp = TempDir::new("check");
            let out_dir = tmp.path().join("out");
            let (stdout, stderr) = succeeds(
                tmp.path(),
                &[
                    "build",
                    "--puzzle",
                    "3x4",
                    "--pattern",
                    "1,2,3,4",
                    "--pattern",
                    "11,7",
                    "--blank",
                    rule,
                    "--goal",
                    goal,
                    "--check",
                    "--out",
                    out_dir.to_str().unwrap(),
                ],
            );
            assert_eq!(
                stderr.matches("checks passed").count(),
                2,
                "{rule} {goal}:\n{stderr}"
            );
            assert!(stdout.contains("2 table(s) of 3x4:4-2 written"), "{stdout}");
            let set = out_dir.join(format!("3x4-1.2.3.4_11.7-{rule}-{goal}"));
            let slots = if rule == "aware" { 12 - 4 } else { 1 };
            assert_eq!(
                std::fs::metadata(set.join("pattern-1-2-3-4.pdb"))
                    .unwrap()
                    .len(),
                4096 + 12 * 11 * 10 * 9 * slots
            );
        }
    }
}

#[test]
fn partitions_are_listed_with_their_tiles() {
    let tmp = TempDir::new("partitions");
    let (stdout, _) = succeeds(tmp.path(), &["partitions"]);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("15:7-8 "))
        .unwrap_or_else(|| panic!("no 15:7-8 in\n{stdout}"));
    assert!(
        line.contains("{1,2,3,4,5,6,7} {8,9,10,11,12,13,14,15}"),
        "{line}"
    );
    for name in ["8:8", "15:6-6-3", "15:5-5-5", "15:4-4-4-3", "24:6-6-6-6"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("{name} "))),
            "{name} missing"
        );
    }
    assert!(
        stdout.contains("{1,2,5,6,7,12} {3,4,8,9,13,14} {10,11,15,16,20,21} {17,18,19,22,23,24}")
    );

    let (json, _) = succeeds(tmp.path(), &["partitions", "--json"]);
    let entries: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(entries["version"], 1);
    let korf = entries["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["partition"] == "15:7-8")
        .unwrap();
    assert_eq!(korf["board"], "4x4");
    assert_eq!(
        korf["patterns"],
        serde_json::json!([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15]])
    );
}

#[test]
fn overlapping_patterns_are_refused() {
    build_fails(
        &["--puzzle", "15", "--pattern", "1,2,3", "--pattern", "3,4"],
        &["tile 3 is in more than one pattern", "disjoint"],
    );
}

#[test]
fn tiles_off_the_board_are_refused() {
    build_fails(
        &["--puzzle", "15", "--pattern", "1,2,16"],
        &["tile 16 is not on a 4x4 board (tiles 1..15)"],
    );
    build_fails(
        &["--puzzle", "8", "--pattern", "0,1"],
        &["tile 0 is the blank"],
    );
    build_fails(
        &["--puzzle", "8", "--pattern", "1,2,x"],
        &["\"x\" is not a tile number"],
    );
    build_fails(
        &["--puzzle", "8", "--pattern", "1,2,3,4,5,6,7,8,9"],
        &["a 3x3 board has only 8 tiles"],
    );
}

#[test]
fn boards_over_5x5_are_refused() {
    build_fails(&["--puzzle", "6x6"], &["6x6", "at most 25 cells (5x5)"]);
    build_fails(&["--puzzle", "13x2"], &["13x2", "at most 25 cells (5x5)"]);
    build_fails(&["--puzzle", "1x4"], &["1x4", "at least 2"]);
    build_fails(&["--puzzle", "big"], &["cannot parse board \"big\""]);
}

#[test]
fn unknown_names_are_refused() {
    build_fails(
        &["--partition", "15:9-6"],
        &["unknown partition \"15:9-6\"", "15:7-8", "24:6-6-6-6"],
    );
    build_fails(
        &["--puzzle", "8", "--pattern", "1,2", "--blank", "foo"],
        &["foo", "minimized, aware, zero-aware or ignored"],
    );
    build_fails(
        &["--puzzle", "8", "--pattern", "1,2", "--goal", "middle"],
        &["middle", "blank-first or blank-last"],
    );
}

#[test]
fn a_partition_of_another_board_is_refused() {
    build_fails(
        &["--puzzle", "8", "--partition", "15:7-8"],
        &["partition 15:7-8 is for the 4x4 board, not 3x3"],
    );
    build_fails(
        &["--puzzle", "4x2"],
        &["no default partition for 4x2", "--pattern"],
    );
}

#[test]
fn patterns_too_large_for_memory_are_refused_before_allocating() {
    // P(25, 9) = 741,354,768,000 placements; the region index has 1,759,513,674,240
    // (placement, region) states: 439,878,418,560 bytes of two-bit codes beside 741,354,768,000
    // depth bytes, 1.1 TiB (the file is written from the depth bytes, with no second copy);
    // its proof as much: the two-bit codes and as many least distances, the 690 GiB file read a
    // part at a time. More than any test machine has.
    build_fails(
        &["--puzzle", "24", "--pattern", "1,2,3,4,5,6,7,8,9"],
        &[
            "pattern 1,2,3,4,5,6,7,8,9 needs 1.1 TiB",
            "1759513674240 states",
        ],
    );
    // 16 * 15 * 14 * 13 * 12 * 11 = 5,765,760 placements. The search: 5,765,760 depth bytes
    // beside the 2,954,160 bytes of two-bit codes of the 11,816,640 region states, the larger
    // of it and the depth bytes with the part of the file being written (512 KiB, written as
    // it is, and a 64 KiB buffer); with the region index (at most 5 words per 64 of the 8,008
    // sets, and 4 * 16,412 bytes): 8,790,608 bytes.
    // Its proof holds more: the file mapped (4,096 + 5,765,760 bytes, read a part at a time),
    // a least distance per placement and two bits per state, 13,016,728 bytes. With the
    // program's 12 MiB: 25,599,640 bytes (24.4 MiB) proven, 21,373,520 (20.4 MiB) not.
    build_fails(
        &[
            "--puzzle",
            "15",
            "--pattern",
            "1,2,3,4,5,6",
            "--memory-limit",
            "1M",
        ],
        &[
            "needs 24.4 MiB",
            "its proof (layer-search)",
            "more than the 1.0 MiB it may use",
        ],
    );
    build_fails(
        &[
            "--puzzle",
            "15",
            "--pattern",
            "1,2,3,4,5,6",
            "--memory-limit",
            "1M",
            "--no-proof",
        ],
        &["needs 20.4 MiB", "(not proven)"],
    );
    // The whole partition is checked before the first table is built: the first table (the
    // program's 12 MiB and a few KiB) fits in 20 MiB, the second (24.4 MiB) does not.
    build_fails(
        &[
            "--puzzle",
            "15",
            "--pattern",
            "1,2",
            "--pattern",
            "3,4,5,6,7,8",
            "--memory-limit",
            "20M",
        ],
        &["pattern 3,4,5,6,7,8 needs 24.4 MiB"],
    );
    // So many placements that a rank overflows 64 bits.
    build_fails(
        &[
            "--puzzle",
            "24",
            "--pattern",
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20",
        ],
        &["P(25, 20) placements overflow"],
    );
}

#[test]
fn other_bad_options_are_refused() {
    build_fails(
        &["--puzzle", "8", "--pattern", "1,2", "--threads", "100000"],
        &["--threads 100000 is too many"],
    );
    build_fails(
        &["--puzzle", "8", "--pattern", "1,2", "--memory-limit", "8Q"],
        &["unknown unit"],
    );
    build_fails(
        &["--puzzle", "8", "--pattern", "1,2", "--partition", "8:8"],
        &["cannot be used with"],
    );
}

#[test]
fn an_output_path_that_is_a_file_is_refused_clearly() {
    let tmp = TempDir::new("outfile");
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let out = run(
        tmp.path(),
        &[
            "build",
            "--puzzle",
            "8",
            "--pattern",
            "1,2",
            "--out",
            file.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
    // The operating system's reason, once.
    assert_eq!(stderr.matches("os error").count(), 1, "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}
