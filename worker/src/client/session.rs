//! One registration with the coordinator, as named steps: heartbeats on their own schedule,
//! tasks taken ahead ([`Session::take_tasks`]), expanded one at a time with the whole pool
//! ([`Session::expand_tasks`]) and each result delivered by a task of its own
//! ([`Session::deliver_and_release`]). Whichever step learns that the session is over (the
//! job is done, the coordinator restarted, a refusal for good) says how it ended.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tilepdb_common::StateSpace;
use tilepdb_common::wire::chunk::{SectionReader, encode_section};
use tilepdb_common::wire::proto::{
    HeartbeatRequest, ResultHeader, ResultMessage, Section, TakeTaskRequest, Task, result_message,
    task_message,
};
use tilepdb_common::wire::region_lists::{decode_region_states, encode_region_states};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tonic::Status;

use super::retry::{Backoff, Failure, classify};
use super::{Client, WorkerConfig, WorkerSummary};
use crate::error::Error;
use crate::region_task::{RegionTable, check_task, run_region_task};

/// How a session (one registration) ends.
pub(super) enum SessionEnd {
    Done,
    Reregister,
    Fatal(Error),
}

/// Tasks a worker holds at once: one expanding, one fetched ahead (or being delivered), so
/// that neither the network nor the coordinator's merge leaves the cores idle.
const TASKS_IN_FLIGHT: usize = 2;

/// One registration: a fetcher takes tasks ahead, an executor expands them one at a time
/// with the whole pool and hands each result to a delivery of its own, and heartbeats go on
/// beside them.
#[derive(Clone)]
pub(super) struct Session {
    pub(super) client: Client,
    pub(super) job_id: String,
    pub(super) worker_id: u64,
    pub(super) spaces: Arc<Vec<StateSpace>>,
    /// The region index of each table (the job searches on it).
    pub(super) regions: Arc<Vec<RegionTable>>,
    pub(super) pool: Arc<rayon::ThreadPool>,
    pub(super) config: Arc<WorkerConfig>,
    pub(super) max_chunk: u32,
    pub(super) summary: Arc<Mutex<WorkerSummary>>,
    /// Attempts this worker works on.
    pub(super) holding: Arc<Mutex<Vec<u64>>>,
}

/// A task and its input, with its place among the tasks in flight.
struct Fetched {
    task: Task,
    input: Vec<u64>,
    _permit: OwnedSemaphorePermit,
}

impl Session {
    /// Runs the session's three activities — heartbeats, taking tasks, expanding them — until
    /// one of them ends it.
    pub(super) async fn run(self, heartbeat_interval: Duration) -> SessionEnd {
        let done = Arc::new(AtomicBool::new(false));
        let (end_tx, mut end_rx) = mpsc::channel::<SessionEnd>(8);
        let (task_tx, task_rx) = mpsc::channel::<Fetched>(1);
        let handles = [
            tokio::spawn(heartbeats(
                self.client.clone(),
                self.job_id.clone(),
                self.worker_id,
                done.clone(),
                heartbeat_interval,
            )),
            tokio::spawn(self.clone().take_tasks(done, task_tx, end_tx.clone())),
            tokio::spawn(self.clone().expand_tasks(task_rx, end_tx)),
        ];
        let end = end_rx.recv().await.unwrap_or(SessionEnd::Reregister);
        for h in handles {
            h.abort();
        }
        end
    }

    /// Takes tasks ahead, [`TASKS_IN_FLIGHT`] held at most, and hands them to
    /// [`Session::expand_tasks`]; ends the session when the job is done, the coordinator no
    /// longer knows this worker, or a failure is fatal.
    async fn take_tasks(
        self,
        done: Arc<AtomicBool>,
        tasks: mpsc::Sender<Fetched>,
        end: mpsc::Sender<SessionEnd>,
    ) {
        let permits = Arc::new(Semaphore::new(TASKS_IN_FLIGHT));
        let mut backoff = Backoff::new(self.config.give_up_after, &self.config.coordinator.address);
        loop {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            if done.load(Relaxed) {
                let _ = end.send(SessionEnd::Done).await;
                return;
            }
            let ended = match self.fetch().await {
                Ok(Some((task, input))) => {
                    backoff.ok();
                    self.holding.lock().unwrap().push(task.attempt);
                    let fetched = Fetched {
                        task,
                        input,
                        _permit: permit,
                    };
                    if tasks.send(fetched).await.is_err() {
                        return;
                    }
                    None
                }
                Ok(None) => {
                    backoff.ok();
                    None
                }
                Err(Failure::Transient(s)) => backoff.failed(&s).await.err().map(SessionEnd::Fatal),
                Err(Failure::Dropped(s)) => {
                    tracing::warn!(code = ?s.code(), "task dropped: {}", s.message());
                    None
                }
                Err(Failure::Reregister) => Some(SessionEnd::Reregister),
                Err(Failure::Fatal(e)) => Some(SessionEnd::Fatal(e)),
                Err(Failure::JobDone) => Some(SessionEnd::Done),
            };
            if let Some(ended) = ended {
                let _ = end.send(ended).await;
                return;
            }
        }
    }

