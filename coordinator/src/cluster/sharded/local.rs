//! A local sharded cluster: the control plane in this process and one worker process per
//! shard on loopback (`build --shards P`, and the distributed tests). A worker that exits
//! before the job is done is started again on the same shard and data directory (it restores
//! the shard from its checkpoints), a few times at most; every worker still running when the
//! job ends is stopped. The job's data directory (`.shards-<job>` in the output directory)
//! is removed when the build succeeds.

use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::control::Control;
use super::server::{ShardedBuild, ShardedRun, ShardedServer};
use crate::cluster::local::{lock, random_token, stop_workers, worker_command};
use crate::engine::{Reuse, SetSpec};
use crate::error::{Error, Result};

/// How to run a local sharded cluster.
#[derive(Clone, Debug)]
pub struct LocalShards {
    /// Shards, one worker process each.
    pub shards: u32,
    /// Threads over all workers (0: every core); each worker gets its share.
    pub threads: usize,
    /// The worker program and the arguments before its options.
    pub worker_program: (PathBuf, Vec<String>),
    /// Where the table set is written.
    pub out: PathBuf,
    /// Which tables already in the set's directory are used.
    pub reuse: Reuse,
    /// Prove each table before it is written.
    pub prove: bool,
    /// A shard silent this long fails the job.
    pub silence: Duration,
}

impl LocalShards {
    /// Builds `spec` with the control plane in this process and a worker process per shard.
    pub fn run(&self, spec: &SetSpec) -> Result<ShardedRun> {
        let token = random_token()?;
        let server = ShardedServer::start(
            spec,
            self.shards,
            "127.0.0.1:0".parse().expect("an address"),
            Some(token.clone()),
            self.silence,
        )?;
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let total = if self.threads == 0 {
            cores
        } else {
            self.threads
        };
        let per_worker = (total / self.shards as usize).max(1);
        let url = format!("http://{}", server.addr());
        let data = self.out.join(format!(".shards-{}", spec.job_id()));
        let children: Arc<Mutex<Vec<Child>>> = Arc::default();
        let spawn = {
            let (this, url, data, token) = (self.clone(), url.clone(), data.clone(), token.clone());
            move |p: u32| this.spawn_worker(&url, p, per_worker, &token, &data)
        };
        let started = (0..self.shards).try_for_each(|p| {
            let child = spawn(p)?;
            lock(&children).push(child);
            Ok::<(), Error>(())
        });
        let watcher = watch_workers(server.control().clone(), children.clone(), spawn);
        let bars = crate::observe::bars::watch(server.status().clone());
        let result = match started {
            Ok(()) => server.build(
                spec,
                &ShardedBuild {
                    out: self.out.clone(),
                    reuse: self.reuse,
                    prove: self.prove,
                    join_timeout: Duration::from_secs(60),
                    progress_file: Some(data.join("progress.json")),
                },
            ),
            Err(e) => {
                server.control().fail(&e.to_string());
                Err(e)
            }
        };
        if let Some(bars) = bars {
            bars.finish();
        }
        let told = server.stop(Duration::from_secs(5));
        stop_workers(&mut lock(&children), result.is_ok() && told);
        let _ = watcher.join();
        if result.is_ok() {
            let _ = std::fs::remove_dir_all(&data);
        }
        result
    }

    fn spawn_worker(
        &self,
        url: &str,
        shard: u32,
        threads: usize,
        token: &str,
        data: &std::path::Path,
    ) -> Result<Child> {
        let name = format!("local-shard-{shard}");
        worker_command(&self.worker_program, url, threads, token, &name)
            .arg("--shard")
            .arg(shard.to_string())
            .arg("--shards")
            .arg(self.shards.to_string())
            .arg("--data-dir")
            .arg(data.join(format!("shard-{shard}")))
            .spawn()
            .map_err(|e| Error::Serve(format!("cannot start a shard worker process: {e}")))
    }
}

/// Times a shard's worker is started again after it exited before the job ended.
const RESTARTS: u32 = 3;

/// Starts a worker again (with `spawn`) when it exits before the job ended, [`RESTARTS`]
/// times at most per shard; then fails the job.
fn watch_workers(
    control: Arc<Control>,
    children: Arc<Mutex<Vec<Child>>>,
    spawn: impl Fn(u32) -> Result<Child> + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut restarts = vec![0u32; lock(&children).len()];
        loop {
            std::thread::sleep(Duration::from_millis(100));
            if control.ended() {
                return;
            }
            let exited = lock(&children)
                .iter_mut()
                .enumerate()
                .find_map(|(p, c)| c.try_wait().ok().flatten().map(|status| (p, status)));
            let Some((p, status)) = exited else { continue };
            let shard = u32::try_from(p).expect("a shard number");
            if restarts[p] == RESTARTS {
                control.fail(&format!(
                    "the worker process of shard {p} exited before the job was done ({status}), {RESTARTS} times"
                ));
                return;
            }
            restarts[p] += 1;
            tracing::warn!(shard, %status, "the worker process of shard {p} exited; starting it again");
            // Its slot freed now: the new process need not wait for the old one's silence.
            control.exited(shard);
            match spawn(shard) {
                Ok(child) => lock(&children)[p] = child,
                Err(e) => {
                    control.fail(&e.to_string());
                    return;
                }
            }
        }
    })
}
