//! The control plane served: a `ShardControl` gRPC server on its own runtime (with the job's
//! `JobStatus` and, if asked, its dashboard and metrics on an HTTP port), and the set built
//! with the shards that join it (`serve --shards`, and under [`super::local`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tilepdb_common::wire::proto::coordinator_server::CoordinatorServer;
use tilepdb_common::wire::proto::shard_control_server::ShardControlServer;

use super::builder::{ShardedBuilder, ShardedTableFigures};
use super::control::Control;
use super::service::{ProvenFile, ShardControlService, ShardedCoordinatorService};
use super::status::ShardedStatus;
use crate::cluster::server::bind;
use crate::cluster::service::check_token;
use crate::connections::ConnectionLimit;
use crate::engine::{BuiltSet, Reuse, SetSpec, build_set};
use crate::error::{Error, Result};
use crate::observe::http::Observed;
use crate::report::TableReport;

/// How often shards heartbeat while they work on a step.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// What a sharded build gave.
pub struct ShardedRun {
    /// The set on disk.
    pub set: BuiltSet,
    /// Each table's report.
    pub reports: Vec<TableReport>,
    /// What the build measured of each table it built (by table).
    pub figures: Vec<ShardedTableFigures>,
}

/// How a sharded set is built once its shards have joined.
#[derive(Clone, Debug)]
pub struct ShardedBuild {
    /// Where the table set is written.
    pub out: std::path::PathBuf,
    /// Which tables already in the set's directory are used.
    pub reuse: Reuse,
    /// Prove each table before it is written.
    pub prove: bool,
    /// How long to wait for every shard to join, and for a lost shard's replacement.
    pub join_timeout: Duration,
    /// Where the progress of the table being built is recorded, for a coordinator started
    /// again on the same job (`None`: nowhere; a restarted coordinator starts over).
    pub progress_file: Option<std::path::PathBuf>,
}

/// A running control plane.
pub struct ShardedServer {
    runtime: tokio::runtime::Runtime,
    control: Arc<Control>,
    status: Arc<ShardedStatus>,
    addr: SocketAddr,
    token: Option<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<std::result::Result<(), tonic::transport::Error>>>,
    /// The table file the shards prove, read through `ReadEntries`.
    proven: Arc<ProvenFile>,
}

impl ShardedServer {
    /// Serves the control plane of `spec` on `shards` shards at `listen` (port 0: any free
    /// port); calls must carry `token` if given; a shard silent for `silence` fails the job.
    /// Refuses a set with a table of fewer orders than shards.
    pub fn start(
        spec: &SetSpec,
        shards: u32,
        listen: SocketAddr,
        token: Option<String>,
        silence: Duration,
    ) -> Result<ShardedServer> {
        if shards == 0 || shards > tilepdb_common::shard::MAX_SHARDS {
            return Err(Error::Shards(format!(
                "{shards} shards: a sharded build runs on 1 to {} shards",
                tilepdb_common::shard::MAX_SHARDS
            )));
        }
        for space in spec.spaces()? {
            let orders = tilepdb_common::region_index::factorial(space.k());
            tilepdb_common::shard::ShardLayout::new(orders, shards)
                .map_err(|e| Error::Shards(format!("table {}: {e}", space.pattern())))?;
        }
        let control = Arc::new(Control::new(spec.job_id(), shards, silence));
        let status = Arc::new(ShardedStatus::new(
            control.clone(),
            spec.clone(),
            spec.spaces()?,
        ));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("tilepdb-grpc")
            .build()
            .map_err(|e| Error::Serve(format!("cannot start the async runtime: {e}")))?;
        let (listener, addr) = runtime.block_on(bind(listen))?;
        let proven = Arc::new(ProvenFile::default());
        let service = ShardControlService::new(control.clone(), spec, HEARTBEAT, proven.clone());
        let tokens: Vec<Arc<str>> = token.iter().map(|t| Arc::from(t.as_str())).collect();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = runtime.spawn(
            tonic::transport::Server::builder()
                .tcp_nodelay(true)
                .add_service(ShardControlServer::with_interceptor(
                    service,
                    check_token(tokens.clone()),
                ))
                .add_service(CoordinatorServer::with_interceptor(
                    ShardedCoordinatorService::new(status.clone()),
                    check_token(tokens),
                ))
                .serve_with_incoming_shutdown(
                    tokio_stream::wrappers::TcpListenerStream::new(listener),
                    async {
                        let _ = stop_rx.await;
                    },
                ),
        );
        tracing::info!(job = %control.job_id, shards, "sharded build: control plane on {addr}");
        Ok(ShardedServer {
            runtime,
            control,
            status,
            addr,
            token,
            stop: Some(stop_tx),
            server: Some(server),
            proven,
        })
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The job's control plane.
    pub fn control(&self) -> &Arc<Control> {
        &self.control
    }

    /// The job's status.
    pub fn status(&self) -> &Arc<ShardedStatus> {
        &self.status
    }

    /// Serves the job's dashboard, metrics and status as JSON on `listen` (port 0: any free
    /// port), its connections within `connections`, until the server stops; the address.
    pub fn serve_http(
        &self,
        listen: SocketAddr,
        connections: ConnectionLimit,
    ) -> Result<SocketAddr> {
        let (listener, addr) = self.runtime.block_on(crate::observe::http::bind(listen))?;
        let observed: Arc<dyn Observed> = self.status.clone();
        self.runtime.spawn(async move {
            if let Err(e) = crate::observe::http::serve(listener, observed, connections).await {
                tracing::error!("the dashboard and metrics stopped: {e}");
            }
        });
        tracing::info!("dashboard and metrics on http://{addr}");
        Ok(addr)
    }

    /// Waits for every shard to join, builds `spec` with them and ends the job (done, or
    /// failed with the error).
    pub fn build(&self, spec: &SetSpec, how: &ShardedBuild) -> Result<ShardedRun> {
        let result = (|| -> Result<ShardedRun> {
            self.status.set_dir(spec.dir(&how.out));
            let peers = self.control.wait_members(how.join_timeout)?;
            let mut builder = ShardedBuilder::new(
                self.control.clone(),
                peers,
                spec.encoding,
                self.token.clone(),
                self.runtime.handle().clone(),
                how,
                self.status.clone(),
            )
            .proving_through(self.proven.clone());
            let set = build_set(spec, &how.out, how.reuse, &mut builder)?;
            Ok(ShardedRun {
                set,
                reports: std::mem::take(&mut builder.reports),
                figures: std::mem::take(&mut builder.figures),
            })
        })();
        match &result {
            Ok(_) => self.control.finish(),
            Err(e) => self.control.fail(&e.to_string()),
        }
        result
    }

    /// Waits up to `linger` for every shard to hear that the job ended, then stops serving;
    /// whether they all heard.
    pub fn stop(mut self, linger: Duration) -> bool {
        let told = self.control.wait_told(linger);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = self.runtime.block_on(server);
        }
        told
    }
}
