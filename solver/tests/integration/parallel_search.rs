//! IDA* on one instance across threads (`ida_star_parallel`) against the sequential search:
//! the same moves, the same counts in every iteration but the last, and the optimal lengths of
//! `data/korf100-optimal.txt`, with the undo rule, a learned move-pruning machine, and a table
//! heuristic that looks ahead; then the budgets.

use tilepdb_common::generate::random_states;
use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Board, Goal, PuzzleState};
use tilepdb_solver::bench::{self, Protocol};
use tilepdb_solver::heuristic::{Heuristic, Manhattan, PdbHeuristic};
use tilepdb_solver::move_pruning::{MovePruning, learn};
use tilepdb_solver::search::{
    Limits, Outcome, SearchResult, a_star, ida_star_parallel, ida_star_pruned,
};

use crate::support::{assert_refused, solve_program};

/// Searches `start` sequentially and on 1, 2 and 3 threads; checks the parallel searches
/// against the sequential one and returns it.
fn compare<H: Heuristic>(
    start: &PuzzleState,
    h: &H,
    pruning: &MovePruning,
    what: &str,
) -> SearchResult {
    let limits = Limits::default();
    let sequential = ida_star_pruned(start, Goal::BlankFirst, h, &limits, pruning).unwrap();
    assert_eq!(sequential.outcome, Outcome::Solved, "{what}");
    let last = sequential.per_iteration.len() - 1;
    for threads in 1..=3 {
        let parallel =
            ida_star_parallel(start, Goal::BlankFirst, h, &limits, pruning, threads).unwrap();
        let what = format!("{what}, {threads} threads");
        assert_eq!(parallel.outcome, Outcome::Solved, "{what}");
        assert_eq!(parallel.moves, sequential.moves, "{what}");
        assert_eq!(parallel.initial_h, sequential.initial_h, "{what}");
        assert_eq!(
            parallel.per_iteration.len(),
            sequential.per_iteration.len(),
            "{what}"
        );
        assert_eq!(
            parallel.per_iteration[..last],
            sequential.per_iteration[..last],
            "{what}"
        );
        assert_eq!(
            parallel.per_iteration[last].bound, sequential.per_iteration[last].bound,
            "{what}"
        );
        let total: u64 = parallel.per_iteration.iter().map(|i| i.generated).sum();
        assert_eq!(parallel.generated, total, "{what}");
    }
    sequential
}

/// Korf's instances that his 1985 IDA* with Manhattan distance solved in under 1.5 million
/// nodes (`data/korf100-korf1985-ida-md-nodes.txt`): quick in the default run.
fn quick_korf_instances() -> Vec<(usize, PuzzleState, usize)> {
    let board: Board = "15".parse().unwrap();
    let nodes = include_str!("../../../data/korf100-korf1985-ida-md-nodes.txt");
    crate::support::korf100()
        .into_iter()
        .zip(nodes.lines())
        .filter(|(_, n)| n.trim().parse::<u64>().unwrap() < 1_500_000)
        .map(|(i, _)| {
            let start = PuzzleState::parse(board, i.state).unwrap();
            (i.number, start, i.optimal)
        })
        .collect()
}

#[test]
fn korf_instances_match_the_sequential_search_at_their_optimal_lengths() {
    let instances = quick_korf_instances();
    assert_eq!(instances.len(), 8);
    let board = instances[0].1.board();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let undo = MovePruning::undo_only(board);
    for (number, start, optimal) in &instances {
        let r = compare(start, &h, &undo, &format!("Korf #{number}"));
        assert_eq!(r.moves.len(), *optimal, "Korf #{number}");
    }
}

#[test]
fn korf_instances_with_a_learned_machine() {
    let instances = quick_korf_instances();
    let board = instances[0].1.board();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let machine = learn(board, 8).unwrap().machine;
    for (number, start, optimal) in instances.iter().take(4) {
        let r = compare(start, &h, &machine, &format!("Korf #{number}, FSM"));
        assert_eq!(r.moves.len(), *optimal, "Korf #{number}");
    }
}

#[test]
fn eight_puzzle_states_match_the_sequential_search_and_a_star() {
    let board: Board = "3x3".parse().unwrap();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let undo = MovePruning::undo_only(board);
    let machine = learn(board, 12).unwrap().machine;
    for (i, start) in random_states(board, Goal::BlankFirst, 7, 40)
        .iter()
        .enumerate()
    {
        let optimal = a_star(start, Goal::BlankFirst, &h, &Limits::default())
            .unwrap()
            .moves
            .len();
        let r = compare(start, &h, &undo, &format!("state {i}"));
        assert_eq!(r.moves.len(), optimal, "state {i}");
        let r = compare(start, &h, &machine, &format!("state {i}, FSM"));
        assert_eq!(r.moves.len(), optimal, "state {i}, FSM");
    }
}

#[test]
fn a_table_heuristic_that_looks_ahead() {
    // The subtrees start below the root: the look-ahead's frames count depth from there.
    let cache = tempfile::tempdir().unwrap();
    let (set, _) =
        crate::support::open_set(cache.path(), "8:4-4", BlankRule::ZeroAware, Encoding::Byte);
    let h = PdbHeuristic::new(&set, true).unwrap().with_look_ahead(true);
    assert!(h.looks_ahead());
    let undo = MovePruning::undo_only(set.board());
    for (i, start) in random_states(set.board(), Goal::BlankFirst, 3, 20)
        .iter()
        .enumerate()
    {
        compare(start, &h, &undo, &format!("state {i}, look-ahead"));
    }
}

