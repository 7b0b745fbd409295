//! A shard worker: owns one shard of every table of a sharded job (the orders
//! `p * k! / P .. (p + 1) * k! / P` of every block, [`tilepdb_common::shard`]).
//!
//! It serves the data plane ([`peer`]) on a port of its own, joins the coordinator's
//! `ShardControl`, and then takes the job's numbered steps until the job is done:
//!
//! ```text
//! join ──► open table t ──► expand layer d ──► finish layer d ──┐ (the layer added states)
//!                ▲                ▲                             │
//!                │                └─────────────────────────────┘
//!                └── close table t ◄── (the coordinator reads the values) ◄── (it added none)
//! ```
//!
//! Expanding, each successor the shard owns is merged at once; the others are gathered per
//! owner and pushed to it in sorted, gap-coded, compressed lists ([`send`]). A step is reported
//! only once every push of it has been merged by its owner, so when every shard has reported
//! an expansion, the next layer is complete on every shard.

pub mod peer;
mod send;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tilepdb_common::region_index::OrderMoves;
use tilepdb_common::shard::{Shard, ShardLayout, ShardSize};
use tilepdb_common::table::{DepthCode, Encoding};
use tilepdb_common::wire::PROTOCOL_VERSION;
use tilepdb_common::wire::connect::{Auth, channel};
use tilepdb_common::wire::proto::shard_control_client::ShardControlClient;
use tilepdb_common::wire::proto::shard_peer_server::ShardPeerServer;
use tilepdb_common::wire::proto::step_response::Command;
use tilepdb_common::wire::proto::{JoinRequest, ShardHeartbeatRequest, StepReport, StepRequest};
use tilepdb_common::{StateSpace, human_bytes};
use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use crate::error::{Error, Result};
use peer::{OpenShard, PeerService, PeerState};
use send::Peers;

/// How to run a shard worker.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// The coordinator: `http://HOST:PORT` or `https://HOST:PORT`.
    pub coordinator: String,
    /// The shared token, if the coordinator wants one (the peers want the same).
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
    /// zstd level of the pushed lists.
    pub zstd_level: i32,
    /// The shard this worker owns, and the number of shards.
    pub shard: u32,
    /// The number of shards of the job.
    pub shards: u32,
    /// Where the data plane listens (port 0: any free port).
    pub listen: SocketAddr,
    /// The address the other shards reach it at (default: `http://` and the listening
    /// address).
    pub advertise: Option<String>,
    /// Most bytes of memory the shard's arrays may take (`None`: the cgroup's limit, if any).
    pub memory_limit: Option<u64>,
}

/// What a shard worker did.
#[derive(Clone, Debug, Default)]
pub struct ShardSummary {
    /// Tables searched.
    pub tables: u64,
    /// States expanded.
    pub expanded: u64,
    /// States pushed to other shards, and their bytes on the wire.
    pub sent_states: u64,
    /// Bytes pushed.
    pub sent_bytes: u64,
}

type Control = ShardControlClient<InterceptedService<Channel, Auth>>;

/// The memory limit of this process's cgroup (v2), if it has one.
fn cgroup_limit() -> Option<u64> {
    std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Runs a shard worker until its job is done.
pub async fn run_shard(config: ShardConfig) -> Result<ShardSummary> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| Error::Start(format!("cannot listen on {}: {e}", config.listen)))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::Start(format!("no local address: {e}")))?;
    let advertise = config
        .advertise
        .clone()
        .unwrap_or_else(|| format!("http://{local}"));
    let state = Arc::new(PeerState {
        job_id: RwLock::new(String::new()),
        shard: config.shard,
        shards: config.shards,
        open: RwLock::new(None),
    });
    let service = tonic::service::interceptor::InterceptedService::new(
        ShardPeerServer::new(PeerService::new(state.clone()))
            .max_decoding_message_size(peer::MAX_MESSAGE_BYTES),
        peer::TokenCheck::new(config.token.as_deref()),
    );
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .tcp_nodelay(true)
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    let result = steps(&config, &advertise, &state).await;
    server.abort();
    result
}

