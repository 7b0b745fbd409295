//! The sharded build against the single machine (issue 20), in one run: for the 24-puzzle
//! zero-aware 1-bit tables of 6 and 7 tiles, a single-machine build and `build --shards P`
//! for P = 1, 2, 4 (a control plane and P local worker processes), each printing its wall
//! time, the CPU time of all its processes (user + sys, the workers included), the
//! coordinator's and each worker's peak resident memory against the shard's arrays, bytes on
//! the wire per state, the fraction of successors that stayed on their shard, and whether the
//! file is the single machine's (sha256); and the successors generated, the single machine's
//! CPU per successor and the CPU the shards add per foreign successor. Builds run without the
//! proof (`--no-proof`) unless `TILEPDB_BENCH_PROOF=1`: then each table is proven as a build
//! proves it (on the shards by two teams of workers when there are two or more), and the
//! figures include the proof.
//!
//! ```text
//! cargo bench -p tilepdb-coordinator --bench sharded            # both tables (the 7-tile one: minutes)
//! cargo bench -p tilepdb-coordinator --bench sharded -- 6       # the 6-tile table only
//! TILEPDB_BENCH_PROOF=1 cargo bench -p tilepdb-coordinator --bench sharded -- 6
//! ```
//!
//! `TILEPDB_SHARDS=1,2,4` sets the shard counts. `TILEPDB_BENCH_ROUNDS=N` builds the single
//! machine's table and each sharded one N times, one after the other in each round (so a noisy
//! machine's slow minutes fall on all of them alike), and prints the median wall and CPU time
//! of each with every round's CPU time; the peaks and the bytes are the last round's.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;
use tilepdb_common::shard::{ShardLayout, ShardSize};
use tilepdb_common::table::DepthCode;
use tilepdb_common::{BlankRule, Goal, Pattern, StateSpace};

/// CPU seconds (user + sys) of this process's waited-for children and their descendants.
fn children_cpu() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_CHILDREN is a valid target.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Builds with `args` into `out` (proven when `proof`): wall seconds, CPU seconds of every
/// process, the summary with the file's `sha256` added.
fn build(args: &[&str], proof: bool, out: &Path) -> (f64, f64, Value) {
    let (cpu, started) = (children_cpu(), Instant::now());
    let output = Command::new(env!("CARGO_BIN_EXE_tilepdb-coordinator"))
        .arg("build")
        .args(args)
        .args(if proof { &[][..] } else { &["--no-proof"][..] })
        .args(["--json", "--out"])
        .arg(out)
        .env("RUST_LOG", "warn")
        .env(
            "TILEPDB_WORKER_PROGRAM",
            env!("CARGO_BIN_EXE_tilepdb-coordinator"),
        )
        .stderr(Stdio::inherit())
        .output()
        .expect("runs tilepdb-coordinator");
    assert!(output.status.success(), "build {args:?} failed");
    let wall = started.elapsed().as_secs_f64();
    let cpu = children_cpu() - cpu;
    let mut summary: Value = serde_json::from_slice(&output.stdout).expect("a JSON summary");
    let file = summary["tables"][0]["file"].as_str().unwrap().to_string();
    summary["sha256"] = Value::String(sha256(&file));
    (wall, cpu, summary)
}

fn sha256(path: &str) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

