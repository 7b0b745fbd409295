//! Duplicate-string move pruning against exact oracles: on small boards IDA* with a learned
//! machine finds solutions of exactly the breadth-first distance (computed here, independently
//! of the solver) for every state, and each solution replays (checked here too); on easy Korf
//! instances it keeps Korf's optimal lengths with fewer nodes; the command writes a machine
//! that `solve --fsm` uses and refuses on another board.
//!
//! The 24-puzzle's brute-force branching factor is `#[ignore]`d:
//! `cargo test --release -p tilepdb-solver --test integration move_pruning:: -- --ignored --nocapture`.

#![expect(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "the oracle steps the blank in i32 coordinates of cells below 25 and packs tiles below 16 in a u64"
)]

use std::collections::{HashMap, VecDeque};

use rayon::prelude::*;
use tilepdb_common::generate::Generator;
use tilepdb_common::{Board, Goal, PuzzleState};
use tilepdb_solver::heuristic::{Heuristic, LinearConflict, Manhattan};
use tilepdb_solver::move_pruning::{Direction, FORBIDDEN, MovePruning, learn, nodes_by_depth};
use tilepdb_solver::search::{Limits, Outcome, SearchResult, ida_star, ida_star_pruned};

use crate::support::{korf100, solve_program};

fn pack(tiles: &[u8]) -> u64 {
    tiles
        .iter()
        .enumerate()
        .fold(0, |k, (i, &t)| k | u64::from(t) << (4 * i))
}

/// Distance to the goal of every solvable state of `board`, by packed tiles (4 bits a cell).
fn distances(board: Board) -> HashMap<u64, u8> {
    let (w, h) = (board.width() as i32, board.height() as i32);
    let goal = PuzzleState::goal(board, Goal::BlankFirst).tiles().to_vec();
    let mut dist = HashMap::from([(pack(&goal), 0u8)]);
    let mut queue = VecDeque::from([goal]);
    while let Some(s) = queue.pop_front() {
        let d = dist[&pack(&s)];
        let blank = s.iter().position(|&t| t == 0).unwrap() as i32;
        for (dr, dc) in [(-1, 0), (1, 0), (0, -1), (0, 1)] {
            let (r, c) = (blank / w + dr, blank % w + dc);
            if (0..h).contains(&r) && (0..w).contains(&c) {
                let mut t = s.clone();
                t.swap(blank as usize, (r * w + c) as usize);
                if let std::collections::hash_map::Entry::Vacant(e) = dist.entry(pack(&t)) {
                    e.insert(d + 1);
                    queue.push_back(t);
                }
            }
        }
    }
    dist
}

/// Plays `moves` (tiles slid) from `tiles`: each must be next to the blank; the end tiles.
fn replayed(board: Board, tiles: &[u8], moves: &[u8]) -> Vec<u8> {
    let mut t = tiles.to_vec();
    for &m in moves {
        let blank = t.iter().position(|&x| x == 0).unwrap();
        let cell = t.iter().position(|&x| x == m).unwrap();
        let (a, b) = (board.row_col(blank), board.row_col(cell));
        assert_eq!(
            a.0.abs_diff(b.0) + a.1.abs_diff(b.1),
            1,
            "tile {m} is not next to the blank"
        );
        t.swap(blank, cell);
    }
    t
}

/// The breadth-first distance as a heuristic: exact, so that IDA* walks optimal paths only
/// and fails on a state if the machine cuts every one of them. `ahead`: take the search's look-ahead path.
struct Oracle<'a> {
    distances: &'a HashMap<u64, u8>,
    ahead: bool,
}

impl Heuristic for Oracle<'_> {
    type Memo = ();
    type Started = ();

    fn evaluate(&self, cells: &[u8]) -> tilepdb_solver::Result<(u32, ())> {
        let key = cells
            .iter()
            .enumerate()
            .fold(0u64, |k, (tile, &cell)| k | (tile as u64) << (4 * cell));
        Ok((u32::from(self.distances[&key]), ()))
    }

    fn finish_move(&self, cells: &[u8], _: usize, _: usize, (): &(), (): &(), (): &mut ()) -> u32 {
        self.evaluate(cells).unwrap().0
    }

    fn looks_ahead(&self) -> bool {
        self.ahead
    }
}

