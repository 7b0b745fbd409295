//! The consumer side of tilepdb: heuristics over finished tables and optimal search.
//!
//! A solver in ten lines:
//!
//! ```no_run
//! use tilepdb_common::PuzzleState;
//! use tilepdb_common::table::TableSet;
//! use tilepdb_solver::heuristic::PdbHeuristic;
//! use tilepdb_solver::search::{Limits, ida_star};
//!
//! let set = TableSet::open("tables/4x4-7-8-minimized-blank-first".as_ref()).unwrap();
//! let h = PdbHeuristic::new(&set, true).unwrap(); // with the reflection about the diagonal
//! let start = PuzzleState::parse(set.board(), "14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3").unwrap();
//! let result = ida_star(&start, set.goal(), &h, &Limits::default()).unwrap();
//! println!("{} moves, {} nodes", result.moves.len(), result.generated);
//! ```
//!
//! * [`heuristic`]: misplaced tiles, Manhattan distance, linear conflict, and the additive
//!   pattern-database heuristic with its reflection, all evaluated incrementally;
//! * [`search`]: IDA*, A*, weighted A*, and the replay check of every solution;
//! * [`move_pruning`]: Taylor & Korf's duplicate-string move pruning, a machine IDA* runs
//!   beside the search (learned, written and read back, checked);
//! * [`textbook`]: Nilsson's inadmissible P + 3S for the 8-puzzle;
//! * [`generate`]: seeded instance generators (random walks, uniformly random states);
//! * [`bench`](mod@bench): comparing heuristics on instance files: records, summaries, Pareto fronts, SVG;
//! * [`play`]: the puzzle as a game, with hints from an optimal search;
//! * [`fetch`] (feature `fetch`, on by default): downloading a finished set from a coordinator
//!   into a local cache. Without it the library maps tables and searches, and builds no gRPC
//!   stack (`default-features = false`).

pub mod bench;
pub mod error;
#[cfg(feature = "fetch")]
pub mod fetch;
pub mod generate;
pub mod heuristic;
pub mod move_pruning;
pub mod play;
pub mod search;
pub mod textbook;

pub use error::{Error, Result};
