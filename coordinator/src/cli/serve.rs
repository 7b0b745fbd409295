//! `tilepdb-coordinator serve`: a distributed build, served to worker processes over gRPC,
//! with the finished table sets served to solvers (during the job, after it with
//! `--keep-serving`, or without a job with `--no-build`); and `build --workers N`: the same
//! build with N local worker processes.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use tilepdb_coordinator::cluster::store::DataDir;
use tilepdb_coordinator::cluster::{
    Job, JobConfig, ServeOptions, TableService, TlsFiles, bind, serve_on, serve_tables,
};
use tilepdb_coordinator::connections::{ConnectionLimit, raise_file_limit};
use tilepdb_coordinator::report::{TableReport, available_memory_bytes};
use tilepdb_worker::cli::read_token;

use super::job::{JobArgs, seconds};
use super::summary::{print_sharded, print_summary, summary};
use tilepdb_coordinator::cluster::sharded::server::{ShardedBuild, ShardedServer};
use tilepdb_coordinator::engine::Reuse;

#[derive(Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "one bool per command-line flag"
)]
pub struct ServeArgs {
    #[command(flatten)]
    job: JobArgs,
    /// The job's data directory: the state array and depth bytes of the table being built
    /// (memory-mapped files) and the manifest of the last completed layer. A coordinator
    /// started again on the same directory resumes where the last one stopped.
    #[arg(long, value_name = "DIR", required_unless_present_any = ["no_build", "shards"])]
    data_dir: Option<PathBuf>,
    /// A sharded build instead: the search state of each table is cut into P shards, each
    /// kept by the worker that joins with `--shard p --shards P`; this process is the control
    /// plane only (it holds no table's search state). With --data-dir, it records each
    /// finished layer there, and a coordinator started again on it takes the job up (the
    /// shards restore from their own data directories).
    #[arg(long, value_name = "P", default_value_t = 0, hide_default_value = true, conflicts_with_all = ["no_build", "keep_serving"])]
    shards: u32,
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
    /// Most bytes per second of each table download, e.g. 50M, above zero (default: no
    /// limit).
    #[arg(long, value_name = "BYTES", value_parser = super::job::parse_positive_bytes)]
    download_limit: Option<u64>,
    /// Address to listen on; port 0 picks a free port (the first log line says which, and
    /// --address-file).
    #[arg(long, default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// Once listening, write the addresses bound to this file (`grpc HOST:PORT`, then `http
    /// HOST:PORT` with --http-listen), for scripts: written whole or not at all.
    #[arg(long, value_name = "FILE")]
    address_file: Option<PathBuf>,
    /// Also serve the live dashboard (/), Prometheus metrics (/metrics) and their JSON
    /// (/api/status) over HTTP on this address (port 0 picks one; a log line says which, and
    /// --address-file).
    #[arg(long, value_name = "ADDR", conflicts_with = "no_build")]
    http_listen: Option<SocketAddr>,
    /// Seconds without a heartbeat after which a worker's task is handed out again.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    lease_timeout: f64,
    /// A file holding the workers' token (default: the TILEPDB_TOKEN environment variable).
    /// It lets a client take and deliver tasks, see the job's status and download tables.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// A file holding the token of downloads only (default: the TILEPDB_DOWNLOAD_TOKEN
    /// environment variable; without either, downloads need the workers' token). Give it to
    /// `tilepdb-solve fetch`: it cannot take or deliver tasks.
    #[arg(long, value_name = "FILE")]
    download_token_file: Option<PathBuf>,
    /// Let any client in without a token (only on a network you trust).
    #[arg(long, conflicts_with_all = ["token_file", "download_token_file"])]
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
    /// Most tile sets per task (default: tasks follow each layer along the tile sets, about
    /// 16 a layer).
    #[arg(long, value_name = "N", value_parser = super::job::parse_task_ranks)]
    task_ranks: Option<u64>,
    /// Threads of the coordinator's own passes over the arrays (default: every core).
    #[arg(long, default_value_t = 0, hide_default_value = true, value_parser = tilepdb_common::units::parse_threads)]
    threads: usize,
    /// The share of the workers' results, from 0 to 1, that the coordinator re-executes and
    /// compares (besides each worker's first two); a worker whose result differs is banned.
    /// 0: only a table that failed its proof is re-executed, all of it.
    #[arg(long, value_name = "SHARE", default_value_t = tilepdb_coordinator::cluster::audit::DEFAULT_AUDIT_FRACTION, value_parser = super::job::parse_share, conflicts_with = "no_build")]
    audit_fraction: f64,
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
    /// Most memory a table's build may hold, e.g. 8G or 512M (default: the memory available);
    /// a job with a table that needs more, or whose files do not fit on the disks of
    /// --data-dir and --out, is refused before anything is created.
    #[arg(long, value_name = "BYTES", value_parser = super::job::parse_bytes, conflicts_with = "no_build")]
    memory_limit: Option<u64>,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tilepdb-grpc")
        .build()
        .context("cannot start the async runtime")
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let (token, download_token) = tokens(&args)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.tls_client_ca.clone(),
        }),
        _ => None,
    };
    // Connections are counted against the file limit: raised to the hard limit first.
    let files = raise_file_limit();
    let connections = ConnectionLimit::for_this_process();
    tracing::debug!(
        files,
        connections = connections.max(),
        "open files allowed, connections served at once"
    );
    let options = ServeOptions {
        token,
        download_token,
        tls,
        linger: seconds(args.linger, "--linger")?,
        tables: Some(TableService::new(&args.out, args.download_limit)),
        keep_serving: args.keep_serving,
        connection_limit: Some(connections.clone()),
    };
    if args.shards > 0 {
        return serve_sharded(&args, options.token, connections);
    }
    let Some(data_dir) = args.data_dir.clone() else {
        return serve_existing(&args, options);
    };
    let job = Arc::new(Job::new(job_config(&args, data_dir.clone())?)?);
    // Refused before anything is created in --data-dir or --out.
    job.check_room(args.memory_limit.or_else(available_memory_bytes))?;
    let data = DataDir::open(&data_dir)?;
    serve_job(&args, job, data, options, connections)
}

