//! The progress record of a sharded job's table, for a coordinator started again on the same
//! data directory (`serve --shards --data-dir`, `build --shards`): the layers finished, and,
//! once the table's file is written and the table closed on the shards, that only its proof
//! is left. The written file is then kept beside the record (a hard link to the staged file
//! where the file system allows, else a copy) until the table is published or refused, so
//! that a restarted coordinator proves that file again instead of searching the table again:
//! the shards let the table go (arrays and checkpoints) when it is closed. A kept file is
//! used only when its header and checksums are whole and it is this table's, and it is proven
//! before it is published, as every table is.

use std::path::{Path, PathBuf};

use tilepdb_common::StateSpace;
use tilepdb_common::table::{Encoding, Header};

use crate::engine::SearchProgress;
use crate::error::{Error, Result};
use crate::output::{cached_table, table_file_name};

/// The progress of a sharded job's table, as a restarted coordinator reads it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct SavedProgress {
    job_id: String,
    table: u32,
    /// Where the table's search got to.
    pub progress: SearchProgress,
    /// The table's file is written (and kept, [`ProgressRecord::kept_table`]) and closed on
    /// the shards: only its proof is left.
    #[serde(default)]
    pub written: bool,
}

/// Where a sharded job records its table's progress (a JSON file) and keeps its written file.
pub(super) struct ProgressRecord {
    /// The record (`None`: nothing is recorded; a restarted coordinator starts over).
    path: Option<PathBuf>,
    job_id: String,
}

impl ProgressRecord {
    /// The record of job `job_id` at `path`.
    pub fn new(path: Option<PathBuf>, job_id: String) -> ProgressRecord {
        ProgressRecord { path, job_id }
    }

    /// Records that table `table` got as far as `progress`, and whether its file is written
    /// (and kept) with the table closed on the shards.
    pub fn save(&self, table: u32, progress: &SearchProgress, written: bool) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let saved = SavedProgress {
            job_id: self.job_id.clone(),
            table,
            progress: progress.clone(),
            written,
        };
        let text = serde_json::to_vec_pretty(&saved)
            .map_err(|e| Error::Shards(format!("cannot record the progress: {e}")))?;
        tilepdb_common::table::write::write_atomic(path, &[&text]).map_err(Error::from)
    }

    /// Where a restarted coordinator takes up table `table`: the progress recorded, if it is
    /// this job's and table's.
    pub fn load(&self, table: u32) -> Option<SavedProgress> {
        let path = self.path.as_ref()?;
        let bytes = std::fs::read(path).ok()?;
        let saved: SavedProgress = match serde_json::from_slice(&bytes) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(
                    "{}: not a progress record ({e}); starting the table over",
                    path.display()
                );
                return None;
            }
        };
        (saved.job_id == self.job_id && saved.table == table).then_some(saved)
    }

    /// The directory beside the record where the file of the table being proven is kept.
    fn kept_dir(&self) -> Option<PathBuf> {
        Some(self.path.as_ref()?.with_extension("written"))
    }

    /// Keeps table `table`'s file `path`, just written from the shards and closed on them,
    /// and records it with `progress`; when it cannot be kept, the record goes (a restarted
    /// coordinator then searches the table again: its shards no longer hold it).
    pub fn keep_written(
        &self,
        table: u32,
        space: &StateSpace,
        path: &Path,
        progress: &SearchProgress,
    ) -> Result<()> {
        let (Some(dir), Some(record)) = (self.kept_dir(), &self.path) else {
            return Ok(());
        };
        let kept = dir.join(table_file_name(space));
        let _ = std::fs::remove_dir_all(&dir);
        let placed = std::fs::create_dir_all(&dir).and_then(|()| link_or_copy(path, &kept));
        match placed {
            Ok(()) => self.save(table, progress, true),
            Err(e) => {
                tracing::warn!(
                    table,
                    "cannot keep the written file in {} ({e}): a restarted coordinator would search the table again",
                    dir.display()
                );
                let _ = std::fs::remove_file(record);
                Ok(())
            }
        }
    }

    /// The header of table `space`'s file in `encoding` kept by the job's last run, if it is
    /// there, whole (its header and checksums) and this table's.
    pub fn kept_table(&self, space: &StateSpace, encoding: Encoding) -> Option<Header> {
        let dir = self.kept_dir()?;
        cached_table(&dir, space, encoding)?
            .map(|pdb| pdb.header().clone())
            .inspect_err(|e| {
                tracing::warn!(
                    "{}: the kept file is not this table's whole file ({e})",
                    dir.join(table_file_name(space)).display()
                );
            })
            .ok()
    }

    /// Places table `space`'s kept file at `path`, where the builder would have written it.
    pub fn place_kept(&self, space: &StateSpace, path: &Path) -> Result<()> {
        let kept = self
            .kept_dir()
            .ok_or_else(|| Error::Shards("no kept file without a progress record".into()))?
            .join(table_file_name(space));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let _ = std::fs::remove_file(path);
        link_or_copy(&kept, path).map_err(|e| Error::io(path, e))
    }

    /// Forgets table `index`'s record and kept file, if the record is that table's: the
    /// table is published (or found published), or refused and searched again.
    pub fn forget(&self, index: usize) {
        let recorded = u32::try_from(index)
            .ok()
            .and_then(|table| self.load(table))
            .is_some();
        if let (true, Some(record), Some(dir)) = (recorded, &self.path, self.kept_dir()) {
            let _ = std::fs::remove_file(record);
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Makes `to` a hard link to `from`, or a copy of it where a link cannot be made (another
/// file system).
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::hard_link(from, to).or_else(|_| std::fs::copy(from, to).map(|_| ()))
}
