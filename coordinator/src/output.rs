//! Writing finished tables to disk: the one place where the coordinator makes table files and
//! set manifests (the byte format itself lives in [`tilepdb_common::table`]).
//!
//! A table set is a directory named after the partition, blank rule, goal and encoding
//! (`4x4-6-6-3-minimized-blank-first` for a known partition in bytes;
//! `4x4-1.2.3_4.5.6-aware-blank-first-mod3` for patterns of one's own), holding one file per
//! pattern named after its tiles (`pattern-1-4-5-8-9-12.pdb`) and the set's `manifest.json`.
//! Files are written to a temporary name and renamed, so a file that exists is complete; the
//! manifest is written last.

use std::path::{Path, PathBuf};

use tilepdb_common::table::{EncodedTable, Encoding, Manifest, Pdb, ValuesRef};
use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};

use crate::engine::SetSpec;
use crate::error::Result;

/// The directory of a table set under `out` ([`SetSpec::dir`] of these four values).
pub fn set_dir(
    out: &Path,
    partition: &Partition,
    rule: BlankRule,
    goal: Goal,
    encoding: Encoding,
) -> PathBuf {
    SetSpec {
        partition: partition.clone(),
        goal,
        rule,
        encoding,
    }
    .dir(out)
}

/// The file name of a pattern's table.
pub fn table_file_name(space: &StateSpace) -> String {
    let tiles = space
        .pattern()
        .tiles()
        .iter()
        .map(std::string::ToString::to_string)
        .collect::<Vec<_>>()
        .join("-");
    format!("pattern-{tiles}.pdb")
}

/// Encodes `values` (one byte per entry, or a built table's
/// [`TableValues`](tilepdb_common::table::TableValues): packed codes
/// are written only in their own encoding) as the table of `space` in `encoding`, writes it in
/// `dir` atomically and returns it opened (validated) from disk.
pub fn write_table<'a>(
    dir: &Path,
    space: &StateSpace,
    encoding: Encoding,
    values: impl Into<ValuesRef<'a>>,
) -> Result<Pdb> {
    let path = write_table_file(dir, space, encoding, values)?;
    Ok(Pdb::open(&path)?)
}

/// [`write_table`] without opening the file: its path.
pub fn write_table_file<'a>(
    dir: &Path,
    space: &StateSpace,
    encoding: Encoding,
    values: impl Into<ValuesRef<'a>>,
) -> Result<std::path::PathBuf> {
    let path = dir.join(table_file_name(space));
    EncodedTable::from_values(space, encoding, values)?.write(&path)?;
    Ok(path)
}

/// The table of `space` in `encoding` already in `dir`: `None` if there is no file, else the
/// file opened, validated and checked to hold this very table (an error says why not). Its
/// pages are let go as they are validated ([`Pdb::open_released`]): a build that reuses
/// many tables does not hold them all.
pub fn cached_table(dir: &Path, space: &StateSpace, encoding: Encoding) -> Option<Result<Pdb>> {
    let path = dir.join(table_file_name(space));
    if !path.exists() {
        return None;
    }
    Some((|| {
        let pdb = Pdb::open_released(&path)?;
        pdb.check_matches(
            space.board(),
            space.goal(),
            space.rule(),
            space.pattern().tiles(),
            Some(encoding),
        )?;
        Ok(pdb)
    })())
}

/// Writes the manifest of the set in `dir`, listing `tables` in the partition's order.
pub fn write_manifest(
    dir: &Path,
    partition: &Partition,
    goal: Goal,
    rule: BlankRule,
    encoding: Encoding,
    tables: &[Pdb],
) -> Result<()> {
    let mut manifest = Manifest::new(partition.name(), partition.board(), goal, rule, encoding);
    for pdb in tables {
        manifest.push(pdb);
    }
    manifest.write(dir)?;
    Ok(())
}
