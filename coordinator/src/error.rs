//! The error type of the coordinator library.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    #[error(transparent)]
    Table(#[from] tilepdb_common::table::TableError),
    #[error(
        "pattern {pattern} needs {needed} of memory to build ({detail}), more than the {limit} \
         it may use (--memory-limit, by default the memory available now); use a smaller pattern, \
         or a machine with more memory"
    )]
    TooLarge {
        pattern: String,
        needed: String,
        detail: String,
        limit: String,
    },
    #[error("cannot build a thread pool: {0}")]
    ThreadPool(String),
    /// The I/O error is part of the message, not a `source`: a source would be printed twice
    /// by reports of the whole chain (`error: DIR: No such file…: No such file…`).
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("check failed for {table}: {reason}")]
    Check { table: String, reason: String },
    #[error(
        "{path}: the disk is full ({error}); free some space and start the coordinator again \
         with the same --data-dir: it resumes from the last completed layer"
    )]
    DiskFull {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("data directory {path}: {reason}")]
    DataDir { path: PathBuf, reason: String },
    #[error("cannot serve: {0}")]
    Serve(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path` (a full disk gets its own message).
    pub fn io(path: impl Into<PathBuf>, error: std::io::Error) -> Error {
        if error.kind() == std::io::ErrorKind::StorageFull
            || error.raw_os_error() == Some(libc::ENOSPC)
        {
            return Error::DiskFull {
                path: path.into(),
                error,
            };
        }
        Error::Io {
            path: path.into(),
            error,
        }
    }
}
