//! Bounded resources under attack, with real processes on 127.0.0.1: a `tilepdb-coordinator
//! serve` building a job with one worker process, once undisturbed (the baseline) and once
//! while hostile clients hold 600 slow downloads and deliver 40 oversized results.
//!
//! The attack, while the build runs:
//!
//! * 600 downloads of a served table file with the download token, over several HTTP/2
//!   connections (the server limits the streams of one connection): each opens the
//!   `Download` stream, reads one chunk and then holds the stream without reading until the
//!   build is done; one refused with `RESOURCE_EXHAUSTED` tries again every 100 ms. At most
//!   [`DOWNLOADS_AT_ONCE`] are served at once; the others are refused for as long as those
//!   are held.
//! * 40 clients with the workers' token, at once: each leases a task and delivers for it
//!   128 MiB of zeros (a few KiB on the wire), a list far larger than the task can produce;
//!   each is refused (`INVALID_ARGUMENT`) from its header, before its chunks are read, and its
//!   lease is given up (the task goes to the next worker that asks).
//!
//! The served set is one built before (the table service serves the sets of `--out` that are
//! complete, with their manifest: a set being built is not listed until it is written). Both
//! runs end with tables byte-identical to a single-machine build; the coordinator's peak
//! resident memory (`VmHWM`) stays under the bound stated at [`rss_bound`]. The wall times of
//! both builds, their ratio, the coordinator's CPU times and the download counts are printed
//! (never asserted). About 15 s: `cargo test -p tilepdb-coordinator --test integration bounded_resources::
//! -- --nocapture` shows the figures.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::server::client::{self, Client, register, request, result_header};
use crate::server::{Server, coordinator_bin, scratch, serve_job, set_files, single_machine};
use tilepdb_common::wire::MAX_CHUNK_BYTES;
use tilepdb_common::wire::chunk::encode_section;
use tilepdb_common::wire::proto::tables_client::TablesClient;
use tilepdb_common::wire::proto::{
    Chunk, DownloadRequest, HeartbeatRequest, ListSetsRequest, Section,
};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

const TOKEN: &str = "bounded-test-worker-token";
const DOWNLOAD_TOKEN: &str = "bounded-test-download-token";
/// A job of three tables cut into many tasks.
const JOB: [&str; 8] = [
    "--pattern",
    "1,2,3,4,5",
    "--pattern",
    "6,7,8,9,10",
    "--pattern",
    "11,12,13,14,15",
    "--blank",
    "aware",
];
const TASK_RANKS: &str = "512";
const LEASE_TIMEOUT: &str = "1";
/// The set served during the job, built before: one table of 55 MiB (55 chunks of a download),
/// so that a download held after its first chunk keeps its thread waiting on the client.
const SERVED_JOB: [&str; 5] = ["--pattern", "1,2,3,4,5,6", "--blank", "aware", "--no-proof"];
/// The name under which it is served.
const SERVED_SET: &str = "built-before";

const SLOW_DOWNLOADS: usize = 600;
/// The downloads the coordinator serves at once (`MAX_DOWNLOADS` of its server), as this
/// test states it: the bounds asserted here are the test's, not read from the code tested.
const DOWNLOADS_AT_ONCE: u64 = 32;
/// Connections the slow downloads share (50 streams each: under the server's limit of one
/// connection, 64).
const DOWNLOAD_CONNECTIONS: usize = 12;
const OVERSIZED_RESULTS: usize = 40;
/// The bytes of zeros each oversized result lists: 128 MiB (about 6 KiB on the wire), as much
/// as the coordinator reads of all results at once, where its task can reach at most a few
/// MiB.
const OVERSIZED_BYTES: usize = 128 << 20;
/// Longest wait for a build (it takes seconds; a build frozen by the attack fails the test).
const BUILD_TIMEOUT: Duration = Duration::from_secs(120);
const MIB: u64 = 1 << 20;

/// What one build showed.
struct Run {
    /// The job's own wall time ("job done" after it).
    seconds: f64,
    /// The coordinator's peak resident memory, bytes.
    peak_rss: u64,
    /// The coordinator's CPU time (user and system), seconds.
    cpu: f64,
    attack: Option<AttackCounts>,
}

