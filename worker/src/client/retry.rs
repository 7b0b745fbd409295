//! What a worker does after a call failed: the failure's kind, decided from its status code
//! in one place (for the task worker's calls to the coordinator, [`classify`]; for a shard
//! worker's calls to the control plane, [`classify_control`], and to its peers,
//! [`peer_unreachable`]), and the backoff while the coordinator is unreachable.

use std::time::{Duration, Instant};

use tonic::{Code, Status};

use crate::error::{Error, Result};

/// Exponential backoff while the coordinator is unreachable.
pub(super) struct Backoff {
    delay: Duration,
    failing_since: Option<Instant>,
    give_up_after: Duration,
    address: String,
}

impl Backoff {
    pub(super) fn new(give_up_after: Duration, address: &str) -> Backoff {
        Backoff {
            delay: Duration::from_millis(50),
            failing_since: None,
            give_up_after,
            address: address.to_string(),
        }
    }

    pub(super) fn ok(&mut self) {
        if self.failing_since.take().is_some() {
            tracing::info!("coordinator reachable again");
        }
        self.delay = Duration::from_millis(50);
    }

    pub(super) async fn failed(&mut self, status: &Status) -> Result<()> {
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        // The coordinator answered and refused for now (its limits): say so, not
        // "unreachable".
        let busy = status.code() == Code::ResourceExhausted;
        if since.elapsed() > self.give_up_after {
            let (address, seconds, last) = (
                self.address.clone(),
                since.elapsed().as_secs(),
                status.message().to_string(),
            );
            return Err(if busy {
                Error::Busy {
                    address,
                    seconds,
                    last,
                }
            } else {
                Error::Unreachable {
                    address,
                    seconds,
                    last,
                }
            });
        }
        let retry_in_ms = u64::try_from(self.delay.as_millis()).unwrap_or(u64::MAX);
        if busy {
            tracing::warn!(
                retry_in_ms,
                "the coordinator refused for now: {}",
                status.message()
            );
        } else {
            tracing::warn!(
                code = ?status.code(),
                retry_in_ms,
                "coordinator unreachable: {}",
                status.message()
            );
        }
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Duration::from_secs(2));
        Ok(())
    }
}

/// What to do after a call failed.
pub(super) enum Failure {
    /// Unreachable, restarting, overloaded: back off and retry.
    Transient(Status),
    /// The coordinator does not know this worker (it restarted): register again.
    Reregister,
    /// Refused for good (token, version, job).
    Fatal(Error),
    /// This task's result was refused: drop it and go on.
    Dropped(Status),
    /// The job is done.
    JobDone,
}

/// The kind of failure a call's `status` is: the one place where a status code decides what
/// the worker does next.
pub(super) fn classify(status: Status) -> Failure {
    match status.code() {
        Code::Unauthenticated | Code::PermissionDenied | Code::FailedPrecondition => {
            Failure::Fatal(Error::Refused(format!(
                "{:?}: {}",
                status.code(),
                status.message()
            )))
        }
        Code::NotFound => Failure::Reregister,
        Code::InvalidArgument | Code::OutOfRange => Failure::Dropped(status),
        _ => Failure::Transient(status),
    }
}

/// What to do after a shard worker's call to the control plane failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ControlFailure {
    /// Unreachable, restarting, overloaded: wait and try again.
    Transient,
    /// The shard is still held by a worker not yet found lost (this may be its replacement).
    SlotTaken,
    /// The control plane does not know this shard's session (it restarted, or found the shard
    /// lost): join again.
    Forgotten,
    /// Refused for good.
    Refused,
}

/// The kind of failure a shard worker's call to the control plane is. A connection cut under
/// a call (the coordinator killed while it held the call's long poll) comes as `Cancelled`
/// (hyper's "connection closed"), `Internal` (a broken pipe, an HTTP/2 error) or `Aborted`,
/// none of which the control plane sends: they are tried again, as `Unavailable` is.
pub(crate) fn classify_control(status: &Status) -> ControlFailure {
    match status.code() {
        Code::Unavailable
        | Code::Unknown
        | Code::ResourceExhausted
        | Code::DeadlineExceeded
        | Code::Cancelled
        | Code::Internal
        | Code::Aborted => ControlFailure::Transient,
        Code::AlreadyExists => ControlFailure::SlotTaken,
        Code::NotFound => ControlFailure::Forgotten,
        _ => ControlFailure::Refused,
    }
}

/// Whether a push to a peer failed because the peer could not be reached (gone, restarting,
/// the connection cut), not because it refused the list.
pub(crate) fn peer_unreachable(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DeadlineExceeded
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_worker_retries_what_is_transient_and_joins_again_when_forgotten() {
        let of = |code| classify_control(&Status::new(code, "x"));
        assert_eq!(of(Code::Unavailable), ControlFailure::Transient);
        // What a connection cut under a call gives (hyper's "connection closed", a broken
        // pipe, an HTTP/2 error): the coordinator restarting, not refusing.
        assert_eq!(of(Code::Cancelled), ControlFailure::Transient);
        assert_eq!(of(Code::Internal), ControlFailure::Transient);
        assert_eq!(of(Code::Aborted), ControlFailure::Transient);
        assert_eq!(of(Code::Unauthenticated), ControlFailure::Refused);
        assert_eq!(of(Code::InvalidArgument), ControlFailure::Refused);
        assert_eq!(of(Code::ResourceExhausted), ControlFailure::Transient);
        assert_eq!(of(Code::AlreadyExists), ControlFailure::SlotTaken);
        assert_eq!(of(Code::NotFound), ControlFailure::Forgotten);
        assert_eq!(of(Code::FailedPrecondition), ControlFailure::Refused);
        assert!(peer_unreachable(&Status::cancelled("cut")));
        assert!(!peer_unreachable(&Status::resource_exhausted("full")));
        assert!(!peer_unreachable(&Status::invalid_argument("bad list")));
    }
}
