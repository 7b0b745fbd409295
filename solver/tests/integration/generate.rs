//! `tilepdb-solve gen`: the same seed gives the same file, every state reaches the goal, and a
//! random walk of L moves is solved in at most L moves by the optimal search.

use tilepdb_common::{Board, Goal, PuzzleState};
use tilepdb_solver::heuristic::Manhattan;
use tilepdb_solver::search::{Limits, Outcome, ida_star};

use crate::support::solve_program;

fn generated(args: &[&str]) -> String {
    let mut all = vec!["gen"];
    all.extend_from_slice(args);
    let out = solve_program(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn states(board: Board, text: &str) -> Vec<PuzzleState> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| PuzzleState::parse(board, l).unwrap())
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_states() {
    for kind in [&["--walk", "40"][..], &["--uniform"][..]] {
        let mut args = vec!["--puzzle", "4x4", "--count", "20", "--seed", "11"];
        args.extend_from_slice(kind);
        let first = generated(&args);
        assert_eq!(first, generated(&args));
        args[5] = "12";
        let other = generated(&args);
        assert_ne!(states("4x4".parse().unwrap(), &first), {
            states("4x4".parse().unwrap(), &other)
        });
    }
}

#[test]
fn uniform_states_are_solvable_and_distinct_on_every_board_and_goal() {
    for (puzzle, goal) in [
        ("3x3", Goal::BlankFirst),
        ("3x3", Goal::BlankLast),
        ("2x3", Goal::BlankLast),
        ("4x4", Goal::BlankFirst),
        ("5x5", Goal::BlankLast),
    ] {
        let board: Board = puzzle.parse().unwrap();
        let text = generated(&[
            "--puzzle",
            puzzle,
            "--goal",
            goal.name(),
            "--uniform",
            "--count",
            "50",
            "--seed",
            "5",
        ]);
        let states = states(board, &text);
        assert_eq!(states.len(), 50);
        assert!(
            states.iter().all(|s| s.is_solvable(goal)),
            "{puzzle} {goal}"
        );
        let distinct: std::collections::HashSet<_> = states.iter().collect();
        // 2x3 has 360 solvable states: 50 draws repeat a few at most.
        assert!(
            distinct.len() >= 40,
            "{puzzle}: {} distinct",
            distinct.len()
        );
    }
    // A 3x3 state drawn uniformly is solved by the optimal search (a check beyond the parity).
    let board: Board = "3x3".parse().unwrap();
    let text = generated(&["--puzzle", "8", "--uniform", "--count", "10", "--seed", "2"]);
    let h = Manhattan::new(board, Goal::BlankFirst);
    for s in states(board, &text) {
        let r = ida_star(&s, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        assert_eq!(r.outcome, Outcome::Solved);
    }
}

#[test]
fn random_walks_of_length_l_are_at_most_l_from_the_goal() {
    for (puzzle, goal, length) in [
        ("3x3", Goal::BlankFirst, 12),
        ("3x3", Goal::BlankLast, 25),
        ("4x4", Goal::BlankFirst, 30),
        ("3x4", Goal::BlankLast, 20),
    ] {
        let board: Board = puzzle.parse().unwrap();
        let l = length.to_string();
        let text = generated(&[
            "--puzzle",
            puzzle,
            "--goal",
            goal.name(),
            "--walk",
            &l,
            "--count",
            "15",
            "--seed",
            "3",
        ]);
        let h = Manhattan::new(board, goal);
        let mut lengths = Vec::new();
        for s in states(board, &text) {
            assert!(s.is_solvable(goal));
            let r = ida_star(&s, goal, &h, &Limits::default()).unwrap();
            let solved = r.length().unwrap();
            assert!(solved <= length, "{puzzle}: {s} took {solved} > {length}");
            // Parity: a walk of L moves is an even or odd distance from the goal as L is.
            assert_eq!(solved % 2, length % 2, "{puzzle}: {s}");
            lengths.push(solved);
        }
        // Not all walks fold back onto the goal.
        assert!(lengths.iter().any(|&l| l > 0), "{puzzle}: {lengths:?}");
    }
}

#[test]
fn bad_arguments_are_refused() {
    for (args, needle) in [
        (&["gen", "--puzzle", "7x7", "--uniform"][..], "25 cells"),
        (&["gen", "--puzzle", "3x3"][..], "--walk MOVES or --uniform"),
        (
            &["gen", "--walk", "3", "--uniform"][..],
            "cannot be used with",
        ),
    ] {
        let out = solve_program(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
}
