//! Optimal lengths on small boards against an exact oracle: a complete breadth-first search of
//! the board written here (hash map of packed states), independent of the solver's code. Every
//! heuristic, both searches and every table encoding must give the oracle's length.

#![expect(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "the oracle indexes tables by u64 ranks, which index arrays in memory, and steps the blank in i32 coordinates of cells below 25, within the board when they index it"
)]

use std::collections::{HashMap, VecDeque};

use rand::{Rng, SeedableRng};
use tilepdb_common::symmetry::Symmetry;
use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::{BlankRule, Board, Goal, Partition, Pattern, PuzzleState};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_solver::heuristic::{
    CatalogueHeuristic, CatalogueSlot, CatalogueStarted, Heuristic, LinearConflict, Manhattan,
    Misplaced, PdbHeuristic,
};
use tilepdb_solver::search::{Limits, Outcome, a_star, ida_star};

/// Distance to the goal of every solvable state of `board`, keyed by the tile on each cell.
fn complete_bfs(board: Board, goal: Goal) -> HashMap<Vec<u8>, u32> {
    let (w, h) = (board.width() as i32, board.height() as i32);
    let start = PuzzleState::goal(board, goal).tiles().to_vec();
    let mut dist = HashMap::from([(start.clone(), 0u32)]);
    let mut queue = VecDeque::from([start]);
    while let Some(s) = queue.pop_front() {
        let d = dist[&s];
        let blank = s.iter().position(|&t| t == 0).unwrap() as i32;
        for (dr, dc) in [(-1, 0), (1, 0), (0, -1), (0, 1)] {
            let (r, c) = (blank / w + dr, blank % w + dc);
            if !(0..h).contains(&r) || !(0..w).contains(&c) {
                continue;
            }
            let mut t = s.clone();
            t.swap(blank as usize, (r * w + c) as usize);
            if !dist.contains_key(&t) {
                dist.insert(t.clone(), d + 1);
                queue.push_back(t);
            }
        }
    }
    dist
}

fn sample(oracle: &HashMap<Vec<u8>, u32>, count: usize, seed: u64) -> Vec<(Vec<u8>, u32)> {
    let mut states: Vec<_> = oracle.iter().map(|(s, &d)| (s.clone(), d)).collect();
    states.sort();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // The hardest states too: they are where a wrong heuristic shows.
    let max = states.iter().map(|s| s.1).max().unwrap();
    let mut picked: Vec<_> = states
        .iter()
        .filter(|s| s.1 == max)
        .take(2)
        .cloned()
        .collect();
    while picked.len() < count {
        picked.push(states[rng.random_range(0..states.len())].clone());
    }
    picked
}

fn check_lengths<H: Heuristic>(
    board: Board,
    goal: Goal,
    h: &H,
    cases: &[(Vec<u8>, u32)],
    astar: bool,
    what: &str,
) {
    for (tiles, d) in cases {
        let start = PuzzleState::new(board, tiles.clone()).unwrap();
        let r = ida_star(&start, goal, h, &Limits::default()).unwrap();
        assert_eq!(r.outcome, Outcome::Solved);
        assert_eq!(r.moves.len() as u32, *d, "IDA* {what} on {start}");
        if astar {
            let r = a_star(&start, goal, h, &Limits::default()).unwrap();
            assert_eq!(r.moves.len() as u32, *d, "A* {what} on {start}");
        }
    }
}

fn tables(
    cache: &std::path::Path,
    partition: &str,
    goal: Goal,
    rule: BlankRule,
    encoding: Encoding,
) -> TableSet {
    let partition = Partition::named(partition).unwrap();
    open_or_build(
        cache,
        &partition,
        goal,
        rule,
        encoding,
        &BuildOptions::default(),
    )
    .unwrap()
    .0
}

