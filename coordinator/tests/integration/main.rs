//! The integration tests of `coordinator`, one binary: each module was a test file of its own.
//! One binary links the workspace once instead of once per file. Run one module with
//! `cargo test -p tilepdb-coordinator --test integration MODULE::`.

#[path = "../../../common/tests/support/cli_docs.rs"]
mod cli_docs;
mod server;
#[path = "../../../common/tests/support/skip.rs"]
mod skip;
mod support;

mod bfs_oracles;
mod bounded_resources;
mod cgroup_memory;
mod checkpoint_damage;
mod cli;
mod closed_pipe;
mod cluster;
mod completions;
mod depth_store;
mod determinism;
mod encode;
mod fetch;
mod forged_tables;
mod health;
mod hostile_flags;
mod hostile_peers;
mod hostile_results;
mod inspect_statistics;
mod json_scheme;
mod layer_records;
mod mapped_tables;
mod naive_bfs;
mod new_user;
mod observe;
mod progress_bars;
mod rough_edges;
mod sharded_build;
mod shards;
mod table_facts;
mod table_format;
