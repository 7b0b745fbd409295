//! The sharded build with real processes on 127.0.0.1: `tilepdb-coordinator serve --shards P`
//! (the control plane) and one `tilepdb-coordinator worker --shard p --shards P` process per
//! shard, which exchange successors among themselves. Each set is compared byte for byte with
//! the single-machine build of the same job; hostile peers speak the protocol by hand.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tilepdb_common::BlankRule;
use tilepdb_common::shard::ShardLayout;
use tilepdb_common::wire::PROTOCOL_VERSION;
use tilepdb_common::wire::proto::shard_control_client::ShardControlClient;
use tilepdb_common::wire::proto::shard_peer_client::ShardPeerClient;
use tilepdb_common::wire::proto::step_response::Command as StepCommand;
use tilepdb_common::wire::proto::{JoinRequest, PushRequest, StepRequest};
use tilepdb_common::wire::region_lists::{RegionListShape, encode_region_states};
use tonic::Code;

use crate::server::client::request;
use crate::server::{Server, coordinator_bin, scratch, single_machine, table_files};
use crate::shards::first_pattern_space;

const TOKEN: &str = "shards-test-token";
const MINUTES: Duration = Duration::from_secs(300);
/// The 15-puzzle 5-5-5 zero-aware set in 1-bit entries.
const ZERO_AWARE_555: [&str; 6] = [
    "--partition",
    "15:5-5-5",
    "--blank",
    "zero-aware",
    "--encoding",
    "1-bit",
];

/// `serve --shards` of `job`, its tables in `out`.
fn serve_shards(job: &[&str], out: &Path, shards: u32, extra: &[&str]) -> Server {
    let mut command = Command::new(coordinator_bin());
    command
        .arg("serve")
        .args(job)
        .args(["--shards", &shards.to_string()])
        .args(["--linger", "5"])
        .arg("--out")
        .arg(out)
        .args(extra)
        .env("TILEPDB_TOKEN", TOKEN);
    if !extra.contains(&"--listen") {
        command.args(["--listen", "127.0.0.1:0"]);
    }
    Server::spawn(command)
}

/// A running shard worker process.
/// A worker process, its standard error read as it comes by a thread of its own (a worker
/// that fills the pipe nobody reads blocks in its next log line).
struct ShardWorker {
    child: Child,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl ShardWorker {
    fn start(url: &str, shard: u32, shards: u32, extra: &[&str]) -> ShardWorker {
        ShardWorker::start_with_env(url, shard, shards, extra, &[])
    }

    /// [`ShardWorker::start`] with more environment variables.
    fn start_with_env(
        url: &str,
        shard: u32,
        shards: u32,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> ShardWorker {
        let mut command = Command::new(coordinator_bin());
        command.envs(env.iter().copied());
        command
            .arg("worker")
            .args(["--coordinator", url, "--threads", "1"])
            .args([
                "--shard",
                &shard.to_string(),
                "--shards",
                &shards.to_string(),
            ])
            .args(extra);
        if !extra.contains(&"--give-up-after") {
            command.args(["--give-up-after", "30"]);
        }
        let mut child = command
            .env("TILEPDB_TOKEN", TOKEN)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        });
        ShardWorker {
            child,
            stderr: Some(stderr),
        }
    }

