//! The coordinator of a tilepdb build.
//!
//! * [`engine`]: the search engine: a set's spec, the one layer loop and its executors, the
//!   building of a whole set;
//! * [`build`]: the single-machine build of one table (the engine with in-process threads);
//! * [`region_build`]: what the search on the dense region index (set, region, order) needs;
//! * [`merge`]: how reached states join the next layer;
//! * [`cluster`]: distributed mode: the gRPC coordinator, its checkpoints, a local cluster;
//! * [`bellman`]: the proof that a table is the exact distance function of its abstraction;
//! * [`layer_proof`]: the proofs by one checking search over the zero-aware states (zero-aware
//!   tables in packed entries, minimized tables);
//! * [`check`]: the facts every table must satisfy (lower bound on Manhattan, parity,
//!   consistency of aware and ignored tables, minimized = least aware value);
//! * [`output`]: writing finished tables and set manifests to disk (format:
//!   [`tilepdb_common::table`]);
//! * [`cache`]: built sets kept in a directory, so that the same set is built once;
//! * [`verify`]: deep verification of a table file (every entry decoded and re-checked);
//! * [`report`]: the summary of a build (text and JSON) and the peak memory;
//! * [`memory`]: the memory this process may use (machine and cgroup limits);
//! * [`observe`]: health checks, metrics and the dashboard of a running coordinator.

pub mod bellman;
pub mod build;
pub mod cache;
pub mod check;
pub mod cluster;
pub mod connections;
pub mod engine;
pub mod error;
pub mod layer_proof;
pub mod memory;
pub mod merge;
pub mod observe;
pub mod output;
pub mod region_build;
pub mod report;
pub mod verify;

pub use error::{Error, Result};
