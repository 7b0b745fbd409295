//! The worker side of a tilepdb build: executing tasks.
//!
//! A task expands the current-layer states of a range of tile sets of the region index with
//! the expansion kernel that the single-machine build also runs
//! ([`tilepdb_common::region_expand`]) and streams back the states they reached. A remote
//! worker ([`client`]) takes tasks over gRPC, expands them with every core ([`region_task`])
//! and delivers the result.
//!
//! * [`region_task`]: one task off the wire (tile sets of the region index), expanded in
//!   parallel with the region kernel, its result collected;
//! * [`client`]: the worker process's loop (register, heartbeat, take, expand, deliver);
//! * [`shard`]: a shard worker of a sharded build (its shard's arrays, the data plane
//!   between shards, the steps the coordinator gives);
//! * [`cli`]: the `tilepdb-worker` command line.

pub mod cli;
pub mod client;
pub mod error;
pub mod region_task;
pub mod shard;

pub use error::{Error, Result};