/// Every state of `board` solved with each machine, under the exact heuristic (both search
/// paths); every `sample`-th state under linear conflict too.
fn every_state_optimal(board: Board, depths: &[u8], sample: usize) {
    let oracle = distances(board);
    let mut states: Vec<(u64, u8)> = oracle.iter().map(|(&k, &d)| (k, d)).collect();
    states.sort_unstable();
    let goal = PuzzleState::goal(board, Goal::BlankFirst).tiles().to_vec();
    let conflict = LinearConflict::new(board, Goal::BlankFirst);
    let exact = Oracle {
        distances: &oracle,
        ahead: false,
    };
    let exact_ahead = Oracle {
        distances: &oracle,
        ahead: true,
    };
    for &depth in depths {
        let machine = learn(board, depth).unwrap().machine;
        states.par_iter().enumerate().for_each(|(i, &(key, d))| {
            let tiles: Vec<u8> = (0..board.cells())
                .map(|i| ((key >> (4 * i)) & 15) as u8)
                .collect();
            let start = PuzzleState::new(board, tiles.clone()).unwrap();
            let check = |r: SearchResult, what: &str| {
                assert_eq!(r.outcome, Outcome::Solved);
                assert_eq!(
                    r.moves.len(),
                    usize::from(d),
                    "{board} depth {depth} {what}: {start}"
                );
                assert_eq!(replayed(board, &tiles, &r.moves), goal, "{start}");
            };
            let limits = Limits::default();
            let run = |h: &Oracle| {
                ida_star_pruned(&start, Goal::BlankFirst, h, &limits, &machine).unwrap()
            };
            check(run(&exact), "exact");
            check(run(&exact_ahead), "exact, looking ahead");
            if i % sample == 0 {
                check(
                    ida_star_pruned(&start, Goal::BlankFirst, &conflict, &limits, &machine)
                        .unwrap(),
                    "linear conflict",
                );
            }
        });
    }
}

#[test]
fn every_8_puzzle_state_is_solved_optimally_with_machines_of_depth_2_6_10() {
    every_state_optimal("3x3".parse().unwrap(), &[2, 6, 10], 20);
}

#[test]
fn every_2x4_state_is_solved_optimally_with_machines_of_depth_2_6_10_14() {
    every_state_optimal("2x4".parse().unwrap(), &[2, 6, 10, 14], 20);
}