    /// Expands the tasks taken, one at a time with the whole pool, and hands each result to a
    /// delivery of its own ([`Session::deliver_and_release`]).
    async fn expand_tasks(self, mut tasks: mpsc::Receiver<Fetched>, end: mpsc::Sender<SessionEnd>) {
        while let Some(Fetched {
            task,
            input,
            _permit: permit,
        }) = tasks.recv().await
        {
            let Some(result) = self.expand(&task, input).await else {
                self.release(task.attempt);
                continue;
            };
            if !self.config.task_delay.is_zero() {
                tokio::time::sleep(self.config.task_delay).await;
            }
            tokio::spawn(
                self.clone()
                    .deliver_and_release(task, result, permit, end.clone()),
            );
        }
    }

    /// Delivers a task's result, then gives its place among the tasks in flight back. A result
    /// not delivered is dropped: the coordinator hands the task out again.
    async fn deliver_and_release(
        self,
        task: Task,
        result: Expanded,
        permit: OwnedSemaphorePermit,
        end: mpsc::Sender<SessionEnd>,
    ) {
        let outcome = self.deliver(&task, result).await;
        self.release(task.attempt);
        drop(permit);
        let ended = match outcome {
            Ok(()) | Err(Failure::JobDone) => None,
            Err(Failure::Reregister) => Some(SessionEnd::Reregister),
            Err(Failure::Fatal(e)) => Some(SessionEnd::Fatal(e)),
            Err(Failure::Transient(s) | Failure::Dropped(s)) => {
                tracing::warn!(
                    code = ?s.code(),
                    attempt = task.attempt,
                    "result not delivered (the task will be handed out again): {}",
                    s.message()
                );
                None
            }
        };
        if let Some(ended) = ended {
            let _ = end.send(ended).await;
        }
    }

    /// Forgets the attempt `attempt`: this worker no longer works on it.
    fn release(&self, attempt: u64) {
        self.holding.lock().unwrap().retain(|&a| a != attempt);
    }

    /// Takes a task and reads its input; `None` after waiting when there was none.
    async fn fetch(&self) -> Result<Option<(Task, Vec<u64>)>, Failure> {
        let request = TakeTaskRequest {
            job_id: self.job_id.clone(),
            worker_id: self.worker_id,
            holding: self.holding.lock().unwrap().clone(),
        };
        let mut stream = self
            .client
            .clone()
            .take_task(request)
            .await
            .map_err(classify)?
            .into_inner();
        let first = stream
            .message()
            .await
            .map_err(classify)?
            .ok_or_else(|| Failure::Transient(Status::unavailable("empty task stream")))?;
        let mut received = prost::Message::encoded_len(&first) as u64;
        let task = match first.kind {
            Some(task_message::Kind::Task(t)) => t,
            Some(task_message::Kind::Wait(w)) => {
                tracing::debug!(reason = %w.reason, "no task yet");
                let pause = Duration::from_millis(u64::from(w.retry_after_ms.clamp(1, 5000)));
                tokio::time::sleep(pause).await;
                return Ok(None);
            }
            Some(task_message::Kind::Done(_)) => return Err(Failure::JobDone),
            _ => {
                return Err(Failure::Transient(Status::internal(
                    "task stream starts with neither task, wait nor done",
                )));
            }
        };
        let (space, region) = check_task(&task, &self.spaces, &self.regions)
            .map_err(|m| Failure::Dropped(Status::invalid_argument(m)))?;
        let mut reader = SectionReader::new(Section::InputStates, task.input_bytes, self.max_chunk);
        while !reader.is_complete() {
            let msg =
                stream.message().await.map_err(classify)?.ok_or_else(|| {
                    Failure::Transient(Status::unavailable("task input cut short"))
                })?;
            received += prost::Message::encoded_len(&msg) as u64;
            match msg.kind {
                Some(task_message::Kind::Input(chunk)) => reader
                    .push(&chunk)
                    .map_err(|e| Failure::Dropped(Status::data_loss(e.to_string())))?,
                _ => {
                    return Err(Failure::Dropped(Status::data_loss(
                        "task input interrupted by another message",
                    )));
                }
            }
        }
        let own = region.states_of(task.first_rank..task.end_rank);
        let shape = region.list_shape(space, task.depth);
        let input = reader
            .finish()
            .and_then(|b| decode_region_states(&b, task.states, &shape, own))
            .map_err(|e| Failure::Dropped(Status::data_loss(e.to_string())))?;
        self.summary.lock().unwrap().bytes_received += received;
        Ok(Some((task, input)))
    }

