//! The proofs wing: a table is shown exact before anyone trusts it.
//!
//! **The rule of this crate: no proof imports the build's search.** A proof must not trust
//! the code it checks, so this crate depends on `tilepdb-common` alone (boards, the region
//! index, table files and encodings) and walks the abstract space with walks of its own
//! ([`walks`]), never with the coordinator's engine or the workers' expansion kernel
//! (`tilepdb_common::region_expand`). `tests/independence.rs` fails if the manifest or a
//! source file breaks the rule; the tests themselves may build tables with the search, to
//! prove them.
//!
//! The entrance is [`verify_deep`]: every entry of a table file decoded and proven, whatever
//! its kind and encoding, and the proof that ran named ([`Proof`]):
//!
//! * [`bellman`]: the goal is 0 and every other entry one more than its least neighbour, the
//!   exact distance function of the abstraction (ignored tables in exact encodings, aware and
//!   zero-aware ones in bytes; ignored ones in nibbles with saturation);
//! * [`layers`]: one breadth-first search from the goal on two bits per state, which meets
//!   each state at its distance; every entry must be its distance's encoding (zero-aware and
//!   aware tables in packed entries, aware ones in nibbles, ignored ones in min-nibble, minimized ones in
//!   every encoding);
//! * [`facts`]: what every table satisfies (the Manhattan lower bound with its parity,
//!   consistency, minimized = least aware value), for `build --check` and for the checks of
//!   lossy encodings;
//! * [`deep`]: [`verify_deep`] itself, with the canonical payload and the header's histogram;
//! * [`memory`]: the proof a table gets and the memory it holds, before it runs;
//! * [`sharded`]: the layer proof cut into proof shards, each searched by one prover that
//!   holds its shard alone, run by two disjoint teams of workers for a table built on shards;
//! * [`walks`]: the walks the proofs share.
//!
//! ```
//! use tilepdb_common::table::{Encoding, Pdb, write::EncodedTable};
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! use tilepdb_coordinator::build::{BuildOptions, build_table};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1, 2, 3]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Minimized).unwrap();
//! let built = build_table(&space, &BuildOptions::default(), &()).unwrap();
//! let dir = std::env::temp_dir().join(format!("tilepdb-proof-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("pattern-1-2-3.pdb");
//! EncodedTable::from_values(&space, Encoding::Byte, &built.values).unwrap().write(&path).unwrap();
//! let report = tilepdb_proof::verify_deep(&Pdb::open(&path).unwrap()).unwrap();
//! assert_eq!(report.proof.name(), "layer-search");
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

pub mod bellman;
pub mod deep;
pub mod error;
pub mod facts;
pub mod layers;
pub mod memory;
pub mod sharded;
pub mod walks;

pub use bellman::Proof;
pub use deep::{DeepReport, verify_deep};
pub use error::{Error, Result};
