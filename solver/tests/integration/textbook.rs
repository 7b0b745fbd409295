//! The textbook's algorithm "A" (weighted A*) against the optimal search, and P + 3S through
//! the command, which says that its results may not be optimal.

use std::process::Command;

use tilepdb_common::{Board, Goal};
use tilepdb_solver::generate::Generator;
use tilepdb_solver::heuristic::{LinearConflict, Manhattan, Misplaced};
use tilepdb_solver::search::{Limits, Outcome, ida_star, weighted_a_star};
use tilepdb_solver::textbook::PPlus3S;

#[test]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a bound is a small positive multiple of a solution's length"
)]
fn weighted_a_star_is_within_w_times_optimal() {
    let board: Board = "3x3".parse().unwrap();
    for goal in [Goal::BlankFirst, Goal::BlankLast] {
        let mut generator = Generator::new(board, goal, 21);
        let manhattan = Manhattan::new(board, goal);
        let conflict = LinearConflict::new(board, goal);
        let misplaced = Misplaced::new(board, goal);
        let mut longer = 0;
        for _ in 0..12 {
            let state = generator.random_state();
            let optimal = ida_star(&state, goal, &manhattan, &Limits::default())
                .unwrap()
                .length()
                .unwrap();
            for weight in [1.0, 1.5, 2.0, 3.0] {
                let bound = (weight * optimal as f64).floor() as usize;
                for length in [
                    weighted_a_star(&state, goal, &manhattan, weight, &Limits::default()),
                    weighted_a_star(&state, goal, &conflict, weight, &Limits::default()),
                    weighted_a_star(&state, goal, &misplaced, weight, &Limits::default()),
                ]
                .map(|r| r.unwrap().length().unwrap())
                {
                    assert!(length >= optimal, "{state}: {length} < optimal {optimal}");
                    assert!(length <= bound, "{state}: W {weight}: {length} > {bound}");
                    if weight == 1.0 {
                        assert_eq!(length, optimal, "{state}: W 1 is A*");
                    }
                    longer += u32::from(length > optimal);
                }
            }
        }
        // The weight makes a difference somewhere on the sample, or the test shows nothing.
        assert!(longer > 0, "{goal}: weighted A* was optimal everywhere");
    }
}

#[test]
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a bound is a small positive multiple of a solution's length"
)]
fn weighted_a_star_on_the_4x4_board_and_its_refusals() {
    let board: Board = "4x4".parse().unwrap();
    let goal = Goal::BlankFirst;
    let mut generator = Generator::new(board, goal, 4);
    let h = LinearConflict::new(board, goal);
    for _ in 0..4 {
        let state = generator.random_walk(40);
        let optimal = ida_star(&state, goal, &h, &Limits::default())
            .unwrap()
            .length()
            .unwrap();
        let r = weighted_a_star(&state, goal, &h, 1.5, &Limits::default()).unwrap();
        assert!(r.length().unwrap() <= (1.5 * optimal as f64) as usize);
    }
    let limited = Limits {
        max_nodes: Some(10),
        timeout: None,
    };
    let hard = Generator::new(board, goal, 5).random_state();
    let r = weighted_a_star(&hard, goal, &h, 1.2, &limited).unwrap();
    assert_eq!(r.outcome, Outcome::NodeBudget);
    for weight in [0.5, f64::NAN, 1e9] {
        let err = weighted_a_star(&hard, goal, &h, weight, &limited).unwrap_err();
        assert!(err.to_string().contains("weight"), "{err}");
    }
    let big: Board = "5x5".parse().unwrap();
    let state = Generator::new(big, goal, 1).random_walk(4);
    let err = weighted_a_star(&state, goal, &Manhattan::new(big, goal), 2.0, &limited).unwrap_err();
    assert!(err.to_string().contains("16 cells"), "{err}");
}

#[test]
fn p_plus_3s_solves_but_claims_nothing() {
    let board: Board = "3x3".parse().unwrap();
    let goal = Goal::BlankLast;
    let h = PPlus3S::new(board, goal).unwrap();
    let mut generator = Generator::new(board, goal, 8);
    for _ in 0..5 {
        let state = generator.random_state();
        let optimal = ida_star(
            &state,
            goal,
            &Manhattan::new(board, goal),
            &Limits::default(),
        )
        .unwrap()
        .length()
        .unwrap();
        let r = weighted_a_star(&state, goal, &h, 1.0, &Limits::default()).unwrap();
        assert!(r.length().unwrap() >= optimal);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"))
        .args([
            "solve",
            "--puzzle",
            "8",
            "--goal",
            "blank-last",
            "--heuristic",
            "p-plus-3s",
            "--algorithm",
            "astar",
            "--state",
            "4 1 3 7 2 6 0 5 8",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("not admissible"), "{stdout}");
    let out = Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"))
        .args([
            "solve",
            "--puzzle",
            "8",
            "--algorithm",
            "weighted-astar",
            "--weight",
            "1.5",
            "--json",
            "--state",
            "1 2 5 3 4 0 6 7 8",
        ])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        json["optimality"]
            .as_str()
            .unwrap()
            .contains("no optimality claim")
    );
    assert_eq!(json["results"][0]["optimal"], false);
    let out = Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"))
        .args([
            "solve",
            "--puzzle",
            "15",
            "--heuristic",
            "p-plus-3s",
            "--state",
            "1 0 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("3x3") && !stderr.contains("panicked"),
        "{stderr}"
    );
}
