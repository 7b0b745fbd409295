//! `tilepdb-coordinator status`: a running job's progress, from its coordinator.

#![allow(
    clippy::doc_markdown,
    reason = "the doc comments of the arguments are --help text, not Markdown"
)]

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use tilepdb_common::wire::connect::Endpoint;
use tilepdb_common::wire::proto::{JobStatusRequest, JobStatusResponse};
use tilepdb_coordinator::build::human_bytes;
use tilepdb_coordinator::observe::progress::{Snapshot, Tracker};
use tilepdb_worker::cli::read_token;
use tilepdb_worker::client::connect;

#[derive(Args)]
pub struct StatusArgs {
    /// The coordinator: http://HOST:PORT, or https://HOST:PORT with TLS.
    #[arg(long, value_name = "URL", env = "TILEPDB_COORDINATOR")]
    coordinator: String,
    /// A file holding the shared token (default: the TILEPDB_TOKEN environment variable).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// CA certificate (PEM) to trust for https://.
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// The name in the coordinator's certificate, if not the address's host.
    #[arg(long, value_name = "NAME")]
    tls_domain: Option<String>,
    /// Print JSON for scripts.
    #[arg(long, conflicts_with = "watch")]
    json: bool,
    /// Ask again every SECONDS (default 2) and redraw: each table's progress and ETA, the
    /// layer, the rates over the layer and the job, a row per worker; ends with the job.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "2")]
    watch: Option<f64>,
}

pub fn run(args: StatusArgs) -> anyhow::Result<()> {
    let coordinator = Endpoint {
        address: args.coordinator.clone(),
        token: read_token(args.token_file.as_deref())?,
        tls_ca: args.tls_ca.clone(),
        tls_domain: args.tls_domain.clone(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ask = || {
        runtime
            .block_on(async {
                let mut client = connect(&coordinator)?;
                let status = client
                    .job_status(JobStatusRequest {})
                    .await
                    .map_err(|s| anyhow::anyhow!("{}: {}", s.code().description(), s.message()))?;
                anyhow::Ok(status.into_inner())
            })
            .with_context(|| format!("cannot get the status of {}", args.coordinator))
    };
    if let Some(every) = args.watch {
        return super::watch::run(every, ask);
    }
    let s = ask()?;
    let snapshot = Tracker::default().update(&s);
    if args.json {
        print_json(&s, &snapshot)
    } else {
        print_text(&s, &snapshot);
        Ok(())
    }
}

/// The status `s` (drawn as `snapshot`) as the JSON document `status`.
fn print_json(s: &JobStatusResponse, snapshot: &Snapshot) -> anyhow::Result<()> {
    let job = s.job.clone().unwrap_or_default();
    let tables: Vec<_> = snapshot
        .tables
        .iter()
        .map(|t| {
            serde_json::json!({
                "index": t.index,
                "tiles": t.tiles,
                "state": t.state,
                "states_found": t.states_found,
                "expected_states": t.expected_states,
                "states_by_depth": t.layers,
            })
        })
        .collect();
    let v = serde_json::json!({
        "job_id": s.job_id,
        "partition": job.name,
        "board": job.board,
        "goal": job.goal,
        "blank_rule": job.blank_rule,
        "encoding": s.encoding,
        "phase": s.phase,
        "done": s.done,
        "table": s.table,
        "tables_written": s.tables_written,
        "tables": tables,
        "depth": s.depth,
        "layer_states": s.layer_states,
        "states_found": s.states_found,
        "tasks_done": s.tasks_done,
        "tasks_total": s.tasks_total,
        "workers_alive": s.workers_alive,
        "states_expanded": s.states_expanded,
        "expanded_per_second": s.states_per_second,
        "bytes_received": s.bytes_received,
        "bytes_sent": s.bytes_sent,
        "elapsed_seconds": s.elapsed_seconds,
        "peak_rss_bytes": s.peak_rss_bytes,
        "results_accepted": s.results_accepted,
        "results_dropped": s.results_dropped,
        "leases_expired": s.leases_expired,
        "results_refused": s.results_refused,
        "workers": s.workers.iter().map(|w| serde_json::json!({
            "id": w.id,
            "name": w.name,
            "seconds_since_heartbeat": w.seconds_since_heartbeat,
            "tasks_held": w.tasks_held,
            "alive": w.alive,
        })).collect::<Vec<_>>(),
    });
    tilepdb_common::json::print("status", v)?;
    Ok(())
}

/// The status `s` (drawn as `snapshot`) as lines of text.
fn print_text(s: &JobStatusResponse, snapshot: &Snapshot) {
    let job = s.job.clone().unwrap_or_default();
    tilepdb_common::outln!(
        "job        {} ({} {} {} {} {})",
        s.job_id,
        job.name,
        job.board,
        job.blank_rule,
        job.goal,
        s.encoding
    );
    tilepdb_common::outln!("phase      {}", s.phase);
    tilepdb_common::outln!(
        "table      {} of {} ({} written)",
        (s.table + 1).min(s.tables),
        s.tables,
        s.tables_written
    );
    tilepdb_common::outln!(
        "layer      depth {}: {} states; {} states found so far",
        s.depth,
        s.layer_states,
        s.states_found
    );
    if let Some(t) = snapshot
        .tables
        .get(s.table as usize)
        .filter(|t| !t.layers.is_empty())
    {
        tilepdb_common::outln!(
            "layers     {}",
            t.layers
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    tilepdb_common::outln!("tasks      {} of {} done", s.tasks_done, s.tasks_total);
    tilepdb_common::outln!("workers    {} alive", s.workers_alive);
    tilepdb_common::outln!(
        "rate       {:.2} M states/s ({} expanded in {:.1} s)",
        s.states_per_second / 1e6,
        s.states_expanded,
        s.elapsed_seconds
    );
    tilepdb_common::outln!(
        "wire       {} received, {} sent",
        human_bytes(s.bytes_received),
        human_bytes(s.bytes_sent)
    );
    tilepdb_common::outln!("memory     {} peak", human_bytes(s.peak_rss_bytes));
}
