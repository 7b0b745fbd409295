//! The coordinator's gRPC service: every field from the wire is checked before it touches
//! the job.
//!
//! * the worker token ([`check_token`]; a download token does not open this service):
//!   `UNAUTHENTICATED`;
//! * another protocol version or job: `FAILED_PRECONDITION`;
//! * an unknown worker (say, after a coordinator restart): `NOT_FOUND`, "register again";
//! * a result for an attempt leased to another worker: `PERMISSION_DENIED`, and nothing
//!   changes (the lease's holder may still deliver);
//! * a registration beyond the workers the job keeps: `RESOURCE_EXHAUSTED`;
//! * a forged task id or attempt, a range that is not the task's, sizes that do not fit the
//!   task, a chunk whose checksum, offset or declared size is wrong, a zstd frame larger than
//!   declared, a state list that is not exactly the declared number of states of the next
//!   layer: `INVALID_ARGUMENT`, and nothing is merged (a result is read and checked in full
//!   before its merge starts); when the result was its worker's own, for its lease, the lease
//!   is given up (the task goes to the next worker that asks);
//! * a result whose states differ from the coordinator's re-execution of its task
//!   ([`super::audit`]), and every later request of its worker or registration under its
//!   name from its address: `PERMISSION_DENIED` (the coordinator's own result is merged).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use prost::Message;
use tilepdb_common::wire::chunk::{SectionReader, encode_section};
use tilepdb_common::wire::proto::coordinator_server::Coordinator;
use tilepdb_common::wire::proto::{
    DeliverResultResponse, HeartbeatRequest, HeartbeatResponse, JobDone, JobStatusRequest,
    JobStatusResponse, RegisterRequest, RegisterResponse, ResultMessage, Section, TakeTaskRequest,
    Task, TaskMessage, Wait, result_message, task_message,
};
use tilepdb_common::wire::{AUTH_HEADER, MAX_CHUNK_BYTES, PROTOCOL_VERSION, saturating_u32};
use tokio_stream::Stream;
use tonic::service::Interceptor;
use tonic::{Request, Response, Status, Streaming};

use super::audit::Audited;
use super::budget::{ResultBudget, ResultCharge};
use super::job::{Job, Lease, Refusal};
use super::results::{AcceptedResult, ResultCheck};
use super::wire::{job_spec, result_claim};

/// How long a `TakeTask` waits for a task before answering `Wait`.
const LONG_POLL: Duration = Duration::from_secs(2);
/// Longest silence inside a result stream (shorter with a shorter lease timeout: a stream
/// that makes no progress for a lease timeout loses its lease).
const CHUNK_TIMEOUT: Duration = Duration::from_secs(60);

/// The `Status` of a request the job refuses.
fn refused(r: Refusal) -> Status {
    match r {
        Refusal::UnknownWorker(e) => Status::not_found(e.to_string()),
        Refusal::Invalid(m) => Status::invalid_argument(m),
        Refusal::NotYours(m) | Refusal::Banned(m) => Status::permission_denied(m),
        Refusal::TooManyWorkers(e) => Status::resource_exhausted(e.to_string()),
    }
}

/// Most bytes of results read and decoded at once (see [`super::budget`]).
pub use super::budget::RESULT_BYTES_IN_FLIGHT;

/// The slowest a result may arrive, on top of its [`CHUNK_TIMEOUT`]s: past
/// `lease timeout + bytes / MIN_RESULT_RATE` it is dropped and its lease given up.
const MIN_RESULT_RATE: u64 = 64 << 10;

/// The service of one job.
pub struct CoordinatorService {
    /// The job served.
    pub job: Arc<Job>,
    /// The results being received: one stream per attempt, their bytes counted per worker
    /// ([`RESULT_BYTES_IN_FLIGHT`] in all).
    results: ResultBudget,
}

/// Checks the `authorization` metadata against the tokens of the roles a service lets in
/// (each compared in constant time); no token at all lets every call in.
pub fn check_token(tokens: Vec<Arc<str>>) -> TokenCheck {
    TokenCheck(tokens.into())
}

/// The interceptor of [`check_token`].
#[derive(Clone)]
pub struct TokenCheck(Arc<[Arc<str>]>);

impl TokenCheck {
    /// Whether `given` is one of the tokens, compared with each in constant time.
    fn accepts(&self, given: &str) -> bool {
        let mut any = false;
        for token in self.0.iter() {
            let (a, b) = (given.as_bytes(), token.as_bytes());
            let mut diff = a.len() ^ b.len();
            for (i, &x) in b.iter().enumerate() {
                diff |= (x ^ a.get(i).copied().unwrap_or(0)) as usize;
            }
            any |= diff == 0;
        }
        any
    }
}

