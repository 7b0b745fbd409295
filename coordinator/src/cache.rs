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
use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};

use crate::build::{BuildOptions, build_table};
use crate::error::Result;
use crate::output::{cached_table, set_dir, write_manifest, write_table};

/// Opens the set of `partition` under `cache` (in [`set_dir`]), building the tables that are
/// missing or invalid and rewriting the manifest. Returns the set and how many tables were
/// built.
pub fn open_or_build(
    cache: &Path,
    partition: &Partition,
    goal: Goal,
    rule: BlankRule,
    encoding: Encoding,
    options: &BuildOptions,
) -> Result<(TableSet, usize)> {
    encoding.check_rule(rule)?;
    let dir = set_dir(cache, partition, rule, goal, encoding);
    if let Ok(set) = TableSet::open(&dir)
        && set.tables().len() == partition.patterns().len()
        && set
            .tables()
            .iter()
            .zip(partition.patterns())
            .all(|(t, p)| t.header().tiles == p.tiles())
    {
        return Ok((set, 0));
    }
    let mut tables = Vec::new();
    let mut built = 0;
    for pattern in partition.patterns() {
        let space = StateSpace::new(partition.board(), goal, pattern.clone(), rule)?;
        match cached_table(&dir, &space, encoding) {
            Some(Ok(pdb)) => tables.push(pdb),
            stale => {
                if let Some(Err(e)) = stale {
                    tracing::warn!("rebuilding: {e}");
                }
                let table = build_table(&space, options, &())?;
                tables.push(write_table(&dir, &space, encoding, &table.values)?);
                built += 1;
            }
        }
    }
    write_manifest(&dir, partition, goal, rule, encoding, &tables)?;
    drop(tables);
    Ok((TableSet::open(&dir)?, built))
}
