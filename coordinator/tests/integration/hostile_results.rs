//! Hostile clients against a real `tilepdb-coordinator serve` process on 127.0.0.1.
//!
//! * Two forged results, the job's re-execution share at 0 (so that a forgery reaches the
//!   proof): a client with the workers' token does the job's work itself (it expands each
//!   task with the worker library), except that it delivers an empty result for the goal's
//!   task of the first table (refused at once: a state always reaches one), a truncated one
//!   for the goal's task of the second table (merged: the table fails its proof and is
//!   searched again, every result re-executed by the coordinator), and an altered one for the
//!   same task in that second search (it differs from the coordinator's re-execution: the
//!   client is banned, its requests and registration refused). A real worker finishes; the
//!   tables are byte-identical to a single-machine build and the job exits 0. A result for
//!   a lease of another worker id is refused (`PERMISSION_DENIED`) and changes nothing; a
//!   client with the download token is refused every call of the job's service.
//! * A third of the workers hostile (one client forging every result it delivers, under a new
//!   name each time it is banned, and two real workers), the default share: each forger is
//!   banned at its first result, and the tables are the single-machine ones, exit 0.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::server::client::{self, Client, register, request, result_header};
use crate::server::{
    Server, coordinator_bin, scratch, serve_job, single_machine, table_files as tables,
};
use tilepdb_common::wire::MAX_CHUNK_BYTES;
use tilepdb_common::wire::chunk::encode_section;
use tilepdb_common::wire::proto::coordinator_client::CoordinatorClient;
use tilepdb_common::wire::proto::tables_client::TablesClient;
use tilepdb_common::wire::proto::{
    HeartbeatRequest, JobStatusRequest, ListSetsRequest, ResultMessage, Section, TakeTaskRequest,
    Task,
};
use tilepdb_common::wire::region_lists::{decode_region_states, encode_region_states};
use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
use tilepdb_worker::region_task::{RegionTable, run_region_task};
use tonic::Code;

const TOKEN: &str = "hostile-test-worker-token";
const DOWNLOAD_TOKEN: &str = "hostile-test-download-token";
const PATTERNS: [&[u8]; 3] = [&[1, 2, 3], &[4, 5, 6], &[7, 8, 9]];
const JOB: [&str; 8] = [
    "--pattern",
    "1,2,3",
    "--pattern",
    "4,5,6",
    "--pattern",
    "7,8,9",
    "--blank",
    "aware",
];
const MINUTES: Duration = Duration::from_secs(300);

fn start_coordinator(dir: &Path, extra: &[&str]) -> Server {
    let mut command = serve_job(&JOB, dir);
    command
        .args(["--listen", "127.0.0.1:0", "--linger", "1"])
        .args(extra)
        .args(["--task-ranks", "1024", "--lease-timeout", "5", "--no-sync"])
        .env("TILEPDB_TOKEN", TOKEN)
        .env("TILEPDB_DOWNLOAD_TOKEN", DOWNLOAD_TOKEN);
    Server::spawn(command)
}

