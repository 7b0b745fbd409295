//! The job's domain types and the wire's messages, converted in one place: the job's
//! definition made from its set ([`job_spec`]), the status message made from a job's
//! progress ([`JobProgress`]), a result's header checked into
//! the job's [`ResultClaim`], and a shard's step report made the control plane's
//! [`ShardReport`]. The gRPC services and the HTTP status call these; the job and
//! the sharded control plane never see the messages.

use tilepdb_common::wire::proto::{
    JobSpec, JobStatusResponse, LayerCounts, ResultHeader, StepReport, WorkerStatus,
};
use tilepdb_common::wire::{TaskId, saturating_u32};

use super::job::{Phase, Refusal};
use super::progress::{JobProgress, WorkerProgress};
use super::results::ResultClaim;
use super::sharded::step::{ShardReport, StepFailure};
use crate::engine::SetSpec;

/// The definition of the set `spec` that workers and observers receive.
pub fn job_spec(spec: &SetSpec) -> JobSpec {
    JobSpec::new(&spec.partition, spec.goal, spec.rule)
}

impl From<WorkerProgress> for WorkerStatus {
    fn from(w: WorkerProgress) -> WorkerStatus {
        WorkerStatus {
            id: w.id,
            name: w.name,
            seconds_since_heartbeat: w.silent.as_secs_f64(),
            tasks_held: saturating_u32(w.tasks_held),
            alive: w.alive,
        }
    }
}

impl From<JobProgress> for JobStatusResponse {
    fn from(p: JobProgress) -> JobStatusResponse {
        JobStatusResponse {
            states_per_second: p.states_per_second(),
            job: Some(job_spec(&p.spec)),
            encoding: p.spec.encoding.to_string(),
            job_id: p.job_id,
            table: saturating_u32(p.table),
            tables: saturating_u32(p.tables),
            depth: p.depth,
            layer_states: p.layer_states,
            states_found: p.states_found,
            tasks_done: saturating_u32(p.tasks_done),
            tasks_total: saturating_u32(p.tasks_total),
            workers_alive: saturating_u32(p.workers_alive),
            states_expanded: p.states_expanded,
            bytes_received: p.bytes_received,
            bytes_sent: p.bytes_sent,
            elapsed_seconds: p.elapsed.as_secs_f64(),
            phase: p.phase.name().to_string(),
            done: p.phase == Phase::Done,
            peak_rss_bytes: p.peak_rss_bytes.unwrap_or(0),
            tables_written: saturating_u32(p.tables_written),
            table_states: p.table_states,
            workers: p.workers.into_iter().map(WorkerStatus::from).collect(),
            results_accepted: p.results_accepted,
            results_dropped: p.results_dropped,
            leases_expired: p.leases_expired,
            results_refused: p.results_refused.into_iter().collect(),
            table_layers: p
                .table_layers
                .into_iter()
                .map(|states| LayerCounts { states })
                .collect(),
        }
    }
}

impl From<StepReport> for ShardReport {
    fn from(r: StepReport) -> ShardReport {
        let failure = if r.peer_unreachable {
            Some(StepFailure::PeerUnreachable(r.error))
        } else if r.error.is_empty() {
            None
        } else {
            Some(StepFailure::Failed(r.error))
        };
        ShardReport {
            expanded: r.expanded,
            generated: r.generated,
            sent_states: r.sent_states,
            sent_bytes: r.sent_bytes,
            foreign_successors: r.foreign_successors,
            added: r.added,
            entries: r.entries,
            checkpoint_bytes: r.checkpoint_bytes,
            peak_rss: r.peak_rss,
            proof_histogram: r.proof_histogram,
            proof_unreached: r.proof_unreached,
            proof_failure: (!r.proof_failure.is_empty()).then_some(r.proof_failure),
            failure,
        }
    }
}

/// The claim of a result's header `h`: refused when its task id was never issued, or names
/// another table or depth than the header does.
pub fn result_claim(h: &ResultHeader) -> Result<ResultClaim, Refusal> {
    let Some(task) = TaskId::from_u64(h.task_id) else {
        return Err(Refusal::Invalid(format!(
            "task id {:#x} was never issued",
            h.task_id
        )));
    };
    if task.table != h.table || task.depth != h.depth {
        return Err(Refusal::Invalid(format!(
            "task id {:#x} names table {} depth {}, the header table {} depth {}",
            h.task_id, task.table, task.depth, h.table, h.depth
        )));
    }
    Ok(ResultClaim {
        worker: h.worker_id,
        task,
        attempt: h.attempt,
        ranks: h.first_rank..h.end_rank,
        reached_states: h.reached_states,
        reached_bytes: h.reached_bytes,
        expanded: h.expanded,
        generated: h.generated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(task: TaskId) -> ResultHeader {
        ResultHeader {
            worker_id: 7,
            task_id: task.to_u64(),
            attempt: 3,
            table: task.table,
            depth: task.depth,
            first_rank: 10,
            end_rank: 20,
            reached_states: 5,
            reached_bytes: 6,
            expanded: 8,
            generated: 9,
            ..ResultHeader::default()
        }
    }

    #[test]
    fn a_header_becomes_its_claim_and_a_mismatched_task_id_is_refused() {
        let task = TaskId {
            table: 1,
            depth: 4,
            index: 2,
        };
        let claim = result_claim(&header(task)).unwrap();
        assert_eq!(
            claim,
            ResultClaim {
                worker: 7,
                task,
                attempt: 3,
                ranks: 10..20,
                reached_states: 5,
                reached_bytes: 6,
                expanded: 8,
                generated: 9,
            }
        );
        let mut other_depth = header(task);
        other_depth.depth = 5;
        assert!(matches!(
            result_claim(&other_depth),
            Err(Refusal::Invalid(m)) if m.contains("depth 4, the header table 1 depth 5")
        ));
    }

    #[test]
    fn a_step_report_names_its_failure_and_an_unreachable_peer_comes_first() {
        let report = |error: &str, peer_unreachable: bool| {
            ShardReport::from(StepReport {
                added: 4,
                error: error.into(),
                peer_unreachable,
                ..StepReport::default()
            })
        };
        let done = report("", false);
        assert_eq!((done.added, done.failure), (4, None));
        assert_eq!(
            report("out of memory", false).failure,
            Some(StepFailure::Failed("out of memory".into()))
        );
        assert_eq!(
            report("shard 2 could not be reached", true).failure,
            Some(StepFailure::PeerUnreachable(
                "shard 2 could not be reached".into()
            ))
        );
    }
}
