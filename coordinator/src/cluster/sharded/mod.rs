//! The sharded build: each table's search state lives on its shard workers, never in the
//! coordinator, so a cluster builds tables that no one machine holds.
//!
//! Shard `p` of `P` owns the orders `p * k! / P .. (p + 1) * k! / P` of every block of the
//! region index ([`tilepdb_common::shard`]); its worker keeps that part's two-bit codes and
//! depth store and serves the data plane to the other shards
//! ([`tilepdb_worker::shard`]). The coordinator is the control plane only:
//!
//! * [`control`]: membership, the numbered steps every shard takes and the barrier between
//!   them (its state diagram is there);
//! * [`step`]: a step, what a shard reports of it and how it ended;
//! * [`service`]: the `ShardControl` gRPC service (the only place here that makes a
//!   `tonic::Status`);
//! * [`builder`]: the driver: each table's layers as steps, then its file written from the
//!   shards' values read in file order, proven and published by
//!   [`crate::engine::build_set`];
//! * `progress`: the progress record of the table being built, and its written file kept
//!   until it is published, for a restarted coordinator;
//! * [`proof`]: the driver of a written table's proof on the shards, by two disjoint teams
//!   of workers, proven again from its first step when a shard is lost;
//! * [`server`]: the control plane served, and a set built with the shards that join it
//!   (`serve --shards`);
//! * [`local`]: a local sharded cluster, one worker process per shard (`build --shards`);
//! * [`plan`]: what a sharded build will need, before anything is made;
//! * [`status`]: the job's status for `status`, the dashboard and the metrics (a
//!   [`crate::cluster::progress::JobProgress`], made a message by the services);
//! * `values`: one shard's range of values read for the file, and checked.

pub mod builder;
pub mod control;
pub mod local;
pub mod plan;
mod progress;
pub mod proof;
pub mod server;
pub mod service;
pub mod status;
pub mod step;
mod values;

pub use status::ShardedStatus;
