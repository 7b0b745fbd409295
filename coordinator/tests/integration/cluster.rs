//! The distributed build with real processes on 127.0.0.1: a `tilepdb-coordinator serve` and
//! worker processes. The workers are `tilepdb-coordinator worker`, the worker library behind
//! the `tilepdb-worker` program, built with this crate, so that a stale worker program can
//! never be tested by mistake; `worker/tests/worker_process.rs` runs the `tilepdb-worker`
//! program itself. Each test compares the tables with a single-machine build of the same job,
//! byte for byte.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{
    Server, coordinator_bin, past_layer, scratch, serve_job, single_machine, under_way,
};

const TOKEN: &str = "cluster-test-token";

/// Every file of the table set under `out`, by name.
fn tables(out: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![];
    for set in std::fs::read_dir(out).unwrap() {
        let set = set.unwrap().path();
        if !set.is_dir() || set.file_name().unwrap().to_string_lossy().starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(&set).unwrap() {
            let f = f.unwrap().path();
            let name = format!(
                "{}/{}",
                set.file_name().unwrap().to_string_lossy(),
                f.file_name().unwrap().to_string_lossy()
            );
            files.push((name, std::fs::read(&f).unwrap()));
        }
    }
    files.sort();
    files
}

fn assert_same_tables(want: &Path, got: &Path) {
    let (a, b) = (tables(want), tables(got));
    assert!(!a.is_empty(), "no tables in {}", want.display());
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "table files differ");
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(
            x == y,
            "{name} differs between {} and {}",
            want.display(),
            got.display()
        );
    }
}

/// Starts `serve` for `job` with its data in `dir/data` and its tables in `dir/out`.
fn start_coordinator(job: &[&str], dir: &Path, listen: &str, extra: &[&str]) -> Server {
    let mut command = serve_job(job, dir);
    command
        .arg("--listen")
        .arg(listen)
        .args(["--linger", "3"])
        .args(extra)
        .env("TILEPDB_TOKEN", TOKEN);
    Server::spawn(command)
}

/// A running worker process.
struct Worker(Child);

