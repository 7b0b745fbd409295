//! The error type of the coordinator library.

use std::path::PathBuf;

use thiserror::Error;

/// Everything that can go wrong building, checking, serving or storing tables.
#[derive(Debug, Error)]
pub enum Error {
    /// A board, pattern, state or message error.
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    /// A table file, set or encoding error.
    #[error(transparent)]
    Table(#[from] tilepdb_common::table::TableError),
    /// A table that fails its proof, or a file that cannot be read for one.
    #[error(transparent)]
    Proof(#[from] tilepdb_proof::Error),
    /// A table whose build needs more memory than the process may use.
    #[error(
        "pattern {pattern} needs {needed} of memory to build ({detail}), more than the {limit} \
         it may use (the memory limit asked for, by default the memory available now); use a \
         smaller pattern, or a machine with more memory"
    )]
    TooLarge {
        /// The pattern's tiles.
        pattern: String,
        /// The memory the build needs, for people.
        needed: String,
        /// What the memory is for.
        detail: String,
        /// The memory the process may use, for people.
        limit: String,
    },
    /// The thread pool could not be made.
    #[error("cannot build a thread pool: {0}")]
    ThreadPool(String),
    /// The I/O error is part of the message, not a `source`: a source would be printed twice
    /// by reports of the whole chain (`error: DIR: No such file…: No such file…`).
    #[error("{path}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A built table that fails one of the facts every table satisfies.
    #[error("check failed for {table}: {reason}")]
    Check {
        /// The table.
        table: String,
        /// The fact that fails.
        reason: String,
    },
    /// A write that found the disk full.
    #[error(
        "{path}: the disk is full ({error}); free some space and start the coordinator again \
         with the same --data-dir: it resumes from the last completed layer"
    )]
    DiskFull {
        /// The file written.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A data directory that cannot hold or resume the job.
    #[error("data directory {path}: {reason}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The coordinator's service could not start or stopped.
    #[error("cannot serve: {0}")]
    Serve(String),
    /// A sharded build that cannot go on (a shard failed, fell silent or sent bad data).
    #[error("sharded build: {0}")]
    Shards(String),
    /// A file system without room for what the job will write there.
    #[error(
        "{path} has {free} free, the job needs {needed} there ({what}); free some space or use another directory"
    )]
    NoRoom {
        /// The directory (or the nearest existing one above it).
        path: PathBuf,
        /// Bytes free there, for people.
        free: String,
        /// Bytes needed there, for people.
        needed: String,
        /// What they are for.
        what: String,
    },
}

/// The result of the coordinator library's functions.
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
