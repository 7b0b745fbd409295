//! Distributed mode: the coordinator serves a job's tasks over gRPC to worker processes.
//!
//! * [`job`]: layers, tasks, leases, workers and the driver that runs the layers;
//! * [`service`]: the gRPC service, which checks everything that comes off the wire;
//! * [`store`]: the data directory (memory-mapped arrays, manifest) for checkpoint and resume;
//! * [`tables`]: the table service, finished sets listed and downloaded by solvers;
//! * [`server`]: binding, TLS, serving until the job is done (and on, for downloads).
//!
//! `tilepdb-coordinator build --workers N` (a local cluster) runs this coordinator in its own
//! process and N worker processes on loopback (`cli/serve.rs`).

pub mod job;
pub mod server;
pub mod service;
pub mod store;
pub mod tables;

pub use job::{Job, JobConfig};
pub use server::{ServeOptions, TlsFiles, bind, serve_on, serve_tables};
pub use tables::TableService;
