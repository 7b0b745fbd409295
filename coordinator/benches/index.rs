//! The two state indexes side by side: build wall time, CPU time (user + system, from
//! `getrusage`) and peak resident memory of the cell index (`rank * (n - k) + free cell`) and
//! the region index (set, region, order), each case in a child process of its own so that its
//! peak memory is its own. Each case builds one table and writes its file (to a temporary
//! directory).
//!
//! ```text
//! nice -n 10 cargo bench -p tilepdb-coordinator --bench index            # the cases below
//! nice -n 10 cargo bench -p tilepdb-coordinator --bench index -- 24:6    # names containing 24:6
//! nice -n 10 cargo bench -p tilepdb-coordinator --bench index -- --long  # and 24:7 (minutes)
//! cargo bench -p tilepdb-coordinator --bench index -- --locality          # successor distances
//! ```
//!
//! `--locality` prints, for the 24-puzzle 6-tile pattern, how far in the two-bit array the
//! successors of a state land from it on each index (a sample of placements, every region
//! and move): the share within one cache line (64 bytes), one page (4 KiB), 2 MiB, and beyond.
//!
//! Cases: the 15-puzzle 7-tile table {1..7} (minimized, bytes) on both indexes; the 24-puzzle
//! 6-tile table {1,2,5,6,7,12} minimized (bytes) on both indexes, and zero-aware on the region
//! index in bytes and in 1-bit entries (the cell index has no zero-aware search of its own: it
//! searches the aware table, 2.4 G slots, and converts it); with `--long`, the 24-puzzle 7-tile
//! zero-aware table {1,2,5,6,7,10,11} in 1-bit entries on the region index. Threads: every
//! core, or `TILEPDB_THREADS`.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless,
    reason = "the bench indexes states by u64 and cells by u8"
)]

use std::process::Command;
use std::time::Instant;

use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, SearchIndex, build_table, human_bytes};
use tilepdb_coordinator::output::write_table;
use tilepdb_coordinator::report::peak_rss_bytes;

/// One table built on one index.
struct Case {
    name: &'static str,
    board: &'static str,
    tiles: &'static [u8],
    rule: BlankRule,
    encoding: Encoding,
    index: SearchIndex,
    long: bool,
}

const P15_7: &[u8] = &[1, 2, 3, 4, 5, 6, 7];
const P24_6: &[u8] = &[1, 2, 5, 6, 7, 12];
const P24_7: &[u8] = &[1, 2, 5, 6, 7, 10, 11];

const CASES: &[Case] = &[
    Case {
        name: "15:7 minimized byte, cell index",
        board: "4x4",
        tiles: P15_7,
        rule: BlankRule::Minimized,
        encoding: Encoding::Byte,
        index: SearchIndex::Cell,
        long: false,
    },
    Case {
        name: "15:7 minimized byte, region index",
        board: "4x4",
        tiles: P15_7,
        rule: BlankRule::Minimized,
        encoding: Encoding::Byte,
        index: SearchIndex::Region,
        long: false,
    },
    Case {
        name: "24:6 minimized byte, cell index",
        board: "5x5",
        tiles: P24_6,
        rule: BlankRule::Minimized,
        encoding: Encoding::Byte,
        index: SearchIndex::Cell,
        long: false,
    },
    Case {
        name: "24:6 minimized byte, region index",
        board: "5x5",
        tiles: P24_6,
        rule: BlankRule::Minimized,
        encoding: Encoding::Byte,
        index: SearchIndex::Region,
        long: false,
    },
    Case {
        name: "24:6 zero-aware byte, region index",
        board: "5x5",
        tiles: P24_6,
        rule: BlankRule::ZeroAware,
        encoding: Encoding::Byte,
        index: SearchIndex::Region,
        long: false,
    },
    Case {
        name: "24:6 zero-aware 1-bit, region index",
        board: "5x5",
        tiles: P24_6,
        rule: BlankRule::ZeroAware,
        encoding: Encoding::OneBit,
        index: SearchIndex::Region,
        long: false,
    },
    Case {
        name: "24:7 zero-aware 1-bit, region index",
        board: "5x5",
        tiles: P24_7,
        rule: BlankRule::ZeroAware,
        encoding: Encoding::OneBit,
        index: SearchIndex::Region,
        long: true,
    },
];

/// What a child measured.
struct Measured {
    wall: f64,
    cpu: f64,
    peak: u64,
    arrays: u64,
    states: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--case") {
        let name = &args[at + 1];
        let case = CASES.iter().find(|c| c.name == name).expect("a known case");
        run_case(case);
        return;
    }
    if args.iter().any(|a| a == "--locality") {
        locality();
        return;
    }
    let long = args.iter().any(|a| a == "--long");
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let chosen: Vec<&Case> = CASES
        .iter()
        .filter(|c| long || !c.long)
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    println!(
        "{:<40} {:>9} {:>9} {:>11} {:>11} {:>8}",
        "table, index", "wall s", "cpu s", "peak RSS", "arrays", "M st/cpu-s"
    );
    for case in chosen {
        let exe = std::env::current_exe().expect("the bench's own path");
        let out = Command::new(exe)
            .args(["--case", case.name])
            .output()
            .expect("the bench runs itself");
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(m) = text.lines().find_map(parse_result) else {
            println!(
                "{:<40} failed: {}{}",
                case.name,
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            continue;
        };
        println!(
            "{:<40} {:>9.2} {:>9.2} {:>11} {:>11} {:>8.2}",
            case.name,
            m.wall,
            m.cpu,
            human_bytes(m.peak),
            human_bytes(m.arrays),
            m.states as f64 / m.cpu.max(1e-9) / 1e6
        );
    }
}

