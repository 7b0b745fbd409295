//! Finished tables on disk: encodings, the versioned checksummed file format, memory-mapped
//! reading and table sets (DESIGN section 6; the byte layout is specified in `docs/format.md`).
//!
//! * [`encoding`]: `byte`, `nibble`, `mod3` and `min-nibble:C`, their sizes and decoders;
//! * [`header`]: the fixed 4096-byte little-endian header and its validation;
//! * [`walk`]: placements in rank order with their Manhattan distance (for encoders);
//! * [`values`]: a finished table's values: a byte per entry or what one encoding keeps;
//! * [`write`](mod@write): encoding a table's values and writing the file atomically;
//! * [`pdb`]: [`Pdb`], one memory-mapped table, validated before any lookup;
//! * [`mapped`]: a mapped table that shrinks under its reader ends the process with a message
//!   naming it (SIGBUS caught);
//! * [`mod3`]: exact values of a `mod3` table, from a parent's value or by descent to the goal;
//! * [`manifest`]: the `manifest.json` of a table set;
//! * [`set`]: [`TableSet`], the tables of one partition, looked up by full puzzle state;
//! * [`statistics`]: a set's mean value and mean heuristic over seeded random states.
//!
//! A round trip on the 3x3 board (pattern {1}, blank ignored: 9 placements, and the value of
//! each is the tile's Manhattan distance):
//!
//! ```
//! use tilepdb_common::table::{EncodedTable, Encoding, Pdb};
//! use tilepdb_common::{BlankRule, Board, Goal, Pattern, StateSpace};
//! let board: Board = "3x3".parse().unwrap();
//! let pattern = Pattern::new(board, vec![1]).unwrap();
//! let space = StateSpace::new(board, Goal::BlankFirst, pattern, BlankRule::Ignored).unwrap();
//! let values: Vec<u8> = tilepdb_common::table::walk::manhattan_by_rank(&space)
//!     .into_iter()
//!     .map(|m| m as u8)
//!     .collect();
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("pattern-1.pdb");
//! let table = EncodedTable::new(&space, Encoding::Mod3, &values).unwrap();
//! table.write(&path).unwrap();
//! let pdb = Pdb::open(&path).unwrap();
//! assert_eq!(pdb.header().payload_len, 2); // 9 entries, five per byte
//! for index in 0..9 {
//!     assert_eq!(pdb.value(index).unwrap(), values[index as usize]);
//! }
//! ```

pub mod encoding;
pub mod error;
pub mod file_writer;
pub mod header;
mod load;
pub mod manifest;
pub mod mapped;
pub mod mod3;
pub mod pdb;
pub mod set;
pub mod statistics;
pub mod values;
pub mod walk;
pub mod write;

pub use encoding::Encoding;
pub use error::{Defect, TableError};
pub use header::Header;
pub use load::Load;
pub use manifest::{Manifest, ManifestEntry};
pub use pdb::Pdb;
pub use set::TableSet;
pub use values::{DepthCode, PackedValues, TableValues, ValuesRef};
pub use write::EncodedTable;

/// The value of an entry that the search never reached: possible only when the pattern holds
/// every tile of the board (the placements of the other permutation parity).
pub const UNREACHED: u8 = u8::MAX;
