//! Build-rate benchmark: wall time, states expanded per second and peak memory against the
//! two-bit array plus the depth bytes, for the tables of DESIGN section 8.
//!
//! ```text
//! cargo bench -p tilepdb-coordinator --bench build              # every case below
//! cargo bench -p tilepdb-coordinator --bench build -- 15:7 24:6  # cases whose name contains a filter
//! ```
//!
//! Cases: `15:6-6-3` (quick), `15:7` and `15:8` (the 15-puzzle 7-8 set), `24:6` (the first
//! 6-tile pattern of the 24-puzzle 6-6-6-6 set). Threads: every core, or `TILEPDB_THREADS`.

use tilepdb_common::{BlankRule, Board, Goal, Partition, Pattern, StateSpace};
use tilepdb_coordinator::build::{BuildOptions, build_table, human_bytes};
use tilepdb_coordinator::report::{TableReport, peak_rss_bytes, reset_peak_rss};

fn space(board: &str, tiles: &[u8]) -> StateSpace {
    let board: Board = board.parse().unwrap();
    StateSpace::new(
        board,
        Goal::BlankFirst,
        Pattern::new(board, tiles.to_vec()).unwrap(),
        BlankRule::Minimized,
    )
    .unwrap()
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let threads = std::env::var("TILEPDB_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let p663 = Partition::named("15:6-6-3").unwrap();
    let p24 = Partition::named("24:6-6-6-6").unwrap();
    let mut cases: Vec<(String, StateSpace)> = p663
        .patterns()
        .iter()
        .map(|p| ("15:6-6-3".to_string(), space("4x4", p.tiles())))
        .collect();
    cases.push(("15:7".into(), space("4x4", &[1, 2, 3, 4, 5, 6, 7])));
    cases.push(("15:8".into(), space("4x4", &[8, 9, 10, 11, 12, 13, 14, 15])));
    cases.push(("24:6".into(), space("5x5", p24.patterns()[0].tiles())));
    let options = BuildOptions {
        threads,
        ..BuildOptions::default()
    };
    println!(
        "threads: {}",
        if threads == 0 {
            rayon_threads()
        } else {
            threads
        }
    );
    for (name, space) in cases {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        reset_peak_rss();
        let table = build_table(&space, &options, &()).expect("build");
        let report = TableReport::new(&space, &table, peak_rss_bytes(), None);
        println!("{name:<9} {}", report.line());
        println!(
            "{:<9}   states {} in {} layers; two-bit array {} + depth bytes {} = {}",
            "",
            space.states(),
            table.layers,
            human_bytes(table.state_array_bytes),
            human_bytes(table.depth_bytes),
            human_bytes(table.state_array_bytes + table.depth_bytes),
        );
    }
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}
