//! Hostile clients against a real `tilepdb-coordinator serve` process on 127.0.0.1.
//!
//! A client with the workers' token does the job's work itself (it expands each task with the
//! worker library and delivers the true result), except that for the first search of each
//! table it delivers a forged result for its own lease of the goal's task: empty for the
//! first table, truncated (half its states) for the second, altered (one state swapped for
//! another of the same layer) for the third; and it delivers one result for a lease of
//! another worker id of its own. The result for the other lease is refused
//! (`PERMISSION_DENIED`) and changes nothing; each forged table fails its proof, is not
//! written and is searched again; the tables end byte-identical to a single-machine build.
//! A client with the download token is refused every call of the job's service and may only
//! list and download tables.

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

fn start_coordinator(dir: &Path) -> Server {
    let mut command = serve_job(&JOB, dir);
    command
        .args(["--listen", "127.0.0.1:0", "--linger", "1"])
        .args(["--task-ranks", "1024", "--lease-timeout", "5", "--no-sync"])
        .env("TILEPDB_TOKEN", TOKEN)
        .env("TILEPDB_DOWNLOAD_TOKEN", DOWNLOAD_TOKEN);
    Server::spawn(command)
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
fn forged_results_are_refused_or_caught_and_the_tables_are_the_single_machine_ones() {
    let dir = scratch("hostile");
    single_machine(&JOB, &dir.join("single"));
    let c = start_coordinator(&dir);
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

        let mut forged = [false; 3];
        let mut crossed = false;
        while let Some((task, input)) = take(&mut client, &job, a).await {
            let table = task.table as usize;
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
            if task.depth == 0 && !forged[table] {
                forged[table] = true;
                let forgery = match table {
                    0 => vec![],
                    1 => reached[..reached.len() / 2].to_vec(),
                    _ => altered(&task, &reached),
                };
                assert_ne!(forgery, reached);
                assert_eq!(
                    deliver(&mut client, &job, a, &task, &forgery).await,
                    Ok(true),
                    "a forged result for the client's own lease is taken (the proof catches it)"
                );
                continue;
            }
            let accepted = deliver(&mut client, &job, a, &task, &reached).await;
            assert!(accepted.is_ok(), "{accepted:?}");
        }
        assert_eq!(forged, [true; 3]);
    });
    let log = c.finish(MINUTES);
    let caught = log
        .iter()
        .filter(|l| l.contains("failed its proof"))
        .count();
    assert_eq!(caught, 3, "each forged table was caught once");
    let (want, got) = (tables(&dir.join("single")), tables(&dir.join("out")));
    assert!(!want.is_empty());
    assert_eq!(
        want.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        got.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in want.iter().zip(&got) {
        assert!(x == y, "{name} differs from the single-machine build");
    }
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
