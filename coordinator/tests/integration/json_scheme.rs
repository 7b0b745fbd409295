//! One JSON scheme (`docs/json.md`): every `--json` output of the coordinator program — `build`
//! (single machine and `--workers`), `serve`, `status`, `inspect`, `verify`, `partitions` — is
//! one object that begins with `version` and `command`, and names the same things the same way
//! (a table by its `tiles`, its values `max_value`/`mean_value`, a set by `set_dir`, the
//! partition, board, goal and blank rule). Real processes on 127.0.0.1.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const PROGRAM: &str = env!("CARGO_BIN_EXE_tilepdb-coordinator");
const JOB: [&str; 6] = ["--puzzle", "3x3", "--pattern", "1,2,3", "--pattern", "4,5"];

fn json(args: &[&str]) -> Value {
    json_with_env(args, &[])
}

/// `json` with the environment variables `env` set.
fn json_with_env(args: &[&str], env: &[(&str, &str)]) -> Value {
    let out = Command::new(PROGRAM)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The fields every document has.
fn document(v: &Value, command: &str) {
    assert_eq!(v["version"], 1, "{command}: {v:#}");
    assert_eq!(v["command"], command, "{v:#}");
}

/// A table of the set of `JOB`: named by its tiles, its values `max_value`/`mean_value`.
fn table(t: &Value, built: bool) {
    let tiles: Vec<u64> = t["tiles"]
        .as_array()
        .unwrap_or_else(|| panic!("a table without tiles: {t:#}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert!(tiles == [1, 2, 3] || tiles == [4, 5], "{t:#}");
    for old in ["max", "mean", "pattern"] {
        assert!(t.get(old).is_none(), "the old name {old}: {t:#}");
    }
    if built {
        assert!(t["max_value"].as_u64().is_some_and(|m| m > 0), "{t:#}");
        assert!(t["mean_value"].as_f64().is_some_and(|m| m > 0.0), "{t:#}");
        assert!(t["histogram"].is_array(), "{t:#}");
    }
}

fn tables(v: &Value, built: bool) {
    let tables = v["tables"].as_array().unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(tables.len(), 2, "{v:#}");
    for t in tables {
        table(t, built);
    }
}

/// The set of `JOB` in `out`.
fn set(v: &Value, out: &Path) {
    assert_eq!(v["partition"], "3x3:3-2", "{v:#}");
    let dir = out.join("3x3-1.2.3_4.5-minimized-blank-first");
    assert_eq!(v["set_dir"], dir.to_str().unwrap(), "{v:#}");
}

#[test]
fn build_inspect_verify_and_partitions_share_the_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("single");
    let o = out.to_str().unwrap();
    let v = json(&[&["build", "--json", "--out", o][..], &JOB].concat());
    document(&v, "build");
    set(&v, &out);
    assert_eq!(v["set_name"], "3x3-1.2.3_4.5-minimized-blank-first");
    tables(&v, true);
    // The peak the kernel counted over the whole set, beside the plan of the set and of each
    // table (the build, the file and its proof).
    assert!(v["peak_rss_bytes"].as_u64().is_some_and(|p| p > 0), "{v:#}");
    assert!(
        v["build_memory_bytes"].as_u64().is_some_and(|p| p > 0),
        "{v:#}"
    );
    for t in v["tables"].as_array().unwrap() {
        assert!(
            t["build_memory_bytes"].as_u64().is_some_and(|p| p > 0),
            "{t:#}"
        );
        assert_eq!(t["proof"], "layer-search", "{t:#}");
    }

    let cluster = dir.path().join("cluster");
    let c = cluster.to_str().unwrap();
    let v = json(&[&["build", "--json", "--workers", "1", "--out", c][..], &JOB].concat());
    document(&v, "build");
    set(&v, &cluster);
    tables(&v, true);
    assert!(v["job_id"].is_string(), "{v:#}");

    let sharded = dir.path().join("sharded");
    let c = sharded.to_str().unwrap();
    let v = json_with_env(
        &[&["build", "--json", "--shards", "2", "--out", c][..], &JOB].concat(),
        &[("TILEPDB_WORKER_PROGRAM", PROGRAM)],
    );
    document(&v, "build");
    set(&v, &sharded);
    tables(&v, true);
    assert!(v["job_id"].is_string(), "{v:#}");
    assert_eq!(v["shards"], 2, "{v:#}");
    let figures = &v["shard_figures"][0];
    for key in [
        "foreign_successors",
        "sent_states",
        "sent_bytes",
        "generated",
        "checkpoint_bytes",
    ] {
        assert!(figures[key].is_u64(), "{key}: {v:#}");
    }
    assert_eq!(
        figures["worker_peak_rss_bytes"].as_array().unwrap().len(),
        2
    );

    let v = json(&[&["inspect", "--plan", "--json", "--shards", "2"][..], &JOB].concat());
    document(&v, "inspect");
    let plan = &v["tables"][0]["sharded"];
    assert_eq!(plan["shards"], 2, "{v:#}");
    for key in [
        "worker_memory_bytes",
        "worker_arrays_bytes",
        "worker_prover_bytes",
        "worker_checkpoint_bytes",
        "worker_proof_entries_bytes",
        "worker_disk_bytes",
        "wire_bytes",
        "coordinator_memory_bytes",
        "coordinator_disk_bytes",
    ] {
        assert!(plan[key].is_u64(), "{key}: {v:#}");
    }

    let set_dir = out.join("3x3-1.2.3_4.5-minimized-blank-first");
    let s = set_dir.to_str().unwrap();
    let v = json(&["inspect", s, "--json"]);
    document(&v, "inspect");
    set(&v, &out);
    assert_eq!(v["board"], "3x3");
    assert_eq!(v["blank_rule"], "minimized");
    assert_eq!(v["goal"], "blank-first");
    tables(&v, true);
    let file = set_dir.join("pattern-4-5.pdb");
    let v = json(&["inspect", file.to_str().unwrap(), "--json"]);
    document(&v, "inspect");
    table(&v, true);
    let v = json(&[&["inspect", "--plan", "--json"][..], &JOB].concat());
    document(&v, "inspect");
    assert!(v["set_dir"].is_null());
    tables(&v, false);
    // The plan with the proof (which proof, and the file with its arrays) and without.
    assert!(
        v["build_memory_bytes"].as_u64().is_some_and(|b| b > 0),
        "{v:#}"
    );
    for t in v["tables"].as_array().unwrap() {
        assert_eq!(t["proof"], "layer-search", "{t:#}");
        let with = t["build_memory_bytes"].as_u64().unwrap();
        let without = t["build_memory_no_proof_bytes"].as_u64().unwrap();
        let proof = t["proof_memory_bytes"].as_u64().unwrap();
        assert!(
            with >= without && proof > t["file_bytes"].as_u64().unwrap(),
            "{t:#}"
        );
    }

    let v = json(&["verify", s, "--json"]);
    document(&v, "verify");
    assert_eq!(v["ok"], true);
    assert_eq!(v["tables"].as_array().unwrap().len(), 2);
    let v = json(&["verify", o, "--json"]);
    document(&v, "verify");
    assert_eq!(v["sets"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(v["sets"][0]["set_dir"], s, "{v:#}");

    let v = json(&["partitions", "--json"]);
    document(&v, "partitions");
    assert!(
        v["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["partition"] == "15:6-6-3")
    );
}

#[test]
fn serve_and_status_share_the_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let data = dir.path().join("data");
    let address_file = dir.path().join("address");
    let mut serve = Command::new(PROGRAM)
        .args(["serve", "--json", "--no-token", "--listen", "127.0.0.1:0"])
        .args(JOB)
        .arg("--out")
        .arg(&out)
        .arg("--data-dir")
        .arg(&data)
        .arg("--address-file")
        .arg(&address_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    let addr = loop {
        let text = std::fs::read_to_string(&address_file).unwrap_or_default();
        if let Some(addr) = text.lines().find_map(|l| l.strip_prefix("grpc ")) {
            break addr.to_string();
        }
        assert!(
            Instant::now() < until && serve.try_wait().unwrap().is_none(),
            "serve wrote no address file"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let url = format!("http://{addr}");

    // No worker yet: the job waits in its first table.
    let v = json(&["status", "--coordinator", &url, "--json"]);
    document(&v, "status");
    assert_eq!(v["partition"], "3x3:3-2", "{v:#}");
    assert_eq!(v["board"], "3x3");
    tables(&v, false);
    assert_eq!(v["tables"][0]["index"], 0);
    assert!(v["tables"][0]["expected_states"].as_u64().unwrap() > 0);
    assert!(v["expanded_per_second"].is_number(), "{v:#}");
    assert!(v.get("states_per_second").is_none(), "{v:#}");

    let worker = Command::new(PROGRAM)
        .args(["worker", "--coordinator", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(worker.success());
    let mut stdout = String::new();
    serve
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(serve.wait().unwrap().success());
    let v: Value = serde_json::from_str(&stdout).unwrap();
    document(&v, "serve");
    set(&v, &out);
    tables(&v, true);
    assert_eq!(v["tables_already_written"], 0);
}
