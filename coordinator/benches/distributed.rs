//! Distributed overhead (DESIGN section 8): the same job built single-machine and by a local
//! cluster (a coordinator and 2 worker processes on loopback, `build --workers 2`), in the
//! same run: wall times and their ratio, bytes on the wire per state expanded, the
//! coordinator's peak memory. The tables of both are compared byte for byte.
//!
//! ```text
//! cargo bench -p tilepdb-coordinator --bench distributed               # every case below
//! cargo bench -p tilepdb-coordinator --bench distributed -- 5-5-5      # cases whose name contains a filter
//! ```
//!
//! Cases: `15:5-5-5` (quick), `15:7-8` (the 15-puzzle 7-8 set), `24:6` (the first 6-tile
//! pattern of the 24-puzzle 6-6-6-6 set). `TILEPDB_WORKERS` changes the number of workers.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

fn run(args: &[&str], out: &Path) -> (f64, Value) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
        .arg("build")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .stderr(Stdio::inherit())
        .env("RUST_LOG", "warn")
        .output()
        .expect("runs tilepdb-coordinator");
    assert!(output.status.success(), "build {args:?} failed");
    let wall = started.elapsed().as_secs_f64();
    (
        wall,
        serde_json::from_slice(&output.stdout).expect("a JSON summary"),
    )
}

fn files(summary: &Value) -> Vec<(String, Vec<u8>)> {
    summary["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let path = t["file"].as_str().unwrap();
            (
                Path::new(path)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into(),
                std::fs::read(path).unwrap(),
            )
        })
        .collect()
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / f64::from(1 << 20))
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let workers: usize = std::env::var("TILEPDB_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(2);
    let cases: [(&str, &[&str]); 3] = [
        ("15:5-5-5", &["--partition", "15:5-5-5"]),
        ("15:7-8", &["--partition", "15:7-8"]),
        ("24:6", &["--puzzle", "24", "--pattern", "1,2,5,6,7,12"]),
    ];
    let scratch = std::env::temp_dir().join(format!("tilepdb-bench-dist-{}", std::process::id()));
    println!(
        "{} cores; distributed = a coordinator and {workers} local worker processes",
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    );
    for (name, job) in cases {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let _ = std::fs::remove_dir_all(&scratch);
        let (single_wall, single) = run(job, &scratch.join("single"));
        let w = workers.to_string();
        let dist_args: Vec<&str> = job.iter().copied().chain(["--workers", &w]).collect();
        let (dist_wall, dist) = run(&dist_args, &scratch.join("dist"));
        assert!(
            files(&single) == files(&dist),
            "{name}: the distributed tables differ from the single-machine ones"
        );
        let expanded = dist["states_expanded"].as_f64().unwrap();
        let wire = dist["bytes_received"].as_f64().unwrap() + dist["bytes_sent"].as_f64().unwrap();
        let arrays: f64 = single["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["state_array_bytes"].as_f64().unwrap() + t["depth_bytes"].as_f64().unwrap())
            .fold(0.0, f64::max);
        println!(
            "{name:<9} single-machine {single_wall:.2} s, distributed {dist_wall:.2} s: {:.2}x; \
             {:.3} bytes on the wire per state expanded ({} for {expanded:.0} states); \
             coordinator peak memory {} (largest table's arrays {}); tables identical",
            dist_wall / single_wall,
            wire / expanded,
            mib(wire),
            dist["coordinator_peak_rss_bytes"]
                .as_f64()
                .map_or("?".into(), mib),
            mib(arrays),
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
