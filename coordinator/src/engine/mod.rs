//! The search engine: one layer loop for every build, whoever expands the layers. This folder
//! is the whole search; the proofs (`crate::proof`) never import it.
//!
//! * [`spec`]: [`SetSpec`], the four values that define a table set (partition, goal, blank
//!   rule, encoding), its directory name and its job id;
//! * [`units`]: [`StateIndex`], the region index of a table's states, its task units (tile-set
//!   ranks) and the one function that maps a range of units to its range of states
//!   ([`StateIndex::unit_states`]); how layers are cut into tasks;
//! * [`arrays`]: [`TableArrays`], the two-bit state array and the depth store of one table,
//!   and the merge rule ([`TableArrays::merge`]);
//! * [`kernel`]: the in-process kernel ([`kernel::RegionSetKernel`], the workers' region
//!   kernel merging into the arrays), the goal, and the values put in the table's order;
//! * [`build_memory`]: the bytes a build holds, before anything is allocated;
//! * [`search`]: the [`Executor`] trait and the layer loop ([`search_table`]): expand a layer
//!   with the executor, finish it ([`search::finish_layer`]: depths, count, retire), guard
//!   the depth, report; then [`search::finish_search`] keeps the depth store for its file to be streamed from
//!   (or [`search::finish_table`] turns the arrays into the values);
//! * [`stream`]: the table file written from a finished search's depth store part by part in
//!   file order ([`stream::SearchedStore`]), with no second copy of the values;
//! * [`threads`]: the in-process executor (a rayon pool) and its [`threads::Kernel`] seam
//!   (expansion kernel and merge sink of a task);
//! * [`set`]: [`build_set`], every table of a set built (or reused) and the set's manifest
//!   written; used by the `build` command, the cache, the distributed job and the tests.
//!
//! The distributed executor (tasks leased to worker processes over gRPC) lives in
//! [`crate::cluster`]; both executors run the same [`search_table`], so single-machine and
//! distributed builds give the same bytes by construction.

pub mod arrays;
pub mod build_memory;
pub mod kernel;
pub mod search;
pub mod set;
pub mod spec;
pub mod stream;
pub mod threads;
pub mod units;

pub use arrays::TableArrays;
pub use search::{Executor, Layer, SearchProgress, finish_search, finish_table, search_table};
pub use set::{BuiltSet, Reuse, TableBuilder, build_set};
pub use spec::SetSpec;
pub use threads::{Kernel, ThreadsExecutor};
pub use tilepdb_common::depth_store::DepthBytes;
pub use tilepdb_common::table::UNREACHED;
pub use units::StateIndex;