#[test]
fn random_3x4_states_keep_their_optimal_length_with_a_depth_12_machine() {
    // No BFS of the 3x4 board here (240 million states): plain IDA*, checked against BFS on
    // every board in small_boards, is the oracle.
    let board: Board = "3x4".parse().unwrap();
    let machine = learn(board, 12).unwrap().machine;
    let h = LinearConflict::new(board, Goal::BlankFirst);
    let mut generator = Generator::new(board, Goal::BlankFirst, 7);
    let states: Vec<PuzzleState> = (0..40).map(|_| generator.random_state()).collect();
    states.par_iter().for_each(|start| {
        let plain = ida_star(start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        let pruned =
            ida_star_pruned(start, Goal::BlankFirst, &h, &Limits::default(), &machine).unwrap();
        assert_eq!(pruned.moves.len(), plain.moves.len(), "{start}");
        assert!(pruned.generated <= plain.generated, "{start}");
        let goal = PuzzleState::goal(board, Goal::BlankFirst).tiles().to_vec();
        assert_eq!(replayed(board, start.tiles(), &pruned.moves), goal);
    });
}

#[test]
fn easy_korf_instances_keep_their_optimal_length_with_fewer_nodes() {
    let board: Board = "4x4".parse().unwrap();
    let machine = learn(board, 12).unwrap().machine;
    let h = Manhattan::new(board, Goal::BlankFirst);
    // The three instances of the fewest Manhattan nodes (tilepdb-solve solve data/korf100.txt).
    for number in [79, 12, 42] {
        let instance = &korf100()[number - 1];
        let start = PuzzleState::parse(board, instance.state).unwrap();
        let plain = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        let pruned =
            ida_star_pruned(&start, Goal::BlankFirst, &h, &Limits::default(), &machine).unwrap();
        assert_eq!(plain.moves.len(), instance.optimal, "instance {number}");
        assert_eq!(pruned.moves.len(), instance.optimal, "instance {number}");
        assert!(
            pruned.generated < plain.generated && pruned.expanded < plain.expanded,
            "instance {number}: {} generated with the machine, {} without",
            pruned.generated,
            plain.generated
        );
    }
}

#[test]
fn brute_force_counts_match_a_depth_first_count() {
    // The counting by (cell, state) pairs against a plain enumeration of the move strings.
    fn count(board: Board, m: &MovePruning, cell: usize, state: u32, left: usize, out: &mut [u64]) {
        out[out.len() - 1 - left] += 1;
        if left == 0 {
            return;
        }
        let (r, c) = board.row_col(cell);
        let (w, h) = (board.width(), board.height());
        for d in Direction::ALL {
            let to = match d {
                Direction::Up if r > 0 => cell - w,
                Direction::Left if c > 0 => cell - 1,
                Direction::Right if c + 1 < w => cell + 1,
                Direction::Down if r + 1 < h => cell + w,
                _ => continue,
            };
            let next = m.next(state, d);
            if next != FORBIDDEN {
                count(board, m, to, next, left - 1, out);
            }
        }
    }
    let board: Board = "4x4".parse().unwrap();
    let machine = learn(board, 10).unwrap().machine;
    let mut by_dfs = vec![0u64; 13];
    count(board, &machine, 5, 0, 12, &mut by_dfs);
    let by_pairs: Vec<u64> = nodes_by_depth(&machine, 5, 12)
        .unwrap()
        .iter()
        .map(|&n| n as u64)
        .collect();
    assert_eq!(by_pairs, by_dfs);
}

#[test]
fn the_fsm_command_writes_a_machine_that_solve_uses_and_another_board_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("3x3.fsm");
    let file = file.to_str().unwrap();
    let out = solve_program(&[
        "fsm",
        "--puzzle",
        "8",
        "--depth",
        "8",
        "--out",
        file,
        "--count-depth",
        "10",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = "8 7 6 5 4 3 2 1 0";
    let with = solve_program(&[
        "solve", "--puzzle", "8", "--state", state, "--fsm", file, "--json",
    ]);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let with: serde_json::Value = serde_json::from_slice(&with.stdout).unwrap();
    let without = solve_program(&["solve", "--puzzle", "8", "--state", state, "--json"]);
    let without: serde_json::Value = serde_json::from_slice(&without.stdout).unwrap();
    assert_eq!(with["results"][0]["length"], 28);
    assert_eq!(without["results"][0]["length"], 28);
    assert!(with["total_generated"].as_u64() < without["total_generated"].as_u64());
    assert_eq!(with["move_pruning"]["depth"], 8);
    let other = solve_program(&[
        "solve",
        "--puzzle",
        "15",
        "--state",
        "1 0 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
        "--fsm",
        file,
    ]);
    assert!(!other.status.success());
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("3x3") && err.contains("4x4"), "{err}");
}

#[test]
#[ignore = "learns the 24-puzzle machine to depth 14 and enumerates 10^7 strings: a few seconds in release"]
fn the_24_puzzle_brute_force_branching_factor() {
    let board: Board = "5x5".parse().unwrap();
    let learned = learn(board, 14).unwrap();
    let m = &learned.machine;
    println!(
        "5x5 depth 14: {} states, {} forbidden strings",
        m.states(),
        m.forbidden_strings()
    );
    for (name, machine) in [
        ("undo rule", MovePruning::undo_only(board)),
        ("machine", m.clone()),
    ] {
        let counts = nodes_by_depth(&machine, 12, 20).unwrap();
        println!(
            "{name}: nodes at depth 19 {}, at 20 {}, ratio {:.4}",
            counts[19],
            counts[20],
            counts[20] / counts[19]
        );
    }
}
