//! `tilepdb-coordinator serve`: a distributed build, served to worker processes over gRPC,
//! with the finished table sets served to solvers (during the job, after it with
//! `--keep-serving`, or without a job with `--no-build`); and `build --workers N`: the same
//! build with N local worker processes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use tilepdb_coordinator::dist::job::Phase;
use tilepdb_coordinator::dist::store::DataDir;
use tilepdb_coordinator::dist::{
    Job, JobConfig, ServeOptions, TableService, TlsFiles, bind, serve_on, serve_tables,
};
use tilepdb_coordinator::report::{TableReport, peak_rss_bytes};
use tilepdb_worker::cli::read_token;

use super::job::JobArgs;

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    job: JobArgs,
    /// The job's data directory: the state array and depth bytes of the table being built
    /// (memory-mapped files) and the manifest of the last completed layer. A coordinator
    /// started again on the same directory resumes where the last one stopped.
    #[arg(long, value_name = "DIR", required_unless_present = "no_build")]
    data_dir: Option<PathBuf>,
    /// Where to write the table set (a directory per set is made inside); the sets in it are
    /// also served to `tilepdb-solve fetch`.
    #[arg(long, default_value = "tables")]
    out: PathBuf,
    /// Once the job is done, go on serving the table sets in --out to `tilepdb-solve fetch`
    /// until stopped (Ctrl-C or SIGTERM).
    #[arg(long)]
    keep_serving: bool,
    /// Build nothing: serve the table sets already in --out (each directory with a
    /// manifest.json, or --out itself if it is one) until stopped.
    #[arg(long, conflicts_with_all = ["data_dir", "keep_serving"])]
    no_build: bool,
    /// Most bytes per second of each table download, e.g. 50M (default: no limit).
    #[arg(long, value_name = "BYTES", value_parser = super::build::parse_bytes)]
    download_limit: Option<u64>,
    /// Address to listen on; port 0 picks a free port. The first log line says which.
    #[arg(long, default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// Also serve the live dashboard (/), Prometheus metrics (/metrics) and their JSON
    /// (/api/status) over HTTP on this address (port 0 picks one; a log line says which).
    #[arg(long, value_name = "ADDR", conflicts_with = "no_build")]
    http_listen: Option<SocketAddr>,
    /// Seconds without a heartbeat after which a worker's task is handed out again.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    lease_timeout: f64,
    /// A file holding the shared token that workers must present (default: the
    /// TILEPDB_TOKEN environment variable).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Let any client in without a token (only on a network you trust).
    #[arg(long, conflicts_with = "token_file")]
    no_token: bool,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require workers to present a certificate signed by this CA (mutual TLS).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// Most ranks (placements) per task (default: a block of the rank, the placements with
    /// the pattern's first tile on one cell, or less to make at least 16 tasks a layer).
    #[arg(long, value_name = "N")]
    task_ranks: Option<u64>,
    /// Threads of the coordinator's own passes over the arrays (default: every core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Seconds to wait, once the job is done, for every worker to hear so before exiting.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    linger: f64,
    /// Do not wait for the disk after each layer: the job still survives a killed
    /// coordinator, but not a crashed machine (faster for small tables).
    #[arg(long)]
    no_sync: bool,
    /// Print the summary as JSON on standard output.
    #[arg(long)]
    json: bool,
}

/// What a distributed build did.
#[derive(Serialize)]
pub struct DistSummary {
    pub job_id: String,
    pub partition: String,
    pub set_dir: PathBuf,
    pub workers: Option<usize>,
    pub total_seconds: f64,
    pub states_expanded: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
    /// Bytes on the wire (both ways) per state expanded.
    pub bytes_per_state: f64,
    pub results_accepted: u64,
    pub results_dropped: u64,
    pub leases_expired: u64,
    pub coordinator_peak_rss_bytes: Option<u64>,
    pub tables: Vec<TableReport>,
}

