//! Serving a job: bind, run the driver on its own thread, answer workers until the job is
//! done and every worker has heard so, then stop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tilepdb_common::wire::proto::coordinator_server::CoordinatorServer;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use super::job::{Job, Phase};
use super::service::{CoordinatorService, check_token};
use super::store::DataDir;
use crate::error::{Error, Result};
use crate::report::TableReport;

/// Certificates for TLS.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The coordinator's certificate chain and key (PEM).
    pub cert: PathBuf,
    pub key: PathBuf,
    /// If given, workers must present a certificate signed by this CA (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

/// How to serve.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The shared token; `None` lets anyone in.
    pub token: Option<String>,
    pub tls: Option<TlsFiles>,
    /// Longest wait, once the job is done, for workers to hear so.
    pub linger: Duration,
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

/// Serves `job` on `listener` until it is done; the reports of the tables it built.
pub async fn serve_on(
    listener: TcpListener,
    job: Arc<Job>,
    data: DataDir,
    options: ServeOptions,
) -> Result<Vec<TableReport>> {
    let mut builder = Server::builder()
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
    let service = CoordinatorServer::with_interceptor(
        CoordinatorService { job: job.clone() },
        check_token(options.token.as_deref().map(Arc::from)),
    );

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
        if result.is_ok() {
            // Let the workers hear that the job is done (they ask for tasks or heartbeat).
            let until = Instant::now() + linger;
            while Instant::now() < until && !shutdown_job.all_workers_told() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let _ = result_tx.send(result);
    };
    builder
        .add_service(service)
        .serve_with_incoming_shutdown(
            // Small messages must not wait for the peer's delayed ACK (Nagle's algorithm).
            TcpIncoming::from(listener)
                .with_nodelay(Some(true))
                .with_keepalive(Some(Duration::from_secs(30))),
            shutdown,
        )
        .await
        .map_err(|e| Error::Serve(e.to_string()))?;
    let result = result_rx
        .await
        .unwrap_or_else(|_| Err(Error::Serve("stopped before the job was done".into())));
    debug_assert!(result.is_err() || job.phase() == Phase::Done);
    result
}
