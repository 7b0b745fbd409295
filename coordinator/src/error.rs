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
        "pattern {pattern} needs {needed} of memory to build ({detail}), more than the {limit} allowed; \
         use a smaller pattern or raise --memory-limit"
    )]
    TooLarge {
        pattern: String,
        needed: String,
        detail: String,
        limit: String,
    },
    #[error("cannot build a thread pool: {0}")]
    ThreadPool(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("check failed for {table}: {reason}")]
    Check { table: String, reason: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
