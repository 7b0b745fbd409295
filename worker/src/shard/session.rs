//! The worker's sessions with the control plane: joining (again after a restarted
//! coordinator), the heartbeats, and the loop that takes each numbered step and reports it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tilepdb_common::table::Encoding;
use tilepdb_common::wire::PROTOCOL_VERSION;
use tilepdb_common::wire::proto::shard_control_client::ShardControlClient;
use tilepdb_common::wire::proto::step_response::Command;
use tilepdb_common::wire::proto::{JoinRequest, ShardHeartbeatRequest, StepRequest};

use super::checkpoint::Checkpoints;
use super::peer::PeerState;
use super::{Control, ShardConfig, ShardSummary, Work};
use crate::client::retry::{ControlFailure, classify_control};
use crate::error::{Error, Result};

/// Joins, then takes the job's steps until it is done; joins again when the coordinator
/// no longer knows this worker's session (it was restarted).
pub(super) async fn steps(
    config: &ShardConfig,
    advertise: &str,
    state: &Arc<PeerState>,
) -> Result<ShardSummary> {
    let mut control = ShardControlClient::with_interceptor(
        config.worker.coordinator.channel()?,
        config.worker.coordinator.auth()?,
    );
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(config.worker.threads)
            .thread_name(|i| format!("tilepdb-shard-{i}"))
            .build()
            .map_err(|e| Error::Start(format!("cannot start the threads: {e}")))?,
    );
    let mut summary = ShardSummary::default();
    loop {
        let joined = join(&mut control, config, advertise).await?;
        let job = joined
            .job
            .ok_or_else(|| Error::Refused("the join answer has no job".into()))?;
        let encoding: Encoding = joined
            .encoding
            .parse()
            .map_err(|e| Error::Refused(format!("the job's encoding: {e}")))?;
        state
            .job_id
            .write()
            .expect("job id lock")
            .clone_from(&joined.job_id);
        let heartbeat = tokio::spawn(heartbeats(
            control.clone(),
            ShardHeartbeatRequest {
                job_id: joined.job_id.clone(),
                shard: config.shard,
                session: joined.session,
            },
            Duration::from_millis(u64::from(joined.heartbeat_interval_ms.max(100))),
        ));
        let mut work = Work {
            config: config.clone(),
            job_id: joined.job_id.clone(),
            spaces: job.spaces()?,
            encoding,
            state: state.clone(),
            pool: pool.clone(),
            peers: None,
            proof_peers: None,
            checkpoints: config
                .data_dir
                .as_ref()
                .map(|d| Checkpoints::new(d, &joined.job_id, config.shard, config.shards)),
            summary: std::mem::take(&mut summary),
            outbox_buffers: Arc::default(),
        };
        let outcome = session(
            &mut control,
            config,
            &joined.job_id,
            joined.session,
            &mut work,
        )
        .await;
        heartbeat.abort();
        summary = work.summary;
        match outcome {
            Session::Ended(result) => return result.map(|()| summary),
            Session::Forgotten => {
                tracing::warn!(
                    "the coordinator no longer knows this shard (restarted?); joining again"
                );
            }
        }
    }
}

/// How a session with the coordinator ended.
enum Session {
    /// The job ended (done, failed, or the coordinator gone for good).
    Ended(Result<()>),
    /// The coordinator does not know the session: join again.
    Forgotten,
}

/// Takes the steps of one session.
async fn session(
    control: &mut Control,
    config: &ShardConfig,
    job_id: &str,
    session: u64,
    work: &mut Work,
) -> Session {
    let mut request = StepRequest {
        job_id: job_id.to_string(),
        shard: config.shard,
        session,
        done_step: 0,
        report: None,
    };
    let mut unreachable_since: Option<Instant> = None;
    loop {
        let answer = match control.next_step(request.clone()).await {
            Ok(a) => {
                unreachable_since = None;
                a.into_inner()
            }
            Err(status) if classify_control(&status) == ControlFailure::Transient => {
                let since = *unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() > config.worker.give_up_after {
                    return Session::Ended(Err(Error::Unreachable {
                        address: config.worker.coordinator.address.clone(),
                        seconds: config.worker.give_up_after.as_secs(),
                        last: status.message().to_string(),
                    }));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(status) if classify_control(&status) == ControlFailure::Forgotten => {
                return Session::Forgotten;
            }
            Err(status) => {
                return Session::Ended(Err(Error::Refused(status.message().to_string())));
            }
        };
        let report = match answer.command {
            None | Some(Command::Wait(_)) => continue,
            Some(Command::Done(_)) => {
                if let Some(c) = &work.checkpoints {
                    c.remove_all();
                }
                return Session::Ended(Ok(()));
            }
            Some(Command::Failed(reason)) => {
                return Session::Ended(Err(Error::Refused(format!("the job failed: {reason}"))));
            }
            Some(command) => work.step(command).await,
        };
        request.done_step = answer.step;
        request.report = Some(report);
    }
}

async fn join(
    control: &mut Control,
    config: &ShardConfig,
    advertise: &str,
) -> Result<tilepdb_common::wire::proto::JoinResponse> {
    let request = JoinRequest {
        protocol_version: PROTOCOL_VERSION,
        job_id: config.worker.job_id.clone().unwrap_or_default(),
        shard: config.shard,
        shards: config.shards,
        peer_address: advertise.to_string(),
        worker_name: config.worker.name.clone(),
    };
    let started = Instant::now();
    loop {
        match control.join(request.clone()).await {
            Ok(r) => return Ok(r.into_inner()),
            // Unreachable, or the shard still owned by a worker not yet found lost: this may be
            // its replacement.
            Err(s) => match classify_control(&s) {
                kind @ (ControlFailure::Transient | ControlFailure::SlotTaken)
                    if started.elapsed() < config.worker.give_up_after =>
                {
                    if kind == ControlFailure::SlotTaken {
                        tracing::info!("{}; trying again", s.message());
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                ControlFailure::Transient => {
                    return Err(Error::Unreachable {
                        address: config.worker.coordinator.address.clone(),
                        seconds: config.worker.give_up_after.as_secs(),
                        last: s.message().to_string(),
                    });
                }
                _ => return Err(Error::Refused(s.message().to_string())),
            },
        }
    }
}

async fn heartbeats(mut control: Control, request: ShardHeartbeatRequest, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let _ = control.shard_heartbeat(request.clone()).await;
    }
}