#[test]
fn the_goal_itself_and_bad_input() {
    let board: Board = "3x3".parse().unwrap();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let undo = MovePruning::undo_only(board);
    let goal = PuzzleState::goal(board, Goal::BlankFirst);
    let r = ida_star_parallel(&goal, Goal::BlankFirst, &h, &Limits::default(), &undo, 2).unwrap();
    assert_eq!(
        (r.outcome, r.moves.len(), r.generated),
        (Outcome::Solved, 0, 0)
    );
    let unsolvable = PuzzleState::parse(board, "0 2 1 3 4 5 6 7 8").unwrap();
    let err = ida_star_parallel(
        &unsolvable,
        Goal::BlankFirst,
        &h,
        &Limits::default(),
        &undo,
        2,
    )
    .unwrap_err();
    assert!(err.to_string().contains("solvable"), "{err}");
    let other = MovePruning::undo_only("4x4".parse().unwrap());
    let start = PuzzleState::parse(board, "1 2 0 3 4 5 6 7 8").unwrap();
    let err =
        ida_star_parallel(&start, Goal::BlankFirst, &h, &Limits::default(), &other, 2).unwrap_err();
    assert!(err.to_string().contains("4x4"), "{err}");
}

#[test]
fn the_node_budget_is_exact_on_one_thread_and_shared_on_several() {
    // Korf #1 needs hundreds of millions of nodes with Manhattan distance.
    let board: Board = "15".parse().unwrap();
    let start = PuzzleState::parse(board, crate::support::korf100()[0].state).unwrap();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let undo = MovePruning::undo_only(board);
    for max in [3, 1_000, 300_000] {
        let limits = Limits {
            max_nodes: Some(max),
            timeout: None,
        };
        let sequential = ida_star_pruned(&start, Goal::BlankFirst, &h, &limits, &undo).unwrap();
        let one = ida_star_parallel(&start, Goal::BlankFirst, &h, &limits, &undo, 1).unwrap();
        assert_eq!(one.outcome, Outcome::NodeBudget, "{max}");
        assert_eq!(one.generated, max, "{max}");
        assert_eq!(one.per_iteration.len(), sequential.per_iteration.len());
        let two = ida_star_parallel(&start, Goal::BlankFirst, &h, &limits, &undo, 2).unwrap();
        assert_eq!(two.outcome, Outcome::NodeBudget, "{max}");
        // Each thread reads the shared count every 2^16 nodes it generates.
        assert!(
            (max..=max + 2 * 65_536).contains(&two.generated),
            "{max}: {}",
            two.generated
        );
        assert!(two.moves.is_empty());
    }
}

#[test]
fn the_timeout_stops_every_thread() {
    let board: Board = "15".parse().unwrap();
    let start = PuzzleState::parse(board, crate::support::korf100()[0].state).unwrap();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let undo = MovePruning::undo_only(board);
    for seconds in [0.0, 0.2] {
        let limits = Limits {
            max_nodes: None,
            timeout: Some(std::time::Duration::from_secs_f64(seconds)),
        };
        for threads in [1, 2] {
            let r =
                ida_star_parallel(&start, Goal::BlankFirst, &h, &limits, &undo, threads).unwrap();
            assert_eq!(
                r.outcome,
                Outcome::Timeout,
                "{seconds} s, {threads} threads"
            );
            assert!(r.moves.is_empty());
        }
    }
}

fn solve_json(args: &[&str]) -> serde_json::Value {
    let out = solve_program(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn solve_search_threads_reports_each_iteration() {
    // Korf #79: the fewest nodes of the hundred with Manhattan distance.
    let instance = &crate::support::korf100()[78];
    let state = instance.state;
    let base = ["solve", "--puzzle", "15", "--json", "--state", state];
    let sequential = solve_json(&base);
    let parallel = solve_json(&[&base[..], &["--search-threads", "2"]].concat());
    let (s, p) = (&sequential["results"][0], &parallel["results"][0]);
    assert_eq!(p["length"], instance.optimal);
    assert_eq!(p["moves"], s["moves"]);
    let (si, pi) = (
        s["per_iteration"].as_array().unwrap(),
        p["per_iteration"].as_array().unwrap(),
    );
    assert_eq!(si.len(), pi.len());
    assert_eq!(si[..si.len() - 1], pi[..pi.len() - 1]);
    let out = solve_program(&[
        "solve",
        "--puzzle",
        "8",
        "--algorithm",
        "astar",
        "--search-threads",
        "2",
        "--state",
        "1 2 0 3 4 5 6 7 8",
    ]);
    assert_refused(&out, "--search-threads applies to --algorithm ida");
}

#[test]
fn bench_searches_each_instance_on_several_threads() {
    let board: Board = "3x3".parse().unwrap();
    let instances: Vec<(String, PuzzleState)> = random_states(board, Goal::BlankFirst, 5, 10)
        .into_iter()
        .enumerate()
        .map(|(i, s)| (format!("s{i}"), s))
        .collect();
    let entries = vec!["manhattan".parse().unwrap()];
    let run = |search_threads| {
        let protocol = Protocol {
            search_threads,
            random_states: 10,
            ..Protocol::default()
        };
        bench::run(&entries, &instances, board, Goal::BlankFirst, &protocol).unwrap()
    };
    let (one, two) = (run(1), run(2));
    assert_eq!((one.search_threads, two.search_threads), (1, 2));
    for (a, b) in one.records.iter().zip(&two.records) {
        assert_eq!(a.length, b.length, "{}", a.instance);
        let last = a.per_iteration.len() - 1;
        assert_eq!(
            a.per_iteration[..last],
            b.per_iteration[..last],
            "{}",
            a.instance
        );
    }
}
