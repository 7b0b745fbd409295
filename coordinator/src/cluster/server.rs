//! Serving: bind; run a job's driver on its own thread and answer workers until the job is
//! done and every worker has heard so; serve finished table sets to solvers alongside, and on
//! after the job if asked, until the process is told to stop (Ctrl-C, SIGTERM).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tilepdb_common::wire::proto::coordinator_server::CoordinatorServer;
use tilepdb_common::wire::proto::tables_server::{Tables, TablesServer};
use tilepdb_common::wire::proto::{DownloadRequest, ListSetsRequest, ListSetsResponse};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status};

use super::job::{Job, Phase};
use super::service::{CoordinatorService, TokenCheck, check_token};
use super::store::DataDir;
use super::tables::TableService;
use crate::connections::{Connection, ConnectionLimit};
use crate::error::{Error, Result};
use crate::report::TableReport;

/// Certificates for TLS.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The coordinator's certificate chain and key (PEM).
    pub cert: PathBuf,
    /// The key of the certificate (PEM).
    pub key: PathBuf,
    /// If given, workers must present a certificate signed by this CA (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

/// How to serve.
///
/// Two roles: workers present `token` (it opens the job's service and the table downloads);
/// solvers present `download_token` (it opens only the table downloads: it can neither take
/// nor deliver tasks, nor see the job's status).
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The workers' token; `None` lets anyone in.
    pub token: Option<String>,
    /// The token of downloads only; `None`: downloads need the workers' token.
    pub download_token: Option<String>,
    /// TLS, if the coordinator serves it.
    pub tls: Option<TlsFiles>,
    /// Longest wait, once the job is done, for workers to hear so.
    pub linger: Duration,
    /// The table sets to serve to solvers (`None`: no table service).
    pub tables: Option<TableService>,
    /// Once the job is done, go on serving the table sets until stopped.
    pub keep_serving: bool,
    /// The connections of both ports (`None`: [`ConnectionLimit::for_this_process`]).
    pub connection_limit: Option<ConnectionLimit>,
}

impl ServeOptions {
    /// The connection limit of the ports served.
    pub fn connections(&self) -> ConnectionLimit {
        self.connection_limit
            .clone()
            .unwrap_or_else(ConnectionLimit::for_this_process)
    }
}

/// Binds `listen` (port 0 picks a free port); the listener and the address it got.
pub async fn bind(listen: SocketAddr) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| Error::Serve(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Serve(format!("no local address: {e}")))?;
    Ok((listener, addr))
}

/// Most downloads served at once (each reads its file a chunk at a time on a blocking
/// thread; the build's own blocking work must never wait behind them). A download whose
/// client takes no chunk for [`super::tables::SEND_DEADLINE`] is dropped, freeing its slot.
pub const MAX_DOWNLOADS: usize = 32;
/// Most downloads open at once on one connection.
pub const MAX_DOWNLOADS_PER_CONNECTION: usize = 8;
/// Most downloads open at once from one address (over all its connections).
pub const MAX_DOWNLOADS_PER_ADDRESS: usize = 24;

/// Most concurrent streams of one connection.
const MAX_STREAMS_PER_CONNECTION: u32 = 64;

