//! One JSON scheme (`docs/json.md`) in the solver program too: `solve`, `eval` and `fetch`
//! (`--list` and a download) print one object that begins with `version` and `command`, a set
//! named by `set_name`/`set_dir` and its tables by their `tiles`, as the coordinator's
//! commands do. The tables are served on a real socket by the coordinator's table service.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use tilepdb_common::table::Encoding;
use tilepdb_common::{BlankRule, Goal, Partition};
use tilepdb_coordinator::build::BuildOptions;
use tilepdb_coordinator::cache::open_or_build;
use tilepdb_coordinator::cluster::{ServeOptions, TableService, bind, serve_tables};

fn json(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_tilepdb-solve"))
        .args(args)
        .env_remove("TILEPDB_CACHE")
        .env_remove("TILEPDB_TOKEN")
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

fn document(v: &Value, command: &str) {
    assert_eq!(v["version"], 1, "{command}: {v:#}");
    assert_eq!(v["command"], command, "{v:#}");
}

/// The tables of the 8-puzzle's 4-4 partition, by their tiles.
fn tiles_of(tables: &Value) -> Vec<Vec<u64>> {
    tables
        .as_array()
        .unwrap_or_else(|| panic!("no tables: {tables:#}"))
        .iter()
        .map(|t| {
            t["tiles"]
                .as_array()
                .unwrap_or_else(|| panic!("a table without tiles: {t:#}"))
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        })
        .collect()
}

fn serve(dir: &Path) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
            tx.send(format!("http://{addr}")).unwrap();
            let options = ServeOptions {
                tables: Some(TableService::new(dir, None)),
                ..ServeOptions::default()
            };
            serve_tables(listener, options).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

#[test]
fn solve_eval_and_fetch_share_the_scheme() {
    let served = tempfile::tempdir().unwrap();
    let (set, _) = open_or_build(
        served.path(),
        &Partition::named("8:4-4").unwrap(),
        Goal::BlankFirst,
        BlankRule::Minimized,
        Encoding::Byte,
        &BuildOptions::default(),
    )
    .unwrap();
    let dir = set.dir().to_str().unwrap().to_string();
    let name = set.dir().file_name().unwrap().to_str().unwrap().to_string();
    let expected_tiles = vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]];
    let state = "1 2 0 3 4 5 6 7 8";

    let v = json(&["solve", "--tables", &dir, "--json", "--state", state]);
    document(&v, "solve");
    assert_eq!(v["results"][0]["outcome"], "solved");
    assert!(v["total_seconds"].is_number());
    // Two moves from the goal, one iteration at bound 2: the start and the child after tile
    // 2 expanded, tiles 2 and 1 generated (the goal is not expanded).
    let r = &v["results"][0];
    assert_eq!(
        (r["expanded"].as_u64(), r["generated"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        r["per_iteration"],
        serde_json::json!([{"bound": 2, "expanded": 2, "generated": 2}])
    );
    assert_eq!(
        (v["total_expanded"].as_u64(), v["total_generated"].as_u64()),
        (Some(2), Some(2))
    );
    assert!(v["expanded_per_second"].is_number() && v["generated_per_second"].is_number());
    assert!(v.get("total_nodes").is_none() && r.get("nodes").is_none());

    let v = json(&["eval", "--tables", &dir, "--json", "--state", state]);
    document(&v, "eval");
    assert_eq!(v["set_dir"], dir.as_str());
    assert_eq!(tiles_of(&v["tables"]), expected_tiles);
    assert_eq!(v["results"][0]["values"].as_array().unwrap().len(), 2);

    let url = serve(served.path());
    let v = json(&["fetch", "--from", &url, "--list", "--json"]);
    document(&v, "fetch");
    let listed = &v["sets"][0];
    assert_eq!(listed["set_name"], name.as_str(), "{v:#}");
    assert_eq!(listed["partition"], "8:4-4");
    assert_eq!(listed["blank_rule"], "minimized");
    assert_eq!(tiles_of(&listed["tables"]), expected_tiles);
    assert!(listed["tables"][0]["file_bytes"].as_u64().unwrap() > 0);

    let cache = tempfile::tempdir().unwrap();
    let c = cache.path().to_str().unwrap();
    let v = json(&[
        "fetch", "--from", &url, "--set", &name, "--cache", c, "--json",
    ]);
    document(&v, "fetch");
    assert_eq!(v["set_name"], name.as_str());
    let fetched = v["set_dir"].as_str().unwrap();
    assert!(
        Path::new(fetched).starts_with(cache.path()) && fetched.contains(&name),
        "{v:#}"
    );
    assert!(v["total_file_bytes"].as_u64().unwrap() > 0);
    assert!(v["total_seconds"].is_number());
}
