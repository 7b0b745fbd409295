//! The summary of a distributed build (`serve`, `build --workers N`, `--shards P`), text or
//! JSON.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use serde::Serialize;
use tilepdb_coordinator::cluster::Job;
use tilepdb_coordinator::cluster::sharded::builder::ShardedTableFigures;
use tilepdb_coordinator::cluster::sharded::server::ShardedRun;
use tilepdb_coordinator::engine::SetSpec;
use tilepdb_coordinator::report::{TableReport, peak_rss_bytes};

/// What a distributed build did.
#[derive(Serialize)]
pub struct DistSummary {
    pub job_id: String,
    pub partition: String,
    pub set_name: String,
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
    /// Tables that failed their proof before being written, and were searched again.
    pub tables_rejected: u64,
    pub coordinator_peak_rss_bytes: Option<u64>,
    /// Tables written by an earlier run of the job (its data directory said so): not built
    /// again, not in `tables`.
    pub tables_already_written: usize,
    /// The tables built by this run.
    pub tables: Vec<TableReport>,
}

pub(super) fn summary(
    job: &Job,
    workers: Option<usize>,
    started: Instant,
    tables: Vec<TableReport>,
) -> DistSummary {
    let c = &job.counters;
    let expanded = c.expanded.load(Relaxed);
    let (received, sent) = (c.bytes_received.load(Relaxed), c.bytes_sent.load(Relaxed));
    let set_dir = job.config.spec.dir(&job.config.out);
    DistSummary {
        job_id: job.id.clone(),
        partition: job.config.spec.partition.name().to_string(),
        set_name: set_name(&set_dir),
        set_dir,
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
        tables_rejected: c.tables_rejected.load(Relaxed),
        coordinator_peak_rss_bytes: peak_rss_bytes(),
        tables_already_written: job.spaces.len().saturating_sub(tables.len()),
        tables,
    }
}

/// The name of the set in `dir` (its directory's name).
pub(super) fn set_name(dir: &Path) -> String {
    dir.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Prints `summary` as `command`'s output: text, or the JSON document.
pub(super) fn print_summary(
    command: &str,
    summary: &DistSummary,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        tilepdb_common::json::print(command, summary)?;
        return Ok(());
    }
    for t in &summary.tables {
        tilepdb_common::outln!("{}", t.line());
    }
    let earlier = summary.tables_already_written;
    if summary.tables.is_empty() && earlier > 0 {
        tilepdb_common::outln!(
            "the job was already done: its {earlier} table(s) of {} were written to {} by an earlier run; nothing to build",
            summary.partition,
            summary.set_dir.display()
        );
        return Ok(());
    }
    let earlier = if earlier > 0 {
        format!(" ({earlier} more written by an earlier run)")
    } else {
        String::new()
    };
    tilepdb_common::outln!(
        "{} table(s) of {} written to {}{earlier} in {:.2} s; {} states expanded, {:.3} bytes on the wire per state, coordinator peak memory {}",
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

#[derive(Serialize)]
struct ShardedSummary {
    job_id: String,
    partition: String,
    set_name: String,
    set_dir: PathBuf,
    shards: u32,
    total_seconds: f64,
    coordinator_peak_rss_bytes: Option<u64>,
    tables: Vec<TableReport>,
    /// What each table built measured on the shards (by table; none for tables reused).
    shard_figures: Vec<ShardedTableFigures>,
}

/// Prints what a sharded build of `spec` on `shards` shards gave (as JSON with `json`).
pub(super) fn print_sharded(
    command: &str,
    spec: &SetSpec,
    shards: u32,
    started: Instant,
    run: ShardedRun,
    json: bool,
) -> anyhow::Result<()> {
    let summary = ShardedSummary {
        job_id: spec.job_id(),
        partition: spec.partition.name().to_string(),
        set_name: set_name(&run.set.dir),
        set_dir: run.set.dir.clone(),
        shards,
        total_seconds: started.elapsed().as_secs_f64(),
        coordinator_peak_rss_bytes: peak_rss_bytes(),
        tables: run.reports,
        shard_figures: run.figures,
    };
    if json {
        tilepdb_common::json::print(command, &summary)?;
        return Ok(());
    }
    for t in &summary.tables {
        tilepdb_common::outln!("{}", t.line());
    }
    tilepdb_common::outln!(
        "{} table(s) of {} written to {} in {:.2} s on {} shards",
        summary.tables.len(),
        summary.partition,
        summary.set_dir.display(),
        summary.total_seconds,
        summary.shards
    );
    Ok(())
}
