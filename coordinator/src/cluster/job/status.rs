//! The job's progress as the status call reports it: one snapshot of the job's state, its
//! counters and its workers, which the gRPC service, the HTTP status, the metrics and the
//! progress bars all read.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use tilepdb_common::wire::proto::{JobStatusResponse, LayerCounts};
use tilepdb_common::wire::saturating_u32;

use super::{Job, Phase};
use crate::report::peak_rss_bytes;

impl Job {
    /// The job's progress.
    pub fn status(&self) -> JobStatusResponse {
        let st = self.lock();
        let now = Instant::now();
        let elapsed = self.started.elapsed().as_secs_f64();
        let expanded = self.counters.expanded.load(Relaxed);
        let phase = st.stage.phase();
        JobStatusResponse {
            job_id: self.id.clone(),
            job: Some(self.spec.clone()),
            table: saturating_u32(st.table),
            tables: saturating_u32(self.spaces.len()),
            depth: st.depth,
            layer_states: st.layer_states,
            states_found: st.states_found,
            tasks_done: saturating_u32(st.tasks_done),
            tasks_total: saturating_u32(st.tasks_total),
            workers_alive: saturating_u32(st.workers.alive(now)),
            states_per_second: if elapsed > 0.0 {
                expanded as f64 / elapsed
            } else {
                0.0
            },
            states_expanded: expanded,
            bytes_received: self.counters.bytes_received.load(Relaxed),
            bytes_sent: self.counters.bytes_sent.load(Relaxed),
            elapsed_seconds: elapsed,
            phase: phase.name().to_string(),
            done: phase == Phase::Done,
            peak_rss_bytes: peak_rss_bytes().unwrap_or(0),
            tables_written: saturating_u32(st.tables_written),
            table_states: self
                .spaces
                .iter()
                .map(crate::observe::progress::expected_states)
                .collect(),
            workers: st.workers.statuses(Instant::now()),
            results_accepted: self.counters.results_accepted.load(Relaxed),
            results_dropped: self.counters.results_dropped.load(Relaxed),
            leases_expired: self.counters.releases.load(Relaxed),
            results_refused: self.counters.refused.snapshot().into_iter().collect(),
            table_layers: st
                .table_layers
                .iter()
                .map(|states| LayerCounts {
                    states: states.clone(),
                })
                .collect(),
            encoding: self.config.spec.encoding.to_string(),
        }
    }
}