    /// Its standard error up to its exit (after it has exited or been killed).
    fn stderr(&mut self) -> String {
        self.stderr
            .take()
            .map(|reader| reader.join().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Waits for the worker to exit; whether it exited 0, and its standard error.
    fn wait(mut self, timeout: Duration) -> (bool, String) {
        let until = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status.success(), self.stderr());
            }
            assert!(Instant::now() < until, "the worker did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ShardWorker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Builds `job` on `shards` shards (a `serve --shards` and its workers) into `out`; the
/// coordinator's log.
fn build_on_shards(job: &[&str], out: &Path, shards: u32) -> Vec<String> {
    let server = serve_shards(job, out, shards, &[]);
    let url = server.url();
    let workers: Vec<ShardWorker> = (0..shards)
        .map(|p| ShardWorker::start(&url, p, shards, &[]))
        .collect();
    let log = server.finish(MINUTES);
    assert_workers_succeed(workers);
    log
}

/// Waits for the coordinator `server` to exit and returns its log, as [`Server::finish`]
/// does; if it is still running after `timeout`, the panic also shows every worker's standard
/// error, the workers killed (what a shard that never joined again was doing).
fn finish_showing_workers(
    server: Server,
    workers: &mut [ShardWorker],
    timeout: Duration,
) -> Vec<String> {
    server.finish_or_show(timeout, || {
        let mut logs = String::new();
        for (p, w) in workers.iter_mut().enumerate() {
            use std::fmt::Write as _;
            w.kill();
            let _ = write!(logs, "\n--- shard worker {p}:\n{}", w.stderr());
        }
        logs
    })
}

/// Waits for each worker, asserting that it succeeded.
fn assert_workers_succeed(workers: impl IntoIterator<Item = ShardWorker>) {
    for w in workers {
        let (ok, err) = w.wait(Duration::from_secs(30));
        assert!(ok, "a shard worker failed: {err}");
    }
}

/// Builds `job` on a single machine into `dir/single` and asserts that the sharded build's
/// set in `dir/out` is the same, file by file.
fn assert_same_as_single_machine(job: &[&str], dir: &Path) {
    single_machine(job, &dir.join("single"));
    assert_same_sets(&dir.join("single"), &dir.join("out"));
}

fn assert_same_sets(want: &Path, got: &Path) {
    let (a, b) = (table_files(want), table_files(got));
    assert!(!a.is_empty());
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b));
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(
            x == y,
            "{name} differs between {} and {}",
            want.display(),
            got.display()
        );
    }
}

