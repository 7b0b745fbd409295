//! A local cluster: a coordinator in this process and worker processes on loopback, the
//! worker processes supervised (a job whose every worker died fails instead of waiting, and
//! workers that do not exit once the job is done are stopped).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::job::{Job, JobConfig, Phase};
use super::server::{ServeOptions, bind, serve_on};
use super::store::DataDir;
use crate::engine::SetSpec;
use crate::error::{Error, Result};
use crate::report::TableReport;

/// Most worker processes of a local cluster.
pub const MAX_LOCAL_WORKERS: usize = 256;

/// How to run a local cluster.
#[derive(Clone, Debug)]
pub struct LocalCluster {
    /// Worker processes.
    pub workers: usize,
    /// Threads over all workers (0: every core); each worker gets its share.
    pub threads: usize,
    /// The worker program and the arguments before its options (`tilepdb-worker`, or
    /// `tilepdb-coordinator worker`).
    pub worker_program: (PathBuf, Vec<String>),
    /// Where the table set is written.
    pub out: PathBuf,
    /// The job's data directory; `None`: a directory in `out`, removed when the job is done.
    pub data_dir: Option<PathBuf>,
    /// A worker silent for this long loses its leases.
    pub lease_timeout: Duration,
    /// Most ranks per task (`None`: tasks cut along the layer).
    pub task_ranks: Option<u64>,
    /// Check each table before it is written ([`JobConfig::prove`]).
    pub prove: bool,
}

impl LocalCluster {
    /// Builds `spec` with a coordinator in this process and the worker processes; the job
    /// (its counters) and the reports of the tables it built.
    pub fn run(&self, spec: SetSpec) -> Result<(Arc<Job>, Vec<TableReport>)> {
        self.run_watched(spec, |_| ())
    }

    /// [`LocalCluster::run`], calling `watch` with the job before it starts and keeping what
    /// it returns (progress bars, say) until the job has ended.
    pub fn run_watched<W>(
        &self,
        spec: SetSpec,
        watch: impl FnOnce(&Arc<Job>) -> W,
    ) -> Result<(Arc<Job>, Vec<TableReport>)> {
        if self.workers > MAX_LOCAL_WORKERS || self.threads > tilepdb_common::units::MAX_THREADS {
            return Err(Error::Serve(format!(
                "{} worker processes and {} threads: a local cluster runs at most \
                 {MAX_LOCAL_WORKERS} workers and {} threads",
                self.workers,
                self.threads,
                tilepdb_common::units::MAX_THREADS
            )));
        }
        let (data_dir, remove_data) = match &self.data_dir {
            Some(d) => (d.clone(), false),
            None => (self.out.join(format!(".job-{}", spec.job_id())), true),
        };
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let total = if self.threads == 0 {
            cores
        } else {
            self.threads
        };
        let worker_threads = (total / self.workers.max(1)).max(1);
        let mut config = JobConfig::new(spec, data_dir.clone(), self.out.clone());
        config.lease_timeout = self.lease_timeout;
        config.task_ranks = self.task_ranks;
        config.prove = self.prove;
        // A data directory of its own is removed at the end: no need to survive a crash.
        config.sync = !remove_data;
        config.threads = total;
        let job = Arc::new(Job::new(config)?);
        let data = DataDir::open(&data_dir)?;
        let watching = watch(&job);
        let token = random_token()?;
        let options = ServeOptions {
            token: Some(token.clone()),
            download_token: None,
            tls: None,
            linger: Duration::from_secs(5),
            tables: None,
            keep_serving: false,
            connection_limit: None,
        };
        let children: Arc<Mutex<Vec<Child>>> = Arc::default();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("tilepdb-grpc")
            .build()
            .map_err(|e| Error::Serve(format!("cannot start the async runtime: {e}")))?;
        let result = runtime.block_on(async {
            let (listener, addr) = bind("127.0.0.1:0".parse().expect("an address")).await?;
            tracing::info!(job = %job.id, "listening on {addr}");
            tracing::info!(
                partition = job.config.spec.partition.name(),
                workers = self.workers,
                threads_per_worker = worker_threads,
                "local cluster: starting {} worker process(es)",
                self.workers
            );
            for i in 0..self.workers {
                let child =
                    self.spawn_worker(&format!("http://{addr}"), worker_threads, &token, i)?;
                lock(&children).push(child);
            }
            // If every worker process dies before the job is done, nobody would finish it.
            let (watch_job, watch_children) = (job.clone(), children.clone());
            let watcher = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    let all_gone = lock(&watch_children)
                        .iter_mut()
                        .all(|c| matches!(c.try_wait(), Ok(Some(_))));
                    if all_gone {
                        if watch_job.phase() != Phase::Done {
                            tracing::error!("every worker process exited before the job was done");
                            watch_job.fail();
                        }
                        break;
                    }
                }
            });
            let result = serve_on(listener, job.clone(), data, options, |_| {}).await;
            watcher.abort();
            result
        });
        drop(watching);
        // Workers told that the job is done exit by themselves; when none was told (a resumed
        // job that was already done ends before any worker connects) there is nobody to wait for.
        stop_workers(
            &mut lock(&children),
            result.is_ok() && job.workers_told() > 0,
        );
        let reports = result?;
        if remove_data {
            let _ = std::fs::remove_dir_all(&data_dir);
        }
        Ok((job, reports))
    }

    fn spawn_worker(&self, url: &str, threads: usize, token: &str, i: usize) -> Result<Child> {
        worker_command(
            &self.worker_program,
            url,
            threads,
            token,
            &format!("local-{i}"),
        )
        .spawn()
        .map_err(|e| Error::Serve(format!("cannot start a worker process: {e}")))
    }
}

/// The command of a local worker process: `program` (with the arguments before its options)
/// joining the coordinator at `url` with `threads` threads, the token and the name `name`,
/// its standard output closed, its log at `warn` unless `RUST_LOG` says otherwise.
pub(crate) fn worker_command(
    program: &(PathBuf, Vec<String>),
    url: &str,
    threads: usize,
    token: &str,
    name: &str,
) -> Command {
    let mut cmd = Command::new(&program.0);
    cmd.args(&program.1)
        .arg("--coordinator")
        .arg(url)
        .arg("--threads")
        .arg(threads.to_string())
        .arg("--give-up-after")
        .arg("30")
        .arg("--name")
        .arg(name)
        .env("TILEPDB_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    cmd
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits for the workers to exit by themselves (they do once told the job is done; up to
/// 10 s when `wait`) and stops the others.
pub(crate) fn stop_workers(children: &mut [Child], wait: bool) {
    let deadline = Instant::now() + Duration::from_secs(if wait { 10 } else { 0 });
    for child in children {
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    if !status.success() && wait {
                        tracing::warn!(pid = child.id(), %status, "a worker exited with an error");
                    }
                    break;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
            }
        }
    }
}

/// A random token for the cluster's loopback connections.
pub(crate) fn random_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| Error::io("/dev/urandom", e))?;
    Ok(bytes.iter().fold(String::new(), |mut hex, b| {
        use std::fmt::Write;
        write!(hex, "{b:02x}").expect("writing to a String");
        hex
    }))
}