impl Worker {
    fn start(url: &str, extra: &[&str]) -> Worker {
        let mut command = Command::new(coordinator_bin());
        command
            .arg("worker")
            .args(["--coordinator", url, "--threads", "1"])
            .args(extra);
        if !extra.contains(&"--give-up-after") {
            command.args(["--give-up-after", "60"]);
        }
        let child = command
            .env("TILEPDB_TOKEN", TOKEN)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Worker(child)
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.0.id()).expect("a process id is an i32")
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the worker to exit by itself, with any status; whether it did.
    fn exits(mut self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            if self.0.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Waits for the worker to exit by itself; whether it exited 0.
    fn wait(mut self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const MINUTES: Duration = Duration::from_secs(300);

/// The 15-puzzle 5-5-5 set: single-machine, 1 worker and 3 workers give the same bytes.
#[test]
fn one_and_three_workers_give_the_single_machine_tables() {
    let dir = scratch("same");
    let job = ["--partition", "15:5-5-5"];
    single_machine(&job, &dir.join("single"));
    for workers in [1, 3] {
        let run = dir.join(format!("w{workers}"));
        let c = start_coordinator(&job, &run, "127.0.0.1:0", &[]);
        let ws: Vec<Worker> = (0..workers).map(|_| Worker::start(&c.url(), &[])).collect();
        c.finish(MINUTES);
        for w in ws {
            assert!(w.wait(Duration::from_secs(30)), "a worker did not exit 0");
        }
        assert_same_tables(&dir.join("single"), &run.join("out"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The 15-puzzle 7-8 set with 3 workers (heavy: about 1.5 GB of memory and several minutes on
/// 2 cores): `cargo test --release -p tilepdb-coordinator --test integration cluster:: -- --ignored`.
#[test]
#[ignore = "heavy: the 7-8 set on three workers"]
fn three_workers_give_the_single_machine_7_8_tables() {
    let dir = scratch("same-7-8");
    let job = ["--partition", "15:7-8"];
    single_machine(&job, &dir.join("single"));
    let c = start_coordinator(&job, &dir, "127.0.0.1:0", &["--no-sync"]);
    let ws: Vec<Worker> = (0..3).map(|_| Worker::start(&c.url(), &[])).collect();
    c.finish(Duration::from_secs(3 * 3600));
    for w in ws {
        assert!(w.wait(Duration::from_secs(60)), "a worker did not exit 0");
    }
    assert_same_tables(&dir.join("single"), &dir.join("out"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A job small enough to be quick, cut into many tasks so that each layer takes a while.
const SMALL_JOB: [&str; 4] = ["--pattern", "1,2,3,4,5", "--pattern", "6,7,8"];
const MANY_TASKS: [&str; 2] = ["--task-ranks", "2048"];

#[test]
fn a_worker_killed_mid_layer_loses_nothing() {
    let dir = scratch("kill");
    single_machine(&SMALL_JOB, &dir.join("single"));
    let c = start_coordinator(
        &SMALL_JOB,
        &dir,
        "127.0.0.1:0",
        &[&MANY_TASKS[..], &["--lease-timeout", "1"]].concat(),
    );
    // The victim sits on each task for a while, so that it holds one when it is killed.
    let victim = Worker::start(&c.url(), &["--debug-task-delay-ms", "300"]);
    let other = Worker::start(&c.url(), &[]);
    c.wait_layer_done(0, 9, MINUTES);
    // Layer 10 is published right after; the victim takes a task at once and holds it 300 ms.
    std::thread::sleep(Duration::from_millis(150));
    victim.signal("KILL");
    // The status command shows the job's progress meanwhile.
    let status = Command::new(coordinator_bin())
        .args(["status", "--json", "--coordinator", &c.url()])
        .env("TILEPDB_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["tables"].as_array().unwrap().len(), 2);
    assert!(status["tasks_total"].as_u64().unwrap() > 0, "{status}");
    assert!(status["states_found"].as_u64().unwrap() > 1, "{status}");
    assert!(!status["done"].as_bool().unwrap());
    c.wait_status(
        "an expired lease",
        |s| s["leases_expired"].as_u64() > Some(0),
        Duration::from_secs(60),
    );
    c.finish(MINUTES);
    assert!(other.wait(Duration::from_secs(30)));
    assert_same_tables(&dir.join("single"), &dir.join("out"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_worker_stalled_past_its_lease_loses_nothing() {
    let dir = scratch("stall");
    single_machine(&SMALL_JOB, &dir.join("single"));
    let c = start_coordinator(
        &SMALL_JOB,
        &dir,
        "127.0.0.1:0",
        &[&MANY_TASKS[..], &["--lease-timeout", "1"]].concat(),
    );
    // It sits on each task for a while, so that it holds one when it is stopped. Its patience
    // is short: if the job ends while it is stopped, the coordinator (which waits at its end
    // only for the workers heard within the lease timeout) may be gone when it wakes.
    let stalled = Worker::start(
        &c.url(),
        &["--debug-task-delay-ms", "300", "--give-up-after", "5"],
    );
    let other = Worker::start(&c.url(), &[]);
    c.wait_layer_done(0, 9, MINUTES);
    std::thread::sleep(Duration::from_millis(150));
    stalled.signal("STOP");
    // Its lease expires, or its task's deadline passes first: either way the task goes again.
    c.wait_status(
        "a task handed out again",
        |s| s["leases_expired"].as_u64() > Some(0),
        Duration::from_secs(60),
    );
    std::thread::sleep(Duration::from_millis(500));
    // Back to life: its late result is recognised (dropped or, if first, merged) and it goes on.
    stalled.signal("CONT");
    c.finish(MINUTES);
    assert!(other.wait(Duration::from_secs(30)));
    // It ends either way: told that the job is done (exit 0) if it was heard again before the
    // coordinator left, else when it gives up on the coordinator. It never hangs.
    assert!(stalled.exits(Duration::from_secs(30)));
    assert_same_tables(&dir.join("single"), &dir.join("out"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_coordinator_killed_and_restarted_resumes() {
    let dir = scratch("restart");
    single_machine(&SMALL_JOB, &dir.join("single"));
    let first = start_coordinator(&SMALL_JOB, &dir, "127.0.0.1:0", &MANY_TASKS);
    let addr = first.addr;
    let slow = ["--debug-task-delay-ms", "5"];
    let workers: Vec<Worker> = (0..2).map(|_| Worker::start(&first.url(), &slow)).collect();
    // Kill it in the first table, after a few checkpoints, whatever it is doing: expanding a
    // layer with the workers, or finishing one (retiring its states in the mapped arrays).
    first.wait_status("table 0 past layer 10", |s| past_layer(s, 0, 10), MINUTES);
    let mut first = first;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    drop(first);
    // Restarted on the same data directory and address, it resumes; the workers reconnect.
    let second = start_coordinator(&SMALL_JOB, &dir, &addr.to_string(), &MANY_TASKS);
    // Once under way, it is past the layers the first one finished: it did not start over.
    let status = second.wait_status("the job under way", under_way, MINUTES);
    assert!(past_layer(&status, 0, 10), "started over: {status}");
    second.finish(MINUTES);
    for w in workers {
        assert!(w.wait(Duration::from_secs(60)), "a worker did not finish");
    }
    assert_same_tables(&dir.join("single"), &dir.join("out"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small file system of its own (tmpfs), unmounted when dropped; `None` where this process
/// may not mount one (not root).
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, bytes: u64) -> Option<SmallDisk> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallDisk(dir.to_path_buf()))
    }

    /// Writes a file until the disk is full.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let block = vec![0xa5u8; 64 << 10];
        while f.write_all(&block).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_job_clearly_and_it_resumes_once_space_is_freed() {
    let dir = scratch("full-disk");
    single_machine(&SMALL_JOB, &dir.join("single"));
    let disk = dir.join("disk");
    let Some(small) = SmallDisk::mount(&disk, 64 << 20) else {
        crate::skip::skipped(
            "a_full_disk_stops_the_job_clearly_and_it_resumes_once_space_is_freed",
            "this test mounts a tmpfs, which needs root",
        );
        return;
    };
    let first = start_coordinator(&SMALL_JOB, &disk, "127.0.0.1:0", &MANY_TASKS);
    let addr = first.addr;
    let slow = ["--debug-task-delay-ms", "5"];
    let workers: Vec<Worker> = (0..2).map(|_| Worker::start(&first.url(), &slow)).collect();
    // Another program fills the disk in the middle of the first table.
    first.wait_layer_done(0, 8, MINUTES);
    let filler = small.fill();
    let mut first = first;
    let status = first.wait_exit(MINUTES);
    assert!(!status.success());
    let error = first.wait_for(&["the disk is full"], Duration::from_secs(10));
    assert!(error.contains("free some space"), "{error}");
    drop(first);
    // Space freed, the coordinator started again: it resumes and writes the same tables.
    std::fs::remove_file(filler).unwrap();
    let second = start_coordinator(&SMALL_JOB, &disk, &addr.to_string(), &MANY_TASKS);
    second.finish(MINUTES);
    for w in workers {
        assert!(w.wait(Duration::from_secs(60)), "a worker did not finish");
    }
    assert_same_tables(&dir.join("single"), &disk.join("out"));
    drop(small);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Hostile and broken clients get the right status; the build still finishes correctly.
mod bad_clients {
    use super::*;
    use tilepdb_common::region_index::RegionIndex;
    use tilepdb_common::wire::chunk::encode_section;
    use tilepdb_common::wire::proto::{Chunk, RegisterRequest, ResultHeader, Section, Task};
    use tilepdb_common::wire::region_lists::{RegionListShape, encode_region_states};
    use tilepdb_common::wire::{PROTOCOL_VERSION, TaskId};
    use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
    use tonic::Code;

    use crate::server::client::{Client, request};

    fn register_request(version: u32, job: &str) -> RegisterRequest {
        RegisterRequest {
            protocol_version: version,
            job_id: job.into(),
            worker_name: "test".into(),
            threads: 1,
        }
    }

    /// Registers with the workers' token; the job id and worker id.
    async fn register(client: &mut Client) -> (String, u64) {
        crate::server::client::register(client, TOKEN)
            .await
            .unwrap()
    }

    /// Leases a task with the workers' token (waiting while the coordinator says to).
    async fn take(client: &mut Client, job: &str, worker: u64) -> Task {
        let taken = crate::server::client::take(client, job, worker, TOKEN)
            .await
            .unwrap();
        taken.expect("a task before the job is done").0
    }

    fn header(job: &str, worker: u64, t: &Task, list: &[u8], states: u64) -> ResultHeader {
        ResultHeader {
            job_id: job.into(),
            worker_id: worker,
            task_id: t.task_id,
            attempt: t.attempt,
            table: t.table,
            depth: t.depth,
            first_rank: t.first_rank,
            end_rank: t.end_rank,
            reached_states: states,
            reached_bytes: list.len() as u64,
            expanded: 0,
            generated: 0,
        }
    }

    /// Delivers a result with the workers' token; whether it was merged.
    async fn deliver(
        client: &mut Client,
        header: ResultHeader,
        chunks: Vec<Chunk>,
    ) -> Result<bool, Code> {
        crate::server::client::deliver(client, header, chunks, TOKEN).await
    }

    #[test]
    fn are_refused_and_the_build_finishes() {
        let dir = scratch("bad");
        single_machine(&SMALL_JOB, &dir.join("single"));
        let c = start_coordinator(
            &SMALL_JOB,
            &dir,
            "127.0.0.1:0",
            &[&MANY_TASKS[..], &["--lease-timeout", "1"]].concat(),
        );
        let url = c.url();
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let mut client = Client::connect(url.clone()).await.unwrap();
            // No token, a wrong token.
            let e = client
                .register(tonic::Request::new(register_request(PROTOCOL_VERSION, "")))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::Unauthenticated);
            let e = client
                .register(request(register_request(PROTOCOL_VERSION, ""), "wrong"))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::Unauthenticated);
            // Another protocol version, another job.
            let e = client
                .register(request(register_request(PROTOCOL_VERSION + 1, ""), TOKEN))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::FailedPrecondition, "{e}");
            let e = client
                .register(request(
                    register_request(PROTOCOL_VERSION, "another-job"),
                    TOKEN,
                ))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::FailedPrecondition, "{e}");

            let (job, worker) = register(&mut client).await;
            let t = take(&mut client, &job, worker).await;
            // A plausible result: two states of the next layer in the task's own ranks (not
            // its true result).
            assert_eq!(t.table, 0);
            let board: Board = "4x4".parse().unwrap();
            let pattern = Pattern::new(board, vec![1, 2, 3, 4, 5]).unwrap();
            let space =
                StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
            assert_eq!(space.rule(), BlankRule::Minimized);
            let index = RegionIndex::new(board, 5).unwrap();
            let shape = RegionListShape::new(&index, false, space.goal_cells(), t.depth + 1);
            let all = 0..shape.states();
            let plausible: Vec<u64> = (index.first_block(t.first_rank) * index.orders()..)
                .filter(|&s| encode_region_states(&shape, all.clone(), &[s]).is_ok())
                .take(2)
                .collect();
            let list = encode_region_states(&shape, all, &plausible).unwrap();
            let good = encode_section(Section::ReachedStates, &list, 1 << 20, 1);
            let h = || header(&job, worker, &t, &list, 2);

            // A forged task id (a task index past the layer's tasks).
            let mut forged = h();
            let mut id = TaskId::from_u64(t.task_id).unwrap();
            id.index = 1_000_000;
            forged.task_id = id.to_u64();
            assert_eq!(
                deliver(&mut client, forged, good.clone()).await,
                Err(Code::InvalidArgument)
            );
            // A forged attempt.
            let mut forged = h();
            forged.attempt ^= 0x5555;
            assert_eq!(
                deliver(&mut client, forged, good.clone()).await,
                Err(Code::InvalidArgument)
            );
            // A range outside the job.
            let mut outside = h();
            outside.first_rank = 1 << 40;
            outside.end_rank = (1 << 40) + 10;
            assert_eq!(
                deliver(&mut client, outside, good.clone()).await,
                Err(Code::InvalidArgument)
            );
            // Another job's result.
            let mut other = h();
            other.job_id = "another-job".into();
            assert_eq!(
                deliver(&mut client, other, good.clone()).await,
                Err(Code::FailedPrecondition)
            );
            // A chunk whose checksum does not match its data.
            let mut bad = good.clone();
            bad[0].crc32 ^= 0xdead_beef;
            assert_eq!(
                deliver(&mut client, h(), bad).await,
                Err(Code::InvalidArgument)
            );
            // A frame that decompresses past its declared size (a "zstd bomb").
            let mut bomb = good.clone();
            bomb[0].data = zstd::bulk::compress(&vec![0u8; 64 << 20], 1).unwrap();
            bomb[0].crc32 = crc32fast::hash(&bomb[0].data);
            assert_eq!(
                deliver(&mut client, h(), bomb).await,
                Err(Code::InvalidArgument)
            );
            // A declared decompressed size over the chunk limit, and over the section.
            let mut oversized = good.clone();
            oversized[0].decompressed_size = 64 << 20;
            assert_eq!(
                deliver(&mut client, h(), oversized).await,
                Err(Code::InvalidArgument)
            );
            let mut big = h();
            big.reached_bytes = 1 << 40;
            big.reached_states = 1 << 40;
            assert_eq!(
                deliver(&mut client, big, good.clone()).await,
                Err(Code::InvalidArgument)
            );
            // Bytes that are no list of the declared states: a byte too many, a state too many.
            let mut long = list.clone();
            long.push(0);
            let long_chunks = encode_section(Section::ReachedStates, &long, 1 << 20, 1);
            let long_header = header(&job, worker, &t, &long, 2);
            assert_eq!(
                deliver(&mut client, long_header, long_chunks).await,
                Err(Code::InvalidArgument)
            );
            let three = header(&job, worker, &t, &list, 3);
            assert_eq!(
                deliver(&mut client, three, good.clone()).await,
                Err(Code::InvalidArgument)
            );
            // Nothing above was merged: the task is still open, and its true result (here
            // from a real worker, once the lease of this client lapses) completes the build.
        });
        let w = Worker::start(&url, &[]);
        c.finish(MINUTES);
        assert!(w.wait(Duration::from_secs(30)));
        assert_same_tables(&dir.join("single"), &dir.join("out"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The distributed job searches on the region index, as the single machine does: its files
/// are the single-machine build's, byte for byte, for every blank rule and the encodings that
/// follow a value from a neighbour's, with 1 and 3 worker processes.
mod region_index {
    use super::*;

    /// Builds `job` on this machine, then with 1 and 3 workers; the same files each time.
    fn same_as_single_machine(name: &str, job: &[&str]) {
        let dir = scratch(name);
        single_machine(job, &dir.join("single"));
        for workers in [1, 3] {
            let run = dir.join(format!("w{workers}"));
            let c = start_coordinator(job, &run, "127.0.0.1:0", &["--task-ranks", "64"]);
            let ws: Vec<Worker> = (0..workers).map(|_| Worker::start(&c.url(), &[])).collect();
            c.finish(MINUTES);
            for w in ws {
                assert!(w.wait(Duration::from_secs(30)), "a worker did not exit 0");
            }
            assert_same_tables(&dir.join("single"), &run.join("out"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    const PUZZLE_15: [&str; 4] = ["--pattern", "1,2,3,4", "--pattern", "5,6,7"];
    const PUZZLE_3X4: [&str; 6] = [
        "--puzzle",
        "3x4",
        "--pattern",
        "1,2,3,4,5",
        "--pattern",
        "6,7,8",
    ];

    #[test]
    fn minimized_15_puzzle_and_3x4() {
        same_as_single_machine(
            "region-min-15",
            &[&PUZZLE_15[..], &["--blank", "minimized"]].concat(),
        );
        same_as_single_machine(
            "region-min-3x4",
            &[&PUZZLE_3X4[..], &["--blank", "minimized"]].concat(),
        );
    }

    #[test]
    fn aware_15_puzzle_mod3_and_3x4() {
        let mod3 = ["--blank", "aware", "--encoding", "mod3"];
        same_as_single_machine("region-aware-15", &[&PUZZLE_15[..], &mod3].concat());
        same_as_single_machine(
            "region-aware-3x4",
            &[&PUZZLE_3X4[..], &["--blank", "aware"]].concat(),
        );
    }

    #[test]
    fn zero_aware_15_puzzle_1_bit_and_3x4() {
        let one_bit = ["--blank", "zero-aware", "--encoding", "1-bit"];
        same_as_single_machine("region-zero-15", &[&PUZZLE_15[..], &one_bit].concat());
        let blank_last = ["--blank", "zero-aware", "--goal", "blank-last"];
        same_as_single_machine("region-zero-3x4", &[&PUZZLE_3X4[..], &blank_last].concat());
    }

    #[test]
    fn ignored_15_puzzle_and_3x4_1_bit() {
        same_as_single_machine(
            "region-ignored-15",
            &[&PUZZLE_15[..], &["--blank", "ignored"]].concat(),
        );
        let one_bit = ["--blank", "ignored", "--encoding", "1-bit"];
        same_as_single_machine("region-ignored-3x4", &[&PUZZLE_3X4[..], &one_bit].concat());
    }

    /// The zero-aware job (whose table is in the region index's order) with its coordinator
    /// killed mid-table and restarted: it resumes from the region-index arrays of its data
    /// directory, whose checkpoint says so, and writes the single-machine bytes.
    #[test]
    fn a_coordinator_killed_mid_table_resumes_on_the_region_index() {
        let dir = scratch("region-restart");
        let job = [
            "--pattern",
            "1,2,3,4,5",
            "--pattern",
            "6,7,8",
            "--blank",
            "zero-aware",
        ];
        let tasks = ["--task-ranks", "16"];
        single_machine(&job, &dir.join("single"));
        let first = start_coordinator(&job, &dir, "127.0.0.1:0", &tasks);
        let addr = first.addr;
        let slow = ["--debug-task-delay-ms", "5"];
        let workers: Vec<Worker> = (0..2).map(|_| Worker::start(&first.url(), &slow)).collect();
        // Killed whatever it is doing (see a_coordinator_killed_and_restarted_resumes).
        first.wait_status("table 0 past layer 10", |s| past_layer(s, 0, 10), MINUTES);
        let mut first = first;
        first.child.kill().unwrap();
        first.child.wait().unwrap();
        drop(first);
        let checkpoint: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.join("data").join("checkpoint.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(checkpoint["search_index"], "region", "{checkpoint}");
        assert_eq!(checkpoint["format"], 2, "{checkpoint}");
        assert!(checkpoint["table"]["next_depth"].as_u64().unwrap() >= 11);
        let second = start_coordinator(&job, &dir, &addr.to_string(), &tasks);
        let status = second.wait_status("the job under way", under_way, MINUTES);
        assert!(past_layer(&status, 0, 10), "started over: {status}");
        second.finish(MINUTES);
        for w in workers {
            assert!(w.wait(Duration::from_secs(60)), "a worker did not finish");
        }
        assert_same_tables(&dir.join("single"), &dir.join("out"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A data directory whose table in progress was searched on the cell index (a checkpoint of
    /// format 1, as earlier versions wrote) is refused, naming the directory and what to do.
    #[test]
    fn a_data_directory_of_the_cell_index_is_refused_clearly() {
        let dir = scratch("region-old-dir");
        let job = ["--pattern", "1,2,3,4,5", "--pattern", "6,7,8"];
        let first = start_coordinator(&job, &dir, "127.0.0.1:0", &["--task-ranks", "16"]);
        let worker = Worker::start(&first.url(), &["--debug-task-delay-ms", "5"]);
        first.wait_layer_done(0, 3, MINUTES);
        drop(first); // killed mid-table: the checkpoint names table 0
        drop(worker);
        let path = dir.join("data").join("checkpoint.json");
        let mut checkpoint: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(checkpoint["table"].is_object(), "{checkpoint}");
        checkpoint["format"] = 1.into();
        checkpoint.as_object_mut().unwrap().remove("search_index");
        std::fs::write(&path, serde_json::to_vec(&checkpoint).unwrap()).unwrap();
        let output = Command::new(coordinator_bin())
            .arg("serve")
            .args(job)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--out")
            .arg(dir.join("out"))
            .args(["--listen", "127.0.0.1:0"])
            .env("TILEPDB_TOKEN", TOKEN)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        let data = dir.join("data");
        assert!(stderr.contains(&*data.to_string_lossy()), "{stderr}");
        assert!(stderr.contains("cell index"), "{stderr}");
        assert!(stderr.contains("remove the directory"), "{stderr}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