fn mib(bytes: f64) -> f64 {
    bytes / f64::from(1 << 20)
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let shard_counts: Vec<u32> = std::env::var("TILEPDB_SHARDS").ok().map_or_else(
        || vec![1, 2, 4],
        |s| s.split(',').filter_map(|p| p.trim().parse().ok()).collect(),
    );
    let proof = std::env::var("TILEPDB_BENCH_PROOF").is_ok_and(|v| v == "1");
    let rounds: usize = std::env::var("TILEPDB_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(1);
    let cases: [(&str, &str); 2] = [("6", "1,2,5,6,7,12"), ("7", "1,2,5,6,7,10,11")];
    let scratch = std::env::temp_dir().join(format!("tilepdb-bench-shards-{}", std::process::id()));
    println!(
        "{} cores; 24-puzzle zero-aware 1-bit tables, built {} the proof",
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        if proof { "with" } else { "without" }
    );
    for (name, tiles) in cases {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let job = [
            "--puzzle",
            "24",
            "--pattern",
            tiles,
            "--blank",
            "zero-aware",
            "--encoding",
            "1-bit",
        ];
        let board = "5x5".parse().unwrap();
        let pattern = Pattern::new(
            board,
            tiles.split(',').map(|t| t.parse().unwrap()).collect(),
        )
        .unwrap();
        let space =
            StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::ZeroAware).unwrap();
        let index = space.region_index().unwrap();
        let states = index.states() as f64;
        println!("\n{name} tiles {{{tiles}}}: {} states", index.states());
        // Every round builds the single machine's table, then each sharded one.
        let mut runs: Vec<Vec<(f64, f64, Value)>> = vec![Vec::new(); shard_counts.len() + 1];
        for _ in 0..rounds {
            let single = scratch.join("single");
            runs[0].push(build(&job, proof, &single));
            let _ = std::fs::remove_dir_all(&single);
            for (i, &shards) in shard_counts.iter().enumerate() {
                let out = scratch.join(format!("shards-{shards}"));
                runs[i + 1].push(build(
                    &[&job[..], &["--shards", &shards.to_string()]].concat(),
                    proof,
                    &out,
                ));
                let _ = std::fs::remove_dir_all(&out);
            }
        }
        let (wall, cpu, summary) = medians(&runs[0]);
        let table = &summary["tables"][0];
        let single_sha = summary["sha256"].as_str().unwrap_or_default().to_string();
        assert!(
            runs[0].iter().all(|r| r.2["sha256"] == summary["sha256"]),
            "the single machine's rounds gave different files"
        );
        println!(
            "  single machine   wall {wall:7.2} s  cpu {cpu:7.2} s              peak {:7.1} MiB{}",
            mib(table["peak_rss_bytes"].as_f64().unwrap()),
            rounds_cpu(&runs[0])
        );
        let single_cpu = cpu;
        for (i, &shards) in shard_counts.iter().enumerate() {
            let (wall, cpu, summary) = medians(&runs[i + 1]);
            let figures = &summary["shard_figures"][0];
            let same = runs[i + 1]
                .iter()
                .all(|r| r.2["sha256"].as_str() == Some(single_sha.as_str()));
            let sent = figures["sent_bytes"].as_f64().unwrap();
            let foreign = figures["foreign_successors"].as_f64().unwrap();
            let generated = figures["generated"].as_f64().unwrap();
            let layout = ShardLayout::new(index.orders(), shards).unwrap();
            println!(
                "  {shards} shard(s)      wall {wall:7.2} s  cpu {cpu:7.2} s ({:.2}x)  coordinator {:7.1} MiB  wire {:.3} B/state  local {:.1} %  same sha256: {}{}",
                cpu / single_cpu,
                mib(summary["coordinator_peak_rss_bytes"].as_f64().unwrap()),
                sent / states,
                100.0 * (1.0 - foreign / generated),
                if same { "yes" } else { "NO" },
                rounds_cpu(&runs[i + 1])
            );
            if foreign > 0.0 {
                println!(
                    "      successors {:.0} ({:.1} a state), {:.0} foreign: {:.2} ns a successor on the single machine, {:.1} ns more for each foreign one",
                    generated,
                    generated / states,
                    foreign,
                    1e9 * single_cpu / generated,
                    1e9 * (cpu - single_cpu) / foreign
                );
            }
            for (p, peak) in figures["worker_peak_rss_bytes"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
            {
                let p = u32::try_from(p).unwrap();
                let arrays =
                    ShardSize::of(&space, &index, layout, p, DepthCode::OneBit).bytes() as f64;
                let peak = peak.as_f64().unwrap();
                println!(
                    "      worker {p}: peak {:7.1} MiB, its shard's arrays {:7.1} MiB ({:.2}x; arrays x 1.15 + 64 MiB = {:.1} MiB)",
                    mib(peak),
                    mib(arrays),
                    peak / arrays,
                    mib(arrays * 1.15) + 64.0
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The median wall and CPU seconds of `runs` (each its own median), and the last run's summary.
fn medians(runs: &[(f64, f64, Value)]) -> (f64, f64, Value) {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            f64::midpoint(v[n / 2 - 1], v[n / 2])
        }
    };
    let last = runs.last().expect("a round").2.clone();
    (
        median(runs.iter().map(|r| r.0).collect()),
        median(runs.iter().map(|r| r.1).collect()),
        last,
    )
}

/// Every round's CPU seconds, when there are several.
fn rounds_cpu(runs: &[(f64, f64, Value)]) -> String {
    if runs.len() < 2 {
        return String::new();
    }
    let each: Vec<String> = runs.iter().map(|r| format!("{:.2}", r.1)).collect();
    format!("  (cpu of each round: {})", each.join(", "))
}
