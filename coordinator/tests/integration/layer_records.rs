//! The states of every layer as the job records them, not as samples see them: a real `serve`
//! on 127.0.0.1 (with its HTTP port) and one worker build the 8-puzzle 4-4 set, whose layers
//! take milliseconds each, while nobody asks for the status. Asked only once the job is done,
//! `/api/status`, `/metrics` and `status --json` give every layer's states of every table,
//! exactly those of the coordinator's "layer done" log lines.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{Server, coordinator_bin, scratch, serve_job};

const TOKEN: &str = "layer-records-test-token";

/// The body of one HTTP/1.1 GET answered 200.
fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("headers end");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// `key=VALUE` of a log line, as a number.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.trim_matches('"').parse().ok())
}

#[test]
fn every_layer_of_every_table_is_in_the_status_however_fast() {
    let dir = scratch("layer-records");
    let mut command = serve_job(&["--partition", "8:4-4", "--encoding", "nibble"], &dir);
    command
        .args(["--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"])
        .args(["--keep-serving", "--linger", "1"])
        .env("TILEPDB_TOKEN", TOKEN);
    let server = Server::spawn(command);
    let http: SocketAddr = server.http.expect("the dashboard's address");
    let url = server.url();
    let mut worker = Command::new(coordinator_bin())
        .arg("worker")
        .args([
            "--coordinator",
            &url,
            "--threads",
            "1",
            "--give-up-after",
            "60",
        ])
        .env("TILEPDB_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Not a single sample while the tables are built: the worker ends when the job is done.
    assert!(worker.wait().unwrap().success(), "the worker failed");

    // The layers as the coordinator logged them: the goal's 1, then each layer's next layer
    // until one adds nothing.
    let mut logged: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in server.lines(&["layer done"]) {
        let table = field(&l, "table").unwrap_or_else(|| panic!("no table in {l}"));
        let next = field(&l, "next_layer").unwrap_or_else(|| panic!("no next_layer in {l}"));
        let layers = logged.entry(table).or_insert_with(|| vec![1]);
        if next > 0 {
            layers.push(next);
        }
    }
    assert_eq!(logged.len(), 2, "{logged:?}");
    assert!(logged.values().all(|l| l.len() > 10), "{logged:?}");

    let status: serde_json::Value = serde_json::from_str(&get(http, "/api/status")).unwrap();
    assert_eq!(status["done"], true, "{status}");
    assert_eq!(status["encoding"], "nibble", "{status}");
    for t in status["tables"].as_array().unwrap() {
        let index = t["index"].as_u64().unwrap();
        let layers: Vec<u64> = t["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(layers, logged[&index], "table {index} in /api/status");
        assert_eq!(t["states_found"].as_u64(), Some(layers.iter().sum()));
    }

    let metrics = get(http, "/metrics");
    for (index, layers) in &logged {
        let tiles = if *index == 0 { "1-2-3-4" } else { "5-6-7-8" };
        for (depth, states) in layers.iter().enumerate() {
            let sample = format!(
                "tilepdb_table_layer_states{{table=\"{tiles}\",depth=\"{depth}\"}} {states}\n"
            );
            assert!(metrics.contains(&sample), "no {sample:?} in the metrics");
        }
    }

    let out = Command::new(coordinator_bin())
        .args(["status", "--coordinator", &url, "--json"])
        .env("TILEPDB_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["encoding"], "nibble");
    for t in json["tables"].as_array().unwrap() {
        let index = t["index"].as_u64().unwrap();
        let layers: Vec<u64> = serde_json::from_value(t["states_by_depth"].clone()).unwrap();
        assert_eq!(layers, logged[&index], "table {index} in status --json");
    }

    let until = Instant::now() + Duration::from_secs(60);
    while worker.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "the worker did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