#[test]
fn every_heuristic_is_optimal_on_the_8_puzzle() {
    let board: Board = "3x3".parse().unwrap();
    let cache = tempfile::tempdir().unwrap();
    for goal in [Goal::BlankFirst, Goal::BlankLast] {
        let oracle = complete_bfs(board, goal);
        assert_eq!(oracle.len(), 181_440);
        let cases = sample(&oracle, 25, 7);
        check_lengths(
            board,
            goal,
            &Misplaced::new(board, goal),
            &cases[..6],
            true,
            "misplaced",
        );
        check_lengths(
            board,
            goal,
            &Manhattan::new(board, goal),
            &cases,
            true,
            "manhattan",
        );
        check_lengths(
            board,
            goal,
            &LinearConflict::new(board, goal),
            &cases,
            true,
            "linear conflict",
        );
        for (rule, encoding) in [
            (BlankRule::Minimized, Encoding::Byte),
            (BlankRule::Minimized, Encoding::Nibble),
            (BlankRule::Minimized, Encoding::min_nibble(4).unwrap()),
            (BlankRule::Aware, Encoding::Mod3),
            (BlankRule::Aware, Encoding::Byte),
            (BlankRule::Aware, Encoding::OneBit),
            (BlankRule::Ignored, Encoding::Mod3),
            (BlankRule::Ignored, Encoding::OneBit),
            (BlankRule::ZeroAware, Encoding::Byte),
            (BlankRule::ZeroAware, Encoding::OneBit),
        ] {
            let set = tables(cache.path(), "8:4-4", goal, rule, encoding);
            for reflect in [false, true] {
                if reflect && !set.reflection() {
                    continue;
                }
                let h = PdbHeuristic::new(&set, reflect).unwrap();
                check_lengths(
                    board,
                    goal,
                    &h,
                    &cases,
                    true,
                    &format!("{rule} {encoding} reflect={reflect} {goal}"),
                );
            }
        }
    }
}

#[test]
fn the_exact_table_is_the_distance() {
    // A pattern of every tile gives h = the distance itself: IDA* walks straight to the goal.
    let board: Board = "3x3".parse().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let set = tables(
        cache.path(),
        "8:8",
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Byte,
    );
    let h = PdbHeuristic::new(&set, false).unwrap();
    let oracle = complete_bfs(board, Goal::BlankFirst);
    for (tiles, d) in sample(&oracle, 20, 3) {
        let start = PuzzleState::new(board, tiles).unwrap();
        assert_eq!(h.evaluate(&start.cells()).unwrap().0, d);
        let r = ida_star(&start, Goal::BlankFirst, &h, &Limits::default()).unwrap();
        assert_eq!(r.moves.len() as u32, d);
        assert_eq!(r.iterations, 1);
    }
}

#[test]
fn rectangular_boards() {
    // 2x4 (2 wide, 4 high) and 4x2 with A* and IDA*, both goals; no reflection on them.
    let cache = tempfile::tempdir().unwrap();
    for (board, patterns) in [("2x4", ["1,2,3", "4,5,6,7"]), ("4x2", ["1,2,3,4", "5,6,7"])] {
        let board: Board = board.parse().unwrap();
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            let oracle = complete_bfs(board, goal);
            let cases = sample(&oracle, 15, 11);
            check_lengths(
                board,
                goal,
                &Manhattan::new(board, goal),
                &cases,
                true,
                "manhattan",
            );
            let partition = Partition::custom(board, &patterns.map(String::from)).unwrap();
            let (set, _) = open_or_build(
                cache.path(),
                &partition,
                goal,
                BlankRule::Minimized,
                Encoding::Byte,
                &BuildOptions::default(),
            )
            .unwrap();
            assert!(
                PdbHeuristic::new(&set, true).is_err(),
                "no reflection on {board}"
            );
            check_lengths(
                board,
                goal,
                &PdbHeuristic::new(&set, false).unwrap(),
                &cases,
                true,
                "pdb",
            );
        }
    }
}

#[test]
fn budgets_are_reported_not_failed() {
    let board: Board = "4x4".parse().unwrap();
    let start = PuzzleState::parse(board, "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3").unwrap();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let limits = Limits {
        max_nodes: Some(100_000),
        timeout: None,
    };
    let r = ida_star(&start, Goal::BlankFirst, &h, &limits).unwrap();
    assert_eq!(r.outcome, Outcome::NodeBudget);
    assert!(r.moves.is_empty());
    let limits = Limits {
        max_nodes: None,
        timeout: Some(std::time::Duration::from_millis(50)),
    };
    assert_eq!(
        ida_star(&start, Goal::BlankFirst, &h, &limits)
            .unwrap()
            .outcome,
        Outcome::Timeout
    );
}