/// Joins, then takes the job's steps until it is done.
async fn steps(
    config: &ShardConfig,
    advertise: &str,
    state: &Arc<PeerState>,
) -> Result<ShardSummary> {
    let mut control = ShardControlClient::with_interceptor(
        channel(
            &config.coordinator,
            config.tls_ca.as_deref(),
            config.tls_domain.as_deref(),
        )?,
        Auth::new(config.token.as_deref())?,
    );
    let joined = join(&mut control, config, advertise).await?;
    let job = joined
        .job
        .ok_or_else(|| Error::Refused("the join answer has no job".into()))?;
    let spaces = job.spaces()?;
    let encoding: Encoding = joined
        .encoding
        .parse()
        .map_err(|e| Error::Refused(format!("the job's encoding: {e}")))?;
    *state.job_id.write().expect("job id lock") = joined.job_id.clone();
    let session = joined.session;
    let heartbeat = tokio::spawn(heartbeats(
        control.clone(),
        ShardHeartbeatRequest {
            job_id: joined.job_id.clone(),
            shard: config.shard,
            session,
        },
        Duration::from_millis(u64::from(joined.heartbeat_interval_ms.max(100))),
    ));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .thread_name(|i| format!("tilepdb-shard-{i}"))
        .build()
        .map_err(|e| Error::Start(format!("cannot start the threads: {e}")))?;
    let pool = Arc::new(pool);
    let mut work = Work {
        config: config.clone(),
        job_id: joined.job_id.clone(),
        spaces,
        encoding,
        state: state.clone(),
        pool,
        peers: None,
        summary: ShardSummary::default(),
    };
    let mut request = StepRequest {
        job_id: joined.job_id.clone(),
        shard: config.shard,
        session,
        done_step: 0,
        report: None,
    };
    let mut unreachable_since: Option<Instant> = None;
    let outcome = loop {
        let answer = match control.next_step(request.clone()).await {
            Ok(a) => {
                unreachable_since = None;
                a.into_inner()
            }
            Err(status) if retryable(&status) => {
                let since = *unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() > config.give_up_after {
                    break Err(Error::Unreachable {
                        address: config.coordinator.clone(),
                        seconds: config.give_up_after.as_secs(),
                        last: status.message().to_string(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(status) => break Err(Error::Refused(status.message().to_string())),
        };
        let report = match answer.command {
            None | Some(Command::Wait(_)) => continue,
            Some(Command::Done(_)) => break Ok(work.summary.clone()),
            Some(Command::Failed(reason)) => {
                break Err(Error::Refused(format!("the job failed: {reason}")));
            }
            Some(command) => work.step(command).await,
        };
        request.done_step = answer.step;
        request.report = Some(report);
    };
    heartbeat.abort();
    outcome
}

/// Errors worth retrying: the coordinator restarting, unreachable or busy.
fn retryable(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable
            | tonic::Code::Unknown
            | tonic::Code::ResourceExhausted
            | tonic::Code::DeadlineExceeded
    )
}

async fn join(
    control: &mut Control,
    config: &ShardConfig,
    advertise: &str,
) -> Result<tilepdb_common::wire::proto::JoinResponse> {
    let request = JoinRequest {
        protocol_version: PROTOCOL_VERSION,
        job_id: config.job_id.clone().unwrap_or_default(),
        shard: config.shard,
        shards: config.shards,
        peer_address: advertise.to_string(),
        worker_name: config.name.clone(),
    };
    let started = Instant::now();
    loop {
        match control.join(request.clone()).await {
            Ok(r) => return Ok(r.into_inner()),
            Err(s) if retryable(&s) && started.elapsed() < config.give_up_after => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(s) if retryable(&s) => {
                return Err(Error::Unreachable {
                    address: config.coordinator.clone(),
                    seconds: config.give_up_after.as_secs(),
                    last: s.message().to_string(),
                });
            }
            Err(s) => return Err(Error::Refused(s.message().to_string())),
        }
    }
}

async fn heartbeats(mut control: Control, request: ShardHeartbeatRequest, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let _ = control.shard_heartbeat(request.clone()).await;
    }
}

/// The worker's side of the steps.
struct Work {
    config: ShardConfig,
    job_id: String,
    spaces: Vec<StateSpace>,
    encoding: Encoding,
    state: Arc<PeerState>,
    pool: Arc<rayon::ThreadPool>,
    peers: Option<Arc<Peers>>,
    summary: ShardSummary,
}

impl Work {
    /// Does one step; its report (with the error, if it failed).
    async fn step(&mut self, command: Command) -> StepReport {
        let mut report = match self.try_step(command).await {
            Ok(report) => report,
            Err(e) => StepReport {
                error: e.to_string(),
                ..StepReport::default()
            },
        };
        report.peak_rss = tilepdb_common::units::peak_rss_bytes().unwrap_or(0);
        report
    }

    fn open_shard(&self, table: u32) -> Result<(Arc<Shard>, u32)> {
        let open = self.state.open.read().expect("open table lock");
        match &*open {
            Some(o) if o.table == table => Ok((o.shard.clone(), o.accept_depth)),
            _ => Err(Error::Refused(format!(
                "table {table} is not open on this shard"
            ))),
        }
    }

    async fn try_step(&mut self, command: Command) -> Result<StepReport> {
        match command {
            Command::OpenTable(open) => {
                let space = self
                    .spaces
                    .get(open.table as usize)
                    .ok_or_else(|| Error::Refused(format!("the job has no table {}", open.table)))?
                    .clone();
                if open.peers.len() != self.config.shards as usize {
                    return Err(Error::Refused(format!(
                        "{} peer addresses for {} shards",
                        open.peers.len(),
                        self.config.shards
                    )));
                }
                let (shard_no, shards, limit) = (
                    self.config.shard,
                    self.config.shards,
                    self.config.memory_limit.or_else(cgroup_limit),
                );
                let code = DepthCode::for_encoding(self.encoding, space.rule());
                let shard = tokio::task::spawn_blocking(move || -> Result<Shard> {
                    let index = Arc::new(space.region_index()?);
                    let layout = ShardLayout::new(index.orders(), shards)?;
                    let size = ShardSize::of(&space, &index, layout, shard_no, code);
                    if let Some(limit) = limit {
                        let need = size.bytes() + index.memory_bytes();
                        if need > limit {
                            return Err(Error::Refused(format!(
                                "shard {shard_no} of {shards} of {} needs {} ({} of two-bit codes, {} of depth store, {} of index) but this worker may use {}",
                                space.pattern(),
                                human_bytes(need),
                                human_bytes(size.code_bytes),
                                human_bytes(size.depth_bytes),
                                human_bytes(index.memory_bytes()),
                                human_bytes(limit)
                            )));
                        }
                    }
                    let moves = Arc::new(OrderMoves::new(index.k()));
                    Ok(Shard::new(&space, index, moves, layout, shard_no, code)?)
                })
                .await
                .map_err(|e| Error::Start(e.to_string()))??;
                self.peers = Some(Arc::new(Peers::connect(
                    &open.peers,
                    self.config.shard,
                    self.config.token.as_deref(),
                    self.config.tls_ca.as_deref(),
                    self.config.tls_domain.as_deref(),
                )?));
                *self.state.open.write().expect("open table lock") = Some(OpenShard {
                    table: open.table,
                    shard: Arc::new(shard),
                    accept_depth: 1,
                });
                self.summary.tables += 1;
                Ok(StepReport::default())
            }
            Command::Expand(layer) => {
                let (shard, _) = self.open_shard(layer.table)?;
                let peers = self
                    .peers
                    .clone()
                    .ok_or_else(|| Error::Refused("no peers".into()))?;
                let pool = self.pool.clone();
                let handle = tokio::runtime::Handle::current();
                let (job_id, level) = (self.job_id.clone(), self.config.zstd_level);
                let report = tokio::task::spawn_blocking(move || {
                    send::expand_layer(
                        &shard,
                        &pool,
                        &peers,
                        &handle,
                        &job_id,
                        layer.table,
                        layer.depth,
                        level,
                    )
                })
                .await
                .map_err(|e| Error::Start(e.to_string()))??;
                self.summary.expanded += report.expanded;
                self.summary.sent_states += report.sent_states;
                self.summary.sent_bytes += report.sent_bytes;
                Ok(report)
            }
            Command::Finish(layer) => {
                let (shard, _) = self.open_shard(layer.table)?;
                let pool = self.pool.clone();
                let worker_shard = shard.clone();
                let (added, entries) = tokio::task::spawn_blocking(move || {
                    send::finish_layer(&worker_shard, &pool, layer.depth)
                })
                .await
                .map_err(|e| Error::Start(e.to_string()))?;
                if let Some(o) = self.state.open.write().expect("open table lock").as_mut() {
                    o.accept_depth = layer.depth + 2;
                }
                Ok(StepReport {
                    added,
                    entries,
                    ..StepReport::default()
                })
            }
            Command::CloseTable(table) => {
                let mut open = self.state.open.write().expect("open table lock");
                if open.as_ref().is_some_and(|o| o.table == table) {
                    *open = None;
                }
                self.peers = None;
                Ok(StepReport::default())
            }
            Command::Wait(_) | Command::Done(_) | Command::Failed(_) => Ok(StepReport::default()),
        }
    }
}
