//! [`build_set`]: every table of a set, built or found valid in the set's directory, and the
//! set's manifest written last.
//!
//! A table built is proven before it is published (unless its builder opts out,
//! [`TableBuilder::proves`]): its file is written under the set's `.unproven/` directory,
//! opened from there the way `verify --deep` reads files, checked ([`prove_file`]: the
//! Bellman check for the exact encodings of consistent rules) and only then renamed into the
//! set's directory. A table that fails is removed and built again, once, with a warning (and
//! [`TableBuilder::rejected`]); a second failure is an error. A table found already in the
//! set's directory is proven the same way before it is used: one that fails is built again
//! ([`Reuse::ValidFiles`]), or is an error when the job says it wrote it ([`Reuse::Written`]).

use std::path::{Path, PathBuf};

use tilepdb_common::StateSpace;
use tilepdb_common::table::{Encoding, Pdb, TableError};

use super::search::BuiltTable;
use super::spec::SetSpec;
use crate::error::{Error, Result};
use crate::output::{cached_table, table_file_name, write_manifest};
use tilepdb_proof::Proof;
use tilepdb_proof::verify_deep;

/// The directory of a set where tables wait for their proof (never a table of the set).
pub const UNPROVEN_DIR: &str = ".unproven";

/// How many times a table that fails its proof is built in all.
const BUILDS_PER_TABLE: usize = 2;

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

    /// Writes table `index`, just built by [`TableBuilder::build`], as its file in `dir` in
    /// `encoding`; the file's path, or (inside) why its values make no table, which is then
    /// treated as a failed proof. By default the table is written as [`BuiltTable::write_file`]
    /// does (streamed from the search's depth store when `build` kept it, else from its values),
    /// then its values are let go; a builder whose values are elsewhere (a sharded build's, on
    /// its shards) writes them from there.
    fn write(
        &mut self,
        _index: usize,
        space: &StateSpace,
        encoding: Encoding,
        table: &mut BuiltTable,
        dir: &Path,
    ) -> Result<Result<PathBuf>, Self::Error> {
        Ok(table.write_file(dir, space, encoding))
    }

    /// Whether each table built is proven before it is written (see the module's
    /// documentation); on unless the builder says otherwise.
    fn proves(&self) -> bool {
        true
    }

    /// Proves table `index`'s file `staged`, written by [`TableBuilder::write`], before it is
    /// published: the proof that ran, or (inside) why the table is refused. By default
    /// [`prove_file`]; a sharded build proves it on its shards.
    fn prove(
        &mut self,
        _index: usize,
        _space: &StateSpace,
        staged: &Pdb,
    ) -> Result<Result<Proof>, Self::Error> {
        Ok(prove_file(staged))
    }

    /// Table `index` failed its proof (`error` says how) and was not written: it is built
    /// again ([`TableBuilder::build`] is called once more for it).
    fn rejected(
        &mut self,
        _index: usize,
        _space: &StateSpace,
        _error: &Error,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Table `index` passed its proof (`proof` says what it established); called before
    /// [`TableBuilder::written`].
    fn proven(
        &mut self,
        _index: usize,
        _space: &StateSpace,
        _proof: Proof,
    ) -> Result<(), Self::Error> {
        Ok(())
    }

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
    // Left by a process killed between a table's write and its proof.
    let _ = std::fs::remove_dir_all(dir.join(UNPROVEN_DIR));
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
                    tracing::warn!(table = index, pattern = %space.pattern(), "building again: {e}");
                    None
                }
                None => None,
            },
        };
        // A file found in the directory is proven like a table built (unless the builder
        // does not prove): a header that matches says nothing of the entries.
        let found = match found {
            Some(pdb) if builder.proves() => match prove_file(&pdb) {
                Ok(_) => Some(pdb),
                Err(e) if reuse == Reuse::ValidFiles => {
                    tracing::warn!(
                        table = index,
                        pattern = %space.pattern(),
                        "the file in the set's directory failed its proof; building it again: {e}"
                    );
                    let path = pdb.path().to_path_buf();
                    drop(pdb);
                    std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                    None
                }
                Err(e) => {
                    return Err(Error::Check {
                        table: space.pattern().to_string(),
                        reason: format!(
                            "{} was written by this job, but fails its proof now: something \
                             other than the job changed it ({e})",
                            pdb.path().display()
                        ),
                    }
                    .into());
                }
            },
            found => found,
        };
        let pdb = if let Some(pdb) = found {
            builder.reused(index, space, &pdb)?;
            pdb
        } else {
            let (table, pdb) = build_and_publish(spec, &dir, index, space, builder)?;
            builder.written(index, space, &table, &pdb)?;
            built += 1;
            pdb
        };
        // Its pages were all read (checksums, proof): let them go, so that a set's build holds
        // one table at a time.
        pdb.release_resident();
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

/// Builds table `index` and writes it in `dir`: proven first if the builder proves (built
/// again once if the proof fails).
fn build_and_publish<B: TableBuilder>(
    spec: &SetSpec,
    dir: &Path,
    index: usize,
    space: &StateSpace,
    builder: &mut B,
) -> Result<(BuiltTable, Pdb), B::Error> {
    if !builder.proves() {
        let mut table = builder.build(index, space)?;
        let path = builder.write(index, space, spec.encoding, &mut table, dir)??;
        return Ok((table, Pdb::open_released(&path).map_err(Error::from)?));
    }
    let unproven = dir.join(UNPROVEN_DIR);
    let mut attempt = 1;
    loop {
        let mut table = builder.build(index, space)?;
        let written = builder.write(index, space, spec.encoding, &mut table, &unproven)?;
        let proof = match written.and_then(|path| Pdb::open_released(&path).map_err(Error::from)) {
            Ok(staged) => {
                let proof = builder.prove(index, space, &staged)?;
                let staged_path = staged.path().to_path_buf();
                drop(staged);
                proof
                    .map(|proof| (proof, staged_path.clone()))
                    .inspect_err(|_| {
                        let _ = std::fs::remove_file(&staged_path);
                    })
            }
            // Values no table can have (unreached entries where every entry is reachable,
            // values below the Manhattan distance): the table is wrong, not the disk.
            Err(e @ Error::Table(TableError::Value { .. } | TableError::ValueCount { .. })) => {
                Err(e)
            }
            Err(e) => return Err(e.into()),
        };
        match proof {
            Ok((proof, staged_path)) => {
                let path = dir.join(table_file_name(space));
                std::fs::rename(&staged_path, &path).map_err(|e| Error::io(&path, e))?;
                let _ = std::fs::remove_dir(&unproven);
                builder.proven(index, space, proof)?;
                tracing::info!(table = index, pattern = %space.pattern(), proof = %proof, "table proven");
                return Ok((table, Pdb::open_released(&path).map_err(Error::from)?));
            }
            Err(error) => {
                if attempt == BUILDS_PER_TABLE {
                    return Err(Error::Check {
                        table: space.pattern().to_string(),
                        reason: format!(
                            "the table failed its proof {attempt} times and was not written; \
                             the last time: {error}"
                        ),
                    }
                    .into());
                }
                tracing::warn!(
                    table = index,
                    pattern = %space.pattern(),
                    "the table built failed its proof and was not written; building it again: {error}"
                );
                builder.rejected(index, space, &error)?;
                attempt += 1;
            }
        }
    }
}

/// Checks the table file `pdb` before it is published: [`verify_deep`] (the Bellman check or
/// the layer search, by its kind and encoding; the header's histogram); the proof that ran.
pub fn prove_file(pdb: &Pdb) -> Result<Proof> {
    Ok(verify_deep(pdb)?.proof)
}
