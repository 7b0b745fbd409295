//! The worker process's loop: register, then a session of heartbeats, tasks taken, expanded
//! and delivered, and register again when the coordinator no longer knows this worker.
//!
//! Heartbeats come from their own tokio task on their own schedule, while the expansion runs
//! on a rayon pool, so a busy worker never misses one. Every call that fails because the
//! coordinator is unreachable (or restarting) is retried with exponential backoff
//! (`retry.rs`); a task whose result cannot be delivered is simply dropped (the coordinator
//! hands it out again). The steps of one registration are in `session.rs`.

pub(crate) mod retry;
mod session;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tilepdb_common::StateSpace;
use tilepdb_common::wire::connect::{Auth, Endpoint};
use tilepdb_common::wire::proto::coordinator_client::CoordinatorClient;
use tilepdb_common::wire::proto::{RegisterRequest, RegisterResponse};
use tilepdb_common::wire::{MAX_CHUNK_BYTES, PROTOCOL_VERSION, saturating_u32};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use self::retry::{Backoff, Failure, classify};
use self::session::{Session, SessionEnd};
use crate::error::{Error, Result};
use crate::region_task::region_tables;

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// The coordinator: its address, the shared token and the TLS settings.
    pub coordinator: Endpoint,
    /// Expansion threads; 0 means every core.
    pub threads: usize,
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
            coordinator: Endpoint::new("http://127.0.0.1:7878"),
            threads: 0,
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

/// A client of the coordinator at `endpoint` (connecting lazily, reconnecting as needed).
pub fn connect(endpoint: &Endpoint) -> Result<Client> {
    Ok(
        CoordinatorClient::with_interceptor(endpoint.channel()?, endpoint.auth()?)
            .max_decoding_message_size(2 * MAX_CHUNK_BYTES as usize + (1 << 16)),
    )
}

/// Runs a worker until the job is done.
pub async fn run(config: WorkerConfig) -> Result<WorkerSummary> {
    let client = connect(&config.coordinator)?;
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .thread_name(|i| format!("tilepdb-expand-{i}"))
            .build()
            .map_err(|e| Error::Start(e.to_string()))?,
    );
    let summary = Arc::new(Mutex::new(WorkerSummary::default()));
    loop {
        let session = register(&client, &config, &pool, &summary).await?;
        let interval = session.heartbeat_interval;
        match session.session.run(interval).await {
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

/// A registration: the session it opens and the heartbeat interval the coordinator asked for.
struct Registered {
    session: Session,
    heartbeat_interval: Duration,
}

/// Registers with the coordinator, retrying while it is unreachable, and checks the job it
/// gives: its tables and the index they are searched on.
async fn register(
    client: &Client,
    config: &WorkerConfig,
    pool: &Arc<rayon::ThreadPool>,
    summary: &Arc<Mutex<WorkerSummary>>,
) -> Result<Registered> {
    let threads = pool.current_num_threads();
    let mut backoff = Backoff::new(config.give_up_after, &config.coordinator.address);
    let reg: RegisterResponse = loop {
        let request = RegisterRequest {
            protocol_version: PROTOCOL_VERSION,
            job_id: config.job_id.clone().unwrap_or_default(),
            worker_name: config.name.clone(),
            threads: saturating_u32(threads),
        };
        match client.clone().register(request).await {
            Ok(r) => break r.into_inner(),
            Err(status) => match classify(status) {
                Failure::Fatal(e) => return Err(e),
                Failure::Transient(s) | Failure::Dropped(s) => backoff.failed(&s).await?,
                Failure::Reregister | Failure::JobDone => {}
            },
        }
    };
    backoff.ok();
    let spaces: Arc<Vec<StateSpace>> = Arc::new(
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
    Ok(Registered {
        session: Session {
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
        },
        heartbeat_interval: Duration::from_millis(u64::from(reg.heartbeat_interval_ms.max(50))),
    })
}
