//! The error type of the solver library.

use thiserror::Error;

/// Everything that can go wrong evaluating, searching, comparing or downloading.
#[derive(Debug, Error)]
pub enum Error {
    /// A board, pattern or state error.
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    /// A table file, set or encoding error.
    #[error(transparent)]
    Table(#[from] tilepdb_common::table::TableError),
    /// A plot that could not be written.
    #[error(transparent)]
    Plot(#[from] tilepdb_common::plot::PlotError),
    /// Tables of another board or goal than the state's.
    #[error("the tables are for {tables}, the state is for {state}")]
    Mismatch {
        /// The tables' board and goal.
        tables: String,
        /// The state's board and goal.
        state: String,
    },
    /// A catalogue whose tables cannot be found or read as asked.
    #[error("{0}")]
    Catalogue(String),
    /// A search or heuristic asked for something it does not do.
    #[error("{0}")]
    Unsupported(String),
    /// A move-pruning machine file that cannot be used (what is wrong with it).
    #[error("bad move-pruning machine: {0}")]
    BadMachine(String),
    /// A move-pruning machine learned for another board than the search's.
    #[error("the move-pruning machine is for the {machine} board, the search is on {search}")]
    MachineBoard {
        /// The machine's board.
        machine: String,
        /// The search's board.
        search: String,
    },
    /// A solution that does not replay to the goal (a bug, never input).
    #[error("solution check failed: {0}")]
    BadSolution(String),
    /// A download that cannot be made or kept.
    #[error("{0}")]
    Fetch(String),
    /// A heuristic comparison that cannot run as asked.
    #[error("{0}")]
    Bench(String),
    /// A coordinator that refused a request.
    #[cfg(feature = "fetch")]
    #[error("{url} refused {what}: {message} ({code:?})")]
    Remote {
        /// The coordinator's address.
        url: String,
        /// What was asked.
        what: String,
        /// The gRPC status code.
        code: tonic::Code,
        /// The coordinator's message.
        message: String,
    },
    /// The I/O error is part of the message (not a `source`, which reports would print twice).
    #[error("{path}: {error}")]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<std::path::PathBuf>, error: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            error,
        }
    }
}

/// The result of the solver library's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
