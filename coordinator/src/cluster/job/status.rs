//! The job's progress as the status call reports it: one snapshot of the job's state, its
//! counters and its workers, which the gRPC service, the HTTP status, the metrics and the
//! progress bars all read (made a message in [`crate::cluster::wire`]).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::Job;
use crate::cluster::progress::JobProgress;
use crate::report::peak_rss_bytes;

impl Job {
    /// The job's progress.
    pub fn status(&self) -> JobProgress {
        let st = self.lock();
        let now = Instant::now();
        JobProgress {
            job_id: self.id.clone(),
            spec: self.config.spec.clone(),
            phase: st.stage.phase(),
            table: st.table,
            tables: self.spaces.len(),
            depth: st.depth,
            layer_states: st.layer_states,
            states_found: st.states_found,
            tasks_done: st.tasks_done,
            tasks_total: st.tasks_total,
            workers_alive: st.workers.alive(now),
            states_expanded: self.counters.expanded.load(Relaxed),
            bytes_received: self.counters.bytes_received.load(Relaxed),
            bytes_sent: self.counters.bytes_sent.load(Relaxed),
            elapsed: self.started.elapsed(),
            peak_rss_bytes: peak_rss_bytes(),
            tables_written: st.tables_written,
            table_states: self
                .spaces
                .iter()
                .map(crate::observe::progress::expected_states)
                .collect(),
            workers: st.workers.statuses(now),
            results_accepted: self.counters.results_accepted.load(Relaxed),
            results_dropped: self.counters.results_dropped.load(Relaxed),
            leases_expired: self.counters.releases.load(Relaxed),
            results_refused: self.counters.refused.snapshot(),
            table_layers: st.table_layers.clone(),
        }
    }
}
