//! The command line of `tilepdb-worker` (also `tilepdb-coordinator worker`).

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use tilepdb_common::wire::connect::Endpoint;

use crate::client::{self, WorkerConfig, WorkerSummary, default_name};
use crate::error::{Error, Result};
use crate::shard::{ShardConfig, ShardSummary, run_shard};

/// Joins a tilepdb coordinator's job and expands its tasks until the job is done.
#[derive(Args, Clone, Debug)]
pub struct WorkerArgs {
    /// The coordinator: http://HOST:PORT, or https://HOST:PORT with TLS.
    #[arg(long, value_name = "URL", env = "TILEPDB_COORDINATOR")]
    pub coordinator: String,
    /// A file holding the shared token (default: the TILEPDB_TOKEN environment variable).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Expansion threads (default: every core; at most 1024).
    #[arg(long, default_value_t = 0, hide_default_value = true, value_parser = tilepdb_common::units::parse_threads)]
    pub threads: usize,
    /// CA certificate (PEM) to trust for https:// (default: the system's roots are not used;
    /// give the CA that signed the coordinator's certificate).
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// The name in the coordinator's certificate, if not the address's host.
    #[arg(long, value_name = "NAME")]
    pub tls_domain: Option<String>,
    /// Join only this job (default: whatever job the coordinator runs).
    #[arg(long, value_name = "ID")]
    pub job: Option<String>,
    /// Give up after the coordinator has been unreachable for this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub give_up_after: u64,
    /// This worker's name in the coordinator's logs (default: host:pid).
    #[arg(long)]
    pub name: Option<String>,
    /// zstd level of the results (1 is fast; higher sends fewer bytes).
    #[arg(
        long,
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i32).range(-7..=19)
    )]
    pub zstd_level: i32,
    /// Own this shard of a sharded build (0 to --shards - 1): keep its part of every table's
    /// search and serve it to the other shards (the Indexed Job's completion index, the
    /// Slurm task id).
    #[arg(long, value_name = "P", env = "TILEPDB_SHARD", requires = "shards")]
    pub shard: Option<u32>,
    /// With --shard: the number of shards of the job.
    #[arg(long, value_name = "N", env = "TILEPDB_SHARDS", requires = "shard")]
    pub shards: Option<u32>,
    /// With --shard: where the other shards reach this one (HOST:PORT; port 0 picks one).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:0",
        env = "TILEPDB_LISTEN"
    )]
    pub listen: std::net::SocketAddr,
    /// With --shard: the address the other shards use (http://HOST:PORT; default: the
    /// listening address).
    #[arg(long, value_name = "URL", env = "TILEPDB_ADVERTISE")]
    pub advertise: Option<String>,
    /// With --shard: most memory the shard's arrays may take, e.g. 8G (default: the cgroup's
    /// limit); a shard that does not fit is refused before anything is allocated.
    #[arg(long, value_name = "BYTES", value_parser = tilepdb_common::units::parse_bytes)]
    pub memory_limit: Option<u64>,
    /// With --shard: where the shard keeps a checkpoint of each finished layer, from which a
    /// replacement of this worker (given the same directory) restores the shard.
    #[arg(long, value_name = "DIR", env = "TILEPDB_DATA_DIR", requires = "shard")]
    pub data_dir: Option<PathBuf>,
    /// Testing: sleep this many milliseconds after each task (a slow worker).
    #[arg(long, hide = true, default_value_t = 0)]
    pub debug_task_delay_ms: u64,
}

/// The shared token: from `file` if given, else `TILEPDB_TOKEN`.
pub fn read_token(file: Option<&std::path::Path>) -> Result<Option<String>> {
    Ok(tilepdb_common::wire::connect::read_token(file)?)
}

/// Runs the shard worker described by `args` (`--shard` given), on a tokio runtime of its own.
fn run_shard_worker(args: &WorkerArgs, shard: u32, shards: u32) -> Result<ShardSummary> {
    if shard >= shards {
        return Err(Error::Start(format!(
            "shard {shard} of {shards}: a shard number is below the number of shards"
        )));
    }
    let config = ShardConfig {
        worker: worker_config(args)?,
        shard,
        shards,
        listen: args.listen,
        advertise: args.advertise.clone(),
        memory_limit: args.memory_limit,
        data_dir: args.data_dir.clone(),
    };
    runtime()?.block_on(run_shard(config))
}

/// The coordinator, token, threads and patience `args` give.
fn worker_config(args: &WorkerArgs) -> Result<WorkerConfig> {
    Ok(WorkerConfig {
        coordinator: Endpoint {
            address: args.coordinator.clone(),
            token: read_token(args.token_file.as_deref())?,
            tls_ca: args.tls_ca.clone(),
            tls_domain: args.tls_domain.clone(),
        },
        threads: args.threads,
        name: args.name.clone().unwrap_or_else(default_name),
        give_up_after: Duration::from_secs(args.give_up_after),
        job_id: args.job.clone(),
        zstd_level: args.zstd_level,
        task_delay: Duration::from_millis(args.debug_task_delay_ms),
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("tilepdb-worker-io")
        .build()
        .map_err(|e| Error::Start(format!("cannot start the async runtime: {e}")))
}

/// What a worker process did: tasks of a job, or a shard of a sharded job.
#[derive(Clone, Debug)]
pub enum Summary {
    /// A worker of a coordinator-held job.
    Tasks(WorkerSummary),
    /// A shard worker.
    Shard(ShardSummary),
}

/// Runs the worker described by `args`: a shard worker with `--shard`, else a task worker.
pub fn run(args: WorkerArgs) -> Result<Summary> {
    match (args.shard, args.shards) {
        (Some(shard), Some(shards)) => run_shard_worker(&args, shard, shards).map(Summary::Shard),
        _ => run_worker(args).map(Summary::Tasks),
    }
}

/// Runs the worker described by `args` (on a tokio runtime of its own).
pub fn run_worker(args: WorkerArgs) -> Result<WorkerSummary> {
    let config = worker_config(&args)?;
    runtime()?.block_on(client::run(config))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::WorkerArgs;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        worker: WorkerArgs,
    }

    fn parse(args: &[&str]) -> Result<WorkerArgs, clap::Error> {
        let base = ["worker", "--coordinator", "http://127.0.0.1:1"];
        Command::try_parse_from(base.iter().chain(args)).map(|c| c.worker)
    }

    #[test]
    fn a_negative_zstd_level_is_a_value_not_a_flag() {
        assert_eq!(parse(&["--zstd-level", "-3"]).unwrap().zstd_level, -3);
        assert_eq!(parse(&[]).unwrap().zstd_level, 1);
        let refused = parse(&["--zstd-level", "-8"]).err().unwrap().to_string();
        assert!(refused.contains("-8"), "{refused}");
    }
}
