//! A shard worker: owns one shard of every table of a sharded job (the orders
//! `p * k! / P .. (p + 1) * k! / P` of every block, [`tilepdb_common::shard`]).
//!
//! It serves the data plane ([`peer`]) on a port of its own, joins the coordinator's
//! `ShardControl` (`session.rs`), and then takes the job's numbered steps until the job is done:
//!
//! ```text
//! join ──► open table t ──► expand layer d ──► finish layer d ──┐ (the layer added states)
//!                ▲                ▲                             │
//!                │                └─────────────────────────────┘
//!                └── close table t ◄── (the coordinator reads the values) ◄── (it added none)
//!                         │
//!                         ▼  (two shards or more)
//!          proof open t ──► proof expand d ──► proof finish d ──► … ──► proof close t
//!                ▲                                                  │
//!                └──────── (a shard lost: the proof given again) ◄──┘
//! ```
//!
//! Then the table's file is proven on the shards (`proof.rs`): each worker proves one proof
//! shard of its team's cut, with the proof crate's prover.
//!
//! Expanding, each successor the shard owns is merged at once; the others are gathered per
//! owner and pushed to it in sorted, gap-coded, compressed lists (`send.rs`). A step is reported
//! only once every push of it has been merged by its owner, so when every shard has reported
//! an expansion, the next layer is complete on every shard.

pub mod checkpoint;
mod outbox;
pub mod peer;
mod proof;
#[cfg(test)]
mod searched;
mod send;
mod session;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use tilepdb_common::region_index::OrderMoves;
use tilepdb_common::shard::{Shard, ShardLayout, ShardSize, lists_budget, lists_bytes};
use tilepdb_common::table::{DepthCode, Encoding};
use tilepdb_common::wire::connect::Auth;
use tilepdb_common::wire::proto::shard_control_client::ShardControlClient;
use tilepdb_common::wire::proto::shard_peer_server::ShardPeerServer;
use tilepdb_common::wire::proto::step_response::Command;
use tilepdb_common::wire::proto::{LayerStep, RestoreTable, StepReport};
use tilepdb_common::wire::region_lists::RegionListShape;
use tilepdb_common::{BlankRule, StateSpace, human_bytes};
use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use crate::client::WorkerConfig;
use crate::error::{Error, Result};
use checkpoint::Checkpoints;
use peer::{OpenShard, PeerService, PeerState};
use proof::test_liar;
use send::Peers;
use session::steps;

/// How to run a shard worker.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// The coordinator, the token, the threads, the worker's name and patience, as for a
    /// task worker (its `task_delay` is not used).
    pub worker: WorkerConfig,
    /// The shard this worker owns.
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
    /// Where the shard keeps its checkpoints (`None`: none, and a replacement cannot restore
    /// it). A replacement of the shard must be given the same directory.
    pub data_dir: Option<PathBuf>,
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