/// A real worker process of the job at `url`.
fn real_worker(url: &str, name: &str) -> std::process::Child {
    Command::new(coordinator_bin())
        .args([
            "worker",
            "--coordinator",
            url,
            "--threads",
            "1",
            "--name",
            name,
        ])
        .env("TILEPDB_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Registers as `name` with the workers' token; the job id and the worker id.
async fn register_as(client: &mut Client, name: &str) -> Result<(String, u64), Code> {
    let mut r = client::register_request();
    r.worker_name = name.into();
    client
        .register(request(r, TOKEN))
        .await
        .map(|r| {
            let r = r.into_inner();
            (r.job_id, r.worker_id)
        })
        .map_err(|s| s.code())
}

/// A task and its input states, or `None` once the job is done.
async fn take(client: &mut Client, job: &str, worker: u64) -> Option<(Task, Vec<u64>)> {
    let (task, bytes) = client::take(client, job, worker, TOKEN).await.unwrap()?;
    let space = space(task.table as usize);
    let region = region(&space);
    let input = decode_region_states(
        &bytes,
        task.states,
        &region.list_shape(&space, task.depth),
        region.states_of(task.first_rank..task.end_rank),
    )
    .unwrap();
    Some((task, input))
}

fn space(table: usize) -> StateSpace {
    let board: Board = "4x4".parse().unwrap();
    let pattern = Pattern::new(board, PATTERNS[table].to_vec()).unwrap();
    StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Aware).unwrap()
}

/// The region-index tables the workers search `space` on.
fn region(space: &StateSpace) -> RegionTable {
    RegionTable::of(space).unwrap()
}

/// The task's true result: the distinct states it reaches.
fn expand(task: &Task, input: Vec<u64>) -> Vec<u64> {
    let space = space(task.table as usize);
    run_region_task(&region(&space), task.first_rank..task.end_rank, &input).reached
}

/// Delivers `reached` (sorted) as the result of `task` from `worker`.
async fn deliver(
    client: &mut Client,
    job: &str,
    worker: u64,
    task: &Task,
    reached: &[u64],
) -> Result<bool, Code> {
    let space = space(task.table as usize);
    let region = region(&space);
    let shape = region.list_shape(&space, task.depth + 1);
    let list = encode_region_states(&shape, 0..shape.states(), reached).unwrap();
    let header = result_header(job, worker, task, reached.len() as u64, list.len() as u64);
    let chunks = encode_section(Section::ReachedStates, &list, MAX_CHUNK_BYTES, 1);
    client::deliver(client, header, chunks, TOKEN).await
}

/// `true` minus one state, plus a state of the same layer that `true` does not hold.
fn altered(task: &Task, reached: &[u64]) -> Vec<u64> {
    let space = space(task.table as usize);
    let region = region(&space);
    let shape = region.list_shape(&space, task.depth + 1);
    let stranger = (0..shape.states())
        .rev()
        .find(|s| {
            !reached.contains(s) && encode_region_states(&shape, 0..shape.states(), &[*s]).is_ok()
        })
        .expect("a state of the layer's parity");
    let mut forged: Vec<u64> = reached[1..].to_vec();
    forged.push(stranger);
    forged.sort_unstable();
    forged
}

#[test]
fn two_forged_results_are_caught_the_forger_banned_and_the_tables_are_the_single_machine_ones() {
    let dir = scratch("hostile");
    single_machine(&JOB, &dir.join("single"));
    let c = start_coordinator(&dir, &["--audit-fraction", "0"]);
    let url = c.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut client = CoordinatorClient::connect(url.clone()).await.unwrap();

        // The download token opens nothing of the job's service.
        assert_eq!(
            register(&mut client, DOWNLOAD_TOKEN).await,
            Err(Code::Unauthenticated)
        );
        let (job, a) = register(&mut client, TOKEN).await.unwrap();
        let (_, b) = register(&mut client, TOKEN).await.unwrap();
        assert_ne!(a.abs_diff(b), 1, "worker ids are not sequential");
        let take_as_downloader = client
            .take_task(request(
                TakeTaskRequest {
                    job_id: job.clone(),
                    worker_id: a,
                    holding: vec![],
                },
                DOWNLOAD_TOKEN,
            ))
            .await
            .map(|_| ())
            .map_err(|s| s.code());
        assert_eq!(take_as_downloader, Err(Code::Unauthenticated));
        let beat = client
            .heartbeat(request(
                HeartbeatRequest {
                    job_id: job.clone(),
                    worker_id: a,
                },
                DOWNLOAD_TOKEN,
            ))
            .await
            .map(|_| ())
            .map_err(|s| s.code());
        assert_eq!(beat, Err(Code::Unauthenticated));
        let status = client
            .job_status(request(JobStatusRequest {}, DOWNLOAD_TOKEN))
            .await
            .map(|_| ())
            .map_err(|s| s.code());
        assert_eq!(status, Err(Code::Unauthenticated));
        // ... but lists the table sets.
        let mut tables_client = TablesClient::connect(url.clone()).await.unwrap();
        tables_client
            .list_sets(request(ListSetsRequest {}, DOWNLOAD_TOKEN))
            .await
            .unwrap();

        let mut empty = false;
        let mut goal_searches = 0;
        let mut crossed = false;
        loop {
            let (task, input) = take(&mut client, &job, a)
                .await
                .expect("the job ended before the forger was banned");
            let reached = expand(&task, input);
            if !crossed {
                // A result for a's lease delivered as b: refused; a's own delivery still counts.
                crossed = true;
                assert_eq!(
                    deliver(&mut client, &job, b, &task, &reached).await,
                    Err(Code::PermissionDenied)
                );
                // A delivery as the downloader: refused before anything is read.
                let mut downloader = client.clone();
                let msgs = vec![ResultMessage { kind: None }];
                let refused = downloader
                    .deliver_result(request(tokio_stream::iter(msgs), DOWNLOAD_TOKEN))
                    .await
                    .map(|_| ())
                    .map_err(|s| s.code());
                assert_eq!(refused, Err(Code::Unauthenticated));
            }
            if (task.table, task.depth, empty) == (0, 0, false) {
                // A state always reaches one: refused at once, the lease given up.
                empty = true;
                assert_eq!(
                    deliver(&mut client, &job, a, &task, &[]).await,
                    Err(Code::InvalidArgument)
                );
                continue;
            }
            if (task.table, task.depth) == (1, 0) {
                goal_searches += 1;
                if goal_searches == 1 {
                    let truncated = &reached[..reached.len() / 2];
                    assert_eq!(
                        deliver(&mut client, &job, a, &task, truncated).await,
                        Ok(true),
                        "a plausible forgery that is not re-executed is merged (the proof \
                         catches it)"
                    );
                    continue;
                }
                // The second search of a table that failed its proof: every result is
                // re-executed, and the forger banned.
                let forged = altered(&task, &reached);
                assert_eq!(
                    deliver(&mut client, &job, a, &task, &forged).await,
                    Err(Code::PermissionDenied)
                );
                break;
            }
            let accepted = deliver(&mut client, &job, a, &task, &reached).await;
            assert_eq!(accepted, Ok(true));
        }
        // Banned: its requests, and a registration under its name, are refused.
        assert_eq!(
            client::take(&mut client, &job, a, TOKEN).await.map(|_| ()),
            Err(Code::PermissionDenied)
        );
        assert_eq!(
            register_as(&mut client, "hostile").await,
            Err(Code::PermissionDenied)
        );
    });
    let mut worker = real_worker(&url, "honest");
    let log = c.finish(MINUTES);
    let _ = worker.wait();
    let caught = log
        .iter()
        .filter(|l| l.contains("failed its proof and was not written"))
        .count();
    assert_eq!(
        caught, 1,
        "the truncated table was caught once by its proof"
    );
    let banned: Vec<&String> = log.iter().filter(|l| l.contains("worker banned")).collect();
    assert_eq!(banned.len(), 1, "{banned:?}");
    assert!(
        banned[0].contains("hostile") && banned[0].contains("the search that failed its proof"),
        "a warning names the worker whose result the second search found wrong: {banned:?}"
    );
    assert_same_tables(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The tables in `dir/out` are the single-machine ones of `dir/single`, byte for byte.
fn assert_same_tables(dir: &Path) {
    let (want, got) = (tables(&dir.join("single")), tables(&dir.join("out")));
    assert!(!want.is_empty());
    assert_eq!(
        want.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        got.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in want.iter().zip(&got) {
        assert!(x == y, "{name} differs from the single-machine build");
    }
}

/// A result of `task` with the fewest states a plausible one may have, none of them true
/// (when the layer has such states): costs its forger nothing to make.
fn cheap_forgery(task: &Task, reached: &[u64]) -> Vec<u64> {
    let space = space(task.table as usize);
    let region = region(&space);
    let shape = region.list_shape(&space, task.depth + 1);
    let want = usize::try_from(task.states.div_ceil(4 * 3).max(1)).unwrap();
    let forged: Vec<u64> = (0..shape.states())
        .filter(|s| !reached.contains(s))
        .filter(|s| encode_region_states(&shape, 0..shape.states(), &[*s]).is_ok())
        .take(want)
        .collect();
    if forged.len() == want {
        forged
    } else {
        altered(task, reached)
    }
}

/// One client of three workers forges every result it delivers (a new name each time it is
/// banned) while two real workers work: every forger is banned at its first result, and the
/// job ends with the single-machine tables, exit 0.
#[test]
fn a_third_of_the_workers_forging_every_result_are_banned_and_the_tables_are_right() {
    let dir = scratch("third");
    single_machine(&JOB, &dir.join("single"));
    let c = start_coordinator(&dir, &[]);
    let url = c.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (banned, merged, workers) = rt.block_on(async {
        let mut client = CoordinatorClient::connect(url.clone()).await.unwrap();
        let mut name = 0;
        let (job, mut id) = register_as(&mut client, "forger-0").await.unwrap();
        // The forger holds the goal's task before the real workers start.
        let mut first = Some(take(&mut client, &job, id).await.expect("the goal's task"));
        let workers = [real_worker(&url, "honest-1"), real_worker(&url, "honest-2")];
        let (mut banned, mut merged) = (0, 0);
        loop {
            let (task, input) = match first.take() {
                Some(t) => t,
                None => match take(&mut client, &job, id).await {
                    Some(t) => t,
                    None => break,
                },
            };
            let reached = expand(&task, input);
            if reached.is_empty() {
                assert!(
                    deliver(&mut client, &job, id, &task, &reached)
                        .await
                        .is_ok()
                );
                continue;
            }
            let forged = if name % 2 == 0 {
                altered(&task, &reached)
            } else {
                cheap_forgery(&task, &reached)
            };
            match deliver(&mut client, &job, id, &task, &forged).await {
                Err(Code::PermissionDenied) => {
                    banned += 1;
                    // Refused from now on, under its old name too; a new name gets in.
                    assert_eq!(
                        client::take(&mut client, &job, id, TOKEN).await.map(|_| ()),
                        Err(Code::PermissionDenied)
                    );
                    assert_eq!(
                        register_as(&mut client, &format!("forger-{name}")).await,
                        Err(Code::PermissionDenied)
                    );
                    name += 1;
                    id = register_as(&mut client, &format!("forger-{name}"))
                        .await
                        .unwrap()
                        .1;
                }
                // Not needed any more (another worker's result got there first).
                Ok(false) => {}
                Ok(true) => merged += 1,
                Err(code) => panic!("a forged result refused with {code:?}"),
            }
        }
        (banned, merged, workers)
    });
    let log = c.finish(MINUTES);
    for mut w in workers {
        let _ = w.wait();
    }
    assert!(banned >= 1, "the forger was banned");
    assert_eq!(merged, 0, "each forger's first result is re-executed");
    assert_eq!(
        log.iter().filter(|l| l.contains("worker banned")).count(),
        banned,
        "a warning per forger banned"
    );
    assert!(
        !log.iter()
            .any(|l| l.contains("failed its proof and was not written"))
    );
    assert_same_tables(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that leases a task and then only heartbeats: the task is handed out again once
/// its deadline passes, and a real worker process finishes the job.
#[test]
fn a_zombie_that_leases_and_only_heartbeats_loses_its_task_at_the_deadline() {
    let dir = scratch("zombie");
    single_machine(&JOB, &dir.join("single"));
    let mut command = serve_job(&JOB, &dir);
    command
        .args(["--listen", "127.0.0.1:0", "--linger", "1"])
        .args(["--lease-timeout", "1", "--no-sync"])
        .env("TILEPDB_TOKEN", TOKEN);
    let c = Server::spawn(command);
    let url = c.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    #[allow(
        clippy::async_yields_async,
        reason = "the block spawns the zombie's heartbeats and hands back their handle"
    )]
    let zombie = rt.block_on(async {
        let mut client = CoordinatorClient::connect(url.clone()).await.unwrap();
        let (job, id) = register(&mut client, TOKEN).await.unwrap();
        let (task, _) = take(&mut client, &job, id).await.expect("a task");
        assert_eq!((task.table, task.depth), (0, 0));
        // Heartbeats well within the lease timeout, forever; never delivers.
        tokio::spawn(async move {
            loop {
                let _ = client
                    .heartbeat(request(
                        HeartbeatRequest {
                            job_id: job.clone(),
                            worker_id: id,
                        },
                        TOKEN,
                    ))
                    .await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    });
    let worker = Command::new(coordinator_bin())
        .args(["worker", "--coordinator", &url, "--threads", "1"])
        .env("TILEPDB_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    c.wait_status(
        "a task handed out again",
        |s| s["leases_expired"].as_u64() > Some(0),
        MINUTES,
    );
    let handed_out = c.lines(&["past its deadline", "handed out again"]);
    println!("{handed_out:?}");
    c.finish(MINUTES);
    zombie.abort();
    let mut worker = worker;
    let _ = worker.wait();
    assert_eq!(tables(&dir.join("single")), tables(&dir.join("out")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// CPU seconds (user + system) of the children this process has waited for.
fn children_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &raw mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// A forger that never expands anything: for each task it leases, the fewest states a
/// plausible result may have (the first of the next layer), under a new name each time it
/// is banned, until the job is done. How many times it was banned, and how many of its
/// results were merged.
async fn blind_forger(url: String, spaces: Vec<StateSpace>) -> (usize, usize) {
    let regions: Vec<RegionTable> = spaces.iter().map(|s| RegionTable::of(s).unwrap()).collect();
    let mut client = CoordinatorClient::connect(url).await.unwrap();
    let mut name = 0;
    let (job, mut id) = register_as(&mut client, "blind-0").await.unwrap();
    let (mut banned, mut merged) = (0, 0);
    loop {
        let task = match client::take(&mut client, &job, id, TOKEN).await {
            Ok(Some((task, _))) => task,
            Ok(None) => break,
            // Banned while it waited (a result of its own in a search that failed its proof).
            Err(Code::PermissionDenied) => {
                banned += 1;
                name += 1;
                id = register_as(&mut client, &format!("blind-{name}"))
                    .await
                    .unwrap()
                    .1;
                continue;
            }
            Err(code) => panic!("take refused with {code:?}"),
        };
        let (space, region) = (&spaces[task.table as usize], &regions[task.table as usize]);
        let shape = region.list_shape(space, task.depth + 1);
        let want = usize::try_from(task.states.div_ceil(4 * space.k() as u64).max(1)).unwrap();
        let forged: Vec<u64> = (0..shape.states())
            .filter(|s| encode_region_states(&shape, 0..shape.states(), &[*s]).is_ok())
            .take(want)
            .collect();
        let list = encode_region_states(&shape, 0..shape.states(), &forged).unwrap();
        let header = result_header(&job, id, &task, forged.len() as u64, list.len() as u64);
        let chunks = encode_section(Section::ReachedStates, &list, MAX_CHUNK_BYTES, 1);
        match client::deliver(&mut client, header, chunks, TOKEN).await {
            Err(Code::PermissionDenied) => {
                banned += 1;
                name += 1;
                id = register_as(&mut client, &format!("blind-{name}"))
                    .await
                    .unwrap()
                    .1;
            }
            Ok(true) => merged += 1,
            _ => {}
        }
    }
    (banned, merged)
}

/// The cost of a third of the workers hostile: the same job built by three real workers with
/// no share re-executed and with the default share, then by two real workers and a blind
/// forger (every result it delivers forged) with the default share and with none (each table
/// fails its proof once and is searched again, every result re-executed), twice; wall time and the
/// CPU of the coordinator and the real workers (not the forger's, the test process's).
/// `cargo test -p tilepdb-coordinator --test integration hostile_results::cost -- --ignored --nocapture`
#[test]
#[ignore = "a measurement (docs/benchmarks.md), not a check"]
fn cost_of_a_third_of_the_workers_hostile() {
    const BENCH: [&str; 10] = [
        "--pattern",
        "1,2,3,4,5",
        "--pattern",
        "6,7,8,9,10",
        "--pattern",
        "11,12,13,14,15",
        "--blank",
        "aware",
        "--task-ranks",
        "512",
    ];
    let spaces: Vec<StateSpace> = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]]
        .iter()
        .map(|p| {
            let board: Board = "4x4".parse().unwrap();
            let pattern = Pattern::new(board, p.to_vec()).unwrap();
            StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Aware).unwrap()
        })
        .collect();
    let dir = scratch("cost-third");
    single_machine(&BENCH[..8], &dir.join("single"));
    let runs = [
        (false, "0"),
        (false, "0.0625"),
        (true, "0.0625"),
        (true, "0"),
    ];
    for (hostile, share) in runs.into_iter().chain(runs) {
        let run = dir.join(if hostile { "hostile" } else { "honest" });
        let _ = std::fs::remove_dir_all(&run);
        let cpu = children_cpu();
        let started = std::time::Instant::now();
        let mut command = serve_job(&BENCH, &run);
        command
            .args(["--listen", "127.0.0.1:0", "--linger", "1", "--no-sync"])
            .args(["--audit-fraction", share])
            .env("TILEPDB_TOKEN", TOKEN);
        let c = Server::spawn(command);
        let url = c.url();
        let honest = if hostile { 2 } else { 3 };
        let workers: Vec<_> = (0..honest)
            .map(|i| real_worker(&url, &format!("honest-{i}")))
            .collect();
        let (banned, merged) = if hostile {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(blind_forger(url.clone(), spaces.clone()))
        } else {
            (0, 0)
        };
        let log = c.finish(MINUTES);
        for mut w in workers {
            let _ = w.wait();
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = children_cpu() - cpu;
        let rejected = log
            .iter()
            .filter(|l| l.contains("failed its proof and was not written"))
            .count();
        println!(
            "{}, share {share}: wall {wall:.2} s, CPU (coordinator + {honest} workers) \
             {cpu:.2} s, forgers banned {banned}, forged results merged {merged}, tables \
             rejected {rejected}",
            if hostile { "a third hostile" } else { "honest" }
        );
        let (want, got) = (tables(&dir.join("single")), tables(&run.join("out")));
        assert_eq!(want, got);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
