//! Built table sets kept in a cache directory: asking for the same set twice builds it once.
//!
//! ```
//! use tilepdb_common::table::Encoding;
//! use tilepdb_common::{BlankRule, Goal, Partition, PuzzleState};
//! use tilepdb_coordinator::build::BuildOptions;
//! use tilepdb_coordinator::cache::open_or_build;
//! let cache = tempfile::tempdir().unwrap();
//! let partition = Partition::named("8:4-4").unwrap();
//! let open = || {
//!     open_or_build(cache.path(), &partition, Goal::BlankFirst, BlankRule::Minimized,
//!                   Encoding::Byte, &BuildOptions::default())
//! };
//! let (set, built) = open().unwrap();
//! assert_eq!(built, 2); // both tables built
//! let (set, built) = open().unwrap();
//! assert_eq!(built, 0); // both found in the cache
//! let state = PuzzleState::parse(set.board(), "1 0 2 3 4 5 6 7 8").unwrap();
//! assert_eq!(set.value(&state).unwrap(), 1);
//! ```

use std::path::Path;

use tilepdb_common::table::{Encoding, TableSet};
use tilepdb_common::{BlankRule, Goal, Partition};

use crate::build::{BuildOptions, LocalBuilder};
use crate::engine::{Reuse, SetSpec, build_set};
use crate::error::Result;

/// Opens the set of `partition` under `cache` (in [`SetSpec::dir`]), building the tables
/// that are missing or invalid and rewriting the manifest. Returns the set and how many
/// tables were built.
pub fn open_or_build(
    cache: &Path,
    partition: &Partition,
    goal: Goal,
    rule: BlankRule,
    encoding: Encoding,
    options: &BuildOptions,
) -> Result<(TableSet, usize)> {
    open_or_build_spec(
        cache,
        &SetSpec::new(partition.clone(), goal, rule, encoding)?,
        options,
    )
}

/// [`open_or_build`] of the set `spec`.
pub fn open_or_build_spec(
    cache: &Path,
    spec: &SetSpec,
    options: &BuildOptions,
) -> Result<(TableSet, usize)> {
    let dir = spec.dir(cache);
    let patterns = spec.partition.patterns();
    if let Ok(set) = TableSet::open(&dir)
        && set.tables().len() == patterns.len()
        && set
            .tables()
            .iter()
            .zip(patterns)
            .all(|(t, p)| t.header().tiles == p.tiles())
    {
        return Ok((set, 0));
    }
    let built = build_set(
        spec,
        cache,
        Reuse::ValidFiles,
        &mut LocalBuilder { options },
    )?;
    let count = built.built;
    drop(built);
    Ok((TableSet::open(&dir)?, count))
}