/// What the attack saw.
#[derive(Debug, Default)]
struct AttackCounts {
    /// Downloads served (a first chunk read), of [`SLOW_DOWNLOADS`].
    served: AtomicU64,
    /// `RESOURCE_EXHAUSTED` answers to downloads (each refused download tries again).
    refused: AtomicU64,
    /// Downloads refused until the build was done (never served).
    never_served: AtomicU64,
    /// Oversized results refused with `INVALID_ARGUMENT`.
    results_refused: AtomicU64,
    /// Oversized results not refused so, with the answer.
    results_otherwise: std::sync::Mutex<Vec<String>>,
}

/// A process's CPU time so far (user and system), seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's name (in parentheses): state is field 3, utime 14 and stime 15,
    // in clock ticks of 1/100 s (Linux's USER_HZ).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// A process's peak resident memory (`VmHWM`), bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib * 1024
}

fn start_coordinator(dir: &Path) -> Server {
    let mut command = serve_job(&JOB, dir);
    command
        .args(["--listen", "127.0.0.1:0", "--linger", "1", "--keep-serving"])
        .args(["--task-ranks", TASK_RANKS, "--lease-timeout", LEASE_TIMEOUT])
        .arg("--no-sync")
        .env("TILEPDB_TOKEN", TOKEN)
        .env("TILEPDB_DOWNLOAD_TOKEN", DOWNLOAD_TOKEN);
    Server::spawn(command)
}

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

/// The one set directory under `out`.
fn only_set(out: &Path) -> PathBuf {
    let sets: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(sets.len(), 1, "one set in {}", out.display());
    sets[0].clone()
}

/// The set `from` as `to` (its files hard-linked).
fn link_set(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in std::fs::read_dir(from).unwrap() {
        let f = f.unwrap().path();
        std::fs::hard_link(&f, to.join(f.file_name().unwrap())).unwrap();
    }
}

/// One download held: served (a first chunk read, then held until `done`), or refused and
/// tried again every 100 ms until `done`.
async fn slow_download(
    mut tables: TablesClient<Channel>,
    file: String,
    counts: Arc<AttackCounts>,
    mut done: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        if *done.borrow() {
            counts.never_served.fetch_add(1, Relaxed);
            return;
        }
        let asked = DownloadRequest {
            set: SERVED_SET.into(),
            file: file.clone(),
            offset: 0,
            checksum: String::new(),
        };
        match tables.download(request(asked, DOWNLOAD_TOKEN)).await {
            Ok(response) => {
                let mut stream = response.into_inner();
                let first = stream.message().await.unwrap().expect("a first chunk");
                assert_eq!(first.offset, 0);
                if *done.borrow() {
                    // Served once the held downloads let go: not during the build.
                    counts.never_served.fetch_add(1, Relaxed);
                    return;
                }
                counts.served.fetch_add(1, Relaxed);
                // Held without reading until the build is done.
                let _ = done.wait_for(|&d| d).await;
                drop(stream);
                return;
            }
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status}");
                counts.refused.fetch_add(1, Relaxed);
                let _ =
                    tokio::time::timeout(Duration::from_millis(100), done.wait_for(|&d| d)).await;
            }
        }
    }
}