/// A server with the options' TLS and keepalive settings.
fn server(options: &ServeOptions) -> Result<Server> {
    let mut builder = Server::builder()
        .max_concurrent_streams(Some(MAX_STREAMS_PER_CONNECTION))
        .http2_keepalive_interval(Some(Duration::from_secs(10)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .tcp_nodelay(true);
    if let Some(tls) = &options.tls {
        let read = |p: &PathBuf| std::fs::read(p).map_err(|e| Error::io(p, e));
        let mut config =
            ServerTlsConfig::new().identity(Identity::from_pem(read(&tls.cert)?, read(&tls.key)?));
        if let Some(ca) = &tls.client_ca {
            config = config.client_ca_root(Certificate::from_pem(read(ca)?));
        }
        builder = builder
            .tls_config(config)
            .map_err(|e| Error::Serve(format!("TLS: {e}")))?;
    }
    Ok(builder)
}

/// The incoming connections of `listener`, within `options.connections` (counted, timed out
/// when silent or idle; see [`crate::connections`]); small messages must not wait for the
/// peer's delayed ACK (Nagle's algorithm).
fn incoming(
    listener: TcpListener,
    options: &ServeOptions,
) -> impl tokio_stream::Stream<Item = std::io::Result<Connection>> + Send + 'static {
    options.connections().incoming(listener)
}

/// The table service with at most [`MAX_DOWNLOADS`] downloads served at once,
/// [`MAX_DOWNLOADS_PER_CONNECTION`] open on one connection and [`MAX_DOWNLOADS_PER_ADDRESS`]
/// from one address: one more is refused with `RESOURCE_EXHAUSTED` (the client tries again
/// later). A stream counts against its connection and address until it is closed, even once
/// dropped for its slowness (it may still hold chunks in its buffers).
#[derive(Clone)]
pub struct BoundedTables {
    tables: TableService,
    downloads: Arc<Semaphore>,
    open: Arc<Mutex<OpenDownloads>>,
}

#[derive(Default)]
struct OpenDownloads {
    per_connection: HashMap<Option<SocketAddr>, usize>,
    per_address: HashMap<Option<IpAddr>, usize>,
}

fn count_down<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = map.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            map.remove(key);
        }
    }
}

/// One open download, counted until its stream is dropped.
struct OpenDownload {
    open: Arc<Mutex<OpenDownloads>>,
    client: Option<SocketAddr>,
}

impl Drop for OpenDownload {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        count_down(&mut open.per_connection, &self.client);
        count_down(&mut open.per_address, &self.client.map(|c| c.ip()));
    }
}

impl BoundedTables {
    /// `tables`, with at most `downloads` downloads served at once.
    pub fn new(tables: TableService, downloads: usize) -> BoundedTables {
        BoundedTables {
            tables,
            downloads: Arc::new(Semaphore::new(downloads)),
            open: Arc::default(),
        }
    }

    /// Counts a download of the connection from `client`, unless it or its address has as
    /// many open as it may.
    fn open(&self, client: Option<SocketAddr>) -> Result<OpenDownload, Status> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let address = client.map(|c| c.ip());
        if open.per_connection.get(&client).copied().unwrap_or(0) >= MAX_DOWNLOADS_PER_CONNECTION {
            return Err(Status::resource_exhausted(format!(
                "this connection has {MAX_DOWNLOADS_PER_CONNECTION} downloads open, as many as \
                 one may; try again when one is done"
            )));
        }
        if open.per_address.get(&address).copied().unwrap_or(0) >= MAX_DOWNLOADS_PER_ADDRESS {
            return Err(Status::resource_exhausted(format!(
                "this address has {MAX_DOWNLOADS_PER_ADDRESS} downloads open, as many as one \
                 client may; try again when one is done"
            )));
        }
        *open.per_connection.entry(client).or_default() += 1;
        *open.per_address.entry(address).or_default() += 1;
        Ok(OpenDownload {
            open: self.open.clone(),
            client,
        })
    }
}

#[tonic::async_trait]
impl Tables for BoundedTables {
    async fn list_sets(
        &self,
        request: Request<ListSetsRequest>,
    ) -> Result<Response<ListSetsResponse>, Status> {
        self.tables.list_sets(request).await
    }

    type DownloadStream = <TableService as Tables>::DownloadStream;

