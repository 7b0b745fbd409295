//! The catalogue on the command line: `fetch --catalogue` downloads the sets that serve a
//! catalogue (symmetric images included), `solve --catalogue` solves with them at the lengths
//! Manhattan distance proves optimal, `eval --catalogue` prints each set's sum, `bench
//! --catalogue` solves every instance (node for node the same with its tables in memory), and
//! a catalogue whose tables are missing is refused with the reason and the command that builds
//! them.

use std::process::Command;

use tilepdb_common::catalogue::Catalogue;
use tilepdb_common::table::Encoding;
use tilepdb_common::{Board, Goal, Partition, Pattern};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;

use super::fetch_cli::{TOKEN, serve};

fn solve_cmd(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"))
        .env("TILEPDB_TOKEN", TOKEN)
        .env_remove("TILEPDB_CACHE")
        .args(args)
        .output()
        .unwrap()
}

fn lengths(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.split("length ").nth(1))
        .map(|rest| rest.split(',').next().unwrap().to_string())
        .collect()
}

#[test]
fn a_catalogue_is_fetched_solved_and_evaluated() {
    let served = tempfile::tempdir().unwrap();
    let board: Board = "3x3".parse().unwrap();
    // The corner patterns are each other's images: 2 tables serve the 6 patterns.
    let text = "0,1,2\n0,3,6\n\n0,2,5\n0,6,7\n\n0,5,8\n0,6,7\n";
    let file = served.path().join("corners.cat");
    std::fs::write(&file, text).unwrap();
    let catalogue = Catalogue::read(&file, board).unwrap();
    let distinct = catalogue.distinct_tables(Goal::BlankFirst);
    assert!(distinct.len() < 6, "{distinct:?}");
    for table in &distinct {
        let pattern = Pattern::new(board, table.tiles.clone()).unwrap();
        let partition = Partition::new("3x3:one", board, vec![pattern]).unwrap();
        let options = BuildOptions::default();
        open_or_build(
            served.path(),
            &partition,
            Goal::BlankFirst,
            table.rule,
            Encoding::OneBit,
            &options,
        )
        .unwrap();
    }
    let file = file.to_str().unwrap();
    let url = serve(served.path(), None);
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let out = solve_cmd(&[
        "fetch",
        "--from",
        &url,
        "--catalogue",
        file,
        "--puzzle",
        "8",
        "--cache",
        cache_dir,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), cache_dir);
    let states = [
        "8 7 6 5 4 3 2 1 0",
        "1 2 5 3 4 0 6 7 8",
        "3 1 2 6 4 5 0 7 8",
    ];
    let mut args = vec!["solve", "--catalogue", file, "--tables", cache_dir];
    let mut manhattan = vec!["solve", "--heuristic", "manhattan", "--puzzle", "8"];
    for s in &states {
        args.extend(["--state", s]);
        manhattan.extend(["--state", s]);
    }
    let out = solve_cmd(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = solve_cmd(&manhattan);
    assert_eq!(lengths(&out.stdout), lengths(&want.stdout));
    assert_eq!(lengths(&out.stdout).len(), 3);
    let out = solve_cmd(&[
        "eval",
        "--catalogue",
        file,
        "--tables",
        cache_dir,
        "--state",
        states[0],
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sets ") && text.contains("h = "), "{text}");
    // bench compares it with Manhattan distance on the same states.
    let bench_out = tempfile::tempdir().unwrap();
    let mut bench = vec![
        "bench",
        "--catalogue",
        file,
        "--tables",
        cache_dir,
        "--entry",
        "manhattan",
        "--random-states",
        "10",
        "--out",
        bench_out.path().to_str().unwrap(),
    ];
    for s in &states {
        bench.extend(["--state", s]);
    }
    let out = solve_cmd(&bench);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("corners ") && l.contains("3/3")),
        "{text}"
    );
    // With the tables copied into memory: the same searches, node for node, and the summary
    // says how the tables were held.
    let memory_out = tempfile::tempdir().unwrap();
    let mut in_memory = bench.clone();
    let at = in_memory.iter().position(|&a| a == "--out").unwrap();
    in_memory[at + 1] = memory_out.path().to_str().unwrap();
    in_memory.extend(["--load", "memory"]);
    let out = solve_cmd(&in_memory);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let searches = |dir: &std::path::Path| -> Vec<(String, String, u64, u64, u64)> {
        let text = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
        text.lines()
            .map(|l| {
                let r: serde_json::Value = serde_json::from_str(l).unwrap();
                let n = |k: &str| r[k].as_u64().unwrap();
                let s = |k: &str| r[k].to_string();
                (
                    s("entry"),
                    s("instance"),
                    n("length"),
                    n("expanded"),
                    n("generated"),
                )
            })
            .collect()
    };
    let mapped = searches(bench_out.path());
    assert_eq!(mapped.len(), 6, "{mapped:?}");
    assert_eq!(searches(memory_out.path()), mapped);
    let load = |dir: &std::path::Path| -> String {
        let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["load"].to_string()
    };
    assert_eq!(load(bench_out.path()), "\"map\"");
    assert_eq!(load(memory_out.path()), "\"memory\"");
    // A pattern that no table serves: refused, with the line, the tiles tried and the build.
    let other = served.path().join("other.cat");
    std::fs::write(&other, "0,4,5\n").unwrap();
    let out = solve_cmd(&[
        "solve",
        "--catalogue",
        other.to_str().unwrap(),
        "--tables",
        cache_dir,
        "--state",
        states[0],
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 1: no table serves the pattern 0,4,5")
            && err.contains("tilepdb-coordinator build --catalogue"),
        "{err}"
    );
    // --reflect does not apply.
    let out = solve_cmd(&[
        "solve",
        "--catalogue",
        file,
        "--tables",
        cache_dir,
        "--reflect",
        "--state",
        states[0],
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--reflect does not apply"));
}