#[test]
fn unsolvable_states_are_refused() {
    let board: Board = "3x3".parse().unwrap();
    let start = PuzzleState::parse(board, "0 2 1 3 4 5 6 7 8").unwrap();
    let h = Manhattan::new(board, Goal::BlankFirst);
    let err = ida_star(&start, Goal::BlankFirst, &h, &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not solvable"), "{err}");
    let err = a_star(&start, Goal::BlankFirst, &h, &Limits::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not solvable"), "{err}");
}

/// The 8-puzzle's partition of three tables, {1,2,3}, {4,5,6} and {7,8}.
fn three_three_two() -> Partition {
    let board: Board = "3x3".parse().unwrap();
    let pattern = |tiles: &[u8]| Pattern::new(board, tiles.to_vec()).unwrap();
    Partition::new(
        "8:3-3-2",
        board,
        vec![pattern(&[1, 2, 3]), pattern(&[4, 5, 6]), pattern(&[7, 8])],
    )
    .unwrap()
}

/// IDA* as the solver did it before it looked ahead (each child evaluated in one go, just
/// before it is visited), with the same conventions: moves up, left, right, down; only the
/// undo of the last move pruned; every child counted; stop at the first solution. The
/// reference for node counts. Returns the tiles moved and the nodes.
fn plain_ida_star<H: Heuristic>(start: &PuzzleState, goal: Goal, h: &H) -> (Vec<u8>, u64) {
    struct Plain<'h, H: Heuristic> {
        h: &'h H,
        w: usize,
        n: usize,
        tiles: Vec<u8>,
        cells: Vec<u8>,
        goal_tiles: Vec<u8>,
        threshold: u32,
        next_threshold: u32,
        nodes: u64,
        path: Vec<u8>,
    }
    impl<H: Heuristic> Plain<'_, H> {
        fn search(&mut self, g: u32, value: u32, memo: &H::Memo, previous: usize) -> bool {
            if value == 0 && self.tiles == self.goal_tiles {
                return true;
            }
            let blank = self.cells[0] as usize;
            let (w, n) = (self.w, self.n);
            let neighbours = [
                (blank >= w).then(|| blank - w),
                (!blank.is_multiple_of(w)).then(|| blank - 1),
                (blank % w + 1 < w).then(|| blank + 1),
                (blank + w < n).then(|| blank + w),
            ];
            for next in neighbours.into_iter().flatten() {
                if next == previous {
                    continue;
                }
                let tile = self.tiles[next];
                self.tiles.swap(blank, next);
                self.cells[tile as usize] = blank as u8;
                self.cells[0] = next as u8;
                self.nodes += 1;
                let (child, child_memo) = self.h.after_move(&self.cells, tile as usize, next, memo);
                let f = g + 1 + child;
                if f <= self.threshold {
                    self.path.push(tile);
                    if self.search(g + 1, child, &child_memo, blank) {
                        return true;
                    }
                    self.path.pop();
                } else {
                    self.next_threshold = self.next_threshold.min(f);
                }
                self.tiles.swap(blank, next);
                self.cells[tile as usize] = next as u8;
                self.cells[0] = blank as u8;
            }
            false
        }
    }
    let board = start.board();
    let (value, memo) = h.evaluate(&start.cells()).unwrap();
    let mut plain = Plain {
        h,
        w: board.width(),
        n: board.cells(),
        tiles: start.tiles().to_vec(),
        cells: start.cells(),
        goal_tiles: PuzzleState::goal(board, goal).tiles().to_vec(),
        threshold: value,
        next_threshold: u32::MAX,
        nodes: 0,
        path: Vec::new(),
    };
    while !plain.search(0, value, &memo, usize::MAX) {
        plain.threshold = plain.next_threshold;
        plain.next_threshold = u32::MAX;
    }
    (plain.path, plain.nodes)
}

/// `ida_star` finds the solution and counts the nodes of [`plain_ida_star`] on every case.
fn check_nodes<H: Heuristic>(
    board: Board,
    goal: Goal,
    h: &H,
    cases: &[(Vec<u8>, u32)],
    what: &str,
) {
    for (tiles, _) in cases {
        let start = PuzzleState::new(board, tiles.clone()).unwrap();
        let (moves, nodes) = plain_ida_star(&start, goal, h);
        let r = ida_star(&start, goal, h, &Limits::default()).unwrap();
        assert_eq!((r.moves, r.generated), (moves, nodes), "{what} on {start}");
    }
}