    async fn download(
        &self,
        request: Request<DownloadRequest>,
    ) -> Result<Response<Self::DownloadStream>, Status> {
        let counted = self.open(request.remote_addr())?;
        let Ok(slot) = self.downloads.clone().try_acquire_owned() else {
            return Err(Status::resource_exhausted(
                "as many downloads are running as this coordinator serves at once; try again shortly",
            ));
        };
        let stream = self
            .tables
            .download_holding(request.into_inner(), Some(slot))?
            .into_inner();
        // Counted until the stream goes (finished, dropped, or the client went away).
        let stream = stream.map(move |chunk| {
            let _counted = &counted;
            chunk
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

fn table_service(
    options: &ServeOptions,
) -> Option<InterceptedService<TablesServer<BoundedTables>, TokenCheck>> {
    let tokens = [&options.token, &options.download_token]
        .into_iter()
        .flatten()
        .map(|t| Arc::from(t.as_str()))
        .collect();
    options.tables.clone().map(|t| {
        TablesServer::with_interceptor(BoundedTables::new(t, MAX_DOWNLOADS), check_token(tokens))
    })
}

/// Resolves when the process is told to stop: Ctrl-C (SIGINT) or SIGTERM. SIGTERM is caught
/// from the call on (not from the first poll), so a SIGTERM between the call and the wait
/// stops the server cleanly rather than killing the process.
pub fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        #[cfg(unix)]
        let term = async move {
            match term {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
    }
}

/// Serves the table sets of `options.tables` on `listener` until the process is told to
/// stop (no job).
pub async fn serve_tables(listener: TcpListener, options: ServeOptions) -> Result<()> {
    let Some(tables) = table_service(&options) else {
        return Err(Error::Serve("no table directory to serve".into()));
    };
    let (_health, health) = crate::observe::health::service(false, true).await;
    server(&options)?
        .add_service(health)
        .add_service(tables)
        .serve_with_incoming_shutdown(incoming(listener, &options), stop_signal())
        .await
        .map_err(|e| Error::Serve(e.to_string()))
}

/// Serves `job` on `listener` until it is done; the reports of the tables it built.
///
/// `on_done` is called with the job's result as soon as it is known; with
/// `options.keep_serving`, serving the table sets then goes on until the process is told to
/// stop (and this returns after that).
pub async fn serve_on(
    listener: TcpListener,
    job: Arc<Job>,
    data: DataDir,
    options: ServeOptions,
    on_done: impl FnOnce(&Result<Vec<TableReport>>) + Send + 'static,
) -> Result<Vec<TableReport>> {
    let mut builder = server(&options)?;
    let service = CoordinatorServer::with_interceptor(
        CoordinatorService::new(job.clone()),
        check_token(
            options
                .token
                .iter()
                .map(|t| Arc::from(t.as_str()))
                .collect(),
        ),
    );
    let tables = table_service(&options);
    let keep_serving = options.keep_serving && tables.is_some();

    // The driver runs the layers on a thread of its own.
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let driver_job = job.clone();
    std::thread::Builder::new()
        .name("tilepdb-driver".into())
        .spawn(move || {
            let result = driver_job.drive(&data);
            if result.is_err() {
                driver_job.fail();
            }
            drop(data);
            let _ = done_tx.send(result);
        })
        .map_err(|e| Error::Serve(format!("cannot start the driver: {e}")))?;

    let (result_tx, result_rx) = tokio::sync::oneshot::channel();
    let linger = options.linger;
    let shutdown_job = job.clone();
    let shutdown = async move {
        let result = done_rx
            .await
            .unwrap_or_else(|_| Err(Error::Serve("the driver thread died".into())));
        // Listening for the stop from the moment the job is done: a SIGTERM while the workers
        // hear of it stops the server cleanly instead of killing it.
        let stop = (keep_serving && result.is_ok()).then(|| Box::pin(stop_signal()));
        if result.is_ok() {
            // Let the workers hear that the job is done (they ask for tasks or heartbeat).
            let until = Instant::now() + linger;
            while Instant::now() < until && !shutdown_job.all_workers_told() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        on_done(&result);
        let _ = result_tx.send(result);
        if let Some(stop) = stop {
            tracing::info!("the job is done; serving the table sets until stopped (Ctrl-C)");
            stop.await;
        }
    };
    let (_health, health) = crate::observe::health::service(true, tables.is_some()).await;
    builder
        .add_service(health)
        .add_service(service)
        .add_optional_service(tables)
        .serve_with_incoming_shutdown(incoming(listener, &options), shutdown)
        .await
        .map_err(|e| Error::Serve(e.to_string()))?;
    let result = result_rx
        .await
        .unwrap_or_else(|_| Err(Error::Serve("stopped before the job was done".into())));
    debug_assert!(result.is_err() || job.phase() == Phase::Done);
    result
}
