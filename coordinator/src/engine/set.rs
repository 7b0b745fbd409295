//! [`build_set`]: every table of a set, built or found valid in the set's directory, and the
//! set's manifest written last.

use std::path::PathBuf;

use tilepdb_common::StateSpace;
use tilepdb_common::table::Pdb;

use super::search::BuiltTable;
use super::spec::SetSpec;
use crate::error::{Error, Result};
use crate::output::{cached_table, write_manifest, write_table};

/// Which tables already in the set's directory are used instead of built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Every table whose valid file is there (an invalid one is built again, with a warning).
    ValidFiles,
    /// None: every table is built.
    Nothing,
    /// The first `n` tables, which must be there (a job resumed after writing them); the
    /// others are built.
    Written(usize),
}

/// Builds the tables of a set, one at a time, and hears about each.
pub trait TableBuilder {
    /// The errors of the builder (the library's, or the caller's own).
    type Error: From<Error>;

    /// Builds table `index` of the set.
    fn build(&mut self, index: usize, space: &StateSpace) -> Result<BuiltTable, Self::Error>;

    /// Table `index` was found valid in the set's directory.
    fn reused(
        &mut self,
        _index: usize,
        _space: &StateSpace,
        _pdb: &Pdb,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Table `index` was built and written to the set's directory.
    fn written(
        &mut self,
        _index: usize,
        _space: &StateSpace,
        _table: &BuiltTable,
        _pdb: &Pdb,
    ) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A set on disk.
pub struct BuiltSet {
    /// The set's directory.
    pub dir: PathBuf,
    /// Its tables, opened, in the partition's order.
    pub tables: Vec<Pdb>,
    /// How many of them were built (the others were reused).
    pub built: usize,
}

/// Builds the set `spec` in its directory under `out` ([`SetSpec::dir`]): each table is
/// reused as `reuse` says or built by `builder` and written; the set's manifest is written
/// last.
pub fn build_set<B: TableBuilder>(
    spec: &SetSpec,
    out: &std::path::Path,
    reuse: Reuse,
    builder: &mut B,
) -> Result<BuiltSet, B::Error> {
    let dir = spec.dir(out);
    let mut tables = Vec::new();
    let mut built = 0;
    for (index, space) in spec.spaces()?.iter().enumerate() {
        let found = match reuse {
            Reuse::Nothing => None,
            Reuse::Written(n) if index >= n => None,
            Reuse::Written(_) => match cached_table(&dir, space, spec.encoding) {
                Some(Ok(pdb)) => Some(pdb),
                Some(Err(e)) => return Err(e.into()),
                None => {
                    return Err(B::Error::from(Error::Check {
                        table: space.pattern().to_string(),
                        reason: format!(
                            "the data directory says it was written, but {} has no valid file of it",
                            dir.display()
                        ),
                    }));
                }
            },
            Reuse::ValidFiles => match cached_table(&dir, space, spec.encoding) {
                Some(Ok(pdb)) => Some(pdb),
                Some(Err(e)) => {
                    tracing::warn!(table = %space.pattern(), "building again: {e}");
                    None
                }
                None => None,
            },
        };
        let pdb = if let Some(pdb) = found {
            builder.reused(index, space, &pdb)?;
            pdb
        } else {
            let table = builder.build(index, space)?;
            let pdb = write_table(&dir, space, spec.encoding, &table.values)?;
            builder.written(index, space, &table, &pdb)?;
            built += 1;
            pdb
        };
        tables.push(pdb);
    }
    write_manifest(
        &dir,
        &spec.partition,
        spec.goal,
        spec.rule,
        spec.encoding,
        &tables,
    )?;
    Ok(BuiltSet { dir, tables, built })
}
