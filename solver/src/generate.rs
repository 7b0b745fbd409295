//! Instance generators: seeded random walks from the goal and uniformly random solvable states.
//!
//! They live in [`tilepdb_common::generate`], shared with the coordinator's `inspect` (its mean
//! heuristic over random states); this module names them where the solver's users look.
//!
//! ```
//! use tilepdb_common::{Board, Goal};
//! use tilepdb_solver::generate::Generator;
//! let board: Board = "3x3".parse().unwrap();
//! let walk = Generator::new(board, Goal::BlankFirst, 7).random_walk(10);
//! assert_eq!(walk, Generator::new(board, Goal::BlankFirst, 7).random_walk(10));
//! ```

pub use tilepdb_common::generate::{Generator, STREAM};
