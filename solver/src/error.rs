//! The error type of the solver library.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    #[error(transparent)]
    Table(#[from] tilepdb_common::table::TableError),
    /// A plot that could not be written.
    #[error(transparent)]
    Plot(#[from] tilepdb_common::plot::PlotError),
    #[error("the tables are for {tables}, the state is for {state}")]
    Mismatch { tables: String, state: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("solution check failed: {0}")]
    BadSolution(String),
    #[error("{0}")]
    Fetch(String),
    /// A heuristic comparison that cannot run as asked.
    #[error("{0}")]
    Bench(String),
    #[error("{url} refused {what}: {message} ({code:?})")]
    Remote {
        url: String,
        what: String,
        code: tonic::Code,
        message: String,
    },
    /// The I/O error is part of the message (not a `source`, which reports would print twice).
    #[error("{path}: {error}")]
    Io {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
}

impl Error {
    pub fn io(path: impl Into<std::path::PathBuf>, error: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            error,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