#[test]
fn the_look_ahead_keeps_the_nodes_of_a_plain_ida_star() {
    // With large tables IDA* starts its children's lookups ahead of time; the nodes it counts,
    // and the solution it stops at, must stay those of the plain search (Korf & Felner's
    // counts). The 8-puzzle's tables are small: the look-ahead is forced on here.
    let board: Board = "3x3".parse().unwrap();
    let goal = Goal::BlankFirst;
    let cache = tempfile::tempdir().unwrap();
    let cases = sample(&complete_bfs(board, goal), 12, 11);
    check_nodes(
        board,
        goal,
        &Manhattan::new(board, goal),
        &cases,
        "manhattan",
    );
    check_nodes(
        board,
        goal,
        &LinearConflict::new(board, goal),
        &cases,
        "linear conflict",
    );
    // Three aware tables with reflection: six lookups a child, more than the heuristic starts
    // ahead (it computes the others when it finishes).
    let three = three_three_two();
    let halves = Partition::named("8:4-4").unwrap();
    for (partition, rule, encoding) in [
        (&halves, BlankRule::Minimized, Encoding::Byte),
        (&halves, BlankRule::Minimized, Encoding::Nibble),
        (&halves, BlankRule::Aware, Encoding::Mod3),
        (&three, BlankRule::Aware, Encoding::Byte),
        (&three, BlankRule::Aware, Encoding::Mod3),
        (&halves, BlankRule::ZeroAware, Encoding::Byte),
        (&three, BlankRule::ZeroAware, Encoding::OneBit),
        (&three, BlankRule::Ignored, Encoding::OneBit),
    ] {
        let options = BuildOptions::default();
        let (set, _) =
            open_or_build(cache.path(), partition, goal, rule, encoding, &options).unwrap();
        for (reflect, ahead) in [(false, false), (false, true), (true, false), (true, true)] {
            let h = PdbHeuristic::new(&set, reflect)
                .unwrap()
                .with_look_ahead(ahead);
            assert_eq!(h.looks_ahead(), ahead);
            let what = format!(
                "{} {rule} {encoding} reflect={reflect} ahead={ahead}",
                partition.name()
            );
            check_nodes(board, goal, &h, &cases, &what);
        }
    }
}

#[test]
fn stopping_a_pruned_childs_lookups_keeps_the_nodes_of_a_plain_ida_star() {
    // A catalogue's child evaluation stops at the first set whose sum prunes the child (and
    // leaves the next bound as it is); the plain search evaluates every child in full. The
    // nodes of every iteration (so the bounds too) and the solution must be the same, with and
    // without the look-ahead.
    let board: Board = "3x3".parse().unwrap();
    let goal = Goal::BlankFirst;
    let cache = tempfile::tempdir().unwrap();
    let cases = sample(&complete_bfs(board, goal), 12, 12);
    let three = three_three_two();
    let halves = Partition::named("8:4-4").unwrap();
    let transpose = Symmetry::all(board)
        .into_iter()
        .find(|s| s.name() == "transpose")
        .unwrap();
    for (rule, encoding) in [
        (BlankRule::ZeroAware, Encoding::OneBit),
        (BlankRule::ZeroAware, Encoding::Byte),
        (BlankRule::Minimized, Encoding::Nibble),
        (BlankRule::Aware, Encoding::Mod3),
    ] {
        let sets: Vec<TableSet> = [&halves, &three]
            .into_iter()
            .map(|partition| {
                let options = BuildOptions::default();
                open_or_build(cache.path(), partition, goal, rule, encoding, &options)
                    .unwrap()
                    .0
            })
            .collect();
        let mut slots = Vec::new();
        let sources = [
            (&sets[0], Symmetry::IDENTITY),
            (&sets[0], transpose),
            (&sets[1], Symmetry::IDENTITY),
            (&sets[1], transpose),
        ];
        for (number, (set, symmetry)) in sources.into_iter().enumerate() {
            for pdb in set.tables() {
                slots.push(CatalogueSlot {
                    set: number,
                    pdb,
                    symmetry,
                });
            }
        }
        for ahead in [false, true] {
            let h = CatalogueHeuristic::new(board, goal, &slots)
                .unwrap()
                .with_look_ahead(ahead);
            let what = format!("catalogue {rule} {encoding} ahead={ahead}");
            check_nodes(board, goal, &h, &cases, &what);
        }
        let h = CatalogueHeuristic::new(board, goal, &slots).unwrap();
        check_probe_and_resume(board, &h, &cases, &format!("catalogue {rule} {encoding}"));
    }
}

