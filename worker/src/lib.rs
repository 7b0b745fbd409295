//! The worker side of a tilepdb build: executing tasks.
//!
//! A task expands the current-layer states of a range of units (placement ranks on the cell
//! index, [`expand_range`]; tile sets on the region index, [`region_expand`]) and reports every
//! state it reaches to a sink. In single-machine mode the coordinator's merge is the sink
//! itself; a remote worker ([`client`]) takes tasks of the region index over gRPC, expands them
//! with every core ([`region_task`]) and streams back the states they reached.
//!
//! * [`expand`]: the breadth-first expansion kernel;
//! * [`region_expand`]: the expansion kernel on the region index (blocks of `k!` orders);
//! * [`region_task`]: one task off the wire (tile sets of the region index), expanded in
//!   parallel with the region kernel, its result collected;
//! * [`client`]: the worker process's loop (register, heartbeat, take, expand, deliver);
//! * [`cli`]: the `tilepdb-worker` command line.

pub mod cli;
pub mod client;
pub mod error;
pub mod expand;
pub mod region_expand;
pub mod region_task;

pub use error::{Error, Result};
pub use expand::{ExpandStats, ReachedSink, expand_range};