/// The workers' token and the download token, checked: a token is required unless
/// `--no-token` (or a table server with a download token), and the two must differ.
fn tokens(args: &ServeArgs) -> anyhow::Result<(Option<String>, Option<String>)> {
    let token = read_token(args.token_file.as_deref())?;
    let download_token = if args.no_token {
        None
    } else {
        read_download_token(args.download_token_file.as_deref())?
    };
    // A table server (--no-build) needs no workers' token: the download token will do.
    let downloads_only = args.no_build && download_token.is_some();
    if token.is_none() && !args.no_token && !downloads_only {
        bail!(
            "no token: give --token-file FILE or set TILEPDB_TOKEN (workers present it; solvers \
             too, or a download token: --download-token-file), or pass --no-token to let any \
             client in"
        );
    }
    for (t, what) in [
        (&token, "the workers' token"),
        (&download_token, "the download token"),
    ] {
        if let Some(t) = t {
            check_token_text(t, what)?;
        }
    }
    if download_token.is_some() && download_token == token {
        bail!("the download token is the workers' token: give downloads a token of their own");
    }
    Ok((token, download_token))
}

/// The job the options describe, its data in `data_dir`.
fn job_config(args: &ServeArgs, data_dir: PathBuf) -> anyhow::Result<JobConfig> {
    let mut config = JobConfig::new(args.job.spec()?, data_dir, args.out.clone());
    config.lease_timeout = seconds(args.lease_timeout, "--lease-timeout")?;
    config.task_ranks = args.task_ranks;
    config.sync = !args.no_sync;
    config.threads = args.threads;
    config.prove = !args.job.no_proof;
    config.audit_fraction = args.audit_fraction;
    Ok(config)
}