/// The shape of the lists of `shard`'s states of the layer `depth` (pushed, or checkpointed).
pub fn list_shape(shard: &Shard, depth: u32) -> RegionListShape<'_> {
    let space = shard.space();
    RegionListShape::new(
        shard.index(),
        space.rule() == BlankRule::Ignored,
        space.goal_cells(),
        depth,
    )
}

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
        proof: RwLock::new(None),
    });
    let service = tonic::service::interceptor::InterceptedService::new(
        ShardPeerServer::new(PeerService::new(state.clone()))
            .max_decoding_message_size(peer::MAX_MESSAGE_BYTES),
        peer::TokenCheck::new(config.worker.coordinator.token.as_deref()),
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

/// The worker's side of the steps.
struct Work {
    config: ShardConfig,
    job_id: String,
    spaces: Vec<StateSpace>,
    encoding: Encoding,
    state: Arc<PeerState>,
    pool: Arc<rayon::ThreadPool>,
    peers: Option<Arc<Peers>>,
    /// The clients of the team's other provers while a proof is open.
    proof_peers: Option<Arc<Peers>>,
    checkpoints: Option<Checkpoints>,
    summary: ShardSummary,
    /// The expanding threads' lists to push, kept from layer to layer.
    outbox_buffers: Arc<Mutex<Vec<outbox::OutboxBuffers>>>,
}

/// Rebuilds `shard` (new, its goal marked) as it was after finishing the layer `depth - 1` of
/// table `table`: each layer's states merged from the checkpoints, each layer finished.
fn restore_shard(
    shard: &Shard,
    checkpoints: Option<&Checkpoints>,
    pool: &rayon::ThreadPool,
    table: u32,
    depth: u32,
) -> Result<()> {
    // Layer 0 is the goal alone, which the new shard holds: no checkpoint is needed for it.
    if depth == 0 {
        return Ok(());
    }
    let checkpoints = checkpoints.ok_or_else(|| {
        Error::Checkpoint("this shard has no data directory to restore the table from".into())
    })?;
    for d in 0..depth {
        checkpoints.read_layer(shard, table, d + 1, |states| {
            shard.merge_received(states, d + 1).map_err(Error::from)
        })?;
        send::finish_layer(shard, pool, d);
    }
    Ok(())
}

impl Work {
    /// The arrays of table `table`, refused (with the figures) before anything is allocated
    /// when they do not fit the worker's memory limit.
    async fn make_shard(&self, table: u32, peers: &[String]) -> Result<Shard> {
        let space = self
            .spaces
            .get(table as usize)
            .ok_or_else(|| Error::Refused(format!("the job has no table {table}")))?
            .clone();
        if peers.len() != self.config.shards as usize {
            return Err(Error::Refused(format!(
                "{} peer addresses for {} shards",
                peers.len(),
                self.config.shards
            )));
        }
        let (shard_no, shards) = (self.config.shard, self.config.shards);
        let limit = self.config.memory_limit.or_else(cgroup_limit);
        let code = DepthCode::for_encoding(self.encoding, space.rule());
        let threads = self.pool.current_num_threads();
        tokio::task::spawn_blocking(move || -> Result<Shard> {
            let index = space.region_index()?;
            let layout = ShardLayout::new(index.orders(), shards)?;
            let size = ShardSize::of(&space, &index, layout, shard_no, code);
            if let Some(limit) = limit {
                let lists = lists_bytes(
                    threads,
                    (shards as usize).saturating_sub(1),
                    lists_budget(size.bytes()),
                );
                let need = size.bytes() + index.memory_bytes() + lists;
                if need > limit {
                    return Err(Error::Refused(format!(
                        "shard {shard_no} of {shards} of {} needs {} ({} of two-bit codes, {} of depth store, {} of index, {} of lists to push) but this worker may use {}",
                        space.pattern(),
                        human_bytes(need),
                        human_bytes(size.code_bytes),
                        human_bytes(size.depth_bytes),
                        human_bytes(index.memory_bytes()),
                        human_bytes(lists),
                        human_bytes(limit)
                    )));
                }
            }
            let moves = Arc::new(OrderMoves::new(index.k()));
            Ok(Shard::new(&space, index, moves, layout, shard_no, code)?)
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))?
    }

    fn connect_peers(&mut self, peers: &[String]) -> Result<()> {
        self.peers = Some(Arc::new(Peers::connect(
            peers,
            self.config.shard,
            &self.config.worker.coordinator,
        )?));
        Ok(())
    }

    /// Makes `shard` the open table `table`, taking pushes of the layer `accept_depth`.
    fn install(
        &mut self,
        table: u32,
        shard: Shard,
        accept_depth: u32,
        peers: &[String],
    ) -> Result<()> {
        self.connect_peers(peers)?;
        *self.state.open.write().expect("open table lock") = Some(OpenShard {
            table,
            shard: Arc::new(shard),
            accept_depth,
        });
        Ok(())
    }

    /// Does one step; its report (with the error, if it failed).
    async fn step(&mut self, command: Command) -> StepReport {
        let mut report = match self.try_step(command).await {
            Ok(report) => report,
            Err(e) => StepReport {
                peer_unreachable: matches!(e, Error::PeerUnreachable(_)),
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
                // A prover left by a proof the coordinator did not close (it was restarted).
                self.let_proof_go();
                let shard = self.make_shard(open.table, &open.peers).await?;
                self.install(open.table, shard, 1, &open.peers)?;
                self.summary.tables += 1;
                Ok(StepReport::default())
            }
            Command::Restore(restore) => {
                self.let_proof_go();
                self.restore(restore).await
            }
            Command::Checkpoint(layer) => self.checkpoint(layer).await,
            Command::Expand(layer) => self.expand(layer).await,
            Command::Finish(layer) => self.finish(layer).await,
            Command::CloseTable(table) => {
                let mut open = self.state.open.write().expect("open table lock");
                if open.as_ref().is_some_and(|o| o.table == table) {
                    *open = None;
                }
                self.peers = None;
                if let Some(c) = &self.checkpoints {
                    c.remove_table(table);
                }
                Ok(StepReport::default())
            }
            Command::ProofOpen(open) => self.proof_open(open).await,
            Command::ProofExpand(layer) => self.proof_expand(layer).await,
            Command::ProofFinish(layer) => self.proof_finish(layer).await,
            Command::ProofClose(table) => self.proof_close(table).await,
            Command::Wait(_) | Command::Done(_) | Command::Failed(_) => Ok(StepReport::default()),
        }
    }

    /// `Restore`: a shard named in it rebuilds its table from its checkpoints; the others
    /// connect to the restored peers.
    async fn restore(&mut self, restore: RestoreTable) -> Result<StepReport> {
        if !restore.shards.contains(&self.config.shard) {
            self.connect_peers(&restore.peers)?;
            return Ok(StepReport::default());
        }
        let shard = self.make_shard(restore.table, &restore.peers).await?;
        let checkpoints = self.checkpoints.clone();
        let pool = self.pool.clone();
        let (table, depth) = (restore.table, restore.depth);
        let shard = tokio::task::spawn_blocking(move || -> Result<Shard> {
            restore_shard(&shard, checkpoints.as_ref(), &pool, table, depth)?;
            Ok(shard)
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))??;
        self.install(restore.table, shard, restore.depth + 1, &restore.peers)?;
        tracing::info!(
            table = restore.table,
            depth = restore.depth,
            "shard restored from its checkpoints"
        );
        Ok(StepReport::default())
    }

    /// `Checkpoint`: the next layer's states written to the data directory, if it has one.
    async fn checkpoint(&mut self, layer: LayerStep) -> Result<StepReport> {
        let Some(checkpoints) = self.checkpoints.clone() else {
            return Ok(StepReport::default());
        };
        let (shard, _) = self.open_shard(layer.table)?;
        let pool = self.pool.clone();
        let level = self.config.worker.zstd_level;
        let bytes = tokio::task::spawn_blocking(move || {
            let ranges = send::set_ranges(&shard, pool.current_num_threads() as u64 * 2);
            checkpoints.write_layer(&shard, &pool, &ranges, layer.table, layer.depth + 1, level)
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))??;
        Ok(StepReport {
            checkpoint_bytes: bytes,
            ..StepReport::default()
        })
    }

    /// `Expand`: the shard's states of the layer expanded, successors sent to their owners.
    async fn expand(&mut self, layer: LayerStep) -> Result<StepReport> {
        let (shard, _) = self.open_shard(layer.table)?;
        let peers = self
            .peers
            .clone()
            .ok_or_else(|| Error::Refused("no peers".into()))?;
        let pool = self.pool.clone();
        let handle = tokio::runtime::Handle::current();
        let (job_id, level) = (self.job_id.clone(), self.config.worker.zstd_level);
        let buffers = self.outbox_buffers.clone();
        let report = tokio::task::spawn_blocking(move || {
            send::expand_layer(
                &shard,
                &pool,
                &peers,
                &handle,
                &job_id,
                (layer.table, layer.depth),
                level,
                &buffers,
            )
        })
        .await
        .map_err(|e| Error::Start(e.to_string()))??;
        self.summary.expanded += report.expanded;
        self.summary.sent_states += report.sent_states;
        self.summary.sent_bytes += report.sent_bytes;
        Ok(report)
    }

    /// `Finish`: the next layer's depths recorded, the current layer retired, counted.
    async fn finish(&mut self, layer: LayerStep) -> Result<StepReport> {
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
}
