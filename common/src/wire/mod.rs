//! The wire protocol between coordinator and workers (feature `wire`).
//!
//! * [`proto`]: the generated messages, client and server of `proto/tilepdb/v1`;
//! * [`chunk`]: sections of bytes as checked, bounded zstd chunks;
//! * [`region_lists`]: the encodings of a task's input and result (states of the region index);
//! * [`connect`]: the token and the channel of every client;
//! * [`zstd_frames`]: zstd frames coded with a context per thread.

pub mod chunk;
pub mod connect;
pub mod region_lists;
pub mod zstd_frames;

/// The generated code of package `tilepdb.v1`.
pub mod proto {
    #![allow(clippy::all, clippy::pedantic, missing_docs)]
    tonic::include_proto!("tilepdb.v1");
}

/// The protocol version of this build; a peer of another version is refused. Version 2: jobs
/// search on the region index, and task inputs and results are region lists. Version 3: a
/// shard's values for the table's file come packed as its depth store packs them.
pub const PROTOCOL_VERSION: u32 = 3;

/// The state index distributed jobs search on, as [`proto::JobSpec::search_index`] names it.
pub const SEARCH_INDEX: &str = "region";

/// Largest decompressed chunk (1 MiB): far below gRPC's 4 MiB message limit even when the
/// data does not compress.
pub const MAX_CHUNK_BYTES: u32 = 1 << 20;

/// The metadata key of the shared token (`Bearer <token>`).
pub const AUTH_HEADER: &str = "authorization";

/// `n` as a `u32` message field (a count, an index, milliseconds), saturated at `u32::MAX`.
///
/// ```
/// use tilepdb_common::wire::saturating_u32;
/// assert_eq!(saturating_u32(7usize), 7);
/// assert_eq!(saturating_u32(u128::MAX), u32::MAX);
/// ```
pub fn saturating_u32(n: impl TryInto<u32>) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

use crate::error::{Error, Result};
use crate::{BlankRule, Board, Goal, Partition, Pattern, StateSpace};

impl proto::JobSpec {
    /// The definition of the job that builds `partition`'s tables (on the region index).
    pub fn new(partition: &Partition, goal: Goal, rule: BlankRule) -> proto::JobSpec {
        proto::JobSpec {
            board: partition.board().to_string(),
            goal: goal.to_string(),
            blank_rule: rule.to_string(),
            patterns: partition
                .patterns()
                .iter()
                .map(|p| proto::PatternSpec {
                    tiles: p.tiles().iter().map(|&t| u32::from(t)).collect(),
                })
                .collect(),
            name: partition.name().to_string(),
            search_index: SEARCH_INDEX.to_string(),
        }
    }

    /// The partition, checked (board, tiles, disjointness).
    pub fn partition(&self) -> Result<Partition> {
        let board: Board = self.board.parse()?;
        let patterns = self
            .patterns
            .iter()
            .map(|p| {
                let tiles = p
                    .tiles
                    .iter()
                    .map(|&t| u8::try_from(t).map_err(|_| Error::Wire(format!("tile {t}"))))
                    .collect::<Result<Vec<u8>>>()?;
                Pattern::new(board, tiles)
            })
            .collect::<Result<Vec<_>>>()?;
        Partition::new(self.name.clone(), board, patterns)
    }

    /// The job's goal, checked.
    pub fn goal(&self) -> Result<Goal> {
        self.goal.parse()
    }

    /// The job's blank rule, checked.
    pub fn rule(&self) -> Result<BlankRule> {
        self.blank_rule.parse()
    }

    /// The state space of each table, in order.
    pub fn spaces(&self) -> Result<Vec<StateSpace>> {
        let partition = self.partition()?;
        let (goal, rule) = (self.goal()?, self.rule()?);
        partition
            .patterns()
            .iter()
            .map(|p| StateSpace::new(partition.board(), goal, p.clone(), rule))
            .collect()
    }
}

/// A task id: the table, the depth and the task's index in the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskId {
    /// The table's index in the job.
    pub table: u32,
    /// The layer's depth.
    pub depth: u32,
    /// The task's index in its layer.
    pub index: u32,
}

impl TaskId {
    /// The id as one number: table in bits 48.., depth in 32..48, index in 0..32.
    pub fn to_u64(self) -> u64 {
        u64::from(self.table) << 48 | (u64::from(self.depth) & 0xffff) << 32 | u64::from(self.index)
    }

    /// `None` for an id no coordinator makes (a depth over 16 bits).
    pub fn from_u64(id: u64) -> Option<TaskId> {
        let table = u32::try_from(id >> 48).ok()?;
        Some(TaskId {
            table,
            depth: ((id >> 32) & 0xffff) as u32,
            index: (id & 0xffff_ffff) as u32,
        })
    }
}
