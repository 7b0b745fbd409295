//! The error type of the worker library.

use thiserror::Error;

/// Everything that can go wrong in a worker.
#[derive(Debug, Error)]
pub enum Error {
    /// A board, pattern, state or message error.
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    /// The coordinator refused to register this worker.
    #[error("the coordinator refused this worker: {0}")]
    Refused(String),
    /// The coordinator could not be reached for longer than the worker waits.
    #[error("the coordinator at {address} was unreachable for {seconds} s; giving up ({last})")]
    Unreachable {
        /// The coordinator's address.
        address: String,
        /// How long the worker tried.
        seconds: u64,
        /// The last connection error.
        last: String,
    },
    /// The coordinator answered, but kept refusing for now (busy, full) for longer than the
    /// worker waits.
    #[error("the coordinator at {address} kept refusing for {seconds} s; giving up ({last})")]
    Busy {
        /// The coordinator's address.
        address: String,
        /// How long the worker tried.
        seconds: u64,
        /// The last refusal.
        last: String,
    },
    /// A shard's checkpoint that cannot be written or read back.
    #[error("shard checkpoint: {0}")]
    Checkpoint(String),
    /// Another shard could not be reached: the step can be done again once it is back.
    #[error("{0}")]
    PeerUnreachable(String),
    /// The worker could not start (runtime, address).
    #[error("cannot start the worker: {0}")]
    Start(String),
}

/// The result of the worker library's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
