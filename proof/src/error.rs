//! The error type of the proofs.

use thiserror::Error;

/// A table that fails a proof, or a table file that cannot be read for one.
#[derive(Debug, Error)]
pub enum Error {
    /// A table file, set or encoding error.
    #[error(transparent)]
    Table(#[from] tilepdb_common::table::TableError),
    /// A board, pattern or index error.
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    /// A table that fails one of the facts every table satisfies, or its proof.
    #[error("check failed for {table}: {reason}")]
    Check {
        /// The table.
        table: String,
        /// The fact that fails.
        reason: String,
    },
    /// A proof shard's file of entries that could not be written or read back, or that was
    /// changed on disk after it was written.
    #[error("the proof shard's entries file {}: {reason}", path.display())]
    EntriesFile {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// The result of the proofs.
pub type Result<T, E = Error> = std::result::Result<T, E>;
