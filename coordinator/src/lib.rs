//! The coordinator of a tilepdb build.
//!
//! * [`build`]: the layered breadth-first search of one pattern, cut into tasks for a pool of
//!   in-process workers;
//! * [`merge`]: how reached states join the next layer;
//! * [`dist`]: distributed mode: the gRPC coordinator, its checkpoints, a local cluster;
//! * [`check`]: the facts every table must satisfy (lower bound on Manhattan, parity,
//!   consistency of aware and ignored tables, minimized = least aware value);
//! * [`output`]: writing a finished table to disk;
//! * [`report`]: the summary of a build (text and JSON) and the peak memory.

pub mod build;
pub mod check;
pub mod dist;
pub mod error;
pub mod merge;
pub mod output;
pub mod report;

pub use error::{Error, Result};
