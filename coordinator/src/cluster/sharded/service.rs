//! The `ShardControl` gRPC service: the edge between the shards' calls and [`Control`]; and
//! the job's `Coordinator` service, which answers `JobStatus`. The only place of the sharded
//! job that makes a `tonic::Status`.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tilepdb_common::table::Pdb;
use tilepdb_common::wire::proto::coordinator_server::Coordinator;
use tilepdb_common::wire::proto::shard_control_server::ShardControl;
use tilepdb_common::wire::proto::step_response::Command;
use tilepdb_common::wire::proto::{
    DeliverResultResponse, HeartbeatRequest, HeartbeatResponse, JobSpec, JobStatusRequest,
    JobStatusResponse, JoinRequest, JoinResponse, LayerStep, OpenTable, ProofOpen,
    ReadEntriesRequest, ReadEntriesResponse, RegisterRequest, RegisterResponse, RestoreTable,
    ResultMessage, ShardHeartbeatRequest, ShardHeartbeatResponse, StepRequest, StepResponse,
    TakeTaskRequest,
};
use tilepdb_common::wire::zstd_frames;
use tonic::{Request, Response, Status};

use super::control::{Answer, Control, ShardRefusal};
use super::status::ShardedStatus;
use super::step::{ShardReport, Step};
use crate::cluster::wire::job_spec;
use crate::engine::SetSpec;

/// How long a `NextStep` call waits for a new step before answering `wait`.
const LONG_POLL: Duration = Duration::from_secs(2);

/// The service of one sharded job.
pub struct ShardControlService {
    control: Arc<Control>,
    job: JobSpec,
    encoding: String,
    heartbeat: Duration,
    proven: Arc<ProvenFile>,
}

/// The table file being proven on the shards, which `ReadEntries` reads: set by the driver
/// before the proof's first step, cleared after its last.
#[derive(Default)]
pub struct ProvenFile {
    file: std::sync::RwLock<Option<(u32, Arc<Pdb>)>>,
}

impl ProvenFile {
    /// Table `table`'s file `pdb` is the one the provers read now (`None`: none).
    pub fn set(&self, file: Option<(u32, Arc<Pdb>)>) {
        *self.file.write().unwrap_or_else(PoisonError::into_inner) = file;
    }

    fn get(&self, table: u32) -> Option<Arc<Pdb>> {
        match &*self.file.read().unwrap_or_else(PoisonError::into_inner) {
            Some((t, pdb)) if *t == table => Some(pdb.clone()),
            _ => None,
        }
    }
}

/// Bytes before a read's entries whose pages the kernel may have mapped with them.
const NEIGHBOURS_MAPPED: usize = 2 << 20;

/// Most file entries one `ReadEntries` call asks for.
pub const MAX_READ_ENTRIES: u64 = 1 << 20;

