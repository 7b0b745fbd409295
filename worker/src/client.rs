//! The worker process's loop: register, heartbeat, take tasks, expand, deliver.
//!
//! Heartbeats come from their own tokio task on their own schedule, while the expansion runs
//! on a rayon pool, so a busy worker never misses one. Every call that fails because the
//! coordinator is unreachable (or restarting) is retried with exponential backoff; a task whose
//! result cannot be delivered is simply dropped (the coordinator hands it out again).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use tilepdb_common::wire::chunk::{SectionReader, encode_section};
use tilepdb_common::wire::proto::coordinator_client::CoordinatorClient;
use tilepdb_common::wire::proto::{
    HeartbeatRequest, RegisterRequest, ResultHeader, ResultMessage, Section, TakeTaskRequest, Task,
    result_message, task_message,
};
use tilepdb_common::wire::states::{decode_deltas, encode_deltas, own_states};
use tilepdb_common::wire::{AUTH_HEADER, MAX_CHUNK_BYTES, PROTOCOL_VERSION};
use tilepdb_common::{StateList, StateSpace};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Status};

use crate::error::{Error, Result};
use crate::task::run_task;

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
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "worker".into());
    format!("{host}:{}", std::process::id())
}

/// What a worker did.
#[derive(Clone, Debug, Default)]
pub struct WorkerSummary {
    pub tasks: u64,
    pub expanded: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
}

/// Adds the shared token to every call.
#[derive(Clone)]
pub struct Auth(Option<MetadataValue<Ascii>>);

impl Auth {
    pub fn new(token: Option<&str>) -> Result<Auth> {
        token
            .map(|t| {
                format!("Bearer {t}")
                    .parse()
                    .map_err(|_| Error::Start("the token must be printable ASCII".into()))
            })
            .transpose()
            .map(Auth)
    }
}

impl Interceptor for Auth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert(AUTH_HEADER, v.clone());
        }
        Ok(request)
    }
}

pub type Client = CoordinatorClient<InterceptedService<Channel, Auth>>;

