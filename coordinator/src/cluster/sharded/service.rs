//! The `ShardControl` gRPC service: the edge between the shards' calls and [`Control`], the
//! only place of the sharded job that makes a `tonic::Status`.

use std::sync::Arc;
use std::time::Duration;

use tilepdb_common::wire::proto::shard_control_server::ShardControl;
use tilepdb_common::wire::proto::step_response::Command;
use tilepdb_common::wire::proto::{
    JobSpec, JoinRequest, JoinResponse, LayerStep, OpenTable, RestoreTable, ShardHeartbeatRequest,
    ShardHeartbeatResponse, StepRequest, StepResponse,
};
use tonic::{Request, Response, Status};

use super::control::{Answer, Control, ShardRefusal, Step};

/// How long a `NextStep` call waits for a new step before answering `wait`.
const LONG_POLL: Duration = Duration::from_secs(2);

/// The service of one sharded job.
pub struct ShardControlService {
    control: Arc<Control>,
    job: JobSpec,
    encoding: String,
    heartbeat: Duration,
}

impl ShardControlService {
    /// The service of `control`, whose job is `job` written in `encoding`; shards heartbeat
    /// every `heartbeat`.
    pub fn new(
        control: Arc<Control>,
        job: JobSpec,
        encoding: String,
        heartbeat: Duration,
    ) -> ShardControlService {
        ShardControlService {
            control,
            job,
            encoding,
            heartbeat,
        }
    }

    fn check_job(&self, job_id: &str) -> Result<(), Status> {
        if job_id != self.control.job_id {
            return Err(Status::failed_precondition(format!(
                "this coordinator runs job {}, not {job_id:?}",
                self.control.job_id
            )));
        }
        Ok(())
    }
}

/// A refusal as a status: a taken shard is `ALREADY_EXISTS` (a replacement tries again until
/// the lost owner's slot is freed), an unknown session `NOT_FOUND` (the worker joins again: the
/// coordinator was restarted).
fn status(refusal: &ShardRefusal) -> Status {
    match refusal {
        ShardRefusal::Address(_) => Status::invalid_argument(refusal.to_string()),
        ShardRefusal::Taken(..) => Status::already_exists(refusal.to_string()),
        ShardRefusal::Session(_) => Status::not_found(refusal.to_string()),
        _ => Status::failed_precondition(refusal.to_string()),
    }
}

fn response(answer: Answer) -> StepResponse {
    let (step, command) = match answer {
        Answer::Wait => (0, Command::Wait(true)),
        Answer::Done => (0, Command::Done(true)),
        Answer::Failed(reason) => (0, Command::Failed(reason)),
        Answer::Do(n, step) => (
            n,
            match step {
                Step::Open { table, peers } => Command::OpenTable(OpenTable { table, peers }),
                Step::Expand { table, depth } => Command::Expand(LayerStep { table, depth }),
                Step::Finish { table, depth } => Command::Finish(LayerStep { table, depth }),
                Step::Checkpoint { table, depth } => {
                    Command::Checkpoint(LayerStep { table, depth })
                }
                Step::Restore {
                    table,
                    depth,
                    shards,
                    peers,
                } => Command::Restore(RestoreTable {
                    table,
                    depth,
                    shards,
                    peers,
                }),
                Step::Close { table } => Command::CloseTable(table),
            },
        ),
    };
    StepResponse {
        step,
        command: Some(command),
    }
}

#[tonic::async_trait]
impl ShardControl for ShardControlService {
    async fn join(&self, request: Request<JoinRequest>) -> Result<Response<JoinResponse>, Status> {
        let r = request.into_inner();
        let session = self
            .control
            .join(
                r.protocol_version,
                &r.job_id,
                r.shard,
                r.shards,
                &r.peer_address,
                &r.worker_name,
            )
            .map_err(|e| {
                tracing::warn!(shard = r.shard, worker = %r.worker_name, "refused a shard: {e}");
                status(&e)
            })?;
        Ok(Response::new(JoinResponse {
            job_id: self.control.job_id.clone(),
            job: Some(self.job.clone()),
            encoding: self.encoding.clone(),
            session,
            heartbeat_interval_ms: u32::try_from(self.heartbeat.as_millis()).unwrap_or(u32::MAX),
        }))
    }

    async fn next_step(
        &self,
        request: Request<StepRequest>,
    ) -> Result<Response<StepResponse>, Status> {
        let r = request.into_inner();
        self.check_job(&r.job_id)?;
        let mut given = self.control.step_given.subscribe();
        let mut answer = self
            .control
            .next_step(r.shard, r.session, r.done_step, r.report)
            .map_err(|e| status(&e))?;
        let deadline = tokio::time::Instant::now() + LONG_POLL;
        while answer == Answer::Wait {
            if tokio::time::timeout_at(deadline, given.changed())
                .await
                .is_err()
            {
                break;
            }
            answer = self
                .control
                .next_step(r.shard, r.session, r.done_step, None)
                .map_err(|e| status(&e))?;
        }
        Ok(Response::new(response(answer)))
    }

    async fn shard_heartbeat(
        &self,
        request: Request<ShardHeartbeatRequest>,
    ) -> Result<Response<ShardHeartbeatResponse>, Status> {
        let r = request.into_inner();
        self.check_job(&r.job_id)?;
        self.control
            .heartbeat(r.shard, r.session)
            .map_err(|e| status(&e))?;
        Ok(Response::new(ShardHeartbeatResponse {}))
    }
}
