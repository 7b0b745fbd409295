//! The engine agrees, entry by entry, with a naive and independently written 0-1 BFS.
//!
//! The naive search (`support`) keys hash maps by the pattern tiles' cells (`Vec<u8>`) and the
//! blank's cell, moves the blank one cell at a time (free moves cost 0, swaps with a pattern
//! tile cost 1), and ranks placements with its own transcription of the formula of DESIGN
//! section 3. It shares no ranking, region, successor or board code with the engine. For
//! random patterns (k <= 4, seeded) on 3x3, 3x4 and 4x4 boards, for the four blank rules, both
//! goals and both state indices of the search (region and cell), every entry of the engine's
//! table must equal the naive value, and every entry the naive search never reaches must be
//! `UNREACHED`. Zero-aware tables are also compared by histogram with the naive
//! (placement, blank cell) distances grouped by the naive search's own regions.

#![expect(
    clippy::cast_possible_truncation,
    reason = "the oracle indexes tables by u64 ranks, which index arrays in memory, and moves cells (below 25) between u8, u32 and usize"
)]

use crate::support::{
    Grid, blank_search, falling, free_index, goal_cell, naive_rank, placement_search,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::collections::HashMap;

use tilepdb_common::table::UNREACHED;
use tilepdb_common::{BlankRule, Board, Goal, Pattern, RegionIndex, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, BuiltTable, build_table};

/// The expected tables of one pattern and goal, for the four rules.
struct NaiveTables {
    minimized: Vec<u8>,
    aware: Vec<u8>,
    ignored: Vec<u8>,
    /// The zero-aware values in the region index's order (the one piece of engine code these
    /// tests use, itself checked as a bijection in `tilepdb_common::region_index`).
    zero_aware: Vec<u8>,
    /// Histogram of the values of the (placement, region) pairs, grouped by the naive search
    /// alone (regions by its own flood fill), and the number of pairs.
    zero_aware_histogram: Vec<u64>,
    zero_aware_pairs: u64,
}

/// The free cells connected to `blank` (pattern tiles on `placement`), by a queue on the grid.
fn naive_region(grid: Grid, placement: &[u8], blank: u8) -> Vec<u8> {
    let mut seen = vec![false; grid.cells()];
    seen[blank as usize] = true;
    let mut queue = std::collections::VecDeque::from([blank as usize]);
    while let Some(c) = queue.pop_front() {
        for d in grid.neighbours(c) {
            if !seen[d] && !placement.contains(&(d as u8)) {
                seen[d] = true;
                queue.push_back(d);
            }
        }
    }
    (0..grid.cells() as u8)
        .filter(|&c| seen[c as usize])
        .collect()
}

fn naive_tables(grid: Grid, blank_first: bool, tiles: &[u8]) -> NaiveTables {
    let n = grid.cells();
    let k = tiles.len();
    let placements = falling(n as u64, k as u64) as usize;
    let goal: Vec<u8> = tiles
        .iter()
        .map(|&t| goal_cell(blank_first, t as usize, n) as u8)
        .collect();
    let blank = goal_cell(blank_first, 0, n) as u8;

    let mut minimized = vec![UNREACHED; placements];
    let mut aware = vec![UNREACHED; placements * (n - k)];
    let board = Board::new(grid.width, grid.height).unwrap();
    let index = RegionIndex::new(board, k).unwrap();
    let mut zero_aware = vec![UNREACHED; index.states() as usize];
    let mut regions: HashMap<(Vec<u8>, Vec<u8>), u8> = HashMap::new();
    for ((placement, blank), d) in blank_search(grid, (goal.clone(), blank)) {
        let rank = naive_rank(&placement, n) as usize;
        let entry = rank * (n - k) + free_index(&placement, blank) as usize;
        assert_eq!(aware[entry], UNREACHED, "naive rank collision at {entry}");
        aware[entry] = d;
        minimized[rank] = minimized[rank].min(d);
        let region = naive_region(grid, &placement, blank);
        let key = (placement.clone(), region);
        if let Some(&other) = regions.get(&key) {
            assert_eq!(other, d, "one region of {placement:?}, two distances");
        }
        regions.insert(key, d);
        zero_aware[index.state_index(&placement, blank as usize) as usize] = d;
    }
    let mut zero_aware_histogram = vec![];
    for &d in regions.values() {
        if zero_aware_histogram.len() <= d as usize {
            zero_aware_histogram.resize(d as usize + 1, 0);
        }
        zero_aware_histogram[d as usize] += 1;
    }
    let mut ignored = vec![UNREACHED; placements];
    for (placement, d) in placement_search(grid, goal) {
        let rank = naive_rank(&placement, n) as usize;
        assert_eq!(ignored[rank], UNREACHED, "naive rank collision at {rank}");
        ignored[rank] = d;
    }
    NaiveTables {
        minimized,
        aware,
        ignored,
        zero_aware,
        zero_aware_histogram,
        zero_aware_pairs: regions.len() as u64,
    }
}

fn engine_table(board: Board, goal: Goal, tiles: &[u8], rule: BlankRule) -> BuiltTable {
    let pattern = Pattern::new(board, tiles.to_vec()).unwrap();
    let space = StateSpace::new(board, goal, pattern, rule).unwrap();
    // Small tasks: many per layer even on these boards (three tile sets each).
    let options = BuildOptions {
        threads: 2,
        task_ranks: Some(3),
        memory_limit: None,
        ..BuildOptions::default()
    };
    build_table(&space, &options, &()).unwrap()
}

/// Asserts that two tables are equal, naming the first differing entry and the count.
fn assert_same_table(engine: &[u8], naive: &[u8], what: &str) {
    assert_eq!(engine.len(), naive.len(), "{what}: number of entries");
    let differing: Vec<usize> = (0..naive.len())
        .filter(|&i| engine[i] != naive[i])
        .collect();
    if let Some(&first) = differing.first() {
        panic!(
            "{what}: {} of {} entries differ; first is entry {first}: engine {}, naive {} \
             ({UNREACHED} = unreached)",
            differing.len(),
            naive.len(),
            engine[first],
            naive[first]
        );
    }
}

/// One random pattern of `board` for each size in `sizes`: random tiles in random order.
fn random_patterns(rng: &mut StdRng, board: &Board, sizes: &[usize]) -> Vec<Vec<u8>> {
    let n = board.cells();
    sizes
        .iter()
        .map(|&k| {
            let mut tiles: Vec<u8> = (1..n as u8).collect();
            tiles.shuffle(rng);
            tiles.truncate(k);
            tiles
        })
        .collect()
}

/// Compares every entry of every rule and goal for random patterns of `board`.
fn compare_board(board: &str, seed: u64, sizes: &[usize]) {
    let b: Board = board.parse().unwrap();
    let grid = Grid::new(b.width(), b.height());
    let mut rng = StdRng::seed_from_u64(seed);
    let patterns = random_patterns(&mut rng, &b, sizes);
    let mut nonzero = 0;
    for tiles in &patterns {
        for goal in [Goal::BlankFirst, Goal::BlankLast] {
            let naive = naive_tables(grid, goal == Goal::BlankFirst, tiles);
            for (rule, expected) in [
                (BlankRule::Minimized, &naive.minimized),
                (BlankRule::Aware, &naive.aware),
                (BlankRule::Ignored, &naive.ignored),
            ] {
                let what = format!("{board} {goal} {rule} pattern {tiles:?}");
                let engine = engine_table(b, goal, tiles, rule).values;
                let engine = engine.bytes().expect("a byte per entry");
                assert_same_table(engine, expected, &what);
                nonzero += expected.iter().filter(|&&v| v != 0).count();
            }
            let what = format!("{board} {goal} zero-aware pattern {tiles:?}");
            let engine = engine_table(b, goal, tiles, BlankRule::ZeroAware);
            assert_eq!(
                engine.histogram, naive.zero_aware_histogram,
                "{what}: histogram"
            );
            assert_eq!(
                engine.unreached,
                engine.values.entries() - naive.zero_aware_pairs,
                "{what}: unreached entries"
            );
            let values = engine.values.bytes().expect("a byte per entry");
            assert_same_table(values, &naive.zero_aware, &what);
        }
    }
    assert!(nonzero > 0, "the tables compared must not be trivial");
}

#[test]
fn naive_search_is_itself_right_on_a_hand_checked_case() {
    // One tile, blank ignored: the distance is the Manhattan distance to the goal cell.
    let grid = Grid::new(4, 3);
    for blank_first in [true, false] {
        let goal = goal_cell(blank_first, 5, 12);
        let dist = placement_search(grid, vec![goal as u8]);
        assert_eq!(dist.len(), 12);
        for (placement, d) in dist {
            assert_eq!(d as usize, grid.distance(placement[0] as usize, goal));
        }
    }
    // One tile with the blank: tile 1 on 3x3 (blank-first) one step right, onto cell 2, with
    // the blank on cell 1 costs 1; with the blank on cell 0 the blank must walk around
    // (free) and the tile still moves once: the region of cells {0, 1, 3..8} is one region.
    let grid = Grid::new(3, 3);
    let dist = blank_search(grid, (vec![1], 0));
    assert_eq!(dist[&(vec![1], 0)], 0);
    assert_eq!(dist[&(vec![1], 5)], 0);
    assert_eq!(dist[&(vec![2], 1)], 1);
    assert_eq!(dist[&(vec![2], 0)], 1);
    assert_eq!(dist[&(vec![8], 0)], 3);
    assert_eq!(dist.len(), 9 * 8);
    // The rank formula by hand: 2 of 9 cells, (1, 0) has digits 1 and 0: 1 * P(8, 1) = 8.
    assert_eq!(naive_rank(&[0, 1], 9), 0);
    assert_eq!(naive_rank(&[1, 0], 9), 8);
    assert_eq!(naive_rank(&[8, 7], 9), 71);
    assert_eq!(naive_rank(&[2, 0, 1], 4), 2 * 3 * 2);
}

#[test]
fn engine_equals_naive_bfs_on_3x3() {
    compare_board("3x3", 0x3303, &[1, 2, 3, 3, 4, 4, 4]);
}

#[test]
fn engine_equals_naive_bfs_on_3x4() {
    compare_board("3x4", 0x3404, &[2, 3, 4, 4]);
}

#[test]
fn engine_equals_naive_bfs_on_4x3() {
    // The transposed board: W and H are not interchangeable in the engine's geometry.
    compare_board("4x3", 0x4303, &[3, 4]);
}

#[test]
fn engine_equals_naive_bfs_on_4x4() {
    compare_board("4x4", 0x4404, &[2, 3, 4, 4]);
}
