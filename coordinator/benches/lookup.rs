//! Table lookups and table writing, per encoding (figures printed, no harness).
//!
//! ```text
//! cargo bench -p tilepdb-coordinator --bench lookup            # 15-puzzle 6-tile tables
//! cargo bench -p tilepdb-coordinator --bench lookup -- --eight # also the 8-tile table of 7-8
//! ```
//!
//! For each encoding: encode and write time, file size, open (validation) time, and lookups
//! per second from the memory-mapped file for random states (the state's entry index, its
//! Manhattan distance and the decoded value), against `byte` as the baseline. mod3 tables are
//! measured twice: a lone random state (descent to the goal) and a step of a random walk
//! (the child's value from its parent's, as a search does).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tilepdb_common::table::{EncodedTable, Encoding, Pdb};
use tilepdb_common::{BlankRule, Board, Goal, Pattern, PuzzleState, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table, human_bytes};

const RANDOM_STATES: usize = 1 << 20;

/// Random solvable states as `cell_of_tile` arrays.
#[expect(
    clippy::cast_possible_truncation,
    reason = "tiles and cells are below 25, so they fit in a byte"
)]
fn random_states(board: Board, goal: Goal, count: usize, rng: &mut StdRng) -> Vec<[u8; 16]> {
    let n = board.cells();
    (0..count)
        .map(|_| {
            let mut tiles: Vec<u8> = (0..n as u8).collect();
            tiles.shuffle(rng);
            let mut s = PuzzleState::new(board, tiles.clone()).unwrap();
            if !s.is_solvable(goal) {
                let (a, b) = {
                    let nz: Vec<usize> = (0..n).filter(|&c| tiles[c] != 0).collect();
                    (nz[0], nz[1])
                };
                tiles.swap(a, b);
                s = PuzzleState::new(board, tiles).unwrap();
            }
            let mut cells = [0u8; 16];
            for (c, &t) in s.tiles().iter().enumerate() {
                cells[t as usize] = c as u8;
            }
            cells
        })
        .collect()
}

/// `cell_of_tile` arrays of a random walk of full-puzzle moves from the goal.
#[expect(
    clippy::cast_possible_truncation,
    reason = "tiles and cells are below 25, so they fit in a byte"
)]
fn random_walk(board: Board, goal: Goal, steps: usize, rng: &mut StdRng) -> Vec<[u8; 16]> {
    let n = board.cells();
    let mut tile_on: Vec<u8> = PuzzleState::goal(board, goal).tiles().to_vec();
    let mut cells = [0u8; 16];
    for (c, &t) in tile_on.iter().enumerate() {
        cells[t as usize] = c as u8;
    }
    let mut out = Vec::with_capacity(steps);
    let mut previous = usize::MAX;
    for _ in 0..steps {
        let blank = cells[0] as usize;
        let mut options = board.neighbours(blank);
        if options.count_ones() > 1 && previous < n {
            options &= !(1 << previous); // no undo
        }
        let pick = rng.random_range(0..options.count_ones());
        let mut bits = options;
        for _ in 0..pick {
            bits &= bits - 1;
        }
        let to = bits.trailing_zeros() as usize;
        let tile = tile_on[to];
        tile_on.swap(blank, to);
        cells[tile as usize] = blank as u8;
        cells[0] = to as u8;
        previous = blank;
        out.push(cells);
    }
    out
}

fn rate(count: usize, f: impl FnOnce() -> u64) -> (f64, u64) {
    let t = Instant::now();
    let sum = f();
    (count as f64 / t.elapsed().as_secs_f64(), sum)
}

struct Bench<'a> {
    dir: &'a Path,
    states: Vec<[u8; 16]>,
    walk: Vec<[u8; 16]>,
    baseline: Option<f64>,
}

