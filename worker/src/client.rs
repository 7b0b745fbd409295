//! The worker process's loop: register, heartbeat, take tasks, expand, deliver.
//!
//! Heartbeats come from their own tokio task on their own schedule, while the expansion runs
//! on a rayon pool, so a busy worker never misses one. Every call that fails because the
//! coordinator is unreachable (or restarting) is retried with exponential backoff; a task whose
//! result cannot be delivered is simply dropped (the coordinator hands it out again).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tilepdb_common::StateSpace;
use tilepdb_common::wire::chunk::{SectionReader, encode_section};
use tilepdb_common::wire::connect::{Auth, channel};
use tilepdb_common::wire::proto::coordinator_client::CoordinatorClient;
use tilepdb_common::wire::proto::{
    HeartbeatRequest, RegisterRequest, ResultHeader, ResultMessage, Section, TakeTaskRequest, Task,
    result_message, task_message,
};
use tilepdb_common::wire::region_lists::{decode_region_states, encode_region_states};
use tilepdb_common::wire::{MAX_CHUNK_BYTES, PROTOCOL_VERSION, saturating_u32};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::error::{Error, Result};
use crate::region_task::{RegionTable, run_region_task};

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// `http://HOST:PORT` or `https://HOST:PORT`.
    pub coordinator: String,
    /// The shared token, if the coordinator wants one.
    pub token: Option<String>,
    /// Expansion threads; 0 means every core.
    pub threads: usize,
    /// CA certificate (PEM) that signed the coordinator's certificate, for `https://`.
    pub tls_ca: Option<PathBuf>,
    /// The name the coordinator's certificate is for, if not the host of the address.
    pub tls_domain: Option<String>,
    /// For the coordinator's logs.
    pub name: String,
    /// Give up after the coordinator has been unreachable this long.
    pub give_up_after: Duration,
    /// Join only this job.
    pub job_id: Option<String>,
    /// zstd level of results.
    pub zstd_level: i32,
    /// Testing: sleep this long after expanding each task (a slow worker).
    pub task_delay: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            coordinator: "http://127.0.0.1:7878".into(),
            token: None,
            threads: 0,
            tls_ca: None,
            tls_domain: None,
            name: default_name(),
            give_up_after: Duration::from_secs(600),
            job_id: None,
            zstd_level: 1,
            task_delay: Duration::ZERO,
        }
    }
}

/// `host:pid`.
pub fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "worker".into(), |h| h.trim().to_string());
    format!("{host}:{}", std::process::id())
}

/// What a worker did.
#[derive(Clone, Debug, Default)]
pub struct WorkerSummary {
    /// Tasks done.
    pub tasks: u64,
    /// States expanded.
    pub expanded: u64,
    /// Bytes received from the coordinator.
    pub bytes_received: u64,
    /// Bytes sent to the coordinator.
    pub bytes_sent: u64,
}

/// A coordinator client that sends the token with every call.
pub type Client = CoordinatorClient<InterceptedService<Channel, Auth>>;

/// A client of the coordinator at `address` (connecting lazily, reconnecting as needed).
pub fn connect(
    address: &str,
    token: Option<&str>,
    tls_ca: Option<&std::path::Path>,
    tls_domain: Option<&str>,
) -> Result<Client> {
    Ok(CoordinatorClient::with_interceptor(
        channel(address, tls_ca, tls_domain)?,
        Auth::new(token)?,
    )
    .max_decoding_message_size(2 * MAX_CHUNK_BYTES as usize + (1 << 16)))
}

/// Exponential backoff while the coordinator is unreachable.
struct Backoff {
    delay: Duration,
    failing_since: Option<Instant>,
    give_up_after: Duration,
    address: String,
}

impl Backoff {
    fn new(give_up_after: Duration, address: &str) -> Backoff {
        Backoff {
            delay: Duration::from_millis(50),
            failing_since: None,
            give_up_after,
            address: address.to_string(),
        }
    }

    fn ok(&mut self) {
        if self.failing_since.take().is_some() {
            tracing::info!("coordinator reachable again");
        }
        self.delay = Duration::from_millis(50);
    }

