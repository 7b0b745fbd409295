//! Hostile peers against a real `tilepdb-coordinator serve` on 127.0.0.1 (issue 21): idle and
//! slow connections without a token under a low file limit, a worker-token holder that holds
//! result streams, held downloads, idle registrations, and a job too large for the machine.
//! In each case an honest worker (or fetch) still gets its work done, and the tables are
//! byte-identical to a single-machine build.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::client::{self, Client, register, request, result_header};
use crate::server::{Server, coordinator_bin, scratch, serve_job, single_machine, table_files};
use tilepdb_common::wire::proto::tables_client::TablesClient;
use tilepdb_common::wire::proto::{
    DownloadRequest, HeartbeatRequest, ListSetsRequest, ResultMessage, result_message,
};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

const TOKEN: &str = "hostile-peers-worker-token";
/// A job of two small tables, built in well under a second.
const JOB: [&str; 6] = [
    "--puzzle",
    "3x3",
    "--pattern",
    "1,2,3,4",
    "--pattern",
    "5,6",
];
/// Longest wait for a job (each takes a second or two; a frozen one fails the test).
const JOB_TIMEOUT: Duration = Duration::from_secs(60);

fn start_worker(url: &str) -> Child {
    Command::new(coordinator_bin())
        .args(["worker", "--coordinator", url, "--threads", "1"])
        .env("TILEPDB_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Asserts that the tables `serve` wrote in `dir/out` are the single-machine build's.
fn assert_tables_as_built(dir: &Path) {
    let single = dir.join("single");
    single_machine(&JOB, &single);
    let (want, got) = (table_files(&single), table_files(&dir.join("out")));
    assert!(!want.is_empty());
    assert_eq!(
        want.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        got.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    for ((name, a), (_, b)) in want.iter().zip(&got) {
        assert!(a == b, "{name} differs from the single-machine build");
    }
}

async fn connection(url: &str) -> Channel {
    Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// 1,100 idle TCP connections (and a slow HTTP request) against a coordinator whose file
/// limit is 1,024: the job still finishes, with the right bytes, and the HTTP port still
/// answers `/healthz`.
#[test]
fn idle_connections_under_a_low_file_limit_do_not_end_the_job() {
    let dir = scratch("hostile-idle");
    let mut serve = serve_job(&JOB, &dir);
    // It goes on serving once the job is done, so that its HTTP port can be asked then.
    serve
        .args(["--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"])
        .args(["--linger", "1", "--no-sync", "--keep-serving"])
        .env("TILEPDB_TOKEN", TOKEN);
    // Under a file limit of 1,024, soft and hard.
    let mut limited = Command::new("sh");
    limited
        .arg("-c")
        .arg("ulimit -n 1024 && exec \"$0\" \"$@\"")
        .arg(serve.get_program())
        .args(serve.get_args());
    for (k, v) in serve.get_envs() {
        if let Some(v) = v {
            limited.env(k, v);
        }
    }
    let mut c = Server::spawn(limited);
    let http = c.http.expect("the dashboard's address");
    let started = Instant::now();
    let mut idle = Vec::new();
    for i in 0..1100 {
        let to = if i % 10 == 0 { http } else { c.addr };
        if let Ok(s) = TcpStream::connect_timeout(&to, Duration::from_secs(2)) {
            idle.push(s);
        }
    }
    // A slow HTTP request: its first line, then nothing.
    let mut slow = TcpStream::connect(http).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    println!(
        "{} idle connections opened in {:.2} s",
        idle.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(idle.len() >= 1024, "only {} connections opened", idle.len());
    // A connection that says nothing is closed by the server within seconds.
    let mut first = &idle[1];
    first
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    // (An HTTP/2 server speaks first: its settings, then nothing.)
    let mut bytes = [0u8; 256];
    let closed = loop {
        match first.read(&mut bytes) {
            Ok(0) => break true,
            Ok(_) => {}
            Err(e) => break e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    };
    assert!(closed, "a silent connection was not closed");
    println!(
        "the first silent connection closed by the coordinator {:.2} s after the first was opened",
        started.elapsed().as_secs_f64()
    );

    let mut worker = start_worker(&c.url());
    c.wait_job_done(JOB_TIMEOUT);
    println!(
        "job done {:.2} s after the connections were opened",
        started.elapsed().as_secs_f64()
    );
    assert!(worker.wait().unwrap().success(), "the worker failed");
    // The HTTP port still answers.
    let mut probe = TcpStream::connect(http).unwrap();
    probe
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    probe
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    probe.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("ok\n"), "{answer}");
    drop(idle);
    drop(slow);
    let stopped = Command::new("kill")
        .args(["-TERM", &c.child.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    c.finish(JOB_TIMEOUT);
    assert_tables_as_built(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A worker-token holder leases a task and opens 27 result streams for it, each a valid
/// header and then nothing: one stream is taken (the others refused at once), and it loses
/// its lease when it makes no progress; an honest worker's job finishes within seconds.
#[test]
fn held_result_streams_do_not_freeze_a_layer() {
    let dir = scratch("hostile-results");
    let mut serve = serve_job(&JOB, &dir);
    serve
        .args(["--listen", "127.0.0.1:0", "--linger", "1", "--no-sync"])
        .args(["--lease-timeout", "1"])
        .env("TILEPDB_TOKEN", TOKEN);
    let mut c = Server::spawn(serve);
    let url = c.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (held, refused, hostile) = rt.block_on(async {
        let mut hostile = Client::new(connection(&url).await);
        let (job, worker) = register(&mut hostile, TOKEN).await.unwrap();
        // Heartbeats keep the hostile worker alive.
        let beats = tokio::spawn({
            let (mut client, job) = (hostile.clone(), job.clone());
            async move {
                loop {
                    let beat = HeartbeatRequest {
                        job_id: job.clone(),
                        worker_id: worker,
                    };
                    let _ = client.heartbeat(request(beat, TOKEN)).await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        });
        let (task, _) = client::take(&mut hostile, &job, worker, TOKEN)
            .await
            .unwrap()
            .unwrap();
        let header = result_header(&job, worker, &task, task.states, 8);
        let (mut held, mut refused) = (Vec::new(), 0);
        for _ in 0..27 {
            // The header, then a stream that never ends.
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            tx.send(ResultMessage {
                kind: Some(result_message::Kind::Header(header.clone())),
            })
            .await
            .unwrap();
            let mut client = hostile.clone();
            let call = tokio::spawn(async move {
                client
                    .deliver_result(request(
                        tokio_stream::wrappers::ReceiverStream::new(rx),
                        TOKEN,
                    ))
                    .await
                    .map(|r| r.into_inner().accepted)
                    .map_err(|s| {
                        if s.code() == Code::InvalidArgument {
                            println!("refused: {}", s.message());
                        }
                        s.code()
                    })
            });
            held.push((tx, call));
        }
        // Each stream is answered: refused at once, or dropped for its silence.
        let mut codes = Vec::new();
        for (tx, call) in held.drain(..) {
            let answer = tokio::time::timeout(Duration::from_secs(20), call)
                .await
                .expect("a held stream answered")
                .unwrap();
            drop(tx);
            if answer == Err(Code::ResourceExhausted) {
                refused += 1;
            }
            codes.push(answer);
        }
        (codes, refused, beats)
    });
    println!("answers to the 27 held streams: {held:?}");
    // One stream per attempt: all but the one held are refused at once (a stream sent after
    // the held one was dropped, a second later, could be taken in its turn).
    assert!(refused >= 24, "one stream per attempt: {held:?}");
    assert!(
        held.iter()
            .all(|a| matches!(a, Err(Code::ResourceExhausted | Code::DeadlineExceeded))),
        "{held:?}"
    );
    assert!(
        held.contains(&Err(Code::DeadlineExceeded)),
        "the held stream is dropped: {held:?}"
    );
    let started = Instant::now();
    let mut worker = start_worker(&url);
    c.wait_job_done(JOB_TIMEOUT);
    let seconds = started.elapsed().as_secs_f64();
    println!("the honest worker's job took {seconds:.2} s");
    assert!(seconds < 20.0, "the job took {seconds:.2} s");
    hostile.abort();
    drop(rt);
    assert!(worker.wait().unwrap().success(), "the worker failed");
    c.finish(JOB_TIMEOUT);
    assert_tables_as_built(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// 4,096 registrations that never lease (alive for the lease timeout, 30 s) do not lock an
/// honest worker out: it registers, builds, and the job is done.
#[test]
fn idle_registrations_do_not_lock_out_a_worker() {
    let dir = scratch("hostile-registrations");
    let mut serve = serve_job(&JOB, &dir);
    serve
        .args(["--listen", "127.0.0.1:0", "--linger", "1", "--no-sync"])
        .env("TILEPDB_TOKEN", TOKEN);
    let mut c = Server::spawn(serve);
    let url = c.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    let registered = rt.block_on(async {
        let hostile = Client::new(connection(&url).await);
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..64 {
            let mut client = hostile.clone();
            calls.spawn(async move {
                let mut ok = 0;
                for _ in 0..64 {
                    if register(&mut client, TOKEN).await.is_ok() {
                        ok += 1;
                    }
                }
                ok
            });
        }
        calls.join_all().await.into_iter().sum::<usize>()
    });
    println!(
        "{registered} idle registrations in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(registered, 4096);
    drop(rt);
    let started = Instant::now();
    let mut worker = start_worker(&url);
    c.wait_job_done(JOB_TIMEOUT);
    println!(
        "the honest worker's job took {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert!(worker.wait().unwrap().success(), "the worker failed");
    c.finish(JOB_TIMEOUT);
    assert_tables_as_built(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The 24-puzzle 8-tile pattern: `serve` refuses it before creating anything, naming what
/// it needs.
#[test]
fn serve_refuses_a_job_that_does_not_fit() {
    let dir = scratch("hostile-too-large");
    let (data, out) = (dir.join("data"), dir.join("out"));
    for limit in [Some("16G"), None] {
        let mut command = Command::new(coordinator_bin());
        command
            .args(["serve", "--puzzle", "24", "--pattern", "1,2,5,6,7,10,11,12"])
            .arg("--data-dir")
            .arg(&data)
            .arg("--out")
            .arg(&out)
            .args(["--no-token", "--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null());
        if let Some(l) = limit {
            command.args(["--memory-limit", l]);
        }
        let o = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{limit:?}: {stderr}");
        assert!(
            stderr.contains("1,2,5,6,7,10,11,12") || stderr.contains("1 2 5 6 7 10 11 12"),
            "{limit:?}: {stderr}"
        );
        if limit.is_some() {
            assert!(stderr.contains("16.0 GiB"), "{stderr}");
        }
        assert!(!data.exists(), "{limit:?}: the data directory was created");
        assert!(!out.exists(), "{limit:?}: the output directory was created");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// 32 downloads held on one connection (a chunk read, then nothing) do not stop a fetch.
#[test]
fn held_downloads_do_not_stop_a_fetch() {
    let dir = scratch("hostile-downloads");
    // A table of 8 MiB: a download held after its first chunk keeps chunks waiting.
    let served = [
        "--puzzle",
        "15",
        "--pattern",
        "1,2,3,4,5",
        "--blank",
        "aware",
    ];
    single_machine(&served, &dir.join("out"));
    let mut command = Command::new(coordinator_bin());
    command
        .args(["serve", "--no-build", "--listen", "127.0.0.1:0"])
        .arg("--out")
        .arg(dir.join("out"))
        .env("TILEPDB_TOKEN", TOKEN);
    let c = Server::spawn(command);
    let url = c.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (set, held, served_count) = rt.block_on(async {
        let channel = Endpoint::from_shared(url.clone())
            .unwrap()
            .initial_stream_window_size(64 << 10)
            .connect()
            .await
            .unwrap();
        let mut tables = TablesClient::new(channel);
        let sets = tables
            .list_sets(request(ListSetsRequest {}, TOKEN))
            .await
            .unwrap()
            .into_inner()
            .sets;
        let set = sets[0].clone();
        let file = set.files.iter().max_by_key(|f| f.size).unwrap().clone();
        let mut held = Vec::new();
        let mut served_count = 0;
        for _ in 0..32 {
            let asked = DownloadRequest {
                set: set.name.clone(),
                file: file.name.clone(),
                offset: 0,
                checksum: String::new(),
            };
            if let Ok(r) = tables.download(request(asked, TOKEN)).await {
                let mut stream = r.into_inner();
                if stream.message().await.is_ok_and(|m| m.is_some()) {
                    served_count += 1;
                }
                held.push(stream);
            }
        }
        (set, held, served_count)
    });
    println!("{served_count} of 32 held downloads served");
    assert!(served_count >= 1);
    let cache = dir.join("cache");
    let started = Instant::now();
    let mut remote = tilepdb_common::wire::connect::Endpoint::new(&url);
    remote.token = Some(TOKEN.into());
    let report = tilepdb_solver::fetch::fetch_set(&remote, &set.name, &cache, |_| {})
        .expect("the fetch succeeds");
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "fetch of {} with 32 downloads held: {seconds:.2} s",
        set.name
    );
    assert!(seconds < 20.0);
    tilepdb_common::table::TableSet::open(&report.dir).unwrap();
    drop(held);
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}