impl Bench<'_> {
    fn table(&mut self, space: &StateSpace, values: &[u8], encoding: Encoding) {
        let path = self.dir.join(format!(
            "{}-{}.pdb",
            space.rule(),
            encoding.to_string().replace(':', "-")
        ));
        let t = Instant::now();
        let table = EncodedTable::new(space, encoding, values).unwrap();
        let encode = t.elapsed().as_secs_f64();
        let t = Instant::now();
        table.write(&path).unwrap();
        let write = t.elapsed().as_secs_f64();
        drop(table);
        let t = Instant::now();
        let pdb = Pdb::open(&path).unwrap();
        let open = t.elapsed().as_secs_f64();
        println!(
            "  {:<13} {:>10} file  encode {:>6.3} s  write {:>6.3} s  open+validate {:>6.3} s",
            encoding.to_string(),
            human_bytes(pdb.file_len()),
            encode,
            write,
            open
        );
        if encoding == Encoding::Mod3 {
            let lone = 20_000.min(self.states.len());
            let (per_s, _) = rate(lone, || {
                self.states[..lone]
                    .iter()
                    .map(|c| u64::from(pdb.root_value(pdb.index_of(c).0).unwrap()))
                    .sum()
            });
            println!("      random states (descent to the goal): {per_s:>12.0} lookups/s");
            let (first, _) = pdb.index_of(&self.walk[0]);
            let start = pdb.root_value(first).unwrap();
            let (per_s, _) = rate(self.walk.len() - 1, || {
                let mut h = start;
                let mut sum = 0u64;
                for c in &self.walk[1..] {
                    h = pdb.child_value(h, pdb.index_of(c).0);
                    sum += u64::from(h);
                }
                black_box(sum)
            });
            println!("      random walk (child from parent):     {per_s:>12.0} lookups/s");
        } else {
            let lookups = |states: &[[u8; 16]]| -> u64 {
                states
                    .iter()
                    .map(|c| {
                        let (i, m) = pdb.index_of(c);
                        u64::from(pdb.value_with_manhattan(i, m))
                    })
                    .sum()
            };
            // Warm the page cache, the map and the caches with one untimed pass, then time.
            black_box(
                pdb.payload()
                    .iter()
                    .step_by(4096)
                    .map(|&b| u64::from(b))
                    .sum::<u64>(),
            );
            black_box(lookups(&self.states));
            let (per_s, _) = rate(self.states.len(), || black_box(lookups(&self.states)));
            let base = *self.baseline.get_or_insert(per_s);
            println!(
                "      random states:                       {per_s:>12.0} lookups/s ({:.2}x byte)",
                per_s / base
            );
        }
    }
}

fn run_space(bench: &mut Bench, space: &StateSpace, encodings: &[Encoding]) {
    let options = BuildOptions::default();
    let t = Instant::now();
    let table = build_table(space, &options, &()).unwrap();
    println!(
        "{} {} {{{}}}: {} entries, built in {:.1} s",
        space.board(),
        space.rule(),
        space.pattern(),
        space.entries(),
        t.elapsed().as_secs_f64()
    );
    for &e in encodings {
        bench.table(space, table.values.bytes().expect("a byte per entry"), e);
    }
}

fn main() {
    let eight = std::env::args().any(|a| a == "--eight");
    let board: Board = "4x4".parse().unwrap();
    let goal = Goal::BlankFirst;
    let mut rng = StdRng::seed_from_u64(2024);
    let dir = tempfile::tempdir().unwrap();
    let mut bench = Bench {
        dir: dir.path(),
        states: random_states(board, goal, RANDOM_STATES, &mut rng),
        walk: random_walk(board, goal, RANDOM_STATES, &mut rng),
        baseline: None,
    };
    let lossy = [
        Encoding::Byte,
        Encoding::Nibble,
        Encoding::min_nibble(2).unwrap(),
        Encoding::min_nibble(8).unwrap(),
    ];
    let six = Pattern::new(board, vec![1, 2, 3, 4, 5, 6]).unwrap();
    println!(
        "lookups of {RANDOM_STATES} random states from memory-mapped files (threads: 1); files in {}",
        dir.path().display()
    );
    let s = StateSpace::new(board, goal, six.clone(), BlankRule::Minimized).unwrap();
    run_space(&mut bench, &s, &lossy);
    let s = StateSpace::new(board, goal, six, BlankRule::Aware).unwrap();
    bench.baseline = None;
    run_space(&mut bench, &s, &[Encoding::Byte, Encoding::Mod3]);
    if eight {
        let p = Pattern::new(board, (8..16).collect()).unwrap();
        let s = StateSpace::new(board, goal, p, BlankRule::Minimized).unwrap();
        bench.baseline = None;
        run_space(&mut bench, &s, &lossy);
    } else {
        println!("(pass --eight for the 8-tile table of the 15-puzzle 7-8 partition, 2-3 minutes)");
    }
}