    async fn failed(&mut self, status: &Status) -> Result<()> {
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        // The coordinator answered and refused for now (its limits): say so, not
        // "unreachable".
        let busy = status.code() == Code::ResourceExhausted;
        if since.elapsed() > self.give_up_after {
            let (address, seconds, last) = (
                self.address.clone(),
                since.elapsed().as_secs(),
                status.message().to_string(),
            );
            return Err(if busy {
                Error::Busy {
                    address,
                    seconds,
                    last,
                }
            } else {
                Error::Unreachable {
                    address,
                    seconds,
                    last,
                }
            });
        }
        let retry_in_ms = u64::try_from(self.delay.as_millis()).unwrap_or(u64::MAX);
        if busy {
            tracing::warn!(
                retry_in_ms,
                "the coordinator refused for now: {}",
                status.message()
            );
        } else {
            tracing::warn!(
                code = ?status.code(),
                retry_in_ms,
                "coordinator unreachable: {}",
                status.message()
            );
        }
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Duration::from_secs(2));
        Ok(())
    }
}

/// What to do after a call failed.
enum Failure {
    /// Unreachable, restarting, overloaded: back off and retry.
    Transient(Status),
    /// The coordinator does not know this worker (it restarted): register again.
    Reregister,
    /// Refused for good (token, version, job).
    Fatal(Error),
    /// This task's result was refused: drop it and go on.
    Dropped(Status),
    /// The job is done.
    JobDone,
}

fn classify(status: Status) -> Failure {
    match status.code() {
        Code::Unauthenticated | Code::PermissionDenied | Code::FailedPrecondition => {
            Failure::Fatal(Error::Refused(format!(
                "{:?}: {}",
                status.code(),
                status.message()
            )))
        }
        Code::NotFound => Failure::Reregister,
        Code::InvalidArgument | Code::OutOfRange => Failure::Dropped(status),
        _ => Failure::Transient(status),
    }
}

/// Runs a worker until the job is done.
pub async fn run(config: WorkerConfig) -> Result<WorkerSummary> {
    let client = connect(
        &config.coordinator,
        config.token.as_deref(),
        config.tls_ca.as_deref(),
        config.tls_domain.as_deref(),
    )?;
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .thread_name(|i| format!("tilepdb-expand-{i}"))
            .build()
            .map_err(|e| Error::Start(e.to_string()))?,
    );
    let threads = pool.current_num_threads();
    let mut backoff = Backoff::new(config.give_up_after, &config.coordinator);
    let summary = Arc::new(Mutex::new(WorkerSummary::default()));
    loop {
        let request = RegisterRequest {
            protocol_version: PROTOCOL_VERSION,
            job_id: config.job_id.clone().unwrap_or_default(),
            worker_name: config.name.clone(),
            threads: saturating_u32(threads),
        };
        let reg = match client.clone().register(request).await {
            Ok(r) => r.into_inner(),
            Err(status) => match classify(status) {
                Failure::Fatal(e) => return Err(e),
                Failure::Transient(s) | Failure::Dropped(s) => {
                    backoff.failed(&s).await?;
                    continue;
                }
                Failure::Reregister | Failure::JobDone => continue,
            },
        };
        backoff.ok();
        let spaces = Arc::new(
            reg.job
                .clone()
                .unwrap_or_default()
                .spaces()
                .map_err(|e| Error::Refused(format!("the job's definition: {e}")))?,
        );
        let regions = Arc::new(region_tables(reg.job.as_ref(), &spaces)?);
        tracing::info!(
            job = %reg.job_id,
            worker = reg.worker_id,
            tables = spaces.len(),
            threads,
            "registered"
        );
        let session = Session {
            client: client.clone(),
            job_id: reg.job_id.clone(),
            worker_id: reg.worker_id,
            spaces,
            regions,
            pool: pool.clone(),
            config: Arc::new(config.clone()),
            max_chunk: reg.max_chunk_bytes.clamp(1, MAX_CHUNK_BYTES),
            summary: summary.clone(),
            holding: Arc::default(),
        };
        let interval = Duration::from_millis(u64::from(reg.heartbeat_interval_ms.max(50)));
        match session.run(interval).await {
            SessionEnd::Done => break,
            SessionEnd::Reregister => {
                tracing::info!("the coordinator does not know this worker: registering again");
            }
            SessionEnd::Fatal(e) => return Err(e),
        }
    }
    let summary = summary.lock().unwrap().clone();
    tracing::info!(
        tasks = summary.tasks,
        expanded = summary.expanded,
        bytes_received = summary.bytes_received,
        bytes_sent = summary.bytes_sent,
        "job done"
    );
    Ok(summary)
}

