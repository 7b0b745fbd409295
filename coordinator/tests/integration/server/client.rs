//! A client that speaks the coordinator's protocol by hand, as a hostile client (or one that
//! does a worker's job itself) would: every call with a bearer token, a refusal as its gRPC
//! code.

use tilepdb_common::wire::chunk::SectionReader;
use tilepdb_common::wire::proto::coordinator_client::CoordinatorClient;
use tilepdb_common::wire::proto::{
    Chunk, RegisterRequest, ResultHeader, ResultMessage, Section, TakeTaskRequest, Task,
    result_message, task_message,
};
use tilepdb_common::wire::{MAX_CHUNK_BYTES, PROTOCOL_VERSION};
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

/// A client of the coordinator's service.
pub type Client = CoordinatorClient<Channel>;

/// `message` with `token` as its bearer token.
pub fn request<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(message);
    let v: MetadataValue<_> = format!("Bearer {token}").parse().unwrap();
    r.metadata_mut().insert("authorization", v);
    r
}

/// A registration of this protocol version for whatever job the coordinator runs.
pub fn register_request() -> RegisterRequest {
    RegisterRequest {
        protocol_version: PROTOCOL_VERSION,
        job_id: String::new(),
        worker_name: "hostile".into(),
        threads: 1,
    }
}

/// Registers with `token`; the job id and the worker id.
pub async fn register(client: &mut Client, token: &str) -> Result<(String, u64), Code> {
    client
        .register(request(register_request(), token))
        .await
        .map(|r| {
            let r = r.into_inner();
            (r.job_id, r.worker_id)
        })
        .map_err(|s| s.code())
}

/// Leases a task to `worker` with `token` (asking again while the coordinator says to wait):
/// the task and the bytes of its input section, or `None` once the job is done; the code of
/// a refusal.
pub async fn take(
    client: &mut Client,
    job: &str,
    worker: u64,
    token: &str,
) -> Result<Option<(Task, Vec<u8>)>, Code> {
    loop {
        let mut s = client
            .take_task(request(
                TakeTaskRequest {
                    job_id: job.into(),
                    worker_id: worker,
                    holding: vec![],
                },
                token,
            ))
            .await
            .map_err(|s| s.code())?
            .into_inner();
        let task = match s.message().await.unwrap().unwrap().kind.unwrap() {
            task_message::Kind::Task(t) => t,
            task_message::Kind::Wait(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
            task_message::Kind::Done(_) => return Ok(None),
            task_message::Kind::Input(_) => panic!("input before its task"),
        };
        let mut reader =
            SectionReader::new(Section::InputStates, task.input_bytes, MAX_CHUNK_BYTES);
        while !reader.is_complete() {
            let Some(task_message::Kind::Input(chunk)) = s.message().await.unwrap().unwrap().kind
            else {
                panic!("a task's input chunks follow it");
            };
            reader.push(&chunk).unwrap();
        }
        return Ok(Some((task, reader.finish().unwrap())));
    }
}

/// The header of a result of `task` from `worker` that declares `reached_states` states
/// listed in `reached_bytes` bytes (every input state expanded, one successor per state
/// listed).
pub fn result_header(
    job: &str,
    worker: u64,
    task: &Task,
    reached_states: u64,
    reached_bytes: u64,
) -> ResultHeader {
    ResultHeader {
        job_id: job.into(),
        worker_id: worker,
        task_id: task.task_id,
        attempt: task.attempt,
        table: task.table,
        depth: task.depth,
        first_rank: task.first_rank,
        end_rank: task.end_rank,
        reached_states,
        reached_bytes,
        expanded: task.states,
        generated: reached_states,
    }
}

/// Delivers a result, `header` then `chunks`, with `token`; whether it was merged.
pub async fn deliver(
    client: &mut Client,
    header: ResultHeader,
    chunks: Vec<Chunk>,
    token: &str,
) -> Result<bool, Code> {
    let mut msgs = vec![ResultMessage {
        kind: Some(result_message::Kind::Header(header)),
    }];
    msgs.extend(chunks.into_iter().map(|c| ResultMessage {
        kind: Some(result_message::Kind::Chunk(c)),
    }));
    client
        .deliver_result(request(tokio_stream::iter(msgs), token))
        .await
        .map(|r| r.into_inner().accepted)
        .map_err(|s| s.code())
}
