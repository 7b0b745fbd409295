//! The coordinator's HTTP port: the live dashboard (`/`), Prometheus metrics (`/metrics`),
//! the snapshot they are drawn from as JSON (`/api/status`) and a liveness probe
//! (`/healthz`: `200 ok`).
//!
//! Its connections count against the coordinator's [`ConnectionLimit`] and are timed out
//! like the gRPC port's; a request's headers must arrive within [`HEADER_READ_TIMEOUT`].
//!
//! A sampler reads the job's status four times a second into a [`Tracker`], so that the
//! states of each layer are seen as they grow; each request takes a fresh sample too. The
//! port takes no token: it shows progress, never tables or the job's data (put it behind a
//! network policy where even that is private).

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tilepdb_common::table::Header;
use tilepdb_common::table::header::HEADER_LEN;
use tilepdb_common::wire::proto::JobStatusResponse;
use tokio::net::TcpListener;

use super::metrics;
use super::progress::{Snapshot, Tracker};
use crate::cluster::Job;
use crate::cluster::progress::JobProgress;
use crate::connections::ConnectionLimit;
use crate::error::{Error, Result};
use crate::output::table_file_name;

/// The dashboard page: plain HTML and JavaScript, no build step.
const DASHBOARD: &str = include_str!("dashboard.html");

/// What the HTTP port shows of a job: a [`Job`] of the coordinator-held build, or a sharded
/// job's status ([`crate::cluster::sharded::ShardedStatus`]).
pub trait Observed: Send + Sync {
    /// The job's progress now (observers read it as the status message, as they read a
    /// remote job's: [`crate::cluster::wire`]).
    fn status(&self) -> JobProgress;

    /// Where table `index`'s file is once written (`None`: no such table).
    fn table_file(&self, index: usize) -> Option<PathBuf>;

    /// The job's progress is drawn on a terminal ([`crate::observe::bars::watch`]): its
    /// driver logs layers and tables at debug level from now on.
    fn progress_drawn(&self) {}
}

impl Observed for Job {
    fn status(&self) -> JobProgress {
        Job::status(self)
    }

    fn progress_drawn(&self) {
        self.set_progress_drawn();
    }

    fn table_file(&self, index: usize) -> Option<PathBuf> {
        let c = &self.config;
        let space = self.spaces.get(index)?;
        Some(c.spec.dir(&c.out).join(table_file_name(space)))
    }
}

/// A job watched: its status folded into snapshots.
pub struct Observer {
    job: Arc<dyn Observed>,
    tracker: Mutex<Tracker>,
}

impl Observer {
    /// An observer of `job`.
    pub fn new(job: Arc<dyn Observed>) -> Observer {
        Observer {
            job,
            tracker: Mutex::new(Tracker::default()),
        }
    }

    /// A fresh snapshot of the job (reading the histogram of each table newly written).
    pub fn snapshot(&self) -> Snapshot {
        let status = JobStatusResponse::from(self.job.status());
        let mut tracker = self
            .tracker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let written = if status.done {
            status.tables as usize
        } else {
            status.tables_written as usize
        };
        for index in 0..written {
            if !tracker.has_histogram(index)
                && let Some(h) = self.written_histogram(index)
            {
                tracker.set_histogram(index, h);
            }
        }
        tracker.update(&status)
    }

    /// The histogram in the header of table `index`'s file, once written.
    fn written_histogram(&self, index: usize) -> Option<Vec<u64>> {
        let path = self.job.table_file(index)?;
        let mut bytes = vec![0u8; HEADER_LEN];
        std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut bytes))
            .ok()?;
        Header::parse(&bytes).ok().map(|h| h.histogram)
    }
}

/// Binds `listen` for the HTTP port (port 0 picks one); the listener and its address.
pub async fn bind(listen: SocketAddr) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| Error::Serve(format!("cannot listen on {listen} for HTTP: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Serve(format!("no local address: {e}")))?;
    Ok((listener, addr))
}

/// The routes of the HTTP port.
pub fn router(observer: Arc<Observer>) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route("/metrics", get(metrics_text))
        .route("/api/status", get(status_json))
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .with_state(observer)
}

/// How long a request's headers may take to arrive.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the dashboard and metrics of `job` on `listener` until the process ends, sampling
/// its status meanwhile; its connections within `connections`.
pub async fn serve(
    listener: TcpListener,
    job: Arc<dyn Observed>,
    connections: ConnectionLimit,
) -> Result<()> {
    let observer = Arc::new(Observer::new(job));
    let sampler = observer.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            let s = sampler.clone();
            // The status takes the job's lock: off the async threads.
            if tokio::task::spawn_blocking(move || s.snapshot())
                .await
                .is_err()
            {
                break;
            }
        }
    });
    let router = router(observer);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(64 << 10);
    loop {
        let (connection, _peer) = connections.accept(&listener).await;
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let serving = http.serve_connection(hyper_util::rt::TokioIo::new(connection), service);
        tokio::spawn(async move {
            if let Err(e) = serving.await {
                tracing::debug!("HTTP connection: {e}");
            }
        });
    }
}

async fn healthz() -> Response {
    ([(header::CACHE_CONTROL, "no-store")], "ok\n").into_response()
}

async fn dashboard() -> Response {
    ([(header::CACHE_CONTROL, "no-store")], Html(DASHBOARD)).into_response()
}

async fn metrics_text(State(observer): State<Arc<Observer>>) -> Response {
    match tokio::task::spawn_blocking(move || metrics::render(&observer.snapshot())).await {
        Ok(text) => ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn status_json(State(observer): State<Arc<Observer>>) -> Response {
    match tokio::task::spawn_blocking(move || observer.snapshot()).await {
        Ok(snapshot) => {
            ([(header::CACHE_CONTROL, "no-store")], axum::Json(snapshot)).into_response()
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "not found: this port serves / (the dashboard), /metrics, /api/status and /healthz\n",
    )
        .into_response()
}
