//! Distributed mode: the coordinator serves a job's tasks over gRPC to worker processes.
//!
//! * [`job`]: layers, tasks, leases, workers and the driver that runs the layers;
//! * [`service`]: the gRPC service, which checks everything that comes off the wire;
//! * [`store`]: the data directory (memory-mapped arrays, manifest) for checkpoint and resume;
//! * [`server`]: binding, TLS, serving until the job is done.
//!
//! `tilepdb-coordinator build --workers N` (a local cluster) runs this coordinator in its own
//! process and N worker processes on loopback (`cli/serve.rs`).

pub mod job;
pub mod server;
pub mod service;
pub mod store;

pub use job::{Job, JobConfig};
pub use server::{ServeOptions, TlsFiles, bind, serve_on};