    /// Expands a task with the whole pool; its result, encoded.
    async fn expand(&self, task: &Task, input: Vec<u64>) -> Option<Expanded> {
        let (pool, spaces) = (self.pool.clone(), self.spaces.clone());
        let regions = self.regions.clone();
        let (level, max_chunk) = (self.config.zstd_level, self.max_chunk);
        let (table, sets) = (task.table as usize, task.first_rank..task.end_rank);
        let depth = task.depth;
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            let (space, region) = (&spaces[table], &regions[table]);
            let out = pool.install(|| run_region_task(region, sets, &input));
            // The states reached are those of the next layer.
            let shape = region.list_shape(space, depth + 1);
            let list = encode_region_states(&shape, 0..shape.states(), &out.reached)?;
            let chunks = encode_section(Section::ReachedStates, &list, max_chunk, level);
            Ok::<_, tilepdb_common::Error>(Expanded {
                reached_states: out.reached.len() as u64,
                reached_bytes: list.len() as u64,
                stats: out.stats,
                chunks,
                started,
            })
        })
        .await;
        match result {
            Ok(Ok(r)) => Some(r),
            Ok(Err(e)) => {
                tracing::error!("result not encoded: {e}");
                None
            }
            Err(e) => {
                tracing::error!("expansion failed: {e}");
                None
            }
        }
    }

    /// Sends a task's result.
    async fn deliver(&self, task: &Task, result: Expanded) -> Result<(), Failure> {
        let header = ResultHeader {
            job_id: self.job_id.clone(),
            worker_id: self.worker_id,
            task_id: task.task_id,
            attempt: task.attempt,
            table: task.table,
            depth: task.depth,
            first_rank: task.first_rank,
            end_rank: task.end_rank,
            reached_states: result.reached_states,
            reached_bytes: result.reached_bytes,
            expanded: result.stats.expanded,
            generated: result.stats.generated,
        };
        let mut msgs = vec![ResultMessage {
            kind: Some(result_message::Kind::Header(header)),
        }];
        msgs.extend(result.chunks.into_iter().map(|c| ResultMessage {
            kind: Some(result_message::Kind::Chunk(c)),
        }));
        let sent: u64 = msgs
            .iter()
            .map(|m| prost::Message::encoded_len(m) as u64)
            .sum();
        let response = self
            .client
            .clone()
            .deliver_result(tokio_stream::iter(msgs))
            .await
            .map_err(classify)?
            .into_inner();
        {
            let mut summary = self.summary.lock().unwrap();
            summary.bytes_sent += sent;
            summary.tasks += 1;
            summary.expanded += result.stats.expanded;
        }
        tracing::debug!(
            task = task.task_id,
            attempt = task.attempt,
            depth = task.depth,
            expanded = result.stats.expanded,
            bytes = sent,
            ms = u64::try_from(result.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            accepted = response.accepted,
            "task delivered {}",
            response.reason
        );
        Ok(())
    }
}

/// A task's result, ready to send.
struct Expanded {
    reached_states: u64,
    reached_bytes: u64,
    stats: tilepdb_common::region_expand::ExpandStats,
    chunks: Vec<tilepdb_common::wire::proto::Chunk>,
    started: Instant,
}

async fn heartbeats(
    mut client: Client,
    job_id: String,
    worker_id: u64,
    done: Arc<AtomicBool>,
    interval: Duration,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let request = HeartbeatRequest {
            job_id: job_id.clone(),
            worker_id,
        };
        let call = tokio::time::timeout(
            interval.max(Duration::from_secs(1)),
            client.heartbeat(request),
        );
        match call.await {
            Ok(Ok(r)) => {
                if r.into_inner().job_done {
                    done.store(true, Relaxed);
                }
            }
            Ok(Err(s)) => tracing::debug!(code = ?s.code(), "heartbeat failed: {}", s.message()),
            Err(_) => tracing::debug!("heartbeat timed out"),
        }
    }
}