impl ShardControlService {
    /// The service of `control`, whose job builds the set `spec`; shards heartbeat every
    /// `heartbeat`.
    pub fn new(
        control: Arc<Control>,
        spec: &SetSpec,
        heartbeat: Duration,
        proven: Arc<ProvenFile>,
    ) -> ShardControlService {
        ShardControlService {
            control,
            job: job_spec(spec),
            encoding: spec.encoding.to_string(),
            heartbeat,
            proven,
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
                Step::ProofOpen {
                    table,
                    team_a,
                    team_b,
                    peers,
                } => Command::ProofOpen(ProofOpen {
                    table,
                    team_a,
                    team_b,
                    peers,
                }),
                Step::ProofExpand { table, depth } => {
                    Command::ProofExpand(LayerStep { table, depth })
                }
                Step::ProofFinish { table, depth } => {
                    Command::ProofFinish(LayerStep { table, depth })
                }
                Step::ProofClose { table } => Command::ProofClose(table),
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
            .next_step(
                r.shard,
                r.session,
                r.done_step,
                r.report.map(ShardReport::from),
            )
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

    async fn read_entries(
        &self,
        request: Request<ReadEntriesRequest>,
    ) -> Result<Response<ReadEntriesResponse>, Status> {
        let r = request.into_inner();
        self.check_job(&r.job_id)?;
        let pdb = self.proven.get(r.table).ok_or_else(|| {
            Status::failed_precondition(format!("table {} is not being proven", r.table))
        })?;
        let entries = pdb.space().entries();
        let mut count = 0u64;
        for range in &r.ranges {
            if range.start >= range.end || range.end > entries {
                return Err(Status::invalid_argument(format!(
                    "entries {}..{} of a table of {entries}",
                    range.start, range.end
                )));
            }
            count += range.end - range.start;
        }
        if count > MAX_READ_ENTRIES {
            return Err(Status::invalid_argument(format!(
                "{count} entries asked for: a read takes at most {MAX_READ_ENTRIES}"
            )));
        }
        tokio::task::spawn_blocking(move || {
            let (encoding, payload) = (pdb.encoding(), pdb.payload());
            let codes: Vec<u8> = r
                .ranges
                .iter()
                .flat_map(|range| (range.start..range.end).map(|e| encoding.stored(payload, e)))
                .collect();
            // The entries read are let go: the coordinator never holds the file whole. The
            // kernel maps a page's neighbours with it (fault-around, up to a 2 MiB folio), so
            // the pages just before the read, which an earlier read let go, are let go again.
            let bytes = |e: u64| usize::try_from(encoding.byte_of(e)).unwrap_or(usize::MAX);
            if let (Some(first), Some(last)) = (
                r.ranges.iter().map(|range| range.start).min(),
                r.ranges.iter().map(|range| range.end).max(),
            ) {
                let start = bytes(first).saturating_sub(NEIGHBOURS_MAPPED);
                pdb.release_payload_pages(start..bytes(last - 1).saturating_add(1));
            }
            let packed =
                zstd_frames::compress(&codes, 1).map_err(|e| Status::internal(e.to_string()))?;
            Ok(Response::new(ReadEntriesResponse {
                crc32: crc32fast::hash(&packed),
                codes: packed,
                count,
            }))
        })
        .await
        .unwrap_or_else(|e| Err(Status::internal(format!("the read stopped: {e}"))))
    }
}

/// The `Coordinator` service of a sharded job: its status (`JobStatus`, for the `status`
/// command); a worker of the coordinator-held build is told that this job takes shards.
pub struct ShardedCoordinatorService {
    status: Arc<ShardedStatus>,
}

impl ShardedCoordinatorService {
    /// The service of the job whose status is `status`.
    pub fn new(status: Arc<ShardedStatus>) -> ShardedCoordinatorService {
        ShardedCoordinatorService { status }
    }
}

/// The refusal of every call of a worker of the coordinator-held build.
fn takes_shards() -> Status {
    Status::failed_precondition(
        "this coordinator runs a sharded build: a worker joins it with its shard id and the \
         shard count",
    )
}

type NoTasks = std::pin::Pin<
    Box<
        dyn tokio_stream::Stream<Item = Result<tilepdb_common::wire::proto::TaskMessage, Status>>
            + Send,
    >,
>;

#[tonic::async_trait]
impl Coordinator for ShardedCoordinatorService {
    async fn register(
        &self,
        _request: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        Err(takes_shards())
    }

    async fn heartbeat(
        &self,
        _request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        Err(takes_shards())
    }

    type TakeTaskStream = NoTasks;

    async fn take_task(
        &self,
        _request: Request<TakeTaskRequest>,
    ) -> Result<Response<NoTasks>, Status> {
        Err(takes_shards())
    }

    async fn deliver_result(
        &self,
        _request: Request<tonic::Streaming<ResultMessage>>,
    ) -> Result<Response<DeliverResultResponse>, Status> {
        Err(takes_shards())
    }

    async fn job_status(
        &self,
        _request: Request<JobStatusRequest>,
    ) -> Result<Response<JobStatusResponse>, Status> {
        let status = self.status.clone();
        // The status takes the builder's lock: off the async threads.
        tokio::task::spawn_blocking(move || status.status())
            .await
            .map(|progress| Response::new(progress.into()))
            .map_err(|e| Status::internal(format!("the status stopped: {e}")))
    }
}
