//! `tilepdb-solve bench` end to end on the 3x3 board: the real command on a generated instance
//! file with four entries (two computed heuristics, a 4-4 table set with and without the
//! reflection); every output file is written, the records agree with independent searches,
//! the fronts agree with a brute-force dominance check, and every SVG is well-formed XML.

use std::path::Path;
use std::process::Command;

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Board, Goal, Partition, PuzzleState};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_solver::heuristic::Manhattan;
use tilepdb_solver::search::{Limits, ida_star};

use crate::support::solve_program;

fn parse_svg(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg", "{}", path.display());
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    root.descendants().count()
}

/// The PNG decodes to the size the renderer states (twice the chart's 720 x 440) and has
/// something drawn on its white background.
fn check_png(path: &Path) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (1440, 880), "{}", path.display());
    let drawn = pixels[..info.buffer_size()]
        .chunks(info.color_type.samples())
        .filter(|p| p.iter().take(3).any(|&c| c < 200))
        .count();
    let share = drawn as f64 / f64::from(info.width * info.height);
    assert!(
        share > 0.005 && share < 0.9,
        "{}: {share} drawn",
        path.display()
    );
}

#[test]
fn a_small_bench_run_writes_consistent_results_and_valid_plots() {
    let work = tempfile::tempdir().unwrap();
    let (set, _) = open_or_build(
        work.path(),
        &Partition::named("8:4-4").unwrap(),
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
    let dir = set.dir().to_str().unwrap().to_string();
    let instances = work.path().join("instances.txt");
    let out = solve_program(&[
        "gen",
        "--puzzle",
        "8",
        "--uniform",
        "--count",
        "12",
        "--seed",
        "4",
        "--output",
        instances.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let results = work.path().join("bench");
    let tables = format!("tables:{dir}");
    let reflected = format!("tables+reflect:{dir}");
    let out = solve_program(&[
        "bench",
        instances.to_str().unwrap(),
        "--entry",
        "misplaced",
        "--entry",
        "manhattan",
        "--entry",
        &tables,
        "--entry",
        &reflected,
        "--max-nodes",
        "20000",
        "--random-states",
        "200",
        "--threads",
        "2",
        "--out",
        results.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("memory/nodes front"), "{stdout}");

    // Records: one per entry and instance, lengths optimal where solved.
    let board: Board = "3x3".parse().unwrap();
    let states: Vec<PuzzleState> = std::fs::read_to_string(&instances)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| PuzzleState::parse(board, l).unwrap())
        .collect();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let optimal: Vec<usize> = states
        .iter()
        .map(|s| {
            ida_star(s, Goal::BlankFirst, &h, &Limits::default())
                .unwrap()
                .length()
                .unwrap()
        })
        .collect();
    let jsonl = std::fs::read_to_string(results.join("results.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 4 * states.len());
    let mut budget_stops = 0;
    for r in &records {
        let number = usize::try_from(r["number"].as_u64().unwrap()).unwrap();
        // The iterations' counts add up to the totals.
        for key in ["expanded", "generated"] {
            let iterations = r["per_iteration"].as_array().unwrap();
            let sum: u64 = iterations.iter().map(|i| i[key].as_u64().unwrap()).sum();
            assert_eq!(sum, r[key].as_u64().unwrap(), "{key} of {r}");
        }
        match r["outcome"].as_str().unwrap() {
            "solved" => assert_eq!(
                usize::try_from(r["length"].as_u64().unwrap()).unwrap(),
                optimal[number - 1]
            ),
            "node-budget" => {
                budget_stops += 1;
                assert!(r["length"].is_null());
                assert!(r["generated"].as_u64().unwrap() >= 20000);
            }
            other => panic!("outcome {other}"),
        }
    }
    // Misplaced tiles runs out of the budget on some 3x3 states, the tables never do.
    assert!(
        budget_stops > 0,
        "the budget was never reached: a weak test"
    );
    let csv = std::fs::read_to_string(results.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + records.len());

    // Summary: the tables beat Manhattan in nodes, the reflection never loses, and the fronts
    // are the non-dominated entries.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("summary.json")).unwrap())
            .unwrap();
    let entries = summary["summaries"].as_array().unwrap();
    assert_eq!(entries.len(), 4);
    let get = |i: usize, key: &str| entries[i][key].as_f64().unwrap();
    assert!(get(2, "mean_generated") < get(1, "mean_generated"));
    for (i, entry) in entries.iter().enumerate() {
        // IDA* expands fewer nodes than it generates, and the process spent CPU on each entry.
        assert!(
            get(i, "mean_expanded") > 0.0 && get(i, "mean_expanded") < get(i, "mean_generated")
        );
        assert!(
            entry["total_expanded"].as_u64().unwrap() < entry["total_generated"].as_u64().unwrap()
        );
        assert!(get(i, "cpu_seconds") >= 0.0 && get(i, "generated_per_cpu_second") >= 0.0);
    }
    assert!(get(3, "mean_random_h") >= get(2, "mean_random_h"));
    assert!(get(2, "mean_random_h") > get(1, "mean_random_h"));
    assert!(get(2, "table_bytes") > 0.0 && get(1, "table_bytes") == 0.0);
    for (front, x, y, sign) in [
        ("on_memory_front", "table_bytes", "mean_generated", 1.0),
        ("on_time_front", "total_seconds", "solved", -1.0),
    ] {
        for (i, entry) in entries.iter().enumerate() {
            let dominated = (0..4).any(|j| {
                let (xi, yi) = (get(i, x), sign * get(i, y));
                let (xj, yj) = (get(j, x), sign * get(j, y));
                xj <= xi && yj <= yi && (xj < xi || yj < yi)
            });
            assert_eq!(entry[front].as_bool().unwrap(), !dominated, "{front} {i}");
        }
    }
    assert!(summary["machine"].as_str().unwrap().contains("cores"));
    let csv = std::fs::read_to_string(results.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);

    // Plots: the fixed three and one histogram per table of the set (two tables), all SVG.
    let mut svgs = 0;
    for file in std::fs::read_dir(&results).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            assert!(parse_svg(&path) > 10, "{}: nearly empty", path.display());
            svgs += 1;
        }
    }
    assert_eq!(svgs, 3 + 2);
    // With the `png` feature every SVG also comes as a PNG of twice its size, not blank.
    let mut pngs = 0;
    for file in std::fs::read_dir(&results).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "png") {
            assert!(path.with_extension("svg").exists(), "{}", path.display());
            check_png(&path);
            pngs += 1;
        }
    }
    assert_eq!(pngs, if cfg!(feature = "png") { svgs } else { 0 });
    let report = std::fs::read_to_string(results.join("report.md")).unwrap();
    assert!(report.contains("pareto-memory-nodes.svg") && report.contains("machine:"));
}

#[test]
fn bad_entries_and_mismatches_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("o");
    let o = out_dir.to_str().unwrap();
    for (args, needle) in [
        (
            vec![
                "bench",
                "--state",
                "1 0 2 3 4 5 6 7 8",
                "--puzzle",
                "8",
                "--entry",
                "manhatan",
                "--out",
                o,
            ],
            "is not an entry",
        ),
        (
            vec![
                "bench",
                "--state",
                "1 0 2 3 4 5 6 7 8",
                "--puzzle",
                "8",
                "--entry",
                "manhattan",
                "--entry",
                "manhattan",
                "--out",
                o,
            ],
            "two entries are labelled",
        ),
        (
            vec![
                "bench",
                "--state",
                "1 0 2 3 4 5 6 7 8",
                "--entry",
                "tables:/nonexistent/set",
                "--out",
                o,
            ],
            "/nonexistent/set",
        ),
        (
            vec![
                "bench",
                "--state",
                "1 0 2 3 4 5 6 7 8",
                "--puzzle",
                "8",
                "--entry",
                "manhattan",
                "--timeout",
                "0",
                "--out",
                o,
            ],
            "--timeout",
        ),
    ] {
        let out = solve_program(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
}

/// Every output of a bench run says what made it: `summary.json` the program, its version,
/// the commit it was built from and the command line, and each entry's table files with the
/// checksums of the set's manifest; the CSV, the report and the SVG plots say them too.
#[test]
fn bench_outputs_name_the_program_commit_command_and_table_checksums() {
    let work = tempfile::tempdir().unwrap();
    let (set, _) = open_or_build(
        work.path(),
        &Partition::named("8:4-4").unwrap(),
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
    let dir = set.dir().to_str().unwrap().to_string();
    let results = work.path().join("bench");
    let tables = format!("tables:{dir}");
    let args = [
        "bench",
        "--state",
        "1 2 0 3 4 5 6 7 8",
        "--entry",
        "manhattan",
        "--entry",
        &tables,
        "--random-states",
        "10",
        "--out",
        results.to_str().unwrap(),
    ];
    let out = solve_program(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["program"], "tilepdb-solve");
    assert_eq!(summary["program_version"], env!("CARGO_PKG_VERSION"));
    let commit = summary["commit"].as_str().unwrap().to_string();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    // Built in a git checkout (and not told otherwise): the checkout's commit.
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(head) = head.filter(|_| option_env!("TILEPDB_COMMIT").is_none()) {
        assert_eq!(commit, head);
    }
    let line: Vec<&str> = summary["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(line[0].contains("tilepdb-solve"), "{line:?}");
    assert_eq!(line[1..], args[..]);

    // The tables of the entry, with the manifest's checksums; none for Manhattan.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(set.dir().join("manifest.json")).unwrap())
            .unwrap();
    let entries = summary["summaries"].as_array().unwrap();
    assert_eq!(entries[0]["tables"].as_array().unwrap().len(), 0);
    assert!(entries[0]["set_dir"].is_null());
    assert_eq!(entries[1]["set_dir"], dir.as_str());
    let listed = entries[1]["tables"].as_array().unwrap();
    let recorded = manifest["tables"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed.len(), recorded.len());
    for (t, m) in listed.iter().zip(recorded) {
        assert_eq!(t["checksum"], m["checksum"], "{t:#} against {m:#}");
        assert_eq!(t["tiles"], m["tiles"]);
        assert!(t["checksum"].as_str().unwrap().starts_with("crc32:"));
        assert!(t["file_bytes"].as_u64().unwrap() > 0);
    }
    let checksum = listed[0]["checksum"].as_str().unwrap();

    // The text outputs.
    let report = std::fs::read_to_string(results.join("report.md")).unwrap();
    assert!(
        report.contains(&commit) && report.contains(checksum),
        "{report}"
    );
    assert!(report.contains("--random-states 10"), "{report}");
    let csv = std::fs::read_to_string(results.join("summary.csv")).unwrap();
    assert!(csv.contains(checksum) && csv.contains(&commit), "{csv}");
    let svg = std::fs::read_to_string(results.join("pareto-memory-nodes.svg")).unwrap();
    assert!(svg.contains(&commit), "{svg}");
    assert!(parse_svg(&results.join("pareto-memory-nodes.svg")) > 10);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&commit), "{stdout}");
}