fn seconds(s: f64, what: &str) -> anyhow::Result<Duration> {
    if !(s > 0.0 && s < 1e7) {
        bail!("{what} must be a positive number of seconds, not {s}");
    }
    Ok(Duration::from_secs_f64(s))
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tilepdb-grpc")
        .build()
        .context("cannot start the async runtime")
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let token = read_token(args.token_file.as_deref())?;
    if token.is_none() && !args.no_token {
        bail!(
            "no token: give --token-file FILE or set TILEPDB_TOKEN (workers and solvers present \
             the same), or pass --no-token to let any client in"
        );
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.tls_client_ca.clone(),
        }),
        _ => None,
    };
    let options = ServeOptions {
        token,
        tls,
        linger: seconds(args.linger, "--linger")?,
        tables: Some(TableService::new(&args.out, args.download_limit)),
        keep_serving: args.keep_serving,
    };
    let Some(data_dir) = args.data_dir.clone() else {
        return serve_existing(&args, options);
    };
    let partition = args.job.partition()?;
    let config = JobConfig {
        spec: args.job.spec()?,
        data_dir: data_dir.clone(),
        out: args.out.clone(),
        lease_timeout: seconds(args.lease_timeout, "--lease-timeout")?,
        task_ranks: args.task_ranks,
        tasks_per_layer: 16,
        sync: !args.no_sync,
        threads: args.threads,
        zstd_level: 1,
    };
    let job = Arc::new(Job::new(config)?);
    let data = DataDir::open(&data_dir)?;
    let started = Instant::now();
    let json = args.json;
    let done_job = job.clone();
    runtime()?.block_on(async {
        let (listener, addr) = bind(args.listen).await?;
        tracing::info!(job = %job.id, "listening on {addr}");
        if let Some(listen) = args.http_listen {
            let (http, http_addr) = tilepdb_coordinator::observe::http::bind(listen).await?;
            tracing::info!("dashboard and metrics on http://{http_addr}");
            let observed = job.clone();
            tokio::spawn(async move {
                if let Err(e) = tilepdb_coordinator::observe::http::serve(http, observed).await {
                    tracing::error!("the dashboard and metrics stopped: {e}");
                }
            });
        }
        tracing::info!(
            partition = partition.name(),
            tables = job.spaces.len(),
            data_dir = %data_dir.display(),
            "serving job {}",
            job.id
        );
        // The summary is printed as soon as the job is done, even if serving goes on.
        let on_done = move |result: &Result<Vec<TableReport>, _>| {
            if let Ok(reports) = result {
                let summary = summary(&done_job, None, started, reports.clone());
                if let Err(e) = print_summary(&summary, json) {
                    tracing::error!("cannot print the summary: {e}");
                }
            }
        };
        serve_on(listener, job.clone(), data, options, on_done).await
    })?;
    Ok(())
}

/// `serve --no-build`: the table sets in --out, until stopped.
fn serve_existing(args: &ServeArgs, options: ServeOptions) -> anyhow::Result<()> {
    if !args.out.is_dir() {
        bail!("{}: no such directory of table sets", args.out.display());
    }
    let tables = options.tables.clone().expect("a table service");
    runtime()?.block_on(async {
        let (listener, addr) = bind(args.listen).await?;
        tracing::info!("listening on {addr}");
        let sets = tables.sets();
        if sets.is_empty() {
            tracing::warn!(
                "no table set in {} yet (a set is a directory with a manifest.json); \
                 sets that appear there are served as they come",
                args.out.display()
            );
        }
        for set in &sets {
            tracing::info!(
                files = set.manifest.tables.len(),
                "serving table set {} ({})",
                set.name,
                set.dir.display()
            );
        }
        serve_tables(listener, options).await
    })?;
    Ok(())
}

fn summary(
    job: &Job,
    workers: Option<usize>,
    started: Instant,
    tables: Vec<TableReport>,
) -> DistSummary {
    let c = &job.counters;
    let expanded = c.expanded.load(Relaxed);
    let (received, sent) = (c.bytes_received.load(Relaxed), c.bytes_sent.load(Relaxed));
    DistSummary {
        job_id: job.id.clone(),
        partition: job.config.spec.partition.name().to_string(),
        set_dir: job.config.spec.dir(&job.config.out),
        workers,
        total_seconds: started.elapsed().as_secs_f64(),
        states_expanded: expanded,
        bytes_received: received,
        bytes_sent: sent,
        bytes_per_state: if expanded > 0 {
            (received + sent) as f64 / expanded as f64
        } else {
            0.0
        },
        results_accepted: c.results_accepted.load(Relaxed),
        results_dropped: c.results_dropped.load(Relaxed),
        leases_expired: c.releases.load(Relaxed),
        coordinator_peak_rss_bytes: peak_rss_bytes(),
        tables,
    }
}

