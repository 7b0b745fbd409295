//! A job's progress in the job's own terms: what a coordinator-held job
//! ([`super::Job::status`]) and a sharded one ([`super::sharded::ShardedStatus::status`]) say
//! of themselves. The service layer turns it into the status message
//! ([`super::wire`]), the one place that knows the message's fields.

use std::collections::BTreeMap;
use std::time::Duration;

use super::job::Phase;
use crate::engine::SetSpec;

/// One worker (or shard) as the job sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerProgress {
    /// The worker's number (a shard's index).
    pub id: u64,
    /// The name it registered under.
    pub name: String,
    /// How long since it was last heard of.
    pub silent: Duration,
    /// The tasks it holds leases on.
    pub tasks_held: usize,
    /// Heard of within its timeout, and not told that the job is done.
    pub alive: bool,
}

/// A snapshot of a job's progress.
#[derive(Clone, Debug)]
pub struct JobProgress {
    /// The job's identity ([`SetSpec::job_id`]).
    pub job_id: String,
    /// The set the job builds.
    pub spec: SetSpec,
    /// Where the job is.
    pub phase: Phase,
    /// The table being searched (its index in the set).
    pub table: usize,
    /// The tables of the set.
    pub tables: usize,
    /// The depth of the layer being expanded.
    pub depth: u32,
    /// The states of that layer.
    pub layer_states: u64,
    /// The states found so far in this table.
    pub states_found: u64,
    /// The layer's tasks done (a sharded job: the shards that reported the step).
    pub tasks_done: usize,
    /// The layer's tasks (a sharded job: its shards).
    pub tasks_total: usize,
    /// The workers alive.
    pub workers_alive: usize,
    /// States expanded over the whole job.
    pub states_expanded: u64,
    /// Bytes received from workers.
    pub bytes_received: u64,
    /// Bytes sent to workers.
    pub bytes_sent: u64,
    /// Time since the job started.
    pub elapsed: Duration,
    /// This process's peak resident memory, where the system says.
    pub peak_rss_bytes: Option<u64>,
    /// The tables written.
    pub tables_written: usize,
    /// The states each table will have.
    pub table_states: Vec<u64>,
    /// The workers, by number.
    pub workers: Vec<WorkerProgress>,
    /// Results merged.
    pub results_accepted: u64,
    /// Results valid but not needed.
    pub results_dropped: u64,
    /// Leases that ran out.
    pub leases_expired: u64,
    /// Results refused, by reason.
    pub results_refused: BTreeMap<String, u64>,
    /// The states of each layer of each table, by depth (none for a table not begun).
    pub table_layers: Vec<Vec<u64>>,
}

impl JobProgress {
    /// States expanded per second since the job started (0 before any time has passed).
    #[must_use]
    #[expect(
        clippy::cast_precision_loss,
        reason = "a rate: states below 2^53 are exact, and a rate needs no more"
    )]
    pub fn states_per_second(&self) -> f64 {
        let seconds = self.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.states_expanded as f64 / seconds
        } else {
            0.0
        }
    }
}