/// How a session (one registration) ends.
enum SessionEnd {
    Done,
    Reregister,
    Fatal(Error),
}

/// Tasks a worker holds at once: one expanding, one fetched ahead (or being delivered), so
/// that neither the network nor the coordinator's merge leaves the cores idle.
const TASKS_IN_FLIGHT: usize = 2;

/// One registration: a fetcher takes tasks ahead, an executor expands them one at a time
/// with the whole pool and hands each result to a delivery of its own, and heartbeats go on
/// beside them.
#[derive(Clone)]
struct Session {
    client: Client,
    job_id: String,
    worker_id: u64,
    spaces: Arc<Vec<StateSpace>>,
    /// The region index of each table (the job searches on it).
    regions: Arc<Vec<RegionTable>>,
    pool: Arc<rayon::ThreadPool>,
    config: Arc<WorkerConfig>,
    max_chunk: u32,
    summary: Arc<Mutex<WorkerSummary>>,
    /// Attempts this worker works on.
    holding: Arc<Mutex<Vec<u64>>>,
}

/// A task and its input, with its place among the tasks in flight.
struct Fetched {
    task: Task,
    input: Vec<u64>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Session {
    async fn run(self, heartbeat_interval: Duration) -> SessionEnd {
        let done = Arc::new(AtomicBool::new(false));
        let (end_tx, mut end_rx) = tokio::sync::mpsc::channel::<SessionEnd>(8);
        let (task_tx, mut task_rx) = tokio::sync::mpsc::channel::<Fetched>(1);
        let permits = Arc::new(tokio::sync::Semaphore::new(TASKS_IN_FLIGHT));
        let mut handles = vec![tokio::spawn(heartbeats(
            self.client.clone(),
            self.job_id.clone(),
            self.worker_id,
            done.clone(),
            heartbeat_interval,
        ))];
        // Fetcher.
        let (me, end) = (self.clone(), end_tx.clone());
        handles.push(tokio::spawn(async move {
            let mut backoff = Backoff::new(me.config.give_up_after, &me.config.coordinator);
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                if done.load(Relaxed) {
                    let _ = end.send(SessionEnd::Done).await;
                    return;
                }
                match me.fetch().await {
                    Ok(Some((task, input))) => {
                        backoff.ok();
                        me.holding.lock().unwrap().push(task.attempt);
                        let fetched = Fetched {
                            task,
                            input,
                            _permit: permit,
                        };
                        if task_tx.send(fetched).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => backoff.ok(),
                    Err(Failure::Transient(s)) => {
                        if let Err(e) = backoff.failed(&s).await {
                            let _ = end.send(SessionEnd::Fatal(e)).await;
                            return;
                        }
                    }
                    Err(Failure::Dropped(s)) => {
                        tracing::warn!(code = ?s.code(), "task dropped: {}", s.message());
                    }
                    Err(Failure::Reregister) => {
                        let _ = end.send(SessionEnd::Reregister).await;
                        return;
                    }
                    Err(Failure::Fatal(e)) => {
                        let _ = end.send(SessionEnd::Fatal(e)).await;
                        return;
                    }
                    Err(Failure::JobDone) => {
                        let _ = end.send(SessionEnd::Done).await;
                        return;
                    }
                }
            }
        }));
        // Executor.
        let (me, end) = (self.clone(), end_tx);
        handles.push(tokio::spawn(async move {
            while let Some(Fetched {
                task,
                input,
                _permit: permit,
            }) = task_rx.recv().await
            {
                let attempt = task.attempt;
                let Some(result) = me.expand(&task, input).await else {
                    me.holding.lock().unwrap().retain(|&a| a != attempt);
                    continue;
                };
                if !me.config.task_delay.is_zero() {
                    tokio::time::sleep(me.config.task_delay).await;
                }
                let (me, end) = (me.clone(), end.clone());
                tokio::spawn(async move {
                    let outcome = me.deliver(&task, result).await;
                    me.holding.lock().unwrap().retain(|&a| a != attempt);
                    drop(permit);
                    match outcome {
                        Ok(()) | Err(Failure::JobDone) => {}
                        Err(Failure::Reregister) => {
                            let _ = end.send(SessionEnd::Reregister).await;
                        }
                        Err(Failure::Fatal(e)) => {
                            let _ = end.send(SessionEnd::Fatal(e)).await;
                        }
                        Err(Failure::Transient(s) | Failure::Dropped(s)) => {
                            tracing::warn!(
                                code = ?s.code(),
                                attempt,
                                "result not delivered (the task will be handed out again): {}",
                                s.message()
                            );
                        }
                    }
                });
            }
        }));
        let end = end_rx.recv().await.unwrap_or(SessionEnd::Reregister);
        for h in handles {
            h.abort();
        }
        end
    }

    /// Takes a task and reads its input; `None` after waiting when there was none.
    async fn fetch(&self) -> Result<Option<(Task, Vec<u64>)>, Failure> {
        let request = TakeTaskRequest {
            job_id: self.job_id.clone(),
            worker_id: self.worker_id,
            holding: self.holding.lock().unwrap().clone(),
        };
        let mut stream = self
            .client
            .clone()
            .take_task(request)
            .await
            .map_err(classify)?
            .into_inner();
        let first = stream
            .message()
            .await
            .map_err(classify)?
            .ok_or_else(|| Failure::Transient(Status::unavailable("empty task stream")))?;
        let mut received = prost::Message::encoded_len(&first) as u64;
        let task = match first.kind {
            Some(task_message::Kind::Task(t)) => t,
            Some(task_message::Kind::Wait(w)) => {
                tracing::debug!(reason = %w.reason, "no task yet");
                let pause = Duration::from_millis(u64::from(w.retry_after_ms.clamp(1, 5000)));
                tokio::time::sleep(pause).await;
                return Ok(None);
            }
            Some(task_message::Kind::Done(_)) => return Err(Failure::JobDone),
            _ => {
                return Err(Failure::Transient(Status::internal(
                    "task stream starts with neither task, wait nor done",
                )));
            }
        };
        let (space, region) = check_task(&task, &self.spaces, &self.regions)
            .map_err(|m| Failure::Dropped(Status::invalid_argument(m)))?;
        let mut reader = SectionReader::new(Section::InputStates, task.input_bytes, self.max_chunk);
        while !reader.is_complete() {
            let msg =
                stream.message().await.map_err(classify)?.ok_or_else(|| {
                    Failure::Transient(Status::unavailable("task input cut short"))
                })?;
            received += prost::Message::encoded_len(&msg) as u64;
            match msg.kind {
                Some(task_message::Kind::Input(chunk)) => reader
                    .push(&chunk)
                    .map_err(|e| Failure::Dropped(Status::data_loss(e.to_string())))?,
                _ => {
                    return Err(Failure::Dropped(Status::data_loss(
                        "task input interrupted by another message",
                    )));
                }
            }
        }
        let own = region.states_of(task.first_rank..task.end_rank);
        let shape = region.list_shape(space, task.depth);
        let input = reader
            .finish()
            .and_then(|b| decode_region_states(&b, task.states, &shape, own))
            .map_err(|e| Failure::Dropped(Status::data_loss(e.to_string())))?;
        self.summary.lock().unwrap().bytes_received += received;
        Ok(Some((task, input)))
    }

    /// Expands a task with the whole pool; its result, encoded.
    async fn expand(&self, task: &Task, input: Vec<u64>) -> Option<Expanded> {
        let (pool, spaces) = (self.pool.clone(), self.spaces.clone());
        let regions = self.regions.clone();
        let (level, max_chunk) = (self.config.zstd_level, self.max_chunk);
        let (table, sets) = (task.table as usize, task.first_rank..task.end_rank);
        let depth = task.depth;
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            let (space, region) = (&spaces[table], &regions[table]);
            let out = pool.install(|| run_region_task(region, sets, &input));
            // The states reached are those of the next layer.
            let shape = region.list_shape(space, depth + 1);
            let list = encode_region_states(&shape, 0..shape.states(), &out.reached)?;
            let chunks = encode_section(Section::ReachedStates, &list, max_chunk, level);
            Ok::<_, tilepdb_common::Error>(Expanded {
                reached_states: out.reached.len() as u64,
                reached_bytes: list.len() as u64,
                stats: out.stats,
                chunks,
                started,
            })
        })
        .await;
        match result {
            Ok(Ok(r)) => Some(r),
            Ok(Err(e)) => {
                tracing::error!("result not encoded: {e}");
                None
            }
            Err(e) => {
                tracing::error!("expansion failed: {e}");
                None
            }
        }
    }

    /// Sends a task's result.
    async fn deliver(&self, task: &Task, result: Expanded) -> Result<(), Failure> {
        let header = ResultHeader {
            job_id: self.job_id.clone(),
            worker_id: self.worker_id,
            task_id: task.task_id,
            attempt: task.attempt,
            table: task.table,
            depth: task.depth,
            first_rank: task.first_rank,
            end_rank: task.end_rank,
            reached_states: result.reached_states,
            reached_bytes: result.reached_bytes,
            expanded: result.stats.expanded,
            generated: result.stats.generated,
        };
        let mut msgs = vec![ResultMessage {
            kind: Some(result_message::Kind::Header(header)),
        }];
        msgs.extend(result.chunks.into_iter().map(|c| ResultMessage {
            kind: Some(result_message::Kind::Chunk(c)),
        }));
        let sent: u64 = msgs
            .iter()
            .map(|m| prost::Message::encoded_len(m) as u64)
            .sum();
        let response = self
            .client
            .clone()
            .deliver_result(tokio_stream::iter(msgs))
            .await
            .map_err(classify)?
            .into_inner();
        {
            let mut summary = self.summary.lock().unwrap();
            summary.bytes_sent += sent;
            summary.tasks += 1;
            summary.expanded += result.stats.expanded;
        }
        tracing::debug!(
            task = task.task_id,
            attempt = task.attempt,
            depth = task.depth,
            expanded = result.stats.expanded,
            bytes = sent,
            ms = u64::try_from(result.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            accepted = response.accepted,
            "task delivered {}",
            response.reason
        );
        Ok(())
    }
}

