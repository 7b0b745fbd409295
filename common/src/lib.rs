//! Shared domain types of tilepdb.
//!
//! * [`board`]: boards, goals, bitboards and the blank's regions (flood fills);
//! * [`puzzle`]: full puzzle states, solvability, Manhattan distance;
//! * [`rank`]: the lexicographic rank of a placement of pattern tiles;
//! * [`region_index`]: the dense (tile set, region, order) index of the region-indexed search;
//! * [`pattern`]: patterns, partitions and the registry of known partitions;
//! * [`space`]: the abstract state space of one table (blank rules, state indices, sizes);
//! * [`symmetry`]: the symmetries of a square board, and which let one table serve another
//!   pattern;
//! * [`catalogue`]: catalogues (the maximum over additive sets of patterns), read from the
//!   text of the ZIB code's catalogue files, and the distinct tables they need;
//! * [`atomic_array`]: arrays of atomic integers on the heap or in a mapped file, shared by
//!   threads (the state array's and the depth store's memory);
//! * [`layer`]: the two-bit state array and the layer bitmaps of the breadth-first search;
//! * [`region_expand`]: the expansion kernel of the search on the region index, which the
//!   single-machine build and the workers both run;
//! * [`table`]: finished tables: encodings, the file format, memory-mapped reading, table sets;
//! * [`units`]: sizes for people;
//! * [`generate`]: seeded random walks from the goal and uniformly random solvable states;
//! * [`plot`]: charts as SVG and, with the `png` feature, PNG.
//! * `wire` (feature `wire`, on by default): the gRPC protocol between coordinator and workers.

pub mod allocator;
pub mod atomic_array;
pub mod board;
pub mod catalogue;
#[cfg(feature = "cli-docs")]
pub mod cli_docs;
pub mod depth_store;
pub mod error;
pub mod file_order;
pub mod files;
pub mod generate;
pub mod json;
pub mod layer;
pub mod pattern;
pub mod pipe;
pub mod plot;
pub mod prefetch;
pub mod puzzle;
pub mod rank;
pub mod region_expand;
pub mod region_index;
pub mod shard;
pub mod sort;
pub mod space;
pub mod symmetry;
pub mod table;
pub mod units;
#[cfg(feature = "wire")]
pub mod wire;

pub use board::{Board, Goal, MAX_CELLS};
pub use error::{Error, Result};
pub use layer::{LayerBitmap, StateCodes};
pub use pattern::{KNOWN_PARTITIONS, Partition, Pattern};
pub use puzzle::PuzzleState;
pub use rank::PlacementRanker;
pub use region_index::RegionIndex;
pub use space::{BlankRule, StateSpace};
pub use units::human_bytes;
