//! The coordinator of a tilepdb build.
//!
//! * [`engine`]: the search engine: a set's spec, the one layer loop and its executors, the
//!   building of a whole set;
//! * [`build`]: the single-machine build of one table (the engine with in-process threads);
//! * [`cluster`]: distributed mode: the gRPC coordinator, its checkpoints, a local cluster;
//! * [`output`]: writing finished tables and set manifests to disk (format:
//!   [`tilepdb_common::table`]);
//! * [`cache`]: built sets kept in a directory, so that the same set is built once;
//! * [`report`]: the summary of a build (text and JSON) and the peak memory;
//! * [`memory`]: the memory this process may use (machine and cgroup limits);
//! * [`observe`]: health checks, metrics and the dashboard of a running coordinator.
//!
//! The proofs that a table is exact live in their own crate, `tilepdb-proof`, which never
//! imports this one's search.

pub mod build;
pub mod cache;
pub mod cluster;
pub mod connections;
pub mod engine;
pub mod error;
pub mod memory;
pub mod observe;
pub mod output;
pub mod report;

pub use error::{Error, Result};