impl Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        if self.0.is_empty() {
            return Ok(request);
        }
        let given = request
            .metadata()
            .get(AUTH_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !self.accepts(given) {
            return Err(Status::unauthenticated(
                "missing or wrong token (or a token of a role this service does not let in)",
            ));
        }
        Ok(request)
    }
}

impl CoordinatorService {
    /// The service of `job`.
    pub fn new(job: Arc<Job>) -> CoordinatorService {
        CoordinatorService {
            job,
            results: ResultBudget::default(),
        }
    }

    fn check_job(&self, job_id: &str) -> Result<(), Status> {
        if job_id != self.job.id {
            return Err(Status::failed_precondition(format!(
                "this coordinator runs job {}, not {job_id:?}",
                self.job.id
            )));
        }
        Ok(())
    }

    /// Longest silence inside a result stream: [`CHUNK_TIMEOUT`], or the lease timeout if
    /// shorter (at least a second).
    fn silence(&self) -> Duration {
        CHUNK_TIMEOUT.min(self.job.config.lease_timeout.max(Duration::from_secs(1)))
    }

    fn count_received(&self, bytes: usize) {
        self.job
            .counters
            .bytes_received
            .fetch_add(bytes as u64, Relaxed);
    }
}

/// The next message of a result stream, unless it stalls for `silence` or goes past
/// `deadline`.
async fn next(
    stream: &mut Streaming<ResultMessage>,
    silence: Duration,
    deadline: tokio::time::Instant,
) -> Result<Option<ResultMessage>, ResultRefusal> {
    let until = deadline.min(tokio::time::Instant::now() + silence);
    match tokio::time::timeout_at(until, stream.message()).await {
        Ok(r) => r.map_err(ResultRefusal::Stream),
        Err(_) if until == deadline => Err(ResultRefusal::TooSlow(
            "result stream too slow: past the time its size allows",
        )),
        Err(_) => Err(ResultRefusal::TooSlow("result stream stalled")),
    }
}

/// Why a result whose header was accepted is not merged: what the job does with its lease
/// follows from this, and the gRPC status is made from it only at the end.
#[derive(Debug)]
enum ResultRefusal {
    /// Its content is wrong (a second header, a bad chunk, states that are not the task's).
    Invalid(String),
    /// It came too slowly, or stopped coming.
    TooSlow(&'static str),
    /// Over the bytes of results in flight (its worker's or in all): try again later.
    Busy(String),
    /// The stream itself failed (the client went away, a transport error).
    Stream(Status),
    /// The merge could not run.
    Internal(String),
    /// Its states differ from the coordinator's re-execution: its worker is banned (the
    /// coordinator's own result was merged).
    Banned(String),
}

impl ResultRefusal {
    /// Whether the result's holder loses its lease: its own result was wrong or too slow, so
    /// the task goes to the next worker that asks.
    fn costs_the_lease(&self) -> bool {
        matches!(self, ResultRefusal::Invalid(_) | ResultRefusal::TooSlow(_))
    }

    fn into_status(self) -> Status {
        match self {
            ResultRefusal::Invalid(m) => Status::invalid_argument(m),
            ResultRefusal::TooSlow(m) => Status::deadline_exceeded(m),
            ResultRefusal::Busy(m) => Status::resource_exhausted(m),
            ResultRefusal::Stream(status) => status,
            ResultRefusal::Internal(m) => Status::internal(m),
            ResultRefusal::Banned(m) => Status::permission_denied(m),
        }
    }
}

impl std::fmt::Display for ResultRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResultRefusal::Invalid(m)
            | ResultRefusal::Busy(m)
            | ResultRefusal::Internal(m)
            | ResultRefusal::Banned(m) => f.write_str(m),
            ResultRefusal::TooSlow(m) => f.write_str(m),
            ResultRefusal::Stream(status) => f.write_str(status.message()),
        }
    }
}

