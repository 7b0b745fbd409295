//! The search engine: one layer loop for every build, whoever expands the layers.
//!
//! * [`spec`]: [`SetSpec`], the four values that define a table set (partition, goal, blank
//!   rule, encoding), its directory name and its job id;
//! * [`units`]: task units (placement ranks) and the one function that maps a range of units
//!   to its range of states ([`units::unit_states`]); how layers are cut into tasks;
//! * [`arrays`]: [`TableArrays`], the two-bit state array and the depth bytes of one table;
//! * [`search`]: the [`Executor`] trait and the layer loop ([`search_table`]): expand a layer
//!   with the executor, finish it ([`search::finish_layer`]: depths, count, retire), guard
//!   the depth, report; then [`search::finish_table`] turns the arrays into the values;
//! * [`threads`]: the in-process executor (a rayon pool) and its [`threads::Kernel`] seam
//!   (expansion kernel and merge sink of a task);
//! * [`set`]: [`build_set`], every table of a set built (or reused) and the set's manifest
//!   written; used by the `build` command, the cache, the distributed job and the tests.
//!
//! The distributed executor (tasks leased to worker processes over gRPC) lives in
//! [`crate::cluster`]; both executors run the same [`search_table`], so single-machine and
//! distributed builds give the same bytes by construction.

pub mod arrays;
pub mod search;
pub mod set;
pub mod spec;
pub mod threads;
pub mod units;

pub use arrays::TableArrays;
pub use search::{Executor, Layer, SearchProgress, finish_table, search_table};
pub use set::{BuiltSet, Reuse, TableBuilder, build_set};
pub use spec::SetSpec;
pub use threads::{Kernel, RankKernel, ThreadsExecutor};
