//! Distributed mode: the coordinator serves a job's tasks over gRPC to worker processes.
//!
//! * [`job`]: what the driver and the handlers share: the job's stage, its answers to
//!   workers, its wake-up;
//! * [`lease`]: the tasks of the layer being expanded and their leases ([`lease::LayerTasks`]);
//! * [`workers`]: the workers the job has heard of ([`workers::Workers`]);
//! * [`plan`]: the tasks of a layer;
//! * [`local`]: a local cluster (a coordinator and supervised worker processes on loopback);
//! * [`results`]: a result's claim ([`results::ResultClaim`]) checked, the result merged;
//! * [`progress`]: a job's progress in its own terms ([`progress::JobProgress`]);
//! * [`wire`]: the one place where the job's domain types and the wire's messages are
//!   converted (the job's definition, its status, a result's header, a shard's report);
//! * [`audit`]: results re-executed by the coordinator, wrong ones found, their workers
//!   banned;
//! * [`driver`]: the engine's layer loop with the workers as its executor, checkpointed;
//! * [`service`]: the gRPC service, which checks everything that comes off the wire;
//! * [`store`]: the data directory (memory-mapped arrays, the job's checkpoint) for resume;
//! * [`tables`]: the table service, finished sets listed and downloaded by solvers;
//! * [`server`]: binding, TLS, serving until the job is done (and on, for downloads).
//!
//! `tilepdb-coordinator build --workers N` (a local cluster) runs this coordinator in its own
//! process and N worker processes on loopback ([`local::LocalCluster`]).

pub mod audit;
pub mod budget;
pub mod driver;
pub mod job;
pub mod lease;
pub mod local;
pub mod plan;
pub mod progress;
pub mod results;
mod room;
pub mod server;
pub mod service;
pub mod sharded;
pub mod store;
pub mod tables;
pub mod wire;
pub mod workers;

pub use job::{Job, JobConfig};
pub use server::{ServeOptions, TlsFiles, bind, serve_on, serve_tables};
pub use tables::TableService;