/// A task's result, ready to send.
struct Expanded {
    reached_states: u64,
    reached_bytes: u64,
    stats: tilepdb_common::region_expand::ExpandStats,
    chunks: Vec<tilepdb_common::wire::proto::Chunk>,
    started: Instant,
}

async fn heartbeats(
    mut client: Client,
    job_id: String,
    worker_id: u64,
    done: Arc<AtomicBool>,
    interval: Duration,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let request = HeartbeatRequest {
            job_id: job_id.clone(),
            worker_id,
        };
        let call = tokio::time::timeout(
            interval.max(Duration::from_secs(1)),
            client.heartbeat(request),
        );
        match call.await {
            Ok(Ok(r)) => {
                if r.into_inner().job_done {
                    done.store(true, Relaxed);
                }
            }
            Ok(Err(s)) => tracing::debug!(code = ?s.code(), "heartbeat failed: {}", s.message()),
            Err(_) => tracing::debug!("heartbeat timed out"),
        }
    }
}

/// The region index of each table of a job, which must be searched on it.
fn region_tables(
    job: Option<&tilepdb_common::wire::proto::JobSpec>,
    spaces: &[StateSpace],
) -> Result<Vec<RegionTable>> {
    let index = job.map_or("", |j| j.search_index.as_str());
    if index != tilepdb_common::wire::SEARCH_INDEX {
        let named = if index.is_empty() { "cell" } else { index };
        return Err(Error::Refused(format!(
            "its job searches on the {named} index; this worker expands the {} index only",
            tilepdb_common::wire::SEARCH_INDEX
        )));
    }
    Ok(spaces
        .iter()
        .map(RegionTable::of)
        .collect::<tilepdb_common::Result<Vec<_>>>()?)
}

/// The task's table and its region index, if its fields are consistent with the job.
fn check_task<'a>(
    task: &Task,
    spaces: &'a [StateSpace],
    regions: &'a [RegionTable],
) -> Result<(&'a StateSpace, &'a RegionTable), String> {
    let (space, region) = spaces
        .get(task.table as usize)
        .zip(regions.get(task.table as usize))
        .ok_or_else(|| format!("task for table {} of {}", task.table, spaces.len()))?;
    let sets = region.index.sets();
    if task.first_rank >= task.end_rank || task.end_rank > sets {
        return Err(format!(
            "task tile sets {}..{} outside 0..{sets}",
            task.first_rank, task.end_rank,
        ));
    }
    let own = region.states_of(task.first_rank..task.end_rank);
    let most_bytes = region.list_shape(space, task.depth).max_bytes(task.states);
    if task.states > own.end - own.start || task.input_bytes > most_bytes {
        return Err(format!(
            "{} bytes cannot list {} states of tile sets {}..{}",
            task.input_bytes, task.states, task.first_rank, task.end_rank
        ));
    }
    Ok((space, region))
}