/// A client of the coordinator at `address` (connecting lazily, reconnecting as needed).
pub fn connect(
    address: &str,
    token: Option<&str>,
    tls_ca: Option<&std::path::Path>,
    tls_domain: Option<&str>,
) -> Result<Client> {
    let bad = |reason: String| Error::Address {
        address: address.to_string(),
        reason,
    };
    let mut endpoint = Endpoint::from_shared(address.to_string())
        .map_err(|e| bad(e.to_string()))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(20));
    if address.starts_with("https://") || tls_ca.is_some() {
        let mut tls = ClientTlsConfig::new();
        if let Some(path) = tls_ca {
            let pem = std::fs::read(path).map_err(|source| Error::File {
                what: "CA certificate",
                path: path.to_path_buf(),
                source,
            })?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        if let Some(domain) = tls_domain {
            tls = tls.domain_name(domain);
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| bad(e.to_string()))?;
    }
    let channel = endpoint.connect_lazy();
    Ok(
        CoordinatorClient::with_interceptor(channel, Auth::new(token)?)
            .max_decoding_message_size(2 * MAX_CHUNK_BYTES as usize + (1 << 16)),
    )
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
        if since.elapsed() > self.give_up_after {
            return Err(Error::Unreachable {
                address: self.address.clone(),
                seconds: since.elapsed().as_secs(),
                last: status.message().to_string(),
            });
        }
        tracing::warn!(
            code = ?status.code(),
            retry_in_ms = self.delay.as_millis() as u64,
            "coordinator unreachable: {}",
            status.message()
        );
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
    let mut summary = WorkerSummary::default();
    let done = Arc::new(AtomicBool::new(false));
    let worker_id = Arc::new(AtomicU64::new(0));
    let mut heartbeat: Option<tokio::task::JoinHandle<()>> = None;
    let result = 'register: loop {
        let request = RegisterRequest {
            protocol_version: PROTOCOL_VERSION,
            job_id: config.job_id.clone().unwrap_or_default(),
            worker_name: config.name.clone(),
            threads: threads as u32,
        };
        let reg = match client.clone().register(request).await {
            Ok(r) => r.into_inner(),
            Err(status) => match classify(status) {
                Failure::Fatal(e) => break Err(e),
                Failure::Transient(s) | Failure::Dropped(s) => {
                    if let Err(e) = backoff.failed(&s).await {
                        break Err(e);
                    }
                    continue;
                }
                Failure::Reregister => continue,
            },
        };
        backoff.ok();
        let job = reg.job.unwrap_or_default();
        let spaces = match job.spaces() {
            Ok(s) => Arc::new(s),
            Err(e) => break Err(Error::Refused(format!("the job's definition: {e}"))),
        };
        worker_id.store(reg.worker_id, Relaxed);
        tracing::info!(
            job = %reg.job_id,
            worker = reg.worker_id,
            tables = spaces.len(),
            threads,
            "registered"
        );
        if let Some(h) = heartbeat.take() {
            h.abort();
        }
        heartbeat = Some(tokio::spawn(heartbeats(
            client.clone(),
            reg.job_id.clone(),
            worker_id.clone(),
            done.clone(),
            Duration::from_millis(reg.heartbeat_interval_ms.max(50) as u64),
        )));
        let max_chunk = reg.max_chunk_bytes.clamp(1, MAX_CHUNK_BYTES);
        loop {
            if done.load(Relaxed) {
                break 'register Ok(());
            }
            let request = TakeTaskRequest {
                job_id: reg.job_id.clone(),
                worker_id: reg.worker_id,
            };
            let outcome = take_and_run(
                &client,
                request,
                &spaces,
                &pool,
                &config,
                max_chunk,
                &mut summary,
            )
            .await;
            match outcome {
                Ok(Step::Worked | Step::Waited) => backoff.ok(),
                Ok(Step::Done) => {
                    done.store(true, Relaxed);
                }
                Err(Failure::Transient(s)) => {
                    if let Err(e) = backoff.failed(&s).await {
                        break 'register Err(e);
                    }
                }
                Err(Failure::Reregister) => {
                    tracing::info!("the coordinator does not know this worker: registering again");
                    continue 'register;
                }
                Err(Failure::Fatal(e)) => break 'register Err(e),
                Err(Failure::Dropped(s)) => {
                    tracing::warn!(code = ?s.code(), "task dropped: {}", s.message());
                }
            }
        }
    };
    if let Some(h) = heartbeat.take() {
        h.abort();
    }
    result.map(|()| {
        tracing::info!(
            tasks = summary.tasks,
            expanded = summary.expanded,
            bytes_received = summary.bytes_received,
            bytes_sent = summary.bytes_sent,
            "job done"
        );
        summary
    })
}