/// One hostile worker: leases a task and delivers [`OVERSIZED_BYTES`] of zeros for it,
/// heartbeating (as a worker does) until it is answered; then it goes silent.
async fn oversized_result(mut client: Client, zeros: Arc<Vec<Chunk>>, counts: Arc<AttackCounts>) {
    let (job, worker) = register(&mut client, TOKEN).await.unwrap();
    // Its heartbeats, until it is answered.
    let beats = tokio::spawn({
        let (mut client, job) = (client.clone(), job.clone());
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
    let _silent = AbortOnDrop(beats);
    let (task, _input) = match client::take(&mut client, &job, worker, TOKEN).await {
        Ok(Some(leased)) => leased,
        refused => {
            let why = format!("no task leased: {refused:?}");
            counts.results_otherwise.lock().unwrap().push(why);
            return;
        }
    };
    // Declared as what it is: bytes listing as many states as they can (30 bytes each).
    let bytes = OVERSIZED_BYTES as u64;
    let header = result_header(&job, worker, &task, bytes.div_ceil(30), bytes);
    match client::deliver(&mut client, header, zeros.to_vec(), TOKEN).await {
        Err(Code::InvalidArgument) => {
            counts.results_refused.fetch_add(1, Relaxed);
        }
        other => counts
            .results_otherwise
            .lock()
            .unwrap()
            .push(format!("{other:?}")),
    }
}

/// Stops a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An HTTP/2 connection to `url` whose client buffers at most 64 KiB of each stream, with
/// room in the connection's window for every stream it carries.
async fn connection(url: &str) -> Channel {
    Endpoint::from_shared(url.to_string())
        .unwrap()
        .initial_stream_window_size(64 << 10)
        .initial_connection_window_size(64 << 20)
        .connect()
        .await
        .unwrap()
}

/// Builds the job in `dir` with one worker, `served` served alongside, under attack if
/// `attack`.
fn run(dir: &Path, served: &Path, attack: bool) -> Run {
    link_set(served, &dir.join("out").join(SERVED_SET));
    let c = start_coordinator(dir);
    let url = c.url();
    let pid = c.child.id();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let counts = Arc::new(AttackCounts::default());
    let attackers = attack.then(|| {
        rt.block_on(async {
            // The largest file of the served set, as a solver lists it.
            let mut lister = TablesClient::new(connection(&url).await);
            let sets = lister
                .list_sets(request(ListSetsRequest {}, DOWNLOAD_TOKEN))
                .await
                .unwrap()
                .into_inner()
                .sets;
            let set = sets.iter().find(|s| s.name == SERVED_SET).expect("served");
            let file = set.files.iter().max_by_key(|f| f.size).unwrap();
            println!("slow downloads of {} ({} bytes)", file.name, file.size);
            let mut tasks = Vec::new();
            for i in 0..DOWNLOAD_CONNECTIONS {
                let tables = TablesClient::new(connection(&url).await);
                for _ in (i..SLOW_DOWNLOADS).step_by(DOWNLOAD_CONNECTIONS) {
                    tasks.push(tokio::spawn(slow_download(
                        tables.clone(),
                        file.name.clone(),
                        counts.clone(),
                        done_rx.clone(),
                    )));
                }
            }
            let zeros = Arc::new(encode_section(
                Section::ReachedStates,
                &vec![0; OVERSIZED_BYTES],
                MAX_CHUNK_BYTES,
                1,
            ));
            let on_wire: usize = zeros.iter().map(|c| c.data.len()).sum();
            println!("each oversized result: {OVERSIZED_BYTES} bytes in {on_wire} on the wire");
            let workers = Client::new(connection(&url).await);
            for _ in 0..OVERSIZED_RESULTS {
                tasks.push(tokio::spawn(oversized_result(
                    workers.clone(),
                    zeros.clone(),
                    counts.clone(),
                )));
            }
            tasks
        })
    });
    let mut worker = start_worker(&url);
    let done = c.wait_status("the job done", |s| s["done"] == true, BUILD_TIMEOUT);
    let seconds = done["elapsed_seconds"].as_f64().expect("the job's seconds");
    // Still running (--keep-serving): its peak so far is the job's.
    let (peak_rss, cpu) = (peak_rss(pid), cpu_seconds(pid));
    let _ = done_tx.send(true);
    if let Some(tasks) = attackers {
        rt.block_on(async {
            for t in tasks {
                t.await.unwrap();
            }
        });
    }
    drop(rt);
    assert!(worker.wait().unwrap().success(), "the worker failed");
    let stopped = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    c.finish(BUILD_TIMEOUT);
    Run {
        seconds,
        peak_rss,
        cpu,
        attack: attack.then(|| Arc::try_unwrap(counts).unwrap()),
    }
}

/// Encoded chunks one held download keeps at most: 4 queued ahead of the client (the table
/// service's), 1 waiting to be queued, 1 in the gRPC encoder, and the stream's send buffer
/// in the connection (400 KiB, HTTP/2's default here, plus the frame that crossed it: at most
/// 4 chunks of the served file).
const CHUNKS_HELD: u64 = 10;

/// The bound on the attacked coordinator's peak memory: the baseline's peak, plus what the
/// attack may make it hold, plus 32 MiB for the attackers' connections and registrations and
/// the allocator's slack:
///
/// * downloads: [`DOWNLOADS_AT_ONCE`] served at once, each holding its read buffer and the
///   zstd context of its thread (under 2 chunks of [`MAX_CHUNK_BYTES`]) and [`CHUNKS_HELD`]
///   encoded chunks (of at most `largest_chunk` bytes); the other downloads are refused
///   before anything is read;
/// * oversized results: nothing, as each is refused from its header (it declares more states
///   than its task can reach) before its chunks are read. Without that check one such result
///   is read in full, 128 MiB, over this bound.
fn rss_bound(baseline: u64, largest_chunk: u64) -> u64 {
    let download = 2 * u64::from(MAX_CHUNK_BYTES) + CHUNKS_HELD * largest_chunk;
    baseline + DOWNLOADS_AT_ONCE * download + 32 * MIB
}

#[test]
fn slow_downloads_and_oversized_results_leave_the_build_and_its_memory_bounded() {
    let dir = scratch("bounded");
    single_machine(&JOB, &dir.join("single"));
    let reference = only_set(&dir.join("single"));
    let name = reference.file_name().unwrap().to_owned();
    single_machine(&SERVED_JOB, &dir.join("served"));
    let served_set = only_set(&dir.join("served"));

    let baseline = run(&dir.join("baseline"), &served_set, false);
    let attacked = run(&dir.join("attacked"), &served_set, true);
    for r in ["baseline", "attacked"] {
        let built = dir.join(r).join("out").join(&name);
        let (want, got) = (set_files(&reference), set_files(&built));
        assert!(!want.is_empty());
        assert_eq!(
            want.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            got.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            "{r}"
        );
        for ((file, x), (_, y)) in want.iter().zip(&got) {
            assert!(x == y, "{r}: {file} differs from the single-machine build");
        }
    }

    let counts = attacked.attack.as_ref().unwrap();
    let (served, refused, never) = (
        counts.served.load(Relaxed),
        counts.refused.load(Relaxed),
        counts.never_served.load(Relaxed),
    );
    // The largest chunk of the served files, as the download service encodes them (zstd
    // level 1).
    let largest_chunk = set_files(&served_set)
        .iter()
        .flat_map(|(_, bytes)| encode_section(Section::TableFile, bytes, MAX_CHUNK_BYTES, 1))
        .map(|c| c.data.len() as u64)
        .max()
        .unwrap();
    let bound = rss_bound(baseline.peak_rss, largest_chunk);
    let mib = |b: u64| b as f64 / MIB as f64;
    println!(
        "baseline: {:.2} s, peak RSS {:.1} MiB; attacked: {:.2} s, peak RSS {:.1} MiB \
         (bound {:.1} MiB, encoded chunks of at most {:.0} KiB); attacked/baseline time {:.2}",
        baseline.seconds,
        mib(baseline.peak_rss),
        attacked.seconds,
        mib(attacked.peak_rss),
        mib(bound),
        largest_chunk as f64 / 1024.0,
        attacked.seconds / baseline.seconds,
    );
    println!(
        "coordinator CPU time (user+sys): baseline {:.2} s, attacked {:.2} s",
        baseline.cpu, attacked.cpu
    );
    println!(
        "downloads: {served} served, {never} never served ({refused} RESOURCE_EXHAUSTED \
         answers); oversized results refused: {} of {OVERSIZED_RESULTS}",
        counts.results_refused.load(Relaxed)
    );
    assert_eq!(served + never, SLOW_DOWNLOADS as u64);
    assert!(served >= 1, "the table service served nobody under attack");
    assert!(
        served <= DOWNLOADS_AT_ONCE,
        "{served} downloads served at once"
    );
    assert!(refused > 0);
    assert!(
        attacked.peak_rss <= bound,
        "the attacked coordinator peaked at {:.1} MiB, over {:.1} MiB",
        mib(attacked.peak_rss),
        mib(bound)
    );
    let otherwise = counts.results_otherwise.lock().unwrap();
    assert!(
        otherwise.is_empty(),
        "oversized results not refused: {otherwise:?}"
    );
    assert_eq!(
        counts.results_refused.load(Relaxed),
        OVERSIZED_RESULTS as u64
    );
    let _ = std::fs::remove_dir_all(&dir);
}