/// `job` built on 1, 2 and 3 shards gives the single machine's files, byte for byte; with
/// two shards or more each table is proven on the shards by both teams, with one in the
/// coordinator.
fn check_job(name: &str, job: &[&str]) {
    let dir = scratch(name);
    single_machine(job, &dir.join("single"));
    let tables = table_files(&dir.join("single"))
        .iter()
        .filter(|(name, _)| Path::new(name).extension().is_some_and(|e| e == "pdb"))
        .count();
    for shards in 1..=3 {
        let out = dir.join(format!("shards-{shards}"));
        let log = build_on_shards(job, &out, shards);
        assert_same_sets(&dir.join("single"), &out);
        let count = |words: &str| log.iter().filter(|l| l.contains(words)).count();
        let (on_shards, in_coordinator) = (
            count("both teams proved the table's file"),
            count("proven in the coordinator"),
        );
        if shards == 1 {
            assert_eq!((on_shards, in_coordinator), (0, tables), "{name}, 1 shard");
        } else {
            assert_eq!(
                (on_shards, in_coordinator),
                (tables, 0),
                "{name}, {shards} shards"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_two_and_three_shards_give_the_single_machine_5_5_5_sets() {
    check_job("shards-555-min", &["--partition", "15:5-5-5"]);
    check_job("shards-555-za", &ZERO_AWARE_555);
}

#[test]
fn one_two_and_three_shards_give_the_single_machine_6_6_3_sets() {
    check_job("shards-663-min", &["--partition", "15:6-6-3"]);
    check_job(
        "shards-663-za",
        &[
            "--partition",
            "15:6-6-3",
            "--blank",
            "zero-aware",
            "--encoding",
            "1-bit",
        ],
    );
}

/// `build --shards P` runs the control plane and P worker processes itself.
#[test]
fn build_with_local_shards_gives_the_single_machine_set() {
    let dir = scratch("shards-local");
    let job = ZERO_AWARE_555;
    single_machine(&job, &dir.join("single"));
    let output = Command::new(coordinator_bin())
        .arg("build")
        .args(job)
        .args(["--shards", "2", "--json", "--out"])
        .arg(dir.join("local"))
        .env("TILEPDB_WORKER_PROGRAM", coordinator_bin())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["shards"], 2);
    let figures = summary["shard_figures"].as_array().unwrap();
    assert_eq!(figures.len(), 3);
    assert!(
        figures
            .iter()
            .all(|f| f["sent_states"].as_u64().unwrap() > 0)
    );
    assert_same_sets(&dir.join("single"), &dir.join("local"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The body of one HTTP/1.1 GET answered 200 (`None`: not answered).
fn http_get(addr: std::net::SocketAddr, path: &str) -> Option<String> {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// A sharded job shows its status as a coordinator-held one does: `status` (the `JobStatus`
/// call) lists the shards that joined while it waits for the others, and `/api/status`, the
/// dashboard's data, gives each table's layers as they are finished: every sample a prefix of
/// the table's layers, which for a zero-aware table are its histogram (one entry per state).
#[test]
fn a_sharded_job_shows_its_status_and_layers() {
    let dir = scratch("shards-status");
    let job = ZERO_AWARE_555;
    single_machine(&job, &dir.join("single"));
    // Each table's histogram, by its tiles.
    let histograms: std::collections::BTreeMap<Vec<u32>, Vec<u64>> =
        table_files(&dir.join("single"))
            .iter()
            .filter(|(name, _)| Path::new(name).extension().is_some_and(|e| e == "pdb"))
            .map(|(_, bytes)| {
                let header = tilepdb_common::table::Header::parse(&bytes[..4096]).unwrap();
                let tiles = header.tiles.iter().map(|&t| u32::from(t)).collect();
                (tiles, header.histogram)
            })
            .collect();
    assert_eq!(histograms.len(), 3);
    let out = dir.join("shards");
    let mut server = serve_shards(&job, &out, 2, &["--http-listen", "127.0.0.1:0"]);
    let http = server.http.expect("the dashboard's address");
    let url = server.url();
    let first = ShardWorker::start(&url, 0, 2, &[]);
    let waiting = server.wait_status(
        "shard 0 joined, shard 1 awaited",
        |s| s["workers"].as_array().is_some_and(|w| w.len() == 1),
        MINUTES,
    );
    assert_eq!(waiting["phase"], "starting", "{waiting}");
    assert_eq!(waiting["workers_alive"], 1, "{waiting}");
    assert_eq!(waiting["workers"][0]["id"], 0, "{waiting}");
    assert_eq!(waiting["encoding"], "1-bit", "{waiting}");
    let page = http_get(http, "/").expect("the dashboard");
    assert!(page.contains("<html"), "{page}");

    let second = ShardWorker::start(&url, 1, 2, &[]);
    // Every sample of the layers, until the job is over.
    let (mut samples, mut saw_two) = (0, false);
    let until = Instant::now() + MINUTES;
    while server.try_exit().is_none() {
        assert!(Instant::now() < until, "the job did not end");
        let Some(body) = http_get(http, "/api/status") else {
            continue;
        };
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        saw_two |= status["workers_alive"] == 2;
        for t in status["tables"].as_array().unwrap() {
            let tiles: Vec<u32> = serde_json::from_value(t["tiles"].clone()).unwrap();
            let layers: Vec<u64> = serde_json::from_value(t["layers"].clone()).unwrap();
            assert!(
                histograms[&tiles].starts_with(&layers),
                "table {tiles:?}: layers {layers:?}, not a prefix of {:?}",
                histograms[&tiles]
            );
            samples += usize::from(layers.len() > 1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.wait_exit(MINUTES).success(), "the job failed");
    assert!(saw_two, "no sample saw both shards");
    assert!(samples > 0, "no sample saw a layer");
    assert_workers_succeed([first, second]);
    assert_same_sets(&dir.join("single"), &out);
    let _ = std::fs::remove_dir_all(&dir);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn join_request(shard: u32, shards: u32) -> JoinRequest {
    JoinRequest {
        protocol_version: PROTOCOL_VERSION,
        job_id: String::new(),
        shard,
        shards,
        peer_address: "http://127.0.0.1:9".into(),
        worker_name: "hostile".into(),
    }
}

/// Workers of another shard count, job or protocol version are refused when they join, and
/// so is a second owner of a shard; the job then goes on with its own workers.
#[test]
fn foreign_workers_are_refused_when_they_join() {
    let dir = scratch("shards-join");
    let job = ["--partition", "15:5-5-5"];
    let server = serve_shards(&job, &dir.join("out"), 2, &["--lease-timeout", "2"]);
    let url = server.url();
    let (ok, err) = ShardWorker::start(&url, 0, 3, &[]).wait(Duration::from_secs(60));
    assert!(!ok && err.contains("this job has 2 shards"), "{err}");
    let (ok, err) =
        ShardWorker::start(&url, 0, 2, &["--job", "another-job"]).wait(Duration::from_secs(60));
    assert!(!ok && err.contains("\"another-job\""), "{err}");
    runtime().block_on(async {
        let mut control = ShardControlClient::connect(url.clone()).await.unwrap();
        let old = JoinRequest {
            protocol_version: 1,
            ..join_request(0, 2)
        };
        let refused = control.join(request(old, TOKEN)).await.unwrap_err();
        assert_eq!(refused.code(), Code::FailedPrecondition);
        assert!(
            refused.message().contains("protocol version 1"),
            "{refused:?}"
        );
        let bad_address = JoinRequest {
            peer_address: "ftp://x".into(),
            ..join_request(0, 2)
        };
        let refused = control.join(request(bad_address, TOKEN)).await.unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument);
        let no_token = control.join(join_request(0, 2)).await.unwrap_err();
        assert_eq!(no_token.code(), Code::Unauthenticated);
    });
    // This test takes shard 0 itself: a worker of shard 0 then tries again (it may be a
    // replacement) until it gives up.
    runtime().block_on(async {
        let mut control = ShardControlClient::connect(url.clone()).await.unwrap();
        control
            .join(request(join_request(0, 2), TOKEN))
            .await
            .unwrap();
    });
    let (ok, err) =
        ShardWorker::start(&url, 0, 2, &["--give-up-after", "1"]).wait(Duration::from_secs(60));
    assert!(!ok && err.contains("shard 0 is taken"), "{err}");
    // The test's shard 0 says nothing more: once silent for the lease timeout, its slot is
    // freed and a worker that keeps trying takes it.
    let first = ShardWorker::start(&url, 0, 2, &[]);
    let second = ShardWorker::start(&url, 1, 2, &[]);
    server.finish(MINUTES);
    assert_workers_succeed([first, second]);
    assert_same_as_single_machine(&job, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A peer that pushes lists of another job, table or layer, malformed bytes, or states of
/// another shard is refused, and the worker says so in its log.
#[test]
fn a_peer_with_malformed_or_foreign_lists_is_refused() {
    let dir = scratch("shards-peer");
    let job = ZERO_AWARE_555;
    let server = serve_shards(&job, &dir.join("out"), 2, &[]);
    let url = server.url();
    let mut worker = ShardWorker::start(&url, 0, 2, &[]);
    // This test is shard 1: it joins, and learns shard 0's address from the first step.
    let (job_id, peer) = runtime().block_on(async {
        let mut control = ShardControlClient::connect(url.clone()).await.unwrap();
        let joined = control
            .join(request(join_request(1, 2), TOKEN))
            .await
            .unwrap()
            .into_inner();
        loop {
            let step = control
                .next_step(request(
                    StepRequest {
                        job_id: joined.job_id.clone(),
                        shard: 1,
                        session: joined.session,
                        done_step: 0,
                        report: None,
                    },
                    TOKEN,
                ))
                .await
                .unwrap()
                .into_inner();
            if let Some(StepCommand::OpenTable(open)) = step.command {
                break (joined.job_id, open.peers[0].clone());
            }
        }
    });
    // Lists of layer 1 of table 0 (states of the layer's parity): of shard 0's orders, and of
    // shard 1's.
    let space = first_pattern_space("15:5-5-5", BlankRule::ZeroAware);
    let index = space.region_index().unwrap();
    let f = index.orders();
    let layout = ShardLayout::new(f, 2).unwrap();
    let shape = RegionListShape::new(&index, false, space.goal_cells(), 1);
    let block = (0..index.region_count())
        .find(|b| encode_region_states(&shape, 0..index.states(), &[b * f]).is_ok())
        .unwrap();
    let own: Vec<u64> = layout.orders_of(0).take(3).map(|o| block * f + o).collect();
    let foreign: Vec<u64> = layout.orders_of(1).take(3).map(|o| block * f + o).collect();
    let (own, foreign) = (&own, &foreign);
    let push = |states: &[u64]| {
        let bytes = encode_region_states(&shape, 0..index.states(), states).unwrap();
        let list = zstd::bulk::compress(&bytes, 1).unwrap();
        PushRequest {
            job_id: job_id.clone(),
            table: 0,
            depth: 1,
            from_shard: 1,
            to_shard: 0,
            count: states.len() as u64,
            list_bytes: bytes.len() as u64,
            crc32: crc32fast::hash(&list),
            list,
            search: 0,
        }
    };
    runtime().block_on(async {
        let mut peer = ShardPeerClient::connect(peer.clone()).await.unwrap();
        let code =
            |r: Result<tonic::Response<_>, tonic::Status>| r.map(|_| ()).map_err(|s| s.code());
        assert_eq!(code(peer.push(push(own)).await), Err(Code::Unauthenticated));
        // Shard 0 joins and opens the table when it takes the step this test took: until then,
        // a push finds it not ready (UNAVAILABLE, so that a sender retries).
        let until = Instant::now() + MINUTES;
        let refused = loop {
            let refused = peer.push(request(push(foreign), TOKEN)).await.unwrap_err();
            if refused.code() != Code::Unavailable || Instant::now() > until {
                break refused;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(
            refused.message().contains("not one of shard 0's"),
            "{refused:?}"
        );
        let mut garbage = push(own);
        garbage.list = vec![0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3];
        garbage.crc32 = crc32fast::hash(&garbage.list);
        let mut flipped = push(own);
        flipped.list[0] ^= 1;
        let mut overcounted = push(own);
        overcounted.count += 1;
        let refused = [
            ("garbage zstd", garbage, Code::InvalidArgument),
            ("a flipped byte", flipped, Code::InvalidArgument),
            (
                "one state more declared",
                overcounted,
                Code::InvalidArgument,
            ),
            (
                "another job",
                PushRequest {
                    job_id: "another-job".into(),
                    ..push(own)
                },
                Code::FailedPrecondition,
            ),
            (
                "another layer",
                PushRequest {
                    depth: 3,
                    ..push(own)
                },
                Code::FailedPrecondition,
            ),
            (
                "another table",
                PushRequest {
                    table: 2,
                    ..push(own)
                },
                Code::FailedPrecondition,
            ),
            (
                "another shard",
                PushRequest {
                    to_shard: 1,
                    ..push(own)
                },
                Code::InvalidArgument,
            ),
        ];
        for (what, list, want) in refused {
            assert_eq!(
                code(peer.push(request(list, TOKEN)).await),
                Err(want),
                "{what}"
            );
        }
        // The list shard 1 would send is taken.
        assert_eq!(code(peer.push(request(push(own), TOKEN)).await), Ok(()));
    });
    worker.kill();
    let err = worker.stderr();
    assert!(
        err.contains("refused a pushed list") && err.contains("not one of shard 0's"),
        "{err}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A shard whose arrays do not fit its worker's memory limit is refused before they are
/// made, with the figures; the job fails with the reason instead of waiting.
#[test]
fn a_shard_that_does_not_fit_is_refused() {
    let dir = scratch("shards-memory");
    let server = serve_shards(&["--partition", "15:5-5-5"], &dir.join("out"), 2, &[]);
    let url = server.url();
    let small = ShardWorker::start(&url, 0, 2, &["--memory-limit", "64K"]);
    let other = ShardWorker::start(&url, 1, 2, &[]);
    let mut server = server;
    assert!(!server.wait_exit(MINUTES).success());
    assert!(
        server.has(&["shard 0 failed", "needs", "this worker may use 64.0 KiB"]),
        "{:?}",
        server.lines(&["error"])
    );
    for w in [small, other] {
        let (ok, err) = w.wait(Duration::from_secs(30));
        assert!(!ok && err.contains("the job failed"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A free port on 127.0.0.1 (bound, then let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until the progress record that `serve --shards --data-dir DIR` keeps in `dir` says
/// the job reached table `table` with `depth` layers finished (the job's own record, not its
/// log).
fn wait_for_progress(dir: &Path, table: u64, depth: u64) {
    let until = Instant::now() + MINUTES;
    loop {
        let reached = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let record: Option<serde_json::Value> = std::fs::read(e.path())
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                record.is_some_and(|r| {
                    r["table"].as_u64() > Some(table)
                        || (r["table"].as_u64() == Some(table)
                            && r["progress"]["next_depth"].as_u64() >= Some(depth))
                })
            });
        if reached {
            return;
        }
        assert!(
            Instant::now() < until,
            "the job never reached table {table} layer {depth}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

const FAULT_JOB: [&str; 6] = [
    "--partition",
    "15:6-6-3",
    "--blank",
    "zero-aware",
    "--encoding",
    "1-bit",
];

/// A shard worker killed in the middle of the build is replaced by another worker of the same
/// shard and data directory, which restores the shard from its checkpoints: the set is the
/// single machine's, byte for byte.
#[test]
fn a_killed_shard_is_replaced_and_the_set_is_the_same() {
    let dir = scratch("shards-killed");
    let control = dir.join("control");
    let c = control.to_string_lossy().into_owned();
    let server = serve_shards(
        &FAULT_JOB,
        &dir.join("out"),
        2,
        &["--lease-timeout", "2", "--data-dir", &c],
    );
    let url = server.url();
    let first = ShardWorker::start(&url, 0, 2, &["--data-dir", &shard_dir(&dir, 0)]);
    let mut second = ShardWorker::start(&url, 1, 2, &["--data-dir", &shard_dir(&dir, 1)]);
    wait_for_progress(&control, 0, 12);
    second.kill();
    // Started at once: told the shard is taken, it tries again until the shard is freed.
    let replacement = ShardWorker::start(&url, 1, 2, &["--data-dir", &shard_dir(&dir, 1)]);
    let log = server.finish(MINUTES);
    assert!(
        log.iter()
            .any(|l| l.contains("a shard joined") && l.contains("replacement=true"))
            && log.iter().any(|l| l.contains("restoring lost shards")),
        "{log:?}"
    );
    assert_workers_succeed([first, replacement]);
    assert_same_as_single_machine(&FAULT_JOB, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where a coordinator that is killed and served again listens and keeps its data.
struct RestartableCoordinator {
    listen: String,
    data_dir: String,
}

impl RestartableCoordinator {
    /// `FAULT_JOB` on 2 shards into `dir/out`, served on this address and data directory.
    fn serve(&self, dir: &Path) -> Server {
        let extra = ["--listen", &self.listen, "--data-dir", &self.data_dir];
        serve_shards(&FAULT_JOB, &dir.join("out"), 2, &extra)
    }
}

/// `FAULT_JOB` on 2 shards into `dir/out` with a coordinator that can be killed and served
/// again: where it is served, the coordinator, and both workers (each with its data
/// directory, patient enough to outlive a restart).
fn restartable_job(dir: &Path) -> (RestartableCoordinator, Server, Vec<ShardWorker>) {
    let coordinator = RestartableCoordinator {
        listen: format!("127.0.0.1:{}", free_port()),
        data_dir: dir.join("control").to_string_lossy().into_owned(),
    };
    let first = coordinator.serve(dir);
    let url = first.url();
    let workers = (0..2)
        .map(|p| {
            ShardWorker::start(
                &url,
                p,
                2,
                &["--data-dir", &shard_dir(dir, p), "--give-up-after", "120"],
            )
        })
        .collect();
    (coordinator, first, workers)
}

/// The coordinator killed in the middle of the build and started again on its data
/// directory takes the job up: the shards join it again and restore from their checkpoints.
#[test]
fn a_restarted_coordinator_takes_the_job_up() {
    let dir = scratch("shards-restart");
    let (coordinator, mut first, mut workers) = restartable_job(&dir);
    wait_for_progress(&dir.join("control"), 1, 9);
    let _ = first.child.kill();
    let _ = first.child.wait();
    let second = coordinator.serve(&dir);
    let log = finish_showing_workers(second, &mut workers, MINUTES);
    assert!(
        log.iter().any(|l| l.contains("taking up the table")),
        "{log:?}"
    );
    assert_workers_succeed(workers);
    assert_same_as_single_machine(&FAULT_JOB, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A lost shard whose replacement has no checkpoints to restore from fails the job with the
/// reason; nothing is written that the build did not finish.
#[test]
fn a_replacement_without_checkpoints_fails_the_job() {
    let dir = scratch("shards-no-checkpoint");
    let control = dir.join("control");
    let c = control.to_string_lossy().into_owned();
    let mut server = serve_shards(
        &FAULT_JOB,
        &dir.join("out"),
        2,
        &["--lease-timeout", "2", "--data-dir", &c],
    );
    let url = server.url();
    let _first = ShardWorker::start(&url, 0, 2, &[]);
    let mut second = ShardWorker::start(&url, 1, 2, &[]);
    wait_for_progress(&control, 0, 3);
    second.kill();
    let _replacement = ShardWorker::start(&url, 1, 2, &[]);
    assert!(!server.wait_exit(MINUTES).success());
    assert!(
        server.has(&["shard 1 failed", "no data directory"]),
        "{:?}",
        server.lines(&["error"])
    );
    assert!(!dir.join("out").exists() || table_files(&dir.join("out")).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A worker that withholds successors in the build (its lists of layer 3 to shard 0) and
/// again in the proof, and never reports a verdict against a table: a table it makes wrong
/// is refused by the team without it, whatever its own team's proof makes of it; that table
/// is not published and the job fails.
#[test]
fn a_worker_that_withholds_in_the_build_and_the_proof_gets_no_table_published() {
    let dir = scratch("shards-liar");
    let out = dir.join("out");
    let mut server = serve_shards(&ZERO_AWARE_555, &out, 3, &[]);
    let url = server.url();
    let _workers: Vec<ShardWorker> = (0..3)
        .map(|p| ShardWorker::start_with_env(&url, p, 3, &[], &[("TILEPDB_TEST_LIAR_SHARD", "1")]))
        .collect();
    let status = server.wait_exit(MINUTES);
    let log = server.lines(&[""]).join("\n");
    assert!(!status.success(), "the job passed:\n{log}");
    assert!(
        server.has(&["failed its proof", "the proof on shard"]),
        "no proof on the shards refused the table:\n{log}"
    );
    // The bad worker (shard 1) reports no verdict: an honest prover refused the table.
    assert!(
        !server.has(&["the proof on shard 1"]),
        "the bad worker reported a verdict:\n{log}"
    );
    // The tables the bad worker did not make wrong may be published before the job fails;
    // every file published is the single machine's, and the refused one is not there.
    single_machine(&ZERO_AWARE_555, &dir.join("single"));
    let single = table_files(&dir.join("single"));
    let published = table_files(&out);
    assert!(published.len() < single.len(), "every table was published");
    for (name, bytes) in &published {
        let want = single.iter().find(|(n, _)| n == name).map(|(_, b)| b);
        assert_eq!(want, Some(bytes), "{name} was published wrong");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The data directory of shard `p` under `dir`.
fn shard_dir(dir: &Path, p: u32) -> String {
    dir.join(format!("shard-{p}"))
        .to_string_lossy()
        .into_owned()
}

/// A worker that dies in the middle of the proof on the shards (shard 1 of 3, in team A,
/// after its first list of the proof's layer 1 is merged: the test-only switch
/// `TILEPDB_TEST_EXIT_IN_PROOF`) is replaced by another worker of the same shard; the void
/// proof is run again from its first step with the replacement, and the set is the single
/// machine's, byte for byte, every table proven on the shards.
#[test]
fn a_worker_lost_mid_proof_is_replaced_and_the_table_proven_again() {
    let dir = scratch("shards-proof-killed");
    let job = ZERO_AWARE_555;
    let server = serve_shards(&job, &dir.join("out"), 3, &["--lease-timeout", "2"]);
    let url = server.url();
    let dies = [("TILEPDB_TEST_EXIT_IN_PROOF", "1")];
    let mut workers: Vec<ShardWorker> = (0..3)
        .map(|p| {
            let env: &[(&str, &str)] = if p == 1 { &dies } else { &[] };
            ShardWorker::start_with_env(&url, p, 3, &["--data-dir", &shard_dir(&dir, p)], env)
        })
        .collect();
    let (ok, err) = workers.remove(1).wait(MINUTES);
    assert!(
        !ok && err.contains("exits in the middle of the proof"),
        "{err}"
    );
    workers.push(ShardWorker::start(
        &url,
        1,
        3,
        &["--data-dir", &shard_dir(&dir, 1)],
    ));
    let log = server.finish(MINUTES);
    let count = |words: &str| log.iter().filter(|l| l.contains(words)).count();
    assert_eq!(count("its proof is void"), 1, "{log:#?}");
    assert_eq!(count("both teams proved the table's file"), 3, "{log:#?}");
    assert_workers_succeed(workers);
    assert_same_as_single_machine(&job, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A shard whose every worker dies in the proof fails the job after a few attempts, with the
/// reason; the table is not published.
#[test]
fn a_shard_lost_in_every_proof_fails_the_job() {
    let dir = scratch("shards-proof-dying");
    let job = ZERO_AWARE_555;
    let mut server = serve_shards(&job, &dir.join("out"), 2, &["--lease-timeout", "2"]);
    let url = server.url();
    let dies = [("TILEPDB_TEST_EXIT_IN_PROOF", "1")];
    let _first = ShardWorker::start(&url, 0, 2, &[]);
    let mut dying = ShardWorker::start_with_env(&url, 1, 2, &[], &dies);
    let until = Instant::now() + MINUTES;
    while server.try_exit().is_none() {
        assert!(Instant::now() < until, "the job did not end");
        if dying.child.try_wait().unwrap().is_some() {
            dying = ShardWorker::start_with_env(&url, 1, 2, &[], &dies);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!server.wait_exit(MINUTES).success());
    assert!(
        server.has(&["lost during each of 3 attempts to prove the table"]),
        "{:?}",
        server.lines(&["error"])
    );
    assert!(table_files(&dir.join("out")).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits until the progress record in `dir` says that table `table`'s file is written and
/// only its proof is left.
fn wait_for_written(dir: &Path, table: u64) {
    let until = Instant::now() + MINUTES;
    loop {
        let written = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let record: Option<serde_json::Value> = std::fs::read(e.path())
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                record.is_some_and(|r| {
                    r["table"].as_u64() == Some(table) && r["written"] == serde_json::json!(true)
                })
            });
        if written {
            return;
        }
        assert!(
            Instant::now() < until,
            "table {table} was never recorded as written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The coordinator killed while a written table is proven on the shards, and started again
/// on its data directory, proves the file it kept again (it does not search the table
/// again, and publishes nothing unproven): the set is the single machine's, byte for byte.
#[test]
fn a_coordinator_restarted_mid_proof_proves_the_written_table_again() {
    let dir = scratch("shards-proof-restart");
    let (coordinator, mut first, mut workers) = restartable_job(&dir);
    wait_for_written(&dir.join("control"), 0);
    first.wait_for(
        &["proving the table's file on the shards", "table=0"],
        MINUTES,
    );
    let _ = first.child.kill();
    let _ = first.child.wait();
    assert!(
        !first.has(&["both teams proved the table's file"]),
        "the proof was over before the coordinator was killed"
    );
    let second = coordinator.serve(&dir);
    let log = finish_showing_workers(second, &mut workers, MINUTES);
    let count = |words: &str| log.iter().filter(|l| l.contains(words)).count();
    assert_eq!(
        count("its file was written; proving it again"),
        1,
        "{log:#?}"
    );
    assert_eq!(count("both teams proved the table's file"), 3, "{log:#?}");
    assert_workers_succeed(workers);
    assert_same_as_single_machine(&FAULT_JOB, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}
