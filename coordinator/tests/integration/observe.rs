//! The coordinator's HTTP port during a real distributed build on 127.0.0.1 (`serve
//! --http-listen`, two worker processes): `/metrics` parses as Prometheus text with a real
//! parser (the `prometheus-parse` crate) and its counters move while the build runs;
//! `/api/status` shows both workers and each table's progress, and `status --watch` prints
//! them page after page until the job is done; after the job (with
//! `--keep-serving`) the port still answers, every table is written and its histogram is the
//! one in the table file's header; the dashboard page is served; unknown paths are 404.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{Server, coordinator_bin, scratch};
use tilepdb_common::table::Pdb;

const TOKEN: &str = "observe-test-token";

/// One HTTP/1.1 GET: the status code, the content type and the body.
fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("headers end");
    let code: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (code, content_type, body.to_string())
}

/// The metrics text parsed by `prometheus-parse`: value of each sample by name and labels.
fn parse_metrics(text: &str) -> HashMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    let mut samples = HashMap::new();
    for s in scrape.samples {
        let value = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            other => panic!("{}: unexpected value {other:?}", s.metric),
        };
        let mut labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        let key = if labels.is_empty() {
            s.metric.clone()
        } else {
            format!("{}{{{}}}", s.metric, labels.join(","))
        };
        samples.insert(key, value);
    }
    samples
}

fn worker(url: &str, name: &str) -> Child {
    Command::new(coordinator_bin())
        .arg("worker")
        .args(["--coordinator", url, "--threads", "1", "--name", name])
        .args(["--give-up-after", "60"])
        .env("TILEPDB_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Delivers a result stream that starts with a chunk instead of a header; the refusal's code.
fn refuse_a_headless_result(url: &str) -> tonic::Code {
    use tilepdb_common::wire::proto::coordinator_client::CoordinatorClient;
    use tilepdb_common::wire::proto::{Chunk, ResultMessage, result_message};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = CoordinatorClient::connect(url.to_string()).await.unwrap();
        let messages = vec![ResultMessage {
            kind: Some(result_message::Kind::Chunk(Chunk::default())),
        }];
        let mut request = tonic::Request::new(tokio_stream::iter(messages));
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        client.deliver_result(request).await.unwrap_err().code()
    })
}

/// `serve` of `partition` with the HTTP port, kept serving after the job; the server and the
/// HTTP address.
pub fn serve_observed(dir: &Path, partition: &str) -> (Server, SocketAddr) {
    let mut command = Command::new(coordinator_bin());
    command
        .args(["serve", "--partition", partition, "--listen", "127.0.0.1:0"])
        .args([
            "--http-listen",
            "127.0.0.1:0",
            "--keep-serving",
            "--linger",
            "3",
        ])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--out")
        .arg(dir.join("out"))
        .env("TILEPDB_TOKEN", TOKEN);
    let server = Server::spawn(command);
    let addr = server.http.expect("the dashboard's address");
    (server, addr)
}