async fn heartbeats(
    mut client: Client,
    job_id: String,
    worker_id: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    interval: Duration,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let request = HeartbeatRequest {
            job_id: job_id.clone(),
            worker_id: worker_id.load(Relaxed),
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

enum Step {
    Worked,
    Waited,
    Done,
}

/// Takes a task, runs it and delivers its result.
async fn take_and_run(
    client: &Client,
    request: TakeTaskRequest,
    spaces: &Arc<Vec<StateSpace>>,
    pool: &Arc<rayon::ThreadPool>,
    config: &WorkerConfig,
    max_chunk: u32,
    summary: &mut WorkerSummary,
) -> Result<Step, Failure> {
    let job_id = request.job_id.clone();
    let worker_id = request.worker_id;
    let mut stream = client
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
    summary.bytes_received += prost::Message::encoded_len(&first) as u64;
    let task = match first.kind {
        Some(task_message::Kind::Task(t)) => t,
        Some(task_message::Kind::Wait(w)) => {
            tracing::debug!(reason = %w.reason, "no task yet");
            tokio::time::sleep(Duration::from_millis(w.retry_after_ms.clamp(1, 5000) as u64)).await;
            return Ok(Step::Waited);
        }
        Some(task_message::Kind::Done(_)) => return Ok(Step::Done),
        _ => {
            return Err(Failure::Transient(Status::internal(
                "task stream starts with neither task, wait nor done",
            )));
        }
    };
    let space =
        check_task(&task, spaces).map_err(|m| Failure::Dropped(Status::invalid_argument(m)))?;
    let mut reader = SectionReader::new(Section::InputStates, task.input_bytes, max_chunk);
    while !reader.is_complete() {
        let msg = stream
            .message()
            .await
            .map_err(classify)?
            .ok_or_else(|| Failure::Transient(Status::unavailable("task input cut short")))?;
        summary.bytes_received += prost::Message::encoded_len(&msg) as u64;
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
    let ranks = task.first_rank..task.end_rank;
    let input = reader
        .finish()
        .and_then(|b| decode_deltas(&b, task.states, own_states(&ranks, space.slots())))
        .map_err(|e| Failure::Dropped(Status::data_loss(e.to_string())))?;
    let (pool, spaces) = (pool.clone(), spaces.clone());
    let level = config.zstd_level;
    let table = task.table as usize;
    let started = Instant::now();
    let (reached_states, reached_bytes, stats, chunks) = tokio::task::spawn_blocking(move || {
        let space = &spaces[table];
        let out = pool.install(|| run_task(space, ranks, &StateList(input)));
        let list = encode_deltas(&out.reached);
        let chunks = encode_section(Section::ReachedStates, &list, max_chunk, level);
        (
            out.reached.len() as u64,
            list.len() as u64,
            out.stats,
            chunks,
        )
    })
    .await
    .map_err(|e| Failure::Fatal(Error::Start(format!("expansion thread failed: {e}"))))?;
    if !config.task_delay.is_zero() {
        tokio::time::sleep(config.task_delay).await;
    }
    let header = ResultHeader {
        job_id,
        worker_id,
        task_id: task.task_id,
        attempt: task.attempt,
        table: task.table,
        depth: task.depth,
        first_rank: task.first_rank,
        end_rank: task.end_rank,
        reached_states,
        reached_bytes,
        expanded: stats.expanded,
        generated: stats.generated,
    };
    let mut msgs = vec![ResultMessage {
        kind: Some(result_message::Kind::Header(header)),
    }];
    msgs.extend(chunks.into_iter().map(|c| ResultMessage {
        kind: Some(result_message::Kind::Chunk(c)),
    }));
    let sent: u64 = msgs
        .iter()
        .map(|m| prost::Message::encoded_len(m) as u64)
        .sum();
    let response = client
        .clone()
        .deliver_result(tokio_stream::iter(msgs))
        .await
        .map_err(classify)?
        .into_inner();
    summary.bytes_sent += sent;
    summary.tasks += 1;
    summary.expanded += stats.expanded;
    tracing::debug!(
        task = task.task_id,
        attempt = task.attempt,
        depth = task.depth,
        expanded = stats.expanded,
        bytes = sent,
        ms = started.elapsed().as_millis() as u64,
        accepted = response.accepted,
        "task delivered {}",
        response.reason
    );
    Ok(Step::Worked)
}

/// The task's table, if its fields are consistent with the job.
fn check_task<'a>(task: &Task, spaces: &'a [StateSpace]) -> Result<&'a StateSpace, String> {
    let space = spaces
        .get(task.table as usize)
        .ok_or_else(|| format!("task for table {} of {}", task.table, spaces.len()))?;
    if task.first_rank >= task.end_rank || task.end_rank > space.placements() {
        return Err(format!(
            "task ranks {}..{} outside 0..{}",
            task.first_rank,
            task.end_rank,
            space.placements()
        ));
    }
    if task.states > task.input_bytes || task.input_bytes > 10 * task.states {
        return Err(format!(
            "{} bytes cannot list {} states",
            task.input_bytes, task.states
        ));
    }
    Ok(space)
}