fn print_summary(summary: &DistSummary, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(summary)?);
        return Ok(());
    }
    for t in &summary.tables {
        println!("{}", t.line());
    }
    println!(
        "{} table(s) of {} written to {} in {:.2} s; {} states expanded, {:.3} bytes on the wire per state, coordinator peak memory {}",
        summary.tables.len(),
        summary.partition,
        summary.set_dir.display(),
        summary.total_seconds,
        summary.states_expanded,
        summary.bytes_per_state,
        summary
            .coordinator_peak_rss_bytes
            .map_or("?".into(), tilepdb_coordinator::build::human_bytes)
    );
    Ok(())
}

/// `build --workers N`.
pub struct LocalClusterArgs {
    pub workers: usize,
    pub threads: usize,
    pub out: PathBuf,
    pub data_dir: Option<PathBuf>,
    pub lease_timeout: f64,
    pub task_ranks: Option<u64>,
    pub json: bool,
}

/// Builds with a coordinator in this process and `workers` worker processes on loopback.
pub fn run_local_cluster(job_args: &JobArgs, a: LocalClusterArgs) -> anyhow::Result<()> {
    let spec = job_args.spec()?;
    let partition = spec.partition.clone();
    let id = spec.job_id();
    let (data_dir, remove_data) = match &a.data_dir {
        Some(d) => (d.clone(), false),
        None => (a.out.join(format!(".job-{id}")), true),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let total = if a.threads == 0 { cores } else { a.threads };
    let worker_threads = (total / a.workers).max(1);
    let config = JobConfig {
        spec,
        data_dir: data_dir.clone(),
        out: a.out.clone(),
        lease_timeout: seconds(a.lease_timeout, "--lease-timeout")?,
        task_ranks: a.task_ranks,
        tasks_per_layer: 16,
        // A data directory of its own is removed at the end: no need to survive a crash.
        sync: !remove_data,
        threads: total,
        zstd_level: 1,
    };
    let job = Arc::new(Job::new(config)?);
    let data = DataDir::open(&data_dir)?;
    let token = random_token()?;
    let options = ServeOptions {
        token: Some(token.clone()),
        tls: None,
        linger: Duration::from_secs(5),
        tables: None,
        keep_serving: false,
    };
    let started = Instant::now();
    let children: Arc<Mutex<Vec<Child>>> = Arc::default();
    let result = runtime()?.block_on(async {
        let (listener, addr) = bind("127.0.0.1:0".parse().expect("an address")).await?;
        tracing::info!(job = %job.id, "listening on {addr}");
        tracing::info!(
            partition = partition.name(),
            workers = a.workers,
            threads_per_worker = worker_threads,
            "local cluster: starting {} worker process(es)",
            a.workers
        );
        for i in 0..a.workers {
            let child = spawn_worker(addr, worker_threads, &token, i)?;
            children.lock().unwrap().push(child);
        }
        // If every worker process dies before the job is done, nobody would finish it.
        let (watch_job, watch_children) = (job.clone(), children.clone());
        let watcher = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let all_gone = watch_children
                    .lock()
                    .unwrap()
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
        result.map_err(anyhow::Error::from)
    });
    // Workers exit by themselves once told the job is done; stop any that do not.
    let deadline = Instant::now() + Duration::from_secs(if result.is_ok() { 10 } else { 0 });
    for child in children.lock().unwrap().iter_mut() {
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    if !status.success() && result.is_ok() {
                        tracing::warn!(pid = child.id(), %status, "a worker exited with an error");
                    }
                    break;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
            }
        }
    }
    let reports = result?;
    if remove_data {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    let summary = summary(&job, Some(a.workers), started, reports);
    print_summary(&summary, a.json)
}

/// The worker program: `tilepdb-worker` next to this program, else this program's `worker`.
fn worker_command() -> anyhow::Result<Command> {
    let me = std::env::current_exe().context("cannot find this program")?;
    let sibling = me.with_file_name(format!("tilepdb-worker{}", std::env::consts::EXE_SUFFIX));
    Ok(if sibling.is_file() {
        Command::new(sibling)
    } else {
        let mut c = Command::new(me);
        c.arg("worker");
        c
    })
}

fn spawn_worker(addr: SocketAddr, threads: usize, token: &str, i: usize) -> anyhow::Result<Child> {
    let mut cmd = worker_command()?;
    cmd.arg("--coordinator")
        .arg(format!("http://{addr}"))
        .arg("--threads")
        .arg(threads.to_string())
        .arg("--give-up-after")
        .arg("30")
        .arg("--name")
        .arg(format!("local-{i}"))
        .env("TILEPDB_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "warn");
    }
    cmd.spawn().context("cannot start a worker process")
}

fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)
        .context("cannot read /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
