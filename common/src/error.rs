//! The error type of the shared crate.

use thiserror::Error;

/// Everything that can be wrong with a board, a state, a pattern or a partition.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// A board shape this crate does not handle.
    #[error("board {width}x{height} is not supported: {reason}")]
    Board {
        /// Columns.
        width: usize,
        /// Rows.
        height: usize,
        /// What is wrong with the shape.
        reason: &'static str,
    },
    /// Text that is not a board.
    #[error("cannot parse board {0:?}: expected 8, 15, 24 or WxH such as 4x4 (W columns, H rows)")]
    BoardSyntax(String),
    /// Text that is not a goal.
    #[error("unknown goal {0:?}: expected blank-first or blank-last")]
    GoalSyntax(String),
    /// Text that is not a blank rule.
    #[error("unknown blank rule {0:?}: expected minimized, aware, zero-aware or ignored")]
    BlankRuleSyntax(String),
    /// A puzzle state that is malformed (tiles missing, repeated or out of range).
    #[error("bad state: {0}")]
    State(String),
    /// A puzzle state of the wrong permutation parity for its goal.
    #[error("state is not solvable: {0}")]
    Unsolvable(String),
    /// A pattern that cannot be used on its board.
    #[error("bad pattern {pattern}: {reason}")]
    Pattern {
        /// The pattern, as given.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Patterns that do not make a partition (overlapping, or of another board).
    #[error("bad partition: {0}")]
    Partition(String),
    /// A catalogue (sets of patterns) that is malformed or not additive.
    #[error("{origin}, line {line}: {reason}")]
    Catalogue {
        /// Where the catalogue's text is from (its file).
        origin: String,
        /// The line (from 1) that is wrong; 0 for the whole text.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A partition name that is not in the registry.
    #[error("unknown partition {name:?}; known partitions: {known}")]
    UnknownPartition {
        /// The name asked for.
        name: String,
        /// The names of the registry, for the message.
        known: String,
    },
    /// A coordinator's address, token or certificate that cannot be used.
    #[error("{0}")]
    Connect(String),
    /// A message or chunk off the wire that is malformed, corrupt or out of bounds.
    #[error("bad message: {0}")]
    Wire(String),
    /// A shard that cannot be made, or shard data that is not the shard's.
    #[error("shard: {0}")]
    Shard(String),
}

/// The result of the shared crate's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
