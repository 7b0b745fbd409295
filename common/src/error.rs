//! The error type of the shared crate.

use thiserror::Error;

/// Everything that can be wrong with a board, a state, a pattern or a partition.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Error {
    #[error("board {width}x{height} is not supported: {reason}")]
    Board {
        width: usize,
        height: usize,
        reason: &'static str,
    },
    #[error("cannot parse board {0:?}: expected 8, 15, 24 or WxH such as 4x4 (W columns, H rows)")]
    BoardSyntax(String),
    #[error("unknown goal {0:?}: expected blank-first or blank-last")]
    GoalSyntax(String),
    #[error("unknown blank rule {0:?}: expected minimized, aware, zero-aware or ignored")]
    BlankRuleSyntax(String),
    #[error("bad state: {0}")]
    State(String),
    #[error("state is not solvable: {0}")]
    Unsolvable(String),
    #[error("bad pattern {pattern}: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error("bad partition: {0}")]
    Partition(String),
    #[error("unknown partition {name:?}; known partitions: {known}")]
    UnknownPartition { name: String, known: String },
    /// A coordinator's address, token or certificate that cannot be used.
    #[error("{0}")]
    Connect(String),
    /// A message or chunk off the wire that is malformed, corrupt or out of bounds.
    #[error("bad message: {0}")]
    Wire(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