/// Every child of every state of `cases`, started for a limit and finished for a limit no
/// larger (the search's limits only decrease) by [`Heuristic::probe_move`] and, when it leaves
/// the child unsettled, [`Heuristic::resume_move`]: the child's exact value and memo when the
/// value is at most the finishing limit, else a value above it; both halves are taken.
fn check_probe_and_resume(
    board: Board,
    h: &CatalogueHeuristic<'_>,
    cases: &[(Vec<u8>, u32)],
    what: &str,
) {
    let (mut settled, mut resumed) = (0, 0);
    for (tiles, _) in cases {
        let start = PuzzleState::new(board, tiles.clone()).unwrap();
        let cells = start.cells();
        let (_, memo) = h.evaluate(&cells).unwrap();
        let blank = cells[0] as usize;
        for from in (0..board.cells()).filter(|&c| board.distance(c, blank) == 1) {
            let tile = tiles[from] as usize;
            let mut child = cells.clone();
            child[tile] = cells[0];
            child[0] = from as u8;
            let (value, child_memo) = h.after_move(&child, tile, from, &memo);
            for start_limit in (0..=value + 2).chain([u32::MAX]) {
                for limit in 0..=start_limit.min(value + 2) {
                    let mut started = CatalogueStarted::default();
                    h.start_move_within(&child, tile, from, &memo, &mut started, start_limit);
                    let mut got_memo = memo;
                    let probed = h.probe_move(
                        &child,
                        tile,
                        from,
                        &mut started,
                        &memo,
                        &mut got_memo,
                        limit,
                    );
                    let got = probed.unwrap_or_else(|| {
                        h.resume_move(&child, tile, from, &started, &memo, &mut got_memo, limit)
                    });
                    if probed.is_some() {
                        settled += 1;
                    } else {
                        resumed += 1;
                    }
                    let case =
                        format!("{what}: {start}, tile {tile}, limits {start_limit} then {limit}");
                    if value <= limit {
                        assert_eq!((got, got_memo), (value, child_memo), "{case}");
                    } else {
                        assert!(got > limit, "{case}: {got} for {value}");
                    }
                }
            }
        }
    }
    assert!(
        settled > 0 && resumed > 0,
        "{what}: {settled} settled, {resumed} resumed"
    );
}

/// Along random walks on the 8-puzzle, every child's value followed from its parent's (only
/// the tables of the moved tile looked up again; 1-bit and mod3 values from the parent's)
/// equals its value from scratch (every table looked up, residues by a descent), with and
/// without reflection, for every blank rule and encoding: so a search meets the same values,
/// and counts the same nodes, whichever way they are computed.
#[test]
fn values_along_a_path_equal_values_from_scratch() {
    let board: Board = "3x3".parse().unwrap();
    let goal = Goal::BlankFirst;
    let cache = tempfile::tempdir().unwrap();
    let three = three_three_two();
    let mut rng = rand::rngs::StdRng::seed_from_u64(22);
    for (rule, encoding) in [
        (BlankRule::Minimized, Encoding::Byte),
        (BlankRule::Minimized, Encoding::Nibble),
        (BlankRule::Aware, Encoding::Mod3),
        (BlankRule::Aware, Encoding::OneBit),
        (BlankRule::Ignored, Encoding::OneBit),
        (BlankRule::ZeroAware, Encoding::Byte),
        (BlankRule::ZeroAware, Encoding::Nibble),
        (BlankRule::ZeroAware, Encoding::OneBit),
    ] {
        let (set, _) = open_or_build(
            cache.path(),
            &three,
            goal,
            rule,
            encoding,
            &BuildOptions::default(),
        )
        .unwrap();
        for reflect in [false, true] {
            let h = PdbHeuristic::new(&set, reflect).unwrap();
            let mut cells = PuzzleState::goal(board, goal).cells();
            let (_, mut memo) = h.evaluate(&cells).unwrap();
            for step in 0..3000 {
                let blank = cells[0] as usize;
                let neighbours: Vec<usize> =
                    (0..9).filter(|&c| board.distance(blank, c) == 1).collect();
                let next = neighbours[rng.random_range(0..neighbours.len())];
                let tile = (1..9).find(|&t| cells[t] as usize == next).unwrap();
                cells[tile] = blank as u8;
                cells[0] = next as u8;
                let (value, child) = h.after_move(&cells, tile, next, &memo);
                let (scratch, scratch_memo) = h.evaluate(&cells).unwrap();
                assert_eq!(
                    (value, child),
                    (scratch, scratch_memo),
                    "{rule} {encoding} reflect={reflect} step {step}"
                );
                memo = child;
            }
        }
    }
}