/// Builds and writes the table of `case`, then prints what it took as one `result` line.
fn run_case(case: &Case) {
    let board: Board = case.board.parse().unwrap();
    let pattern = Pattern::new(board, case.tiles.to_vec()).unwrap();
    let space = StateSpace::new(board, Goal::BlankFirst, pattern, case.rule).unwrap();
    let threads = std::env::var("TILEPDB_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let options = BuildOptions {
        threads,
        index: case.index,
        encoding: Some(case.encoding),
        ..BuildOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let table = build_table(&space, &options, &()).unwrap();
    write_table(dir.path(), &space, case.encoding, &table.values).unwrap();
    let wall = started.elapsed().as_secs_f64();
    println!(
        "result {wall} {} {} {} {}",
        cpu_seconds(),
        peak_rss_bytes().unwrap_or(0),
        table.state_array_bytes + table.depth_bytes,
        table.expanded
    );
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &raw mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn parse_result(line: &str) -> Option<Measured> {
    let mut it = line.strip_prefix("result ")?.split_whitespace();
    Some(Measured {
        wall: it.next()?.parse().ok()?,
        cpu: it.next()?.parse().ok()?,
        peak: it.next()?.parse().ok()?,
        arrays: it.next()?.parse().ok()?,
        states: it.next()?.parse().ok()?,
    })
}

/// Successor distances in the two-bit array on both indexes (24-puzzle, {1,2,5,6,7,12}).
fn locality() {
    use tilepdb_common::region_index::{RegionIndex, rank_set};
    let board: Board = "5x5".parse().unwrap();
    let pattern = Pattern::new(board, P24_6.to_vec()).unwrap();
    let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Aware).unwrap();
    let k = space.k();
    let all = board.all_cells();
    let index = RegionIndex::new(board, k).unwrap();
    let f = index.orders();
    // Bytes of the two-bit array between two states; a histogram over 4 distance classes.
    let class = |bytes: u64| match bytes {
        0..=63 => 0,
        64..=4095 => 1,
        4096..=2_097_151 => 2,
        _ => 3,
    };
    let print = |name: &str, counts: [u64; 4]| {
        let total: u64 = counts.iter().sum();
        let pct = |i: usize| 100.0 * counts[i] as f64 / total.max(1) as f64;
        println!(
            "{name:<14} {total:>12} successors: {:5.1} % within 64 B, {:5.1} % within 4 KiB, \
             {:5.1} % within 2 MiB, {:5.1} % farther",
            pct(0),
            pct(1),
            pct(2),
            pct(3)
        );
    };
    // Region index: every state of a block (S, r) moves to one block (S', r') per move.
    let mut region = [0u64; 4];
    let step = (index.sets() / 20_000).max(1);
    for c in (0..index.sets()).step_by(step as usize) {
        let set = index.set_mask(c);
        for (r, &reg) in index.regions_of(c).iter().enumerate() {
            let block = index.first_block(c) + r as u64;
            let mut movers = board.dilate(reg) & set;
            while movers != 0 {
                let from = movers.trailing_zeros() as usize;
                movers &= movers - 1;
                let mut targets = board.neighbours(from) & reg;
                while targets != 0 {
                    let to = targets.trailing_zeros() as usize;
                    targets &= targets - 1;
                    let next_set = set ^ (1 << from) ^ (1 << to);
                    let next_c = rank_set(next_set);
                    let r2 = index.region_holding(next_c, from);
                    let next_block = index.first_block(next_c) + r2;
                    let bytes = next_block.abs_diff(block) * f / 4;
                    region[class(bytes)] += f;
                }
            }
        }
    }
    print("region index", region);
    // Cell index: state rank * (n - k) + slot of the region's least cell.
    let ranker = space.ranker();
    let slots = space.slots();
    let mut cell = [0u64; 4];
    let mut cells = [0u8; tilepdb_common::MAX_CELLS];
    let step = (space.placements() / 200_000).max(1);
    for rank in (0..space.placements()).step_by(step as usize) {
        let set = ranker.unrank(rank, &mut cells);
        let free = all & !set;
        let slot_of = |free: u32, cell: usize| (free & ((1u32 << cell) - 1)).count_ones() as u64;
        let mut left = free;
        while left != 0 {
            let least = left.trailing_zeros() as usize;
            let reg = board.region(least, free);
            left &= !reg;
            let state = rank * slots + slot_of(free, least);
            for i in 0..k {
                let from = cells[i] as usize;
                let mut targets = board.neighbours(from) & reg;
                while targets != 0 {
                    let to = targets.trailing_zeros() as usize;
                    targets &= targets - 1;
                    let mut moved = cells;
                    moved[i] = to as u8;
                    let next_free = free ^ (1 << from) ^ (1 << to);
                    let next_reg = board.region(from, next_free);
                    let next = ranker.rank(&moved[..k]) * slots
                        + slot_of(next_free, next_reg.trailing_zeros() as usize);
                    cell[class(next.abs_diff(state) / 4)] += 1;
                }
            }
        }
    }
    print("cell index", cell);
}