type TaskStream = Pin<Box<dyn Stream<Item = Result<TaskMessage, Status>> + Send>>;

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    async fn register(
        &self,
        request: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        let peer = request.remote_addr().map(|a| a.ip());
        let r = request.into_inner();
        self.count_received(r.encoded_len());
        if r.protocol_version != PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "protocol version {} where this coordinator speaks {PROTOCOL_VERSION}",
                r.protocol_version
            )));
        }
        if !r.job_id.is_empty() {
            self.check_job(&r.job_id)?;
        }
        let name: String = r.worker_name.chars().take(100).collect();
        let worker_id = self.job.register_from(&name, peer).map_err(refused)?;
        Ok(Response::new(RegisterResponse {
            job_id: self.job.id.clone(),
            worker_id,
            job: Some(job_spec(&self.job.config.spec)),
            heartbeat_interval_ms: saturating_u32(self.job.heartbeat_interval().as_millis()),
            max_chunk_bytes: MAX_CHUNK_BYTES,
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let r = request.into_inner();
        self.count_received(r.encoded_len());
        self.check_job(&r.job_id)?;
        let job_done = self.job.heartbeat(r.worker_id).map_err(refused)?;
        Ok(Response::new(HeartbeatResponse { job_done }))
    }

    type TakeTaskStream = TaskStream;

    async fn take_task(
        &self,
        request: Request<TakeTaskRequest>,
    ) -> Result<Response<TaskStream>, Status> {
        let r = request.into_inner();
        self.count_received(r.encoded_len());
        self.check_job(&r.job_id)?;
        let asked_at = Instant::now();
        let deadline = asked_at + LONG_POLL;
        let lease = loop {
            let raised = self.job.raised();
            tokio::pin!(raised);
            raised.as_mut().enable();
            match self
                .job
                .take_task(r.worker_id, &r.holding, asked_at)
                .map_err(refused)?
            {
                Lease::Wait(_) if Instant::now() < deadline => {
                    // Look again when the job raises its wake-up (a layer published, a task
                    // released, the stage changed) or when the next lease may expire.
                    let until = self.job.next_expiry().map_or(deadline, |e| e.min(deadline));
                    let _ = tokio::time::timeout_at(until.into(), raised).await;
                }
                other => break other,
            }
        };
        let messages = match lease {
            Lease::Done => vec![TaskMessage {
                kind: Some(task_message::Kind::Done(JobDone {})),
            }],
            Lease::Wait(reason) => vec![TaskMessage {
                kind: Some(task_message::Kind::Wait(Wait {
                    retry_after_ms: 100,
                    reason: reason.to_string(),
                })),
            }],
            Lease::Task(t) => {
                let level = self.job.config.zstd_level;
                let job = self.job.clone();
                tokio::task::spawn_blocking(move || {
                    // Encoded as the scan goes: the coordinator never holds the states.
                    let (states, bytes) = job
                        .task_input(&t)
                        .map_err(|e| Status::internal(format!("task input: {e}")))?;
                    let chunks =
                        encode_section(Section::InputStates, &bytes, MAX_CHUNK_BYTES, level);
                    let mut messages = vec![TaskMessage {
                        kind: Some(task_message::Kind::Task(Task {
                            task_id: t.id.to_u64(),
                            attempt: t.attempt,
                            table: t.id.table,
                            depth: t.id.depth,
                            first_rank: t.ranks.start,
                            end_rank: t.ranks.end,
                            states,
                            input_bytes: bytes.len() as u64,
                        })),
                    }];
                    messages.extend(chunks.into_iter().map(|c| TaskMessage {
                        kind: Some(task_message::Kind::Input(c)),
                    }));
                    Ok::<_, Status>(messages)
                })
                .await
                .map_err(|e| Status::internal(format!("task input: {e}")))??
            }
        };
        let bytes: usize = messages.iter().map(prost::Message::encoded_len).sum();
        self.job
            .counters
            .bytes_sent
            .fetch_add(bytes as u64, Relaxed);
        let stream = tokio_stream::iter(messages.into_iter().map(Ok));
        Ok(Response::new(Box::pin(stream)))
    }

    async fn deliver_result(
        &self,
        request: Request<Streaming<ResultMessage>>,
    ) -> Result<Response<DeliverResultResponse>, Status> {
        let result = self.receive_result(request).await;
        if let Err(refusal) = &result {
            self.job.counters.refused.count(refusal.code());
        }
        result
    }

    async fn job_status(
        &self,
        _request: Request<JobStatusRequest>,
    ) -> Result<Response<JobStatusResponse>, Status> {
        Ok(Response::new(self.job.status().into()))
    }
}

impl CoordinatorService {
    /// A result off the wire, checked and merged (`DeliverResult`).
    async fn receive_result(
        &self,
        request: Request<Streaming<ResultMessage>>,
    ) -> Result<Response<DeliverResultResponse>, Status> {
        let mut stream = request.into_inner();
        let silence = self.silence();
        let first = next(
            &mut stream,
            silence,
            tokio::time::Instant::now() + 2 * silence,
        )
        .await
        .map_err(ResultRefusal::into_status)?
        .ok_or_else(|| Status::invalid_argument("empty result stream"))?;
        self.count_received(first.encoded_len());
        let Some(result_message::Kind::Header(header)) = first.kind else {
            return Err(Status::invalid_argument("a result starts with its header"));
        };
        self.check_job(&header.job_id)?;
        // The sender first (an unknown or banned worker is told so whatever its header says),
        // then the header made the job's claim.
        self.job.check_sender(header.worker_id).map_err(refused)?;
        let claim = result_claim(&header).map_err(refused)?;
        let accepted = match self.job.check_result(&claim).map_err(refused)? {
            ResultCheck::Drop(reason) => {
                self.job.counters.results_dropped.fetch_add(1, Relaxed);
                tracing::debug!(
                    task = header.task_id,
                    attempt = header.attempt,
                    "result dropped: {reason}"
                );
                return Ok(Response::new(DeliverResultResponse {
                    accepted: false,
                    reason: reason.to_string(),
                }));
            }
            ResultCheck::Accept(a) => a,
        };
        let lease = accepted.lease;
        // One stream per attempt; its bytes charged as they arrive.
        let charge = self
            .results
            .open(
                lease.worker,
                header.task_id,
                lease.attempt,
                accepted
                    .reached_bytes
                    .saturating_add(accepted.reached_states.saturating_mul(8)),
            )
            .map_err(|r| Status::resource_exhausted(r.to_string()))?;
        let merged = self.read_and_merge(accepted, stream, charge).await;
        if let Err(refusal) = &merged
            && refusal.costs_the_lease()
        {
            self.job.give_up_lease(lease, &refusal.to_string());
        }
        let merged = merged.map_err(ResultRefusal::into_status)?;
        if !merged {
            self.job.counters.results_dropped.fetch_add(1, Relaxed);
        }
        Ok(Response::new(DeliverResultResponse {
            accepted: merged,
            reason: if merged {
                String::new()
            } else {
                "the task is done already".into()
            },
        }))
    }

    /// Reads the chunks of an accepted result, checks its states in full and merges them;
    /// whether it was merged (false: another attempt got there first).
    async fn read_and_merge(
        &self,
        accepted: AcceptedResult,
        mut stream: Streaming<ResultMessage>,
        mut charge: ResultCharge,
    ) -> Result<bool, ResultRefusal> {
        // The result's bytes as they arrive, then its decoded states (8 bytes each), count
        // against the bytes of results in flight, its worker's and in all; over them, the
        // worker is told to try again.
        let exhausted = |r: super::budget::BudgetRefusal| ResultRefusal::Busy(r.to_string());
        let mut reader = SectionReader::new(
            Section::ReachedStates,
            accepted.reached_bytes,
            MAX_CHUNK_BYTES,
        );
        let silence = self.silence();
        let deadline = tokio::time::Instant::now()
            + silence
            + Duration::from_secs(accepted.reached_bytes / MIN_RESULT_RATE);
        while let Some(msg) = next(&mut stream, silence, deadline).await? {
            let len = msg.encoded_len();
            self.count_received(len);
            charge.charge(len as u64).map_err(exhausted)?;
            let Some(result_message::Kind::Chunk(chunk)) = msg.kind else {
                return Err(ResultRefusal::Invalid("a second header in a result".into()));
            };
            reader
                .push(&chunk)
                .map_err(|e| ResultRefusal::Invalid(e.to_string()))?;
        }
        charge
            .charge(accepted.reached_states.saturating_mul(8))
            .map_err(exhausted)?;
        let job = self.job.clone();
        tokio::task::spawn_blocking(move || -> Result<bool, ResultRefusal> {
            let _charge = charge;
            let invalid = |e: tilepdb_common::Error| ResultRefusal::Invalid(e.to_string());
            let bytes = reader.finish().map_err(invalid)?;
            // Checked in full before anything is merged: states of the next layer.
            let reached = job.check_reached(&accepted, bytes).map_err(invalid)?;
            // Re-executed by the coordinator if the audit says so: a result that differs is
            // replaced by the coordinator's own, and its worker banned.
            if let Audited::Differs(own) = job.audit_result(&accepted, &reached) {
                let why = format!(
                    "its result for table {} depth {} tile sets {}..{} differs from the \
                     coordinator's re-execution",
                    accepted.lease.table,
                    accepted.lease.depth,
                    accepted.ranks.start,
                    accepted.ranks.end
                );
                job.ban(&job.sender(accepted.lease.worker), &why);
                job.commit_own(&accepted, &own);
                return Err(ResultRefusal::Banned(format!(
                    "this worker is banned: {why}"
                )));
            }
            Ok(job.commit(&accepted, &reached))
        })
        .await
        .map_err(|e| ResultRefusal::Internal(format!("merge: {e}")))?
    }
}
