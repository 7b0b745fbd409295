//! The error type of the solver library.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Domain(#[from] tilepdb_common::Error),
    #[error(transparent)]
    Table(#[from] tilepdb_common::table::TableError),
    #[error("the tables are for {tables}, the state is for {state}")]
    Mismatch { tables: String, state: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("solution check failed: {0}")]
    BadSolution(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
