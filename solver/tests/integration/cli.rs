//! The `tilepdb-solve` command: solutions and evaluations for people and scripts, and a clear
//! error (never a panic) for every kind of bad input.

use std::path::Path;

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Goal, Partition};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;

use crate::support::{assert_refused, solve_program};

fn build_set(cache: &Path, goal: Goal) -> String {
    let partition = Partition::named("8:4-4").unwrap();
    let (set, _) = open_or_build(
        cache,
        &partition,
        goal,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
    set.dir().to_str().unwrap().to_string()
}

#[test]
fn solves_and_evaluates() {
    let cache = tempfile::tempdir().unwrap();
    let dir = build_set(cache.path(), Goal::BlankFirst);
    let out = solve_program(&[
        "solve",
        "--tables",
        &dir,
        "--reflect",
        "--json",
        "--state",
        "1 2 0 3 4 5 6 7 8",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["solved"], 1);
    assert_eq!(json["results"][0]["length"], 2);
    assert_eq!(json["results"][0]["moves"], serde_json::json!([2, 1]));
    // The tables read into memory instead of mapped: the same answer.
    let out = solve_program(&[
        "solve",
        "--tables",
        &dir,
        "--reflect",
        "--load",
        "memory",
        "--json",
        "--state",
        "1 2 0 3 4 5 6 7 8",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(copied["results"][0]["moves"], json["results"][0]["moves"]);
    assert_eq!(
        copied["results"][0]["generated"],
        json["results"][0]["generated"]
    );
    let out = solve_program(&["eval", "--tables", &dir, "--state", "1 2 0 3 4 5 6 7 8"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("h = 2"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Manhattan on the 15-puzzle from a file, and a node budget reported as such.
    let file = cache.path().join("two.txt");
    std::fs::write(&file, "# Korf #1 and #2\n14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3\n\n13 5 4 10 9 12 8 14 2 3 7 1 0 15 11 6\n").unwrap();
    let out = solve_program(&[
        "solve",
        "--heuristic",
        "manhattan",
        "--max-nodes",
        "1000",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    // In words, and exact: each instance stopped at the 1000th node.
    assert!(
        stdout.contains("out of nodes (--max-nodes) after ")
            && stdout.contains(" expanded, 1000 generated")
            && stdout.contains("total: 0 of 2 solved")
            && !stdout.contains("NodeBudget"),
        "{stdout}"
    );
    for algorithm in ["ida", "astar", "weighted-astar"] {
        let out = solve_program(&[
            "solve",
            "--puzzle",
            "8",
            "--algorithm",
            algorithm,
            "--max-nodes",
            "37",
            "--json",
            "--state",
            "8 6 7 2 5 4 3 0 1",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["results"][0]["outcome"], "node-budget", "{algorithm}");
        assert_eq!(json["results"][0]["generated"], 37, "{algorithm}");
    }
}

#[test]
fn a_heuristic_that_ignores_the_tables_given_is_refused() {
    let cache = tempfile::tempdir().unwrap();
    let dir = build_set(cache.path(), Goal::BlankFirst);
    for heuristic in ["manhattan", "misplaced", "linear-conflict"] {
        assert_refused(
            &solve_program(&[
                "solve",
                "--tables",
                &dir,
                "--heuristic",
                heuristic,
                "--state",
                "1 2 0 3 4 5 6 7 8",
            ]),
            &format!("the {heuristic} heuristic does not use the table set"),
        );
    }
}

#[test]
fn bad_input_is_refused_clearly() {
    let cache = tempfile::tempdir().unwrap();
    let dir = build_set(cache.path(), Goal::BlankFirst);
    // An unsolvable state; a state of the wrong size; a bad tile.
    assert_refused(
        &solve_program(&["solve", "--puzzle", "8", "--state", "0 2 1 3 4 5 6 7 8"]),
        "not solvable",
    );
    assert_refused(
        &solve_program(&[
            "solve",
            "--tables",
            &dir,
            "--state",
            "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
        ]),
        "16 numbers given, a 3x3 board has 9 cells",
    );
    assert_refused(
        &solve_program(&["solve", "--puzzle", "8", "--state", "0 1 2 3 4 5 6 7 x"]),
        "not a tile number",
    );
    // Tables of another board or goal than asked.
    assert_refused(
        &solve_program(&[
            "solve",
            "--tables",
            &dir,
            "--puzzle",
            "15",
            "--state",
            "1 0 2 3 4 5 6 7 8",
        ]),
        "is for the 3x3 board, not 4x4",
    );
    assert_refused(
        &solve_program(&[
            "solve",
            "--tables",
            &dir,
            "--goal",
            "blank-last",
            "--state",
            "1 0 2 3 4 5 6 7 8",
        ]),
        "is for the blank-first goal",
    );
    // Missing and corrupt tables.
    assert_refused(
        &solve_program(&[
            "solve",
            "--tables",
            "/nonexistent/set",
            "--state",
            "1 0 2 3 4 5 6 7 8",
        ]),
        "/nonexistent/set",
    );
    let table = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pdb"))
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&table, bytes).unwrap();
    assert_refused(
        &solve_program(&["solve", "--tables", &dir, "--state", "1 0 2 3 4 5 6 7 8"]),
        table.file_name().unwrap().to_str().unwrap(),
    );
    // No states, a missing file, reflection without tables.
    assert_refused(
        &solve_program(&["solve", "--puzzle", "8"]),
        "no states given",
    );
    assert_refused(
        &solve_program(&["solve", "/nonexistent/states.txt"]),
        "/nonexistent/states.txt",
    );
    assert_refused(
        &solve_program(&[
            "solve",
            "--reflect",
            "--state",
            "1 0 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
        ]),
        "--reflect applies to the pdb heuristic",
    );
    // A* on a board too large for it.
    assert_refused(
        &solve_program(&[
            "solve",
            "--algorithm",
            "astar",
            "--state",
            "1 0 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
        ]),
        "at most 12 cells",
    );
}