/// Serves `job` (its files in `data`) until it is done and served as `options` say: the gRPC
/// port, the dashboard if asked, the progress bars and the summary once the job is done.
fn serve_job(
    args: &ServeArgs,
    job: Arc<Job>,
    data: DataDir,
    options: ServeOptions,
    connections: ConnectionLimit,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let json = args.json;
    let done_job = job.clone();
    runtime()?.block_on(async {
        let (listener, addr) = bind(args.listen).await?;
        tracing::info!(job = %job.id, "listening on {addr}");
        let mut http_addr = None;
        if let Some(listen) = args.http_listen {
            let (http, bound) = tilepdb_coordinator::observe::http::bind(listen).await?;
            tracing::info!("dashboard and metrics on http://{bound}");
            http_addr = Some(bound);
            let observed = job.clone();
            tokio::spawn(async move {
                if let Err(e) =
                    tilepdb_coordinator::observe::http::serve(http, observed, connections).await
                {
                    tracing::error!("the dashboard and metrics stopped: {e}");
                }
            });
        }
        if let Some(path) = &args.address_file {
            super::address_file::write(path, addr, http_addr)?;
        }
        tracing::info!(
            partition = job.config.spec.partition.name(),
            tables = job.spaces.len(),
            data_dir = %data.path().display(),
            "serving job {}",
            job.id
        );
        // The summary is printed as soon as the job is done, even if serving goes on.
        let bars = tilepdb_coordinator::observe::bars::watch(job.clone());
        let on_done = move |result: &Result<Vec<TableReport>, _>| {
            if let Some(bars) = bars {
                bars.finish();
            }
            if let Ok(reports) = result {
                let summary = summary(&done_job, None, started, reports.clone());
                if let Err(e) = print_summary("serve", &summary, json) {
                    tracing::error!("cannot print the summary: {e}");
                }
            }
        };
        serve_on(listener, job.clone(), data, options, on_done).await
    })?;
    Ok(())
}

/// `serve --shards P`: the control plane of a sharded build, for the shard workers that join.
fn serve_sharded(
    args: &ServeArgs,
    token: Option<String>,
    connections: ConnectionLimit,
) -> anyhow::Result<()> {
    let spec = args.job.spec()?;
    let started = Instant::now();
    let progress_file = match &args.data_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot make the data directory {}", dir.display()))?;
            Some(dir.join(format!("{}.progress.json", spec.job_id())))
        }
        None => None,
    };
    let server = ShardedServer::start(
        &spec,
        args.shards,
        args.listen,
        token,
        seconds(args.lease_timeout, "--lease-timeout")?,
    )?;
    let http_addr = match args.http_listen {
        Some(listen) => Some(server.serve_http(listen, connections)?),
        None => None,
    };
    if let Some(path) = &args.address_file {
        super::address_file::write(path, server.addr(), http_addr)?;
    }
    tracing::info!(
        partition = spec.partition.name(),
        shards = args.shards,
        "serving sharded job {}: waiting for its shards",
        spec.job_id()
    );
    let run = server.build(
        &spec,
        &ShardedBuild {
            out: args.out.clone(),
            reuse: Reuse::ValidFiles,
            prove: !args.job.no_proof,
            join_timeout: Duration::from_secs(3600),
            progress_file,
        },
    );
    server.stop(seconds(args.linger, "--linger")?);
    print_sharded("serve", &spec, args.shards, started, run?, args.json)
}

/// The environment variable of the download token.
const DOWNLOAD_TOKEN_ENV: &str = "TILEPDB_DOWNLOAD_TOKEN";

/// The download token: from `file` if given, else `TILEPDB_DOWNLOAD_TOKEN`.
fn read_download_token(file: Option<&std::path::Path>) -> anyhow::Result<Option<String>> {
    if file.is_some() {
        return Ok(read_token(file)?);
    }
    Ok(std::env::var(DOWNLOAD_TOKEN_ENV)
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty()))
}

/// A token travels in an HTTP header: printable ASCII without spaces.
fn check_token_text(token: &str, what: &str) -> anyhow::Result<()> {
    if let Some(c) = token.chars().find(|c| !c.is_ascii_graphic()) {
        bail!(
            "{what} holds {c:?}: a token must be printable ASCII without spaces (clients could \
             never present it)"
        );
    }
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
        if let Some(path) = &args.address_file {
            super::address_file::write(path, addr, None)?;
        }
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
