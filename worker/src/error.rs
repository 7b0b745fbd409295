//! The error type of the worker library.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    #[error("the coordinator refused this worker: {0}")]
    Refused(String),
    #[error("the coordinator at {address} was unreachable for {seconds} s; giving up ({last})")]
    Unreachable {
        address: String,
        seconds: u64,
        last: String,
    },
    #[error("cannot start the worker: {0}")]
    Start(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