#[test]
fn metrics_parse_and_move_and_the_status_shows_workers_tables_and_histograms() {
    let dir = scratch("observe");
    let (mut server, http) = serve_observed(&dir, "15:5-5-5");

    // Before any worker: valid text, nothing expanded, the job's identity in the labels.
    let (code, content_type, text) = get(http, "/metrics");
    assert_eq!(code, 200);
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let before = parse_metrics(&text);
    assert_eq!(before["tilepdb_states_expanded_total"], 0.0);
    assert_eq!(before["tilepdb_workers_alive"], 0.0);
    assert_eq!(before["tilepdb_tables"], 3.0);
    assert_eq!(before["tilepdb_job_done"], 0.0);
    assert!(
        before
            .keys()
            .any(|k| k.starts_with("tilepdb_job_info{") && k.contains("partition=15:5-5-5")),
        "{before:?}"
    );

    let url = server.url();
    // A hostile result (a chunk with no header) is refused, and counted by reason.
    let refused = refuse_a_headless_result(&url);
    assert_eq!(refused, tonic::Code::InvalidArgument);
    let metrics = parse_metrics(&get(http, "/metrics").2);
    assert_eq!(
        metrics.get("tilepdb_results_refused_total{reason=invalid argument}"),
        Some(&1.0),
        "{metrics:?}"
    );
    // `status --watch` follows the same job from the terminal's side until it is done.
    let watch = Command::new(coordinator_bin())
        .args(["status", "--coordinator", &url, "--watch", "0.2"])
        .env("TILEPDB_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut workers = vec![worker(&url, "observed-1"), worker(&url, "observed-2")];

    // During the build: the counters move, both workers show, a table is in progress.
    let mut expanded_seen = Vec::new();
    let mut received_seen = Vec::new();
    let mut saw_two_workers = false;
    let mut saw_partial_table = false;
    let until = Instant::now() + Duration::from_secs(300);
    loop {
        let metrics = parse_metrics(&get(http, "/metrics").2);
        if metrics["tilepdb_job_done"] == 1.0 {
            break;
        }
        expanded_seen.push(metrics["tilepdb_states_expanded_total"]);
        received_seen.push(metrics["tilepdb_received_bytes_total"]);
        let status: serde_json::Value = serde_json::from_str(&get(http, "/api/status").2).unwrap();
        let names: Vec<&str> = status["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["alive"] == true)
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        saw_two_workers |= names.contains(&"observed-1") && names.contains(&"observed-2");
        saw_partial_table |= status["tables"].as_array().unwrap().iter().any(|t| {
            let f = t["fraction"].as_f64().unwrap();
            t["state"] == "building" && f > 0.0 && f < 1.0
        });
        assert!(Instant::now() < until, "the build did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        saw_two_workers,
        "the status never showed both workers alive"
    );
    assert!(saw_partial_table, "no table was ever seen part built");
    assert!(
        expanded_seen.windows(2).all(|w| w[0] <= w[1]),
        "a counter went down: {expanded_seen:?}"
    );
    let distinct = |v: &[f64]| {
        let mut v = v.to_vec();
        v.dedup();
        v.len()
    };
    assert!(
        distinct(&expanded_seen) >= 3,
        "states expanded did not move during the build: {expanded_seen:?}"
    );
    assert!(distinct(&received_seen) >= 3, "{received_seen:?}");

    // After the job: the port still answers, every table is written, the histograms are the
    // files' own.
    let after = parse_metrics(&get(http, "/metrics").2);
    assert_eq!(after["tilepdb_tables_written"], 3.0);
    assert!(after["tilepdb_states_expanded_total"] >= *expanded_seen.last().unwrap());
    assert!(after["tilepdb_results_accepted_total"] > 0.0);
    let status: serde_json::Value = serde_json::from_str(&get(http, "/api/status").2).unwrap();
    assert_eq!(status["done"], true);
    let set = dir.join("out").join("4x4-5-5-5-minimized-blank-first");
    for t in status["tables"].as_array().unwrap() {
        assert_eq!(t["state"], "written");
        assert_eq!(t["fraction"], 1.0);
        let tiles: Vec<String> = t["tiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let pdb = Pdb::open(set.join(format!("pattern-{}.pdb", tiles.join("-")))).unwrap();
        let histogram: Vec<u64> = t["histogram"]
            .as_array()
            .expect("a histogram once written")
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(histogram, pdb.header().histogram);
        assert_eq!(histogram.iter().sum::<u64>(), pdb.entries());
    }
    let (code, content_type, page) = get(http, "/");
    assert_eq!(code, 200);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(page.contains("api/status"));
    assert_eq!(get(http, "/no/such/page").0, 404);

    for w in &mut workers {
        let status = w.wait().unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }
    let watched = watch.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&watched.stdout);
    assert!(
        watched.status.success(),
        "status --watch failed: {}",
        String::from_utf8_lossy(&watched.stderr)
    );
    // Pages of the build: a table part built with its bar and ETA, a row per worker; the
    // last page says done.
    assert!(text.contains(" building "), "{text}");
    assert!(text.contains("ETA"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("observed-1") && l.contains("last heard")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains("observed-2")), "{text}");
    let last_page = text.rsplit("job      ").next().unwrap();
    assert!(
        last_page.contains("phase    done; 3 of 3 tables written"),
        "{last_page}"
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
