//! Writing a finished table to disk: one byte per entry, in the set's directory.
//!
//! A table set is a directory named after the partition, blank rule and goal
//! (`4x4-6-6-3-minimized-blank-first`), holding one file per pattern named after its tiles
//! (`pattern-1-4-5-8-9-12.bytes`). Files are written to a temporary name and renamed, so a
//! file that exists is complete.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use tilepdb_common::{BlankRule, Goal, Partition, StateSpace};

use crate::error::{Error, Result};

/// The directory of a table set under `out`.
pub fn set_dir(out: &Path, partition: &Partition, rule: BlankRule, goal: Goal) -> PathBuf {
    let sizes = partition
        .patterns()
        .iter()
        .map(|p| p.len().to_string())
        .collect::<Vec<_>>()
        .join("-");
    out.join(format!("{}-{sizes}-{rule}-{goal}", partition.board()))
}

/// The file name of a pattern's table.
pub fn table_file_name(space: &StateSpace) -> String {
    let tiles = space
        .pattern()
        .tiles()
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join("-");
    format!("pattern-{tiles}.bytes")
}

/// Writes `values` as the table of `space` in `dir`; returns the file's path.
pub fn write_table(dir: &Path, space: &StateSpace, values: &[u8]) -> Result<PathBuf> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = dir.join(table_file_name(space));
    let tmp = path.with_extension("bytes.partial");
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(values)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Error::io(&path, e)
    })?;
    Ok(path)
}
